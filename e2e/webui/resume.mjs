// Sends a signal to a workflow through the Temporal Web UI, as an operator would: open the
// workflow's page, More Actions → Send a Signal, pick the signal, type its JSON, Submit; then wait
// for the page to show the workflow as completed.
//
//   node resume.mjs <workflow page URL> <signal name> <JSON input> <screenshot of the dialog> <screenshot after>
//
// Chromium is Debian's (/usr/bin/chromium, or CHROMIUM): a test tool's own browser download does
// not work on a closed network. The flags keep Chromium from calling home, which such a network
// refuses many times a second.
import { chromium } from 'playwright-core';

const [url, signal, input, dialogShot, afterShot] = process.argv.slice(2);
if (!afterShot) {
  console.error('usage: node resume.mjs <url> <signal> <json> <dialog.png> <after.png>');
  process.exit(2);
}
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.setDefaultTimeout(30000);
  await page.goto(url);
  await page.getByRole('button', { name: 'More Actions' }).first().click();
  await page.getByRole('menuitem', { name: 'Send a Signal' }).click();
  // The page keeps a second copy of its actions for the sticky header: act in the open dialog only.
  const dialog = page.locator('dialog[open]');
  // The UI lists the signals the workflow defines (it asks a running worker): choosing from the
  // list, not typing a custom name, proves the worker answers the UI.
  await dialog.getByTestId('signal-select-button').click();
  await dialog.getByRole('option', { name: signal, exact: true }).click();
  await dialog.getByRole('textbox', { name: 'Data' }).click();
  await page.keyboard.insertText(input); // insertText: the editor's auto-closing brackets stay out of it
  await dialog.screenshot({ path: dialogShot });
  await dialog.getByTestId('confirm-modal-button').click();
  await dialog.waitFor({ state: 'detached' }).catch(() => dialog.waitFor({ state: 'hidden' }));
  // The page refreshes itself; the status badge turns from Running to Completed.
  await page.getByText('Completed', { exact: true }).first().waitFor({ timeout: 60000 });
  await page.screenshot({ path: afterShot });
  console.log('signal sent and the workflow completed');
} catch (err) {
  const pages = browser.contexts().flatMap((c) => c.pages());
  if (pages.length) await pages[0].screenshot({ path: afterShot }).catch(() => {});
  console.error(String(err));
  process.exitCode = 1;
} finally {
  await browser.close();
}
