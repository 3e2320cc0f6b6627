package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// stepTimeout bounds one step's wait for its element.
const stepTimeout = 10 * time.Second

// downloadTimeout bounds a download step's wait for the file (within the call's own limit).
const downloadTimeout = 30 * time.Second

// pressKeys are the keys a press step may press, by the names of the DOM's KeyboardEvent.key: the
// keys that move through a page and submit or dismiss (a form's Enter, a menu's arrows, a dialog's
// Escape). Any single character is pressed too.
var pressKeys = map[string]string{
	"Enter": kb.Enter, "Tab": kb.Tab, "Escape": kb.Escape, "Backspace": kb.Backspace, "Delete": kb.Delete,
	"ArrowUp": kb.ArrowUp, "ArrowDown": kb.ArrowDown, "ArrowLeft": kb.ArrowLeft, "ArrowRight": kb.ArrowRight,
	"Home": kb.Home, "End": kb.End, "PageUp": kb.PageUp, "PageDown": kb.PageDown, "Space": " ",
}

// pressKey returns the keys chromedp sends for a press step's text, or false.
func pressKey(name string) (string, bool) {
	if k, ok := pressKeys[name]; ok {
		return k, true
	}
	if r := []rune(name); len(r) == 1 && r[0] >= ' ' && r[0] != 0x7f {
		return name, true
	}
	return "", false
}

// pressNames lists the named keys for a message.
const pressNames = "Enter, Tab, Escape, Backspace, Delete, ArrowUp, ArrowDown, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space, or one character"

// downloaded is a file a download step fetched.
type downloaded struct {
	name string // the name the site suggested, made safe for the workspace
	data []byte
}

// stepEnv is what a call's steps share: the stored keys they type (secret) and the files they
// download.
type stepEnv struct {
	// secret returns the stored key name for the page at origin (the credential rule: bound to
	// that origin and usable by the requester); nil when no key can be typed.
	secret func(ctx context.Context, key, origin string) (string, error)
	typed  []string // the values typed, taken out of everything the call returns
	dir    string   // where downloads land, made by the first download step
	files  []downloaded
	// problems are why a download was not kept (too large), in words for the result.
	problems []string
}

// runStep runs one step and says what it did.
func (b *Browser) runStep(ctx context.Context, s step, env *stepEnv) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	sel := chromedp.CSS(s.Selector)
	switch s.Action {
	case "click":
		return "clicked " + s.Selector, chromedp.Do(sctx, chromedp.Click(sel, chromedp.NodeVisible))
	case "fill":
		return fmt.Sprintf("filled %s with %d characters", s.Selector, len(s.Text)),
			chromedp.Do(sctx, chromedp.Clear(sel, chromedp.NodeVisible), chromedp.SendKeys(sel, s.Text, chromedp.NodeVisible))
	case "fill_secret":
		return b.fillSecret(sctx, s, env)
	case "scroll":
		if s.Selector == "" {
			return "scrolled down one screen", chromedp.Do(sctx, chromedp.Evaluate[chromedp.Void](`window.scrollBy(0, window.innerHeight)`))
		}
		return "scrolled to " + s.Selector, chromedp.Do(sctx, chromedp.ScrollIntoView(sel))
	case "wait_for":
		return "waited for " + s.Selector, chromedp.Do(sctx, chromedp.WaitVisible(sel))
	case "press":
		keys, _ := pressKey(s.Text) // checked with the arguments
		if s.Selector == "" {
			return "pressed " + s.Text, chromedp.Do(sctx, chromedp.KeyEvent(keys))
		}
		return "pressed " + s.Text + " in " + s.Selector, chromedp.Do(sctx, chromedp.Focus(sel, chromedp.NodeVisible), chromedp.KeyEvent(keys))
	case "hover":
		return "hovered over " + s.Selector, hover(sctx, sel)
	case "select":
		return selectOption(sctx, s)
	case "download":
		return b.download(ctx, s, env)
	}
	return "", fmt.Errorf("unknown action %q", s.Action)
}

// fillSecret types a stored key into a field. The page's origin is read when the step runs (after
// redirects and earlier steps), and the key is typed only where the credential rule lets it go; the
// value is never part of what the step says.
func (b *Browser) fillSecret(ctx context.Context, s step, env *stepEnv) (string, error) {
	if env.secret == nil {
		return "", errors.New("no stored key can be typed here")
	}
	location, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return "", err
	}
	value, err := env.secret(ctx, s.Text, secrets.OriginOf(location))
	if err != nil {
		return "", err
	}
	env.typed = append(env.typed, value)
	if err := chromedp.Do(ctx, chromedp.Clear(chromedp.CSS(s.Selector), chromedp.NodeVisible),
		chromedp.SendKeys(chromedp.CSS(s.Selector), value, chromedp.NodeVisible)); err != nil {
		return "", errors.New(secrets.Scrub(err.Error(), value))
	}
	return fmt.Sprintf("typed the stored key %q into %s", s.Text, s.Selector), nil
}

// hover moves the mouse over the middle of the element (menus that open on hover, tooltips).
func hover(ctx context.Context, css chromedp.CSS) error {
	if err := chromedp.Do(ctx, chromedp.WaitVisible(css), chromedp.ScrollIntoView(css)); err != nil {
		return err
	}
	box, err := chromedp.Run(ctx, chromedp.Dimensions(css))
	if err != nil {
		return err
	}
	q := box.Border
	if len(q) < 8 {
		return errors.New("the element has no box to hover over")
	}
	x, y := (q[0]+q[2]+q[4]+q[6])/4, (q[1]+q[3]+q[5]+q[7])/4
	return chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, x, y))
}

