package e2e

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/workflows"
)

// benchLong makes the benchmarks that take minutes (ack latency at 100 events/s for 60 s, 1,000 idle
// lanes) run at full size; without it they run a shorter version and say so in their output.
var benchLong = flag.Bool("bench-long", false, "run the long benchmarks at full size")

// newBenchStack is the stack every benchmark measures: the server `lucy dev` runs (package devserver,
// its SQLite files on this machine's disk), not the tests' in-memory one. The benchmarks measure
// Lucy, so the local workspace's rate tiers are off: at 20 new conversations a second in one
// workspace Slack's Tier 2 would let about 20 streams a minute start, and the rest would be answered
// by post-and-update (docs/reliability.md, Slack's stream limits).
func newBenchStack(b *testing.B, llm fakellm.Handler) *stack {
	return newStackOpts(b, llm, stackOptions{devServer: true, noSlackLimits: true})
}

// turnClock is a fake model for a run of `turns` turns, one local tool call per turn, that answers
// after `latency`, and records when the loop's calls arrive and how long the model took on each.
type turnClock struct {
	turns   int
	latency time.Duration
	mu      sync.Mutex
	calls   int             // every model request (the loop's, the supervisor's, summaries)
	arrived []time.Time     // when each request reached the fake model
	took    []time.Duration // the model's time on each: from its arrival to its reply
	first   time.Time
	last    time.Time
}

