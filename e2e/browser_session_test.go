package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/logging"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools/browser"
	"github.com/lucy-agent/lucy/worker"
)

// A login kept for the thread, through the whole stack: the first request logs in to a local portal
// with lucy_browse, typing the person's stored key with a fill_secret step and naming a session; the
// next request in the same thread opens the members page with the same session and is let in without
// logging in. Neither the password nor the portal's session cookie is in any workflow history, the
// logs, or what the model was sent. Needs Chromium (the CI job installs Debian's).
func TestBrowserSessionThroughTheStack(t *testing.T) {
	if browser.Find(os.Getenv("LUCY_CHROMIUM")) == "" {
		t.Skip("no Chromium on this machine (apt-get install chromium, or set LUCY_CHROMIUM): lucy_browse is not offered")
	}
	const password = "portal-Pa55word-for-e2e"
	var mu sync.Mutex
	sids := map[string]bool{}
	logins := 0
	mux := http.NewServeMux()
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Vendor portal</title></head><body>"+body+"</body></html>")
	}
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		page(w, `<form method="post" action="/login"><input id="user" name="user"><input id="pw" name="pw" type="password"><button id="go">Sign in</button></form>`)
	})
	mux.HandleFunc("POST /login", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("pw") != password {
			page(w, "<p>Wrong password.</p>")
			return
		}
		sid := rand.Text()
		mu.Lock()
		sids[sid], logins = true, logins+1
		mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: sid, Path: "/", HttpOnly: true})
		page(w, "<p>Signed in as "+r.FormValue("user")+".</p>")
	})
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		c, err := r.Cookie("sid")
		mu.Lock()
		ok := err == nil && sids[c.Value]
		mu.Unlock()
		if !ok {
			page(w, "<p>Please log in.</p>")
			return
		}
		page(w, "<p>Invoice INV-2026-10 is ready.</p>")
	})
	site := httptest.NewServer(mux)
	t.Cleanup(site.Close)

	var results []string // the lucy_browse results the model read, in order
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if fakellm.IsMemoryStep(req) {
			return fakellm.Reply{Content: "[]"}
		}
		if _, side := loopTurn(req); side != nil {
			return *side
		}
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			mu.Lock()
			results = append(results, last.Text())
			mu.Unlock()
			switch {
			case strings.Contains(last.Text(), "Signed in as ada"):
				return fakellm.Reply{Content: "Logged in to the vendor portal."}
			case strings.Contains(last.Text(), "INV-2026-10"):
				return fakellm.Reply{Content: "Last month's invoice is INV-2026-10."}
			}
			return fakellm.Reply{Content: "That did not work."}
		}
		if strings.Contains(last.Text(), "invoice") {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("b2", "lucy_browse",
				fmt.Sprintf(`{"url": %q, "session": "vendor-portal"}`, site.URL+"/members"))}}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("b1", "lucy_browse", fmt.Sprintf(`{"url": %q, "session": "vendor-portal", "steps": [
			{"action": "fill", "selector": "#user", "text": "ada"},
			{"action": "fill_secret", "selector": "#pw", "text": "vendor-portal"},
			{"action": "click", "selector": "#go", "text": ""}]}`, site.URL+"/login"))}}
	})
	var logs syncBuffer
	s.stopWorker()
	s.startWorkerWith(worker.Deps{Log: logging.New(&logs, "debug", "json")})
	creds, err := worker.Credentials(s.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The person's key, added for the portal (as the Add key button a fill_secret asks with binds it).
	if _, err := creds.PutBound(context.Background(), team, "vendor-portal", password, human,
		secrets.Binding{Origins: []string{site.URL}, Integration: browser.Integration}); err != nil {
		t.Fatal(err)
	}

	text := "<@ULUCY> log in to our vendor portal"
	root := s.say(text, "")
	s.event("app_mention", "Ev-portal-login", text, root, "", human)
	s.waitFor("the login", 90*time.Second, func() bool { return s.answered(root, "Logged in to the vendor portal.") })
	next := "<@ULUCY> now get last month's invoice"
	ts := s.say(next, root)
	s.event("app_mention", "Ev-portal-invoice", next, ts, root, human)
	s.waitFor("the invoice", 90*time.Second, func() bool { return s.answered(root, "INV-2026-10") })

	mu.Lock()
	defer mu.Unlock()
	if logins != 1 {
		t.Errorf("the portal saw %d logins, want 1 (the second request reuses the session)", logins)
	}
	if len(results) != 2 || !strings.Contains(results[1], "Session: vendor-portal, restored") {
		t.Errorf("the browse results: %q", results)
	}
	leaks := []string{password}
	for sid := range sids {
		leaks = append(leaks, sid)
	}
	check := func(where string, data []byte) {
		t.Helper()
		for _, k := range leaks {
			if bytes.Contains(data, []byte(k)) {
				t.Errorf("%s holds the password or the session cookie (%.6s…)", where, k)
			}
		}
	}
	histories := 0
	for _, ex := range s.allExecutions(t) {
		histories++
		for _, ev := range s.historyOf(t, ex.GetExecution().GetWorkflowId(), ex.GetExecution().GetRunId()) {
			raw, err := protojson.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("%s event %d", ex.GetExecution().GetWorkflowId(), ev.GetEventId()), raw)
		}
	}
	if histories < 2 {
		t.Fatalf("%d workflow histories read, want the lane and the runs", histories)
	}
	check("the logs", logs.Bytes())
	reqs, err := json.Marshal(s.llm.Requests())
	if err != nil {
		t.Fatal(err)
	}
	check("what was sent to the model provider", reqs)
	for _, m := range s.slack.Messages(channel, root) {
		b, _ := json.Marshal(m)
		check("a Slack message", b)
	}
}
