package e2e

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakellm"
)

// benchLong makes the benchmarks that take minutes (ack latency at 100 events/s for 60 s, 1,000 idle
// lanes) run at full size; without it they run a shorter version and say so in their output.
var benchLong = flag.Bool("bench-long", false, "run the long benchmarks at full size")

// turnClock is a fake model for a run of `turns` turns, one local tool call per turn, that answers
// after `latency`, and records when the loop's calls arrive.
type turnClock struct {
	turns   int
	latency time.Duration
	mu      sync.Mutex
	calls   int // every model request (the loop's, the supervisor's, summaries)
	first   time.Time
	last    time.Time
}

func (c *turnClock) handle(n int, req fakellm.Request) fakellm.Reply {
	now := time.Now()
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	time.Sleep(c.latency)
	sys := ""
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" {
		sys = req.Messages[0].Text()
	}
	if strings.Contains(sys, "You supervise") {
		return fakellm.Reply{Content: "C"}
	}
	if len(req.Tools) == 0 {
		return fakellm.Reply{Content: "summary"}
	}
	turn := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			turn++
		}
	}
	c.mu.Lock()
	if c.first.IsZero() {
		c.first = now
	}
	c.last = now
	c.mu.Unlock()
	if turn >= c.turns-1 {
		return fakellm.Reply{Content: "All done: nothing needs your attention."}
	}
	name := []string{"lucy_current_time", "lucy_list_files", "lucy_read_file"}[turn%3]
	args := `{}`
	switch name {
	case "lucy_current_time":
		args = `{"timezone":"Europe/Paris"}`
	case "lucy_read_file":
		args = `{"path":"notes.md"}`
	}
	return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call(fmt.Sprint("c", turn), name, args)}}
}

// runTurns runs one conversation of c.turns turns to its end and returns the orchestration time per
// turn: the wall time from the loop's first model call to its last, less the time the fake model
// took for every call in between, divided by the turns between them.
func runTurns(b *testing.B, c *turnClock) (perTurn time.Duration, wall time.Duration) {
	s := newStackTB(b, c.handle)
	s.seedFile(b, "notes.md", strings.Repeat("note line\n", 200))
	ts := s.say("<@ULUCY> check the time, the files and the notes, one per step", "")
	s.event("app_mention", "Ev-bench", "<@ULUCY> check the time, the files and the notes, one per step", ts, "", human)
	s.waitFor("the run", 5*time.Minute, func() bool {
		st, err := s.laneStatus(ts)
		return err == nil && st.Runs == 1 && !st.Busy
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	wall = c.last.Sub(c.first)
	// Calls between the loop's first and last: all but the loop's first; each took `latency`.
	model := time.Duration(c.calls-1) * c.latency
	return (wall - model) / time.Duration(c.turns-1), wall
}

// BenchmarkTurnOverhead is the orchestration time of one turn (a model call and one tool call) of a
// 50-turn run on the embedded server, with a model and tools that answer at once.
func BenchmarkTurnOverhead(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c := &turnClock{turns: 50}
		perTurn, wall := runTurns(b, c)
		b.Logf("%d turns in %s: %.1f ms of orchestration per turn (%d model calls)", c.turns, wall.Round(time.Millisecond), ms(perTurn), c.calls)
		b.ReportMetric(ms(perTurn), "ms/turn")
	}
}

// BenchmarkTurnOverheadSlowModel is the same with a model that takes 500 ms per call, as real ones
// do at best: the share of a turn that is Lucy's own.
func BenchmarkTurnOverheadSlowModel(b *testing.B) {
	turns := 20
	if *benchLong {
		turns = 50
	}
	for i := 0; i < b.N; i++ {
		c := &turnClock{turns: turns, latency: 500 * time.Millisecond}
		perTurn, wall := runTurns(b, c)
		turn := wall / time.Duration(c.turns-1)
		b.Logf("%d turns in %s with a 500 ms model: %.1f ms of orchestration per turn, %.1f%% of a %.0f ms turn",
			c.turns, wall.Round(time.Millisecond), ms(perTurn), 100*float64(perTurn)/float64(turn), ms(turn))
		b.ReportMetric(ms(perTurn), "ms/turn")
		b.ReportMetric(100*float64(perTurn)/float64(turn), "%overhead")
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// seedFile writes a file into the team's workspace.
func (s *stack) seedFile(tb testing.TB, name, content string) {
	tb.Helper()
	dir := filepath.Join(s.cfg.DataDir, "workspaces", team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}
