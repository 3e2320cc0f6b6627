package e2e

import (
	"bytes"
	"fmt"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/tools/browser"
)

// A page built by JavaScript, through the whole stack: lucy_web_fetch reads an empty shell and says
// to use lucy_browse; lucy_browse (run by the worker's ExecuteTool, attempted once, heartbeating)
// reads the text the script built, and its screenshot is shared in the thread as a PNG. Needs
// Chromium (the CI job installs Debian's).
func TestBrowseThroughTheStack(t *testing.T) {
	if browser.Find(os.Getenv("LUCY_CHROMIUM")) == "" {
		t.Skip("no Chromium on this machine (apt-get install chromium, or set LUCY_CHROMIUM): lucy_browse is not offered")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<!doctype html><html><head><title>Support desk</title></head><body><main id="m"></main>
<script>document.getElementById("m").innerHTML = "<h1>Open tickets</h1><p>There are " + (10 + 7) + " open tickets.</p>";</script>
</body></html>`)
	}))
	t.Cleanup(site.Close)

	var mu sync.Mutex
	var results []string // the tool results the model read, in order
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			return fakellm.Reply{Content: "[]"}
		}
		turn, side := loopTurn(req)
		if side != nil {
			return *side
		}
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			mu.Lock()
			results = append(results, last.Text())
			mu.Unlock()
		}
		switch turn {
		case 0:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("f1", "lucy_web_fetch", fmt.Sprintf(`{"url": %q}`, site.URL+"/desk"))}}
		case 1:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("b1", "lucy_browse", fmt.Sprintf(`{"url": %q, "screenshot": true}`, site.URL+"/desk"))}}
		}
		return fakellm.Reply{Content: "The support desk shows 17 open tickets."}
	})
	text := "<@ULUCY> how many tickets are open on the support desk?"
	root := s.say(text, "")
	s.event("app_mention", "Ev-browse", text, root, "", human)
	s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(root, "17 open tickets") })

	mu.Lock()
	defer mu.Unlock()
	if len(results) != 2 {
		t.Fatalf("the model read %d tool results, want 2: %q", len(results), results)
	}
	if strings.Contains(results[0], "17 open tickets") || !strings.Contains(results[0], "lucy_browse") {
		t.Errorf("lucy_web_fetch's result:\n%s", results[0])
	}
	if !strings.Contains(results[1], "There are 17 open tickets.") || !strings.Contains(results[1], "shared it in the thread") {
		t.Errorf("lucy_browse's result:\n%s", results[1])
	}
	shots := 0
	for _, m := range s.botMessages(root) {
		for _, f := range m.Files {
			full, ok := s.slack.File(f.ID)
			if !ok || !strings.HasSuffix(full.Name, ".png") {
				continue
			}
			shots++
			if _, err := png.Decode(bytes.NewReader(full.Content)); err != nil {
				t.Errorf("the shared screenshot is not a PNG: %v", err)
			}
		}
	}
	if shots != 1 {
		t.Errorf("%d screenshots shared in the thread, want 1", shots)
	}
}
