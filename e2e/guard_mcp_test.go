package e2e

import (
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/internal/fakellm"
)

// The review's F3, as run in a real run: a member connects her own server from chat (approving
// her own prompt). It lists save_context annotated readOnlyHint, whose description orders the model
// to send it the thread. In her next request the model calls it: the run posts an approval prompt
// and the server sees nothing until a person approves; denied, it never sees the call. Another
// member's run is not offered the tool at all.
func TestGuardMCPChatServerReadOnlyHintWaitsForApproval(t *testing.T) {
	notes := mcptest.New(mcptest.Exfil, "")
	notesHTTP := httptest.NewServer(mcptest.Handler(notes))
	t.Cleanup(notesHTTP.Close)

	var mu sync.Mutex
	offered := map[string][]string{} // which request → the tools it was offered
	seen := func(k string) []string { mu.Lock(); defer mu.Unlock(); return offered[k] }
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		var asked string
		var results []string
		for _, m := range req.Messages {
			switch m.Role {
			case "user":
				if asked == "" {
					asked = m.Text()
				}
			case "tool":
				results = append(results, m.Text())
			}
		}
		var names []string
		for _, tl := range req.Tools {
			names = append(names, tl.Function.Name)
		}
		switch {
		case strings.Contains(asked, "connect my notes server"):
			if len(results) == 0 {
				return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("c1", "lucy_connect_mcp_server",
					`{"name":"notes","url":"`+notesHTTP.URL+`/mcp"}`)}}
			}
			return fakellm.Reply{Content: "Connected: " + strings.Join(results, " | ")}
		case strings.Contains(asked, "summarize the plan"):
			mu.Lock()
			offered["summarize"] = names
			mu.Unlock()
			if len(results) == 0 {
				return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("s1", "mcp__notes__save_context", `{"text":"the secret plan"}`)}}
			}
			return fakellm.Reply{Content: "Done: " + strings.Join(results, " | ")}
		case strings.Contains(asked, "what tools"):
			mu.Lock()
			offered["other"] = names
			mu.Unlock()
			return fakellm.Reply{Content: "Listed."}
		}
		return fakellm.Reply{Content: "ok"}
	})

	// The member connects her server and approves her own prompt.
	const connect = "<@ULUCY> connect my notes server"
	ts := s.say(connect, "")
	s.event("app_mention", "Ev-guard-mcp-1", connect, ts, "", human)
	var value string
	s.waitFor("the connect's approval prompt", 90*time.Second, func() bool { value = s.approvalValue(ts); return value != "" })
	s.click(human, value, "lucy_approve")
	s.waitFor("the connect's answer", 120*time.Second, func() bool { return s.answered(ts, "Connected:") })

	// Her next request: the model follows the server's description and calls save_context.
	const ask = "<@ULUCY> summarize the plan"
	ts2 := s.say(ask, "")
	s.event("app_mention", "Ev-guard-mcp-2", ask, ts2, "", human)
	s.waitFor("the approval prompt of save_context", 90*time.Second, func() bool { value = s.approvalValue(ts2); return value != "" })
	if !slices.Contains(seen("summarize"), "mcp__notes__save_context") {
		t.Fatalf("the member's run was not offered her server's tool: %v", seen("summarize"))
	}
	if n := notes.Calls("save_context"); n != 0 {
		t.Fatalf("the server received save_context %d times before anyone approved", n)
	}
	time.Sleep(2 * time.Second) // nothing reaches the server while the prompt waits
	if n := notes.Calls("save_context"); n != 0 {
		t.Fatalf("the server received save_context %d times while the prompt waited", n)
	}
	s.click(human, value, "lucy_deny")
	s.waitFor("the answer after the denial", 120*time.Second, func() bool { return s.answered(ts2, "Done:") })
	if n := notes.Calls("save_context"); n != 0 {
		t.Fatalf("the server received save_context %d times after a denial", n)
	}

	// Another member's run is not offered the member's own server.
	const other = "<@ULUCY> what tools do you have?"
	ts3 := s.say(other, "")
	s.event("app_mention", "Ev-guard-mcp-3", other, ts3, "", "UOTHER")
	s.waitFor("the other member's answer", 90*time.Second, func() bool { return s.answered(ts3, "Listed.") })
	if o := seen("other"); len(o) == 0 || slices.ContainsFunc(o, func(n string) bool { return strings.HasPrefix(n, "mcp__notes__") }) {
		t.Errorf("another member's run was offered %v", o)
	}
}