// selectOption chooses the option of a <select> whose value or visible text is the step's text, and
// tells the page as a person's choice would (input and change events).
func selectOption(ctx context.Context, s step) (string, error) {
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(s.Selector))); err != nil {
		return "", err
	}
	sel, _ := json.Marshal(s.Selector)
	want, _ := json.Marshal(s.Text)
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`((sel, want) => {
  const el = document.querySelector(sel);
  if (!el) return "!no element matches";
  if (el.tagName !== "SELECT") return "!the element is a " + el.tagName.toLowerCase() + ", not a select";
  for (const o of el.options) {
    if (o.value === want || o.text.trim() === want) {
      el.value = o.value;
      el.dispatchEvent(new Event("input", {bubbles: true}));
      el.dispatchEvent(new Event("change", {bubbles: true}));
      return o.text.trim();
    }
  }
  return "!no option has that value or text; the options are: " + Array.from(el.options, o => o.text.trim()).slice(0, 30).join(" | ");
})(`+string(sel)+`, `+string(want)+`)`))
	if err != nil {
		return "", err
	}
	if msg, bad := strings.CutPrefix(got, "!"); bad {
		return "", errors.New(tools.Truncate(msg, 600))
	}
	return fmt.Sprintf("selected %q in %s", tools.Truncate(got, 100), s.Selector), nil
}

// download clicks the element and waits for the file it starts. Downloads are allowed only for the
// length of this step, into a temporary folder removed with the browser; the file is kept for the
// result, which saves it in the workspace.
func (b *Browser) download(ctx context.Context, s step, env *stepEnv) (string, error) {
	if env.dir == "" {
		dir, err := os.MkdirTemp("", "lucy-download-")
		if err != nil {
			return "", err
		}
		env.dir = dir
	}
	dctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	began := make(chan *browser.EventDownloadWillBegin, 8)
	progress := make(chan *browser.EventDownloadProgress, 64)
	if err := chromedp.ListenBrowser(dctx, func(ev any) {
		switch e := ev.(type) {
		case *browser.EventDownloadWillBegin:
			select {
			case began <- e:
			default:
			}
		case *browser.EventDownloadProgress:
			if e.State != browser.DownloadProgressStateInProgress || e.ReceivedBytes > tools.MaxFileBytes {
				select {
				case progress <- e:
				default:
				}
			}
		}
	}); err != nil {
		return "", err
	}
	eventsOn := true
	if _, err := chromedp.CallBrowser(dctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: env.dir, EventsEnabled: &eventsOn}); err != nil {
		return "", fmt.Errorf("allow the download: %w", err)
	}
	// Downloads are denied again whatever happens next: a later click saves nothing.
	defer chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorDeny})
	cctx, ccancel := context.WithTimeout(dctx, stepTimeout)
	err := chromedp.Do(cctx, chromedp.Click(chromedp.CSS(s.Selector), chromedp.NodeVisible))
	ccancel()
	if err != nil {
		return "", err
	}
	var start *browser.EventDownloadWillBegin
	select {
	case start = <-began:
	case <-dctx.Done():
		return "", errors.New("the click started no download")
	}
	for {
		select {
		case p := <-progress:
			if p.GUID != start.GUID {
				continue
			}
			switch {
			case p.State == browser.DownloadProgressStateCanceled:
				return "", errors.New("the download was canceled")
			case p.ReceivedBytes > tools.MaxFileBytes:
				chromedp.CallBrowser(ctx, browser.CancelDownload, browser.CancelDownloadParams{GUID: p.GUID})
				env.problems = append(env.problems, fmt.Sprintf("%s is larger than the 1 MB a workspace file may be; it was not kept", fileName(start.SuggestedFilename)))
				return "started the download of " + fileName(start.SuggestedFilename) + ", which was too large to keep", nil
			}
			data, err := os.ReadFile(filepath.Join(env.dir, p.GUID))
			if err != nil {
				return "", fmt.Errorf("read the downloaded file: %w", err)
			}
			if len(data) > tools.MaxFileBytes {
				env.problems = append(env.problems, fmt.Sprintf("%s is larger than the 1 MB a workspace file may be; it was not kept", fileName(start.SuggestedFilename)))
				return "downloaded " + fileName(start.SuggestedFilename) + ", which was too large to keep", nil
			}
			env.files = append(env.files, downloaded{name: fileName(start.SuggestedFilename), data: data})
			return fmt.Sprintf("downloaded %s (%d bytes)", fileName(start.SuggestedFilename), len(data)), nil
		case <-dctx.Done():
			return "", fmt.Errorf("the download of %s did not finish within %s", fileName(start.SuggestedFilename), downloadTimeout)
		}
	}
}

// fileName keeps the letters, digits, dots, hyphens and underscores of the name a site suggested
// for its file (never a path), "download" when none is left.
func fileName(suggested string) string {
	base := suggested[strings.LastIndexAny(suggested, `/\`)+1:]
	var sb strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			sb.WriteRune(r)
		case r == ' ':
			sb.WriteByte('-')
		}
	}
	name := strings.TrimLeft(sb.String(), ".-")
	if name == "" {
		return "download"
	}
	return tools.Truncate(name, 100)
}
