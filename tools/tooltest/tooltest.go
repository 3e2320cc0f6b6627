// Package tooltest helps the tests of the tool domains: it runs calls through a tools.Runner as the
// worker does, in a test conversation, and checks their results the way every domain's tests need.
// Tests only import it.
package tooltest

import (
	"context"
	"encoding/json"
	"errors"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

// Team is the Slack team of the test conversation.
const Team = "TTEST"

// Now is the fixed clock of the tests: 2026-05-01 18:03:22 UTC.
func Now() time.Time { return time.Date(2026, 5, 1, 18, 3, 22, 0, time.UTC) }

// Caller runs one tool call (a *tools.Runner).
type Caller interface {
	Run(ctx context.Context, inv tools.Invocation) (tools.Output, error)
}

// Runner binds the linked tools to the given domains; the tools of other domains stay unbound.
func Runner(tb testing.TB, domains ...any) *tools.Runner {
	tb.Helper()
	r, err := tools.NewRunner(zerolog.Nop(), domains)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// Invocation is a call of name with args in the test conversation (channel CLOCAL), for user.
func Invocation(name, args, user string) tools.Invocation {
	return tools.Invocation{
		Name: name, Arguments: args, Team: Team, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: user, RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	}
}

// Run calls the tool with args in the test conversation, as the person ULOCAL.
func Run(tb testing.TB, r Caller, name, args string) (tools.Output, error) {
	tb.Helper()
	return RunFor(tb, r, "ULOCAL", name, args)
}

// RunFor calls the tool with args in the test conversation, as user.
func RunFor(tb testing.TB, r Caller, user, name, args string) (tools.Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, Invocation(name, args, user))
}

// MustRun runs a call that must succeed without a Go error and returns its output.
func MustRun(tb testing.TB, r Caller, name, args string) tools.Output {
	tb.Helper()
	return MustRunFor(tb, r, "ULOCAL", name, args)
}

// MustRunFor is RunFor for a call that must succeed without a Go error.
func MustRunFor(tb testing.TB, r Caller, user, name, args string) tools.Output {
	tb.Helper()
	out, err := RunFor(tb, r, user, name, args)
	if err != nil {
		tb.Fatalf("%s(%s) as %s: unexpected error: %v", name, args, user, err)
	}
	return out
}

// WantOK checks that out succeeded and contains every want.
func WantOK(tb testing.TB, out tools.Output, want ...string) {
	tb.Helper()
	if out.IsError {
		tb.Fatalf("got error output %q, want success", out.Content)
	}
	WantContains(tb, out.Content, want...)
}

// WantToolError checks that out is an error output that contains every want.
func WantToolError(tb testing.TB, out tools.Output, want ...string) {
	tb.Helper()
	if !out.IsError || !strings.HasPrefix(out.Content, "Error: ") {
		tb.Fatalf("got %+v, want an error output", out)
	}
	WantContains(tb, out.Content, want...)
}

// WantContains checks that got contains every want.
func WantContains(tb testing.TB, got string, want ...string) {
	tb.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			tb.Errorf("output does not contain %q:\n%s", w, got)
		}
	}
}

// WantArgError checks that err is an *tools.ArgError for tool whose message contains every want.
func WantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	WantContains(tb, argErr.Msg, want...)
}

// WantTransient checks that err is a *tools.TransientError.
func WantTransient(tb testing.TB, err error) *tools.TransientError {
	tb.Helper()
	var te *tools.TransientError
	if !errors.As(err, &te) {
		tb.Fatalf("got error %v (%T), want *TransientError", err, err)
	}
	if !te.Retryable() {
		tb.Errorf("TransientError.Retryable() = false")
	}
	return te
}

// WantHeld checks that out asks for approval and changed nothing, and returns the request.
func WantHeld(tb testing.TB, out tools.Output, want ...string) *tools.ApprovalNeed {
	tb.Helper()
	if out.NeedsApproval == nil {
		tb.Fatalf("got %+v, want a request for approval", out)
	}
	if out.IsError || len(out.Artifacts) != 0 || !strings.HasPrefix(out.Content, "Nothing was changed: ") {
		tb.Errorf("held call's output = %+v", out)
	}
	if !strings.HasPrefix(out.NeedsApproval.Guard, "sha256:") {
		tb.Errorf("Guard = %q", out.NeedsApproval.Guard)
	}
	WantContains(tb, out.Content, want...)
	return out.NeedsApproval
}

