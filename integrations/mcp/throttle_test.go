package mcp_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/tools"
)

// A remote server's 429 or 503 with Retry-After on a tool call is a *tools.Throttled with the wait
// it asked for, whose call never reached the tool; the session stays (the next call works). A
// POST is not a safe method, so the throttle is not Safe: the run repeats only read-only tools.
func TestHTTPServerRateLimits(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		ts := mcptest.New(mcptest.Normal, "")
		front := &mcptest.RateLimit{Next: mcptest.Handler(ts), Tool: "echo", Status: status, RetryAfter: "3"}
		front.Refuse.Store(1)
		h := httptest.NewServer(front)
		t.Cleanup(h.Close)
		s := newSource(t, mcp.Deps{Servers: []mcp.Server{{Name: "remote", URL: h.URL + "/mcp"}}})
		list, _ := s.Tools(ctx(t), team)
		echo := byName(list)["mcp__remote__echo"]
		_, err := call(t, echo, `{"text":"x"}`)
		var th *tools.Throttled
		if !errors.As(err, &th) || th.Wait != 3*time.Second || th.Safe || th.Service != "the MCP server remote" || th.Tool != echo.Spec.Name {
			t.Fatalf("%d: %v %+v", status, err, th)
		}
		if ts.Calls("echo") != 0 || front.Hits.Load() != 1 {
			t.Fatalf("%d: the tool ran %d times, %d requests", status, ts.Calls("echo"), front.Hits.Load())
		}
		if out, err := call(t, echo, `{"text":"x"}`); err != nil || out.IsError || ts.Calls("echo") != 1 {
			t.Fatalf("%d: the next call: %+v %v", status, out, err)
		}
	}
}

// A server whose record says maxConcurrent N gets at most N calls at once from this worker, per
// team: N+1 parallel calls of a tool that holds until released start N; the last starts once one
// ends.
func TestMaxConcurrentCalls(t *testing.T) {
	ts := mcptest.New(mcptest.Normal, "")
	h := httptest.NewServer(mcptest.Handler(ts))
	t.Cleanup(h.Close)
	const n = 2
	s := newSource(t, mcp.Deps{Servers: []mcp.Server{{Name: "remote", URL: h.URL + "/mcp", MaxConcurrent: n}}})
	list, _ := s.Tools(ctx(t), team)
	slow := byName(list)["mcp__remote__slow"]
	var wg sync.WaitGroup
	for range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if out, err := call(t, slow, `{"wait": true}`); err != nil || out.Content != "released" {
				t.Errorf("%+v %v", out, err)
			}
		}()
	}
	for range n {
		select {
		case <-ts.Started:
		case <-time.After(10 * time.Second):
			t.Fatal("the first calls did not start")
		}
	}
	select {
	case <-ts.Started:
		t.Fatalf("call %d started while %d ran", n+1, n)
	case <-time.After(300 * time.Millisecond):
	}
	close(ts.Release)
	wg.Wait()
	if got := ts.Calls("slow"); got != n+1 {
		t.Fatalf("%d calls", got)
	}
}

// The operator's file takes maxConcurrent (Lucy's own field; other clients ignore it) and refuses a
// negative one with what to write instead.
func TestParseConfigMaxConcurrent(t *testing.T) {
	servers, err := mcp.ParseConfig([]byte(`{"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp", "maxConcurrent": 4}}}`))
	if err != nil || len(servers) != 1 || servers[0].MaxConcurrent != 4 {
		t.Fatalf("%+v %v", servers, err)
	}
	if _, err := mcp.ParseConfig([]byte(`{"mcpServers": {"linear": {"url": "https://mcp.linear.app/mcp", "maxConcurrent": -1}}}`)); err == nil ||
		!strings.Contains(err.Error(), "maxConcurrent") {
		t.Fatalf("a negative maxConcurrent: %v", err)
	}
}
