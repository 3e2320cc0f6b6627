package e2e

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/worker"
)

// A read-only MCP tool whose server answers its first call HTTP 429 with Retry-After: 2 (RFC 6585
// §4, RFC 9110 §10.2.3) in a real run: the run waits on a workflow timer and calls again, the
// answer arrives about 2 s after the refusal with the second call's result, and the server's front
// saw the call twice (the tool itself ran once).
func TestMCPRateLimitWaitedOut(t *testing.T) {
	srv := mcptest.New(mcptest.Normal, "")
	front := &mcptest.RateLimit{Next: mcptest.Handler(srv), Tool: "echo", Status: http.StatusTooManyRequests, RetryAfter: "2"}
	front.Refuse.Store(1)
	h := httptest.NewServer(front)
	t.Cleanup(h.Close)
	var refused time.Time
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Text())
			}
		}
		if len(results) == 0 {
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("e1", "mcp__tracker__echo", `{"text":"hello"}`)}}
		}
		return fakellm.Reply{Content: "Summary: " + strings.Join(results, " | ")}
	})
	s.stopWorker()
	s.startWorkerWith(worker.Deps{Log: s.log, MCPServers: []mcp.Server{{Name: "tracker", URL: h.URL + "/mcp"}}})

	const text = "<@ULUCY> echo hello on the tracker"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-ratelimit", text, ts, "", human)
	s.waitFor("the refused call", 90*time.Second, func() bool { return front.Hits.Load() >= 1 })
	refused = time.Now()
	s.waitFor("the answer", 90*time.Second, func() bool { return s.answered(ts, "Summary:") })
	took := time.Since(refused)

	if got := front.Hits.Load(); got != 2 {
		t.Errorf("the server was called %d times, want 2 (refused, then after the wait)", got)
	}
	if got := srv.Calls("echo"); got != 1 {
		t.Errorf("echo ran %d times, want 1", got)
	}
	if took < 2*time.Second || took > 20*time.Second {
		t.Errorf("the answer came %v after the refusal, want about 2 s", took)
	}
	var answer string
	for _, m := range s.botMessages(ts) {
		if strings.Contains(m.Text, "Summary:") {
			answer = m.Text
		}
	}
	if !strings.Contains(answer, "echo: hello") || strings.Contains(answer, "asked to wait") {
		t.Errorf("the answer %q: want the second call's result", answer)
	}
	t.Logf("answer %v after the 429 (Retry-After: 2)", took.Round(10*time.Millisecond))
}