func (c *turnClock) handle(n int, req fakellm.Request) fakellm.Reply {
	now := req.Received
	time.Sleep(c.latency)
	// The model's time is from the request's arrival (before the fake read and parsed it) to its
	// reply: what a provider spends on a call, a sleep that wakes late included. The rest of a
	// turn is Lucy's.
	took := time.Since(now)
	c.mu.Lock()
	c.calls++
	c.arrived = append(c.arrived, now)
	c.took = append(c.took, took)
	c.mu.Unlock()
	turn, side := loopTurn(req)
	if side != nil {
		return *side
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

// runTurns runs one conversation of c.turns turns to its end for each clock, one after the other on
// one stack, and returns each one's orchestration time per turn: the wall time from the loop's first
// model call to its last, less the time the fake model took for every call in between, divided by the
// turns between them.
func runTurns(b *testing.B, clocks ...*turnClock) (perTurn, wall []time.Duration) {
	var current atomic.Pointer[turnClock]
	s := newBenchStack(b, func(n int, req fakellm.Request) fakellm.Reply { return current.Load().handle(n, req) })
	s.seedFile(b, "notes.md", strings.Repeat("note line\n", 200))
	for i, c := range clocks {
		current.Store(c)
		text := fmt.Sprintf("<@ULUCY> check the time, the files and the notes, one per step (%d)", i+1)
		ts := s.say(text, "")
		s.event("app_mention", fmt.Sprintf("Ev-bench-%d", i), text, ts, "", human)
		s.waitFor("the run", 5*time.Minute, func() bool {
			st, err := s.laneStatus(ts)
			return err == nil && st.Runs == 1 && !st.Busy
		})
		c.mu.Lock()
		w := c.last.Sub(c.first)
		// The model's time on the calls that started between the loop's first call and its last (the
		// loop's own, and any other the run made meanwhile); not the memory step's, which comes after
		// the answer.
		var model time.Duration
		for k, t := range c.arrived {
			if !t.Before(c.first) && t.Before(c.last) {
				model += c.took[k]
			}
		}
		c.mu.Unlock()
		perTurn, wall = append(perTurn, (w-model)/time.Duration(c.turns-1)), append(wall, w)
	}
	return perTurn, wall
}

// BenchmarkTurnOverhead is the orchestration time of one turn (a model call and one tool call) of a
// 50-turn run on the embedded server, with a model and tools that answer at once: the median of five
// such runs, one after the other (one run is half a second: a garbage collection or a busy moment of
// the machine moves it by a millisecond a turn).
func BenchmarkTurnOverhead(b *testing.B) {
	for i := 0; i < b.N; i++ {
		clocks := make([]*turnClock, 5)
		for k := range clocks {
			clocks[k] = &turnClock{turns: 50}
		}
		perTurn, wall := runTurns(b, clocks...)
		var runs []string
		for k := range perTurn {
			runs = append(runs, fmt.Sprintf("%.1f ms in %s", ms(perTurn[k]), wall[k].Round(time.Millisecond)))
		}
		sorted := slices.Clone(perTurn)
		slices.Sort(sorted)
		median := sorted[len(sorted)/2]
		b.Logf("%d runs of %d turns: %.1f ms of orchestration per turn, the median (each run: %s; %d model calls in the first)",
			len(clocks), clocks[0].turns, ms(median), strings.Join(runs, ", "), clocks[0].calls)
		b.ReportMetric(ms(median), "ms/turn")
	}
}

// BenchmarkTurnOverheadSlowModel is the same with a model that takes 500 ms per call, as real ones
// do at best: the share of a turn that is Lucy's own. With -bench-long, the median of three runs of
// 50 turns (one run moved between 10 and 23 ms a turn over four runs of the task: the machine idles
// half a second between turns, and how fast it wakes varies); else one run of 20.
func BenchmarkTurnOverheadSlowModel(b *testing.B) {
	turns, runs := 20, 1
	if *benchLong {
		turns, runs = 50, 3
	}
	for i := 0; i < b.N; i++ {
		clocks := make([]*turnClock, runs)
		for k := range clocks {
			clocks[k] = &turnClock{turns: turns, latency: 500 * time.Millisecond}
		}
		perTurn, wall := runTurns(b, clocks...)
		shares := make([]float64, runs)
		var each []string
		for k := range clocks {
			turn := wall[k] / time.Duration(turns-1)
			shares[k] = 100 * float64(perTurn[k]) / float64(turn)
			each = append(each, fmt.Sprintf("%.1f ms, %.1f%% of a %.0f ms turn", ms(perTurn[k]), shares[k], ms(turn)))
		}
		med := slices.Clone(perTurn)
		slices.Sort(med)
		share := slices.Clone(shares)
		slices.Sort(share)
		b.Logf("%d run(s) of %d turns with a 500 ms model: %.1f ms of orchestration per turn, %.1f%% of a turn, the medians (each run: %s)",
			runs, turns, ms(med[runs/2]), share[runs/2], strings.Join(each, "; "))
		b.ReportMetric(ms(med[runs/2]), "ms/turn")
		b.ReportMetric(share[runs/2], "%overhead")
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

// load sends `rate` new conversations a second for `d` (each a message in the local workspace and
// its signed app_mention to the gateway) and returns each event's acknowledgement time and thread.
func (s *stack) load(b *testing.B, rate int, d time.Duration) (acks []time.Duration, threads []string) {
	acks, threads, _ = s.loadTimed(b, rate, d)
	return acks, threads
}

// loadTimed is load that also returns when each event was sent to the gateway.
func (s *stack) loadTimed(b *testing.B, rate int, d time.Duration) (acks []time.Duration, threads []string, sent []time.Time) {
	return s.loadN(b, "load", rate, int(d.Seconds()*float64(rate)))
}

// watchOutbox samples how many acknowledged messages wait in the outbox every 100 ms until the
// benchmark ends; the function it returns gives the most seen so far.
func (s *stack) watchOutbox() (most func() int) {
	var mu sync.Mutex
	top := 0
	stop := make(chan struct{})
	s.tb.Cleanup(func() { close(stop) })
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				n := s.outbox.Pending()
				mu.Lock()
				top = max(top, n)
				mu.Unlock()
			}
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return top
	}
}

// outboxEmpty waits (up to limit) until the outbox has handed off everything, and says how long it took.
func (s *stack) outboxEmpty(limit time.Duration) time.Duration {
	start := time.Now()
	for s.outbox.Pending() > 0 && time.Since(start) < limit {
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}

// answeredOnce waits until every thread has Lucy's answer and returns how many threads got none
// (lost), how many got more than one (duplicated), and when the last answer reached Slack (the
// deadline, if some never did).
func (s *stack) answeredOnce(threads []string, timeout time.Duration) (lost, duplicated int, last time.Time) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		at, missing := s.answers.times(threads)
		if missing == 0 {
			last = time.Now() // no threads at all
			if len(at) > 0 {
				last = slices.MaxFunc(at, time.Time.Compare)
			}
			break
		}
		select {
		case <-s.answers.changed:
			continue
		case <-deadline.C:
			last = time.Now()
		}
		break
	}
	for _, ts := range threads {
		n := 0
		for _, m := range s.botMessages(ts) {
			n += strings.Count(m.Text, benchAnswer)
		}
		if n == 0 {
			lost++
		}
		if n > 1 {
			duplicated++
		}
	}
	return lost, duplicated, last
}

func instantAnswer(n int, req fakellm.Request) fakellm.Reply {
	return fakellm.Reply{Content: benchAnswer + "."}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

// BenchmarkConversationsPerSecond: 300 new conversations sent as fast as the gateway takes them
// (at 200 a second), each answered by an instant model: conversations answered end to end per second.
func BenchmarkConversationsPerSecond(b *testing.B) {
	for i := 0; i < b.N; i++ {
		s := newBenchStack(b, instantAnswer)
		start := time.Now()
		_, threads := s.load(b, 200, 1500*time.Millisecond)
		lost, dup, last := s.answeredOnce(threads, 10*time.Minute)
		rate := float64(len(threads)) / last.Sub(start).Seconds()
		b.Logf("%d conversations answered in %.1f s: %.1f a second end to end; %d lost, %d duplicated", len(threads), last.Sub(start).Seconds(), rate, lost, dup)
		b.ReportMetric(rate, "conversations/s")
	}
}

// BenchmarkAckLatency: new conversations at 100 events a second (5 minutes with -bench-long, else
// 10 s); every event's acknowledgement time (what Slack waits for: the durable hand-off to
// Temporal), its p99 in each 10 s window and the worst of them (the target holds in every window,
// however large the backlog of runs grows), and then every conversation answered exactly once.
func BenchmarkAckLatency(b *testing.B) {
	d := 10 * time.Second
	if *benchLong {
		d = 5 * time.Minute
	}
	for i := 0; i < b.N; i++ {
		s := newBenchStack(b, instantAnswer)
		start := time.Now()
		most := s.watchOutbox()
		acks, threads := s.load(b, 100, d)
		b.Logf("hand-off outbox: at most %d acknowledged messages waiting for their hand-off (sampled every 100 ms), %d at the end of the load; empty %.1f s later",
			most(), s.outbox.Pending(), s.outboxEmpty(time.Minute).Seconds())
		// The machine answers about a fifth of what comes in: the 5-minute run leaves a backlog that
		// takes longer than the benchmark should to drain. After the wait, a thread without its answer
		// is lost only if its lane holds no hand-off; one whose lane is running is queued: acknowledged,
		// durable in Temporal, not answered yet.
		wait := 10 * time.Minute
		if *benchLong {
			wait = 3 * time.Minute
		}
		unanswered, dup, last := s.answeredOnce(threads, wait)
		queued, lost := 0, 0
		if unanswered > 0 {
			var late int
			queued, late, lost = s.queuedLanes(b, threads)
			unanswered -= late
		}
		b.Logf("%d events at 100/s for %s: ack p50 %.1f ms, p99 %.1f ms, max %.1f ms; %d lost, %d duplicated; %d answered %.1f s after the first event, %d still queued in their lanes",
			len(acks), d, ms(percentile(acks, .5)), ms(percentile(acks, .99)), ms(percentile(acks, 1)), lost, dup, len(threads)-unanswered, last.Sub(start).Seconds(), queued)
		// The backlog grows all along (the machine answers a fifth of what comes in): whether the
		// acknowledgement slows with it shows in each 10 s of the load.
		var windows []string
		var worst time.Duration
		for k := 0; k < len(acks); k += 1000 {
			p := percentile(acks[k:min(k+1000, len(acks))], .99)
			worst = max(worst, p)
			windows = append(windows, fmt.Sprintf("%.0f", ms(p)))
		}
		b.Logf("ack p99 in each 10 s, in ms: %s", strings.Join(windows, ", "))
		// Of which the hand-off itself (with the outbox, its insert); the rest is the HTTP request
		// and the gateway's own work, waiting for a CPU among the runs' work on the same cores.
		handoffs := s.handoffs.durations()
		windows = windows[:0]
		for k := 0; k < len(handoffs); k += 1000 {
			windows = append(windows, fmt.Sprintf("%.0f", ms(percentile(handoffs[k:min(k+1000, len(handoffs))], .99))))
		}
		b.Logf("of which the hand-off (the outbox's insert), p99 in each 10 s, in ms: %s", strings.Join(windows, ", "))
		b.ReportMetric(ms(percentile(acks, .5)), "ack-p50-ms")
		b.ReportMetric(ms(percentile(acks, .99)), "ack-p99-ms")
		b.ReportMetric(ms(worst), "ack-p99-worst-10s-ms")
		b.ReportMetric(float64(lost), "lost")
		b.ReportMetric(float64(dup), "duplicated")
		b.ReportMetric(float64(queued), "queued")
	}
}

// queuedLanes sorts the threads without an answer at the end of the wait: answered since (late:
// the runs go on while this pass reads 25,000 lanes), queued (the lane is running with the message
// handed to it: what an acknowledged event becomes while the runs ahead of it are answered), or lost.
func (s *stack) queuedLanes(b *testing.B, threads []string) (queued, late, lost int) {
	for _, ts := range threads {
		if s.answered(ts, "Answer to question") {
			late++
			continue
		}
		// Under the backlog a describe can take long: one that fails is retried with more time and,
		// failing again, logged, so that a thread counted lost is one whose lane was seen not running.
		var status enumspb.WorkflowExecutionStatus
		var err error
		for _, limit := range []time.Duration{10 * time.Second, time.Minute} {
			ctx, cancel := context.WithTimeout(context.Background(), limit)
			d, derr := s.client.DescribeWorkflowExecution(ctx, workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: ts}), "")
			cancel()
			if err = derr; err == nil {
				status = d.GetWorkflowExecutionInfo().GetStatus()
				break
			}
		}
		switch {
		case err != nil:
			lost++
			b.Logf("thread %s: its lane could not be described (%v): counted lost", ts, err)
		case status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			queued++
		default:
			lost++
			b.Logf("thread %s: no answer and its lane is %s: counted lost", ts, status)
		}
	}
	return queued, late, lost
}