// RunApproved calls a tool in the test team, approved or not, with a Guard (Invocation.Approved,
// Invocation.Guard); the call must succeed without a Go error.
func RunApproved(tb testing.TB, r Caller, name, args string, approved bool, guard string) tools.Output {
	tb.Helper()
	out, err := r.Run(tb.Context(), tools.Invocation{
		Name: name, Arguments: args, Team: Team, RunID: "run-1", CallID: "call_1", Approved: approved, Guard: guard,
	})
	if err != nil {
		tb.Fatalf("%s(%s): unexpected error: %v", name, args, err)
	}
	return out
}

// JSONArgs encodes arguments as the model would send them.
func JSONArgs(tb testing.TB, args any) string {
	tb.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// WorkspaceStore is one kind of store the file tools are tested on.
type WorkspaceStore struct {
	Name  string
	Store func() workspace.Store
}

// WorkspaceStores are the stores the tests of the tools that work on files run against: the local
// folder and an S3 bucket served in process (gofakes3).
func WorkspaceStores(t *testing.T) []WorkspaceStore {
	return []WorkspaceStore{
		{"local", func() workspace.Store { return workspace.NewLocal(t.TempDir()) }},
		{"s3", func() workspace.Store { return s3test.Store(t, s3test.Server(t), "lucy") }},
	}
}

// HeapInUse is the heap in use once garbage is collected (twice: the first collection may leave
// what finalizers free): what a process keeps.
func HeapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// liveHeap is the bytes of live objects once garbage is collected (twice): HeapAlloc, which unlike
// HeapInUse does not move with how the freed spans happen to be laid out.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// ReportRetained runs call in b's loop and reports, as the metric "retained-MiB", the live heap
// after the calls returned (and their results were dropped) minus the live heap before the
// first (HeapAlloc after two collections): what a worker keeps of a tool call, its caches included. A call that leaks grows the
// figure with the number of calls; one that fills a cache once does not. It reports too the most
// heap in use while the calls ran, sampled every 5 ms, above the heap before ("peak-MiB"): what the
// call needs while it works. And the heap the Go runtime holds from the operating system right after
// the last call returned, above what it held before ("held-MiB", HeapSys less HeapReleased): what
// the worker's resident memory shows, until the runtime's scavenger gives it back, a few MB a
// second. The benchmark's other metrics (time, allocations) are those of the calls.
func ReportRetained(b *testing.B, call func(b *testing.B)) {
	b.Helper()
	before, beforeInUse := liveHeap(), HeapInUse()
	debug.FreeOSMemory() // what the benchmark's own setup used is not counted as held
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	beforeHeld := m.HeapSys - m.HeapReleased
	peak := samplePeak()
	b.ResetTimer()
	for b.Loop() {
		call(b)
	}
	b.StopTimer()
	highest := peak()
	runtime.ReadMemStats(&m)
	held := m.HeapSys - m.HeapReleased
	// What a call started in the background (an MCP listing's refresh) finishes before the count.
	time.Sleep(200 * time.Millisecond)
	after := liveHeap()
	b.Logf("live heap after two collections: %.1f MiB before the first call, %.1f MiB after %d call(s) returned; "+
		"heap in use at most %.1f MiB while they ran (%.1f MiB before; sampled every 5 ms)", float64(before)/(1<<20),
		float64(after)/(1<<20), b.N, float64(highest)/(1<<20), float64(beforeInUse)/(1<<20))
	b.ReportMetric((float64(after)-float64(before))/(1<<20), "retained-MiB")
	b.ReportMetric((float64(highest)-float64(beforeInUse))/(1<<20), "peak-MiB")
	b.ReportMetric((float64(held)-float64(beforeHeld))/(1<<20), "held-MiB")
}

// HeapPeak runs f and returns the most heap in use while it ran, sampled every 5 ms: what a tool call
// needs while it works.
func HeapPeak(f func()) uint64 {
	peak := samplePeak()
	f()
	return peak()
}

// samplePeak samples the heap in use every 5 ms until the function it returns is called, which
// returns the most it saw.
func samplePeak() func() uint64 {
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return peak.Load()
	}
}
