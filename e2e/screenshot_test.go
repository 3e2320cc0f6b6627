package e2e

import (
	"flag"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/localslack"
)

// screenshot, when set, makes TestTimelineEndToEnd render the thread the local Slack holds while
// the answer streams below its steps into a PNG at this path (with Debian's chromium), for the
// docs/using.md: go test ./e2e/ -run TestTimelineEndToEnd -args -screenshot=$PWD/docs/img/streamed-answer.png
var screenshot = flag.String("screenshot", "", "write a PNG of the streamed answer with its steps to this path")

// threadHTML renders a thread of the local Slack as a small static page: each message with its
// author, Lucy's task cards (their state and title) above her text.
func threadHTML(msgs []localslack.Message) string {
	var b strings.Builder
	b.WriteString(`<!doctype html><meta charset="utf-8"><style>
body{font:15px/1.45 -apple-system,"Segoe UI",Lato,Helvetica,sans-serif;margin:24px;color:#1d1c1d;background:#fff}
.m{display:flex;gap:10px;margin:0 0 18px}.av{width:36px;height:36px;border-radius:6px;flex:none;color:#fff;font-weight:700;display:flex;align-items:center;justify-content:center}
.who{font-weight:900}.app{font-size:11px;background:#e8e8e8;border-radius:3px;padding:1px 4px;margin-left:4px;color:#616061}
.tasks{border:1px solid #ddd;border-radius:8px;padding:6px 12px;margin:6px 0 10px;max-width:720px}
.t{padding:3px 0}.complete{color:#007a5a}.in_progress{color:#1264a3}.error{color:#e01e5a}.pending{color:#868686}
.text p{margin:0 0 8px;max-width:900px}.cursor{display:inline-block;width:8px;height:15px;background:#1264a3;vertical-align:middle}
</style>`)
	icons := map[string]string{"complete": "✓", "in_progress": "◌", "error": "✕", "pending": "○"}
	for _, m := range msgs {
		who, color, app := "Ada", "#e8912d", ""
		if m.BotID != "" {
			who, color, app = "Lucy", "#4a154b", `<span class="app">APP</span>`
		}
		fmt.Fprintf(&b, `<div class="m"><div class="av" style="background:%s">%s</div><div><div class="who">%s%s</div>`, color, who[:1], who, app)
		if len(m.Cards()) > 0 {
			b.WriteString(`<div class="tasks">`)
			for _, t := range m.Cards() {
				fmt.Fprintf(&b, `<div class="t %s">%s %s</div>`, t.Status, icons[t.Status], html.EscapeString(t.Title))
			}
			b.WriteString(`</div>`)
		}
		b.WriteString(`<div class="text">`)
		paras := strings.Split(strings.TrimSpace(m.Text), "\n\n")
		for i, p := range paras {
			cursor := ""
			if m.Streaming && i == len(paras)-1 {
				cursor = ` <span class="cursor"></span>`
			}
			p = html.EscapeString(p)
			if len(p) > 2 && strings.HasPrefix(p, "_") && strings.HasSuffix(p, "_") { // mrkdwn italics
				p = "<i>" + p[1:len(p)-1] + "</i>"
			}
			fmt.Fprintf(&b, "<p>%s%s</p>", p, cursor)
		}
		b.WriteString(`</div></div></div>`)
	}
	return b.String()
}

// writeScreenshot renders msgs and takes a PNG of the page with chromium.
func writeScreenshot(t *testing.T, msgs []localslack.Message, png string) {
	t.Helper()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("-screenshot needs chromium: %v", err)
	}
	page := filepath.Join(t.TempDir(), "thread.html")
	if err := os.WriteFile(page, []byte(threadHTML(msgs)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--window-size=1100,700", "--screenshot="+png, "file://"+page).CombinedOutput()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", png, err)
	}
}