// BenchmarkIdleLanesAndActiveRuns: after 100 warm-up conversations, 1,000 conversations answered and
// left idle (200 without -bench-long), then 100 runs active at once (their model calls held open):
// the memory each adds to the one process that holds the server, the worker and the gateway, after
// a GC.
func BenchmarkIdleLanesAndActiveRuns(b *testing.B) {
	idle := 200
	if *benchLong {
		idle = 1000
	}
	defer func(rate int) { runtime.MemProfileRate = rate }(runtime.MemProfileRate)
	runtime.MemProfileRate = heapProfileRate
	for i := 0; i < b.N; i++ {
		release := make(chan struct{})
		var holding atomic.Bool
		s := newBenchStack(b, func(n int, req fakellm.Request) fakellm.Reply {
			if holding.Load() {
				return fakellm.Reply{Content: benchAnswer + ".", Hold: release}
			}
			return fakellm.Reply{Content: benchAnswer + "."}
		})
		start := heapMB()
		// A warm-up of 100 conversations first: what the first ones cost once (the server's and the
		// SDK's lazily built tables, SQLite's page cache, gRPC's buffers) is no idle lane's.
		_, warm := s.load(b, 100, time.Second)
		if lost, _, _ := s.answeredOnce(warm, 10*time.Minute); lost > 0 {
			b.Fatalf("%d of %d warm-up conversations unanswered", lost, len(warm))
		}
		s.runsClosed(b)
		base, baseOwners := heapMB(), heapByOwner(b)
		_, threads := s.load(b, 100, time.Duration(idle)*10*time.Millisecond)
		if lost, _, _ := s.answeredOnce(threads, 10*time.Minute); lost > 0 {
			b.Fatalf("%d of %d conversations unanswered", lost, len(threads))
		}
		// Idle: the runs have answered, and also taken their notes and closed.
		s.runsClosed(b)
		idleMB, idleG := heapMB(), runtime.NumGoroutine()
		// The process's heap in use, shared out as the profile's live bytes are: the worker's part
		// is what a worker process holds for its idle lanes (the server and the fakes are elsewhere
		// in a deployment).
		owners := heapByOwner(b).minus(baseOwners)
		perLane := func(part float64) float64 { return (idleMB - base) * 1024 / float64(idle) * part / owners.total() }
		holding.Store(true)
		before := len(s.llm.Requests())
		_, active := s.load(b, 100, time.Second)
		s.waitFor("100 runs in their model call", 2*time.Minute, func() bool { return len(s.llm.Requests())-before >= len(active) })
		activeMB, activeG := heapMB(), runtime.NumGoroutine()
		close(release)
		if lost, _, _ := s.answeredOnce(active, 5*time.Minute); lost > 0 {
			b.Errorf("%d of the active runs unanswered", lost)
		}
		// `go tool task bench` runs each benchmark in a process of its own; run after others in one
		// process, "at start" also holds what they left (their servers' SQLite databases, the SDK's
		// process-wide workflow cache): the figures are what this one added.
		b.Logf("heap in use: %.0f MB at start, %.0f MB after %d warm-up conversations; +%.0f MB with %d more idle lanes (%.0f KB each, %d goroutines); +%.0f MB more with %d runs active at once (%d goroutines)",
			start, base, len(warm), idleMB-base, idle, (idleMB-base)*1024/float64(idle), idleG, activeMB-idleMB, len(active), activeG)
		live := func(part float64) float64 { return part / 1024 / float64(idle) }
		b.Logf("an idle lane's %.0f KB by owner, in the proportions of the heap profile's live bytes: the worker %.0f KB, the embedded Temporal server %.0f KB, the fake Slack and model %.0f KB (live bytes alone, without the heap's fragmentation: %.0f, %.0f and %.0f KB)",
			(idleMB-base)*1024/float64(idle), perLane(owners.worker), perLane(owners.server), perLane(owners.fakes), live(owners.worker), live(owners.server), live(owners.fakes))
		b.ReportMetric((idleMB-base)*1024/float64(idle), "KB/idle-lane")
		b.ReportMetric(perLane(owners.worker), "worker-KB/idle-lane")
		b.ReportMetric(activeMB-idleMB, "MB/100-active-runs")
	}
}

