package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

const testTeam = "TTEST"

// newTestRegistry returns a Registry over a fresh data folder, fetching from private addresses
// (httptest) and with a fixed clock.
func newTestRegistry(tb testing.TB, d Deps) *Registry {
	tb.Helper()
	if d.DataDir == "" {
		d.DataDir = tb.TempDir()
	}
	d.Log = zerolog.Nop()
	r := NewRegistry(d)
	r.now = func() time.Time { return time.Date(2026, 5, 1, 18, 3, 22, 0, time.UTC) }
	return r
}

// run calls the tool with args in the test team's conversation.
func run(tb testing.TB, r *Registry, name, args string) (Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, Invocation{
		Name: name, Arguments: args, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: "ULOCAL", RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	})
}

// runFor calls the tool with args for user, in the test team's conversation CLOCAL.
func runFor(tb testing.TB, r *Registry, user, name, args string) (Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, Invocation{
		Name: name, Arguments: args, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: user, RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	})
}

// mustRunFor is runFor for a call that must succeed without a Go error.
func mustRunFor(tb testing.TB, r *Registry, user, name, args string) Output {
	tb.Helper()
	out, err := runFor(tb, r, user, name, args)
	if err != nil {
		tb.Fatalf("%s(%s) as %s: unexpected error: %v", name, args, user, err)
	}
	return out
}

// mustRun runs a call that must succeed without a Go error and returns its output.
func mustRun(tb testing.TB, r *Registry, name, args string) Output {
	tb.Helper()
	out, err := run(tb, r, name, args)
	if err != nil {
		tb.Fatalf("%s(%s): unexpected error: %v", name, args, err)
	}
	return out
}

// wantOK checks that out succeeded and contains every want.
func wantOK(tb testing.TB, out Output, want ...string) {
	tb.Helper()
	if out.IsError {
		tb.Fatalf("got error output %q, want success", out.Content)
	}
	wantContains(tb, out.Content, want...)
}

// wantToolError checks that out is an error output that contains every want.
func wantToolError(tb testing.TB, out Output, want ...string) {
	tb.Helper()
	if !out.IsError || !strings.HasPrefix(out.Content, "Error: ") {
		tb.Fatalf("got %+v, want an error output", out)
	}
	wantContains(tb, out.Content, want...)
}

func wantContains(tb testing.TB, got string, want ...string) {
	tb.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			tb.Errorf("output does not contain %q:\n%s", w, got)
		}
	}
}

// wantArgError checks that err is an *ArgError for tool whose message contains every want.
func wantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	wantContains(tb, argErr.Msg, want...)
}

// wantTransient checks that err is a *TransientError.
func wantTransient(tb testing.TB, err error) *TransientError {
	tb.Helper()
	var te *TransientError
	if !errors.As(err, &te) {
		tb.Fatalf("got error %v (%T), want *TransientError", err, err)
	}
	if !te.Retryable() {
		tb.Errorf("TransientError.Retryable() = false")
	}
	return te
}

// Run runs a call through a Runner bound to r, as the worker does.
func (r *Registry) Run(ctx context.Context, inv Invocation) (Output, error) {
	runner, err := NewRunner(zerolog.Nop(), []any{r})
	if err != nil {
		return Output{}, err
	}
	return runner.Run(ctx, inv)
}

// newTestRunner is a Runner bound to the given domains.
func newTestRunner(tb testing.TB, domains ...any) *Runner {
	tb.Helper()
	r, err := NewRunner(zerolog.Nop(), domains)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}
