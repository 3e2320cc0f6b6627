package e2e

import (
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/worker"
)

// MCP tools in a real run: a read-only tool retried after the server's transient failure, a
// destructive one approved with the button and run exactly once, and a server killed in the middle of
// a call, after which the run goes on with a result that says so.
func TestMCPToolsInARun(t *testing.T) {
	tracker := mcptest.New(mcptest.Normal, "")
	trackerHTTP := httptest.NewServer(mcptest.Handler(tracker))
	t.Cleanup(trackerHTTP.Close)
	fragile := mcptest.New(mcptest.Normal, "")
	fragileHTTP := httptest.NewServer(mcptest.Handler(fragile))
	t.Cleanup(fragileHTTP.Close)
	tracker.FailNext.Store(1) // the first echo fails on the server: retried by the workflow

	var offered []string
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Text())
			}
		}
		if len(results) == 0 {
			for _, tl := range req.Tools {
				offered = append(offered, tl.Function.Name)
			}
		}
		switch len(results) {
		case 0:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("e1", "mcp__tracker__echo", `{"text":"hello"}`)}}
		case 1:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("a1", "mcp__tracker__add_item", `{"item":"milk"}`)}}
		case 2:
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("s1", "mcp__fragile__slow_write", `{"wait":true}`)}}
		}
		return fakellm.Reply{Content: "Summary: " + strings.Join(results, " | ")}
	})
	// The stack's worker knows no MCP server: this test's worker takes its place, with two.
	s.stopWorker()
	s.startWorkerWith(worker.Deps{Log: s.log,
		MCPServers: []mcp.Server{{Name: "tracker", URL: trackerHTTP.URL + "/mcp"}, {Name: "fragile", URL: fragileHTTP.URL + "/mcp"}}})

	// The server dies while the slow write is in flight.
	go func() {
		select {
		case <-fragile.Started:
			fragileHTTP.CloseClientConnections()
			fragileHTTP.Close()
		case <-time.After(3 * time.Minute):
		}
	}()

	const text = "<@ULUCY> add milk to the tracker"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-mcp", text, ts, "", human)

	var value string
	s.waitFor("the approval prompt", 90*time.Second, func() bool { value = s.approvalValue(ts); return value != "" })
	if tracker.Calls("add_item") != 0 {
		t.Fatal("add_item ran before it was approved")
	}
	s.click(human, value, "lucy_approve")
	s.waitFor("the answer", 120*time.Second, func() bool { return s.answered(ts, "Summary:") })

	for _, want := range []string{"mcp__tracker__echo", "mcp__tracker__add_item", "mcp__fragile__slow_write"} {
		if !slices.Contains(offered, want) {
			t.Errorf("the model was not offered %s; offered %v", want, offered)
		}
	}
	if got := tracker.Calls("echo"); got != 2 {
		t.Errorf("echo ran %d times, want 2 (a transient failure, then the retry)", got)
	}
	if got := tracker.Calls("add_item"); got != 1 {
		t.Errorf("add_item ran %d times, want exactly once", got)
	}
	if got := fragile.Calls("slow_write"); got != 1 {
		t.Errorf("slow_write ran %d times, want once (not retried: it is not read-only)", got)
	}
	var answer string
	for _, m := range s.botMessages(ts) {
		if strings.Contains(m.Text, "Summary:") {
			answer = m.Text
		}
	}
	for _, want := range []string{"echo: hello", "added milk", "may or may not have completed"} {
		if !strings.Contains(answer, want) {
			t.Errorf("the answer %q lacks %q", answer, want)
		}
	}
}

// "cancel that" while an MCP tool runs reaches the server within about a second: the tool's
// activity hears of the cancel at its next heartbeat (Temporal tells an activity only in a heartbeat's
// answer), the MCP client then sends notifications/cancelled, and the server's handler stops.
func TestCancelReachesMCPServerAtOnce(t *testing.T) {
	srv := mcptest.New(mcptest.Normal, "")
	h := httptest.NewServer(mcptest.Handler(srv))
	t.Cleanup(h.Close)
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("w1", "mcp__tracker__slow", `{"wait":true}`)}}
	})
	s.stopWorker()
	s.startWorkerWith(worker.Deps{Log: s.log, MCPServers: []mcp.Server{{Name: "tracker", URL: h.URL + "/mcp"}}})

	const text = "<@ULUCY> wait on the tracker"
	ts := s.say(text, "")
	s.event("app_mention", "Ev-wait", text, ts, "", human)
	select {
	case <-srv.Started:
	case <-time.After(90 * time.Second):
		t.Fatal("the slow MCP call never started")
	}
	// The call has run a while: a cancel right at its start would ride on its first heartbeat.
	time.Sleep(2500 * time.Millisecond)
	cts := s.say("<@ULUCY> cancel that", ts)
	start := time.Now()
	s.event("message", "Ev-cancel", "<@ULUCY> cancel that", cts, ts, human)
	var latency time.Duration
	select {
	case at := <-srv.Cancelled:
		latency = at.Sub(start)
	case <-time.After(30 * time.Second):
		t.Fatal("the MCP server never saw the cancellation")
	}
	fmt.Printf("cancel latency (MCP call in flight): %s from \"cancel that\" to the server\n", latency.Round(time.Millisecond))
	// About a second: the signal's hand-off and the run's turn take some tenths, the heartbeat at most a
	// second (activities.HeartbeatEvery, the worker's MaxHeartbeatThrottleInterval). A loaded CI
	// machine gets slack; the old path took the heartbeat timeout's 8 s throttle.
	if latency > 3*time.Second {
		t.Errorf("the cancellation reached the MCP server after %s, want about a second", latency)
	}
	s.waitFor("the stop mark", 30*time.Second, func() bool { return s.answered(ts, "Stopped") })
}