// runsClosed waits until no agent run is open: after its answer a run still takes its notes (the
// memory step) and closes, and until then its lane is not idle.
func (s *stack) runsClosed(b *testing.B) {
	query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Running'", workflows.AgentRunWorkflowName)
	s.waitFor("every run to close", 5*time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := s.client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
		return err == nil && resp.GetCount() == 0
	})
}

func heapMB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// questionNumber finds "question number N" in a loop request's last user message.
var questionNumber = regexp.MustCompile(`question number (\d+)`)

// firstTaskWait says when a workflow's first workflow task was scheduled and started, after since.
func (s *stack) firstTaskWait(id string, since time.Time) string {
	var scheduled, started time.Time
	it := s.client.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() && started.IsZero() {
		ev, err := it.Next()
		if err != nil {
			return "its lane's history: " + err.Error()
		}
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
			scheduled = ev.GetEventTime().AsTime()
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			started = ev.GetEventTime().AsTime()
		}
	}
	return fmt.Sprintf("its lane's first workflow task scheduled at +%.0f ms, started at +%.0f ms", ms(scheduled.Sub(since)), ms(started.Sub(since)))
}

// BenchmarkFirstSignOfLife: new conversations at 20 a second (10 s; 30 s with -bench-long), each
// answered by a model that streams as a real one writes, 4 characters every 20 ms (about 50 tokens a
// second). Two figures, p99 over the conversations:
//   - first sign of life: from the event sent to the gateway to the first thing the person sees in
//     the thread (the status line or a message of Lucy's);
//   - first token visible: from the model's first streamed characters leaving the fake provider to
//     the first streamed text in the thread.
func BenchmarkFirstSignOfLife(b *testing.B) {
	d := 10 * time.Second
	if *benchLong {
		d = 30 * time.Second
	}
	const rate, chunk = 20, 4
	answer := "Answer to question, written as a model writes: " + strings.Repeat("the rest of the answer follows. ", 16)
	for i := 0; i < b.N; i++ {
		n := int(d.Seconds()) * rate
		var mu sync.Mutex
		firstMessage := map[string]time.Time{} // thread → Lucy's first message in it
		firstText := map[string]time.Time{}    // thread → the first streamed text visible
		tokenAt := make([]time.Time, n)        // conversation → its first streamed characters sent
		seen := func(m localslack.Message) {
			if m.BotID == "" || m.ThreadTS == "" {
				return
			}
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if _, ok := firstMessage[m.ThreadTS]; !ok {
				firstMessage[m.ThreadTS] = now
			}
			if _, ok := firstText[m.ThreadTS]; !ok && m.Streaming && strings.Contains(m.Text, "Answer to question") {
				firstText[m.ThreadTS] = now
			}
		}
		s := newStackOpts(b, func(_ int, req fakellm.Request) fakellm.Reply {
			if fakellm.IsMemoryStep(req) {
				return fakellm.Reply{Content: "[]"}
			}
			if _, side := loopTurn(req); side != nil {
				return *side
			}
			k := -1
			for _, m := range req.Messages {
				if m.Role == "user" {
					if g := questionNumber.FindStringSubmatch(m.Text()); g != nil {
						k, _ = strconv.Atoi(g[1])
					}
				}
			}
			if k < 0 || k >= n {
				return fakellm.Reply{Content: answer}
			}
			// The first delta reaches StallAt: Stalled says when it left; Stall is open already.
			stall, stalled := make(chan struct{}), make(chan struct{})
			close(stall)
			go func() {
				<-stalled
				mu.Lock()
				if tokenAt[k].IsZero() {
					tokenAt[k] = time.Now()
				}
				mu.Unlock()
			}()
			return fakellm.Reply{Content: answer, ChunkChars: chunk, ChunkEvery: 20 * time.Millisecond, StallAt: chunk, Stall: stall, Stalled: stalled}
		}, stackOptions{devServer: true, onSlackMessage: seen, onSlackEdit: seen, noSlackLimits: true})
		_, threads, sent := s.loadTimed(b, rate, d)
		lost, dup, _ := s.answeredOnce(threads, 10*time.Minute)
		var signs, visible []time.Duration
		noSign, noText := 0, 0
		mu.Lock()
		for k, ts := range threads {
			first, ok := firstMessage[ts]
			if st := s.slack.StatusHistory(channel, ts); len(st) > 0 && (!ok || st[0].At.Before(first)) {
				first, ok = st[0].At, true
			}
			if !ok {
				noSign++
			} else {
				signs = append(signs, first.Sub(sent[k]))
			}
			if t, ok := firstText[ts]; ok && !tokenAt[k].IsZero() {
				visible = append(visible, t.Sub(tokenAt[k]))
			} else {
				noText++
			}
		}
		mu.Unlock()
		// Where the slowest waited: the lane's first workflow task, from scheduled to started, is
		// the queue a new thread waits in before anything of Lucy's can show.
		slowest := make([]int, len(threads))
		for k := range slowest {
			slowest[k] = k
		}
		signOf := func(k int) time.Duration {
			first, ok := firstMessage[threads[k]]
			if st := s.slack.StatusHistory(channel, threads[k]); len(st) > 0 && (!ok || st[0].At.Before(first)) {
				first, ok = st[0].At, true
			}
			if !ok {
				return time.Hour
			}
			return first.Sub(sent[k])
		}
		slices.SortFunc(slowest, func(x, y int) int { return cmp.Compare(signOf(y), signOf(x)) })
		for _, k := range slowest[:min(3, len(slowest))] {
			b.Logf("slow: first sign %.0f ms after the event; %s", ms(signOf(k)), s.firstTaskWait(workflows.LaneID(workflows.LaneKey{Team: team, Channel: channel, ThreadTS: threads[k]}), sent[k]))
		}
		if len(signs) == 0 || len(visible) == 0 {
			b.Fatalf("%d of %d conversations showed no sign of life, %d no streamed text", noSign, len(threads), noText)
		}
		b.Logf("%d conversations at %d/s: first sign of life p50 %.0f ms, p99 %.0f ms, max %.0f ms; first streamed token visible p50 %.0f ms, p99 %.0f ms, max %.0f ms; %d without a sign, %d without streamed text; %d lost, %d duplicated",
			len(threads), rate, ms(percentile(signs, .5)), ms(percentile(signs, .99)), ms(percentile(signs, 1)),
			ms(percentile(visible, .5)), ms(percentile(visible, .99)), ms(percentile(visible, 1)), noSign, noText, lost, dup)
		b.ReportMetric(ms(percentile(signs, .99)), "sign-p99-ms")
		b.ReportMetric(ms(percentile(visible, .99)), "token-visible-p99-ms")
	}
}
