package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// The benchmarks of docs/benchmarks.md (package e2e, on the embedded server `lucy dev` runs) on the
// cluster instead: PostgreSQL, the Temporal server process, two workers and a gateway, all on this
// machine's CPUs. Like those, they print figures and never fail on speed.

// loopTurn reads a request of the agent loop: which turn it is (the assistant replies so far), or,
// for the supervisor's and a summary's calls, the reply to give (as package e2e's loopTurn).
func loopTurn(req fakellm.Request) (turn int, side *fakellm.Reply) {
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" && strings.Contains(req.Messages[0].Text(), "You supervise") {
		return 0, &fakellm.Reply{Content: "C"}
	}
	if len(req.Tools) == 0 {
		return 0, &fakellm.Reply{Content: "summary"}
	}
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	return turn, nil
}

// turnClock answers a run of `turns` turns, one local tool call per turn, at once, and records when
// the loop's calls arrive (package e2e's turnClock with an instant model).
type turnClock struct {
	turns       int
	mu          sync.Mutex
	calls       int
	first, last time.Time
}

func (c *turnClock) handle(_ int, req fakellm.Request) fakellm.Reply {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	turn, side := loopTurn(req)
	if side != nil {
		return *side
	}
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	if turn >= c.turns-1 {
		return fakellm.Reply{Content: "All done: nothing needs your attention."}
	}
	name, args := []string{"lucy_current_time", "lucy_list_files", "lucy_read_file"}[turn%3], `{}`
	switch name {
	case "lucy_current_time":
		args = `{"timezone":"Europe/Paris"}`
	case "lucy_read_file":
		args = `{"path":"notes.md"}`
	}
	return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", turn), name, args)}}
}

// BenchmarkClusterTurnOverhead is the orchestration time of one turn (a model call and one tool
// call) of a 50-turn run, with a model and tools that answer at once: package e2e's
// BenchmarkTurnOverhead on the cluster.
func BenchmarkClusterTurnOverhead(b *testing.B) {
	for range b.N {
		clock := &turnClock{turns: 50}
		c := startCluster(b, clock.handle)
		dir := filepath.Join(c.dataDir, "workspaces", team)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte(strings.Repeat("note line\n", 200)), 0o644); err != nil {
			b.Fatal(err)
		}
		root := c.say("<@ULUCY> check the time, the files and the notes, one per step")
		c.mustEvent(b, "Ev-bench", root)
		waitFor(b, "the run's answer", 5*time.Minute, func() bool { return c.answers(root, "All done") == 1 })
		clock.mu.Lock()
		wall := clock.last.Sub(clock.first)
		perTurn := wall / time.Duration(clock.turns-1)
		calls := clock.calls
		clock.mu.Unlock()
		b.Logf("%d turns in %s: %.1f ms of orchestration per turn (%d model calls)", clock.turns, wall.Round(time.Millisecond), ms(perTurn), calls)
		b.ReportMetric(ms(perTurn), "ms/turn")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
