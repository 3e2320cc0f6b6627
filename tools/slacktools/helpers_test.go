package slacktools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

const testTeam = "TTEST"

// testNow is the access rule's clock in the tests that do not move it.
var testNow = time.Date(2026, 5, 1, 18, 3, 22, 0, time.UTC)

// testDeps are what a test gives the Slack tools.
type testDeps struct {
	Slack     func(team string) tools.SlackAPI
	SlackUser func(team string) tools.SlackSearchAPI
	Admins    []string
}

// newTestSlack returns the Slack tools over d (its Slack, SlackUser and Admins), with the access
// rule's clock at *now when now is not nil.
func newTestSlack(tb testing.TB, d testDeps, now *time.Time) *Slack {
	tb.Helper()
	clock := time.Now
	if now != nil {
		clock = func() time.Time { return *now }
	}
	return New(d.Slack, d.SlackUser, slackaccess.New(d.Admins, AccessAPI(d.Slack), clock))
}

// run calls the tool with args in the test team's conversation.
func run(tb testing.TB, d *Slack, name, args string) (tools.Output, error) {
	tb.Helper()
	return runFor(tb, d, "ULOCAL", name, args)
}

// runFor calls the tool with args for user, in the test team's conversation CLOCAL.
func runFor(tb testing.TB, d *Slack, user, name, args string) (tools.Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return d.Run(ctx, tools.Invocation{
		Name: name, Arguments: args, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: user, RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	})
}

// mustRunFor is runFor for a call that must succeed without a Go error.
func mustRunFor(tb testing.TB, d *Slack, user, name, args string) tools.Output {
	tb.Helper()
	out, err := runFor(tb, d, user, name, args)
	if err != nil {
		tb.Fatalf("%s(%s) as %s: unexpected error: %v", name, args, user, err)
	}
	return out
}

// mustRun runs a call that must succeed without a Go error and returns its output.
func mustRun(tb testing.TB, d *Slack, name, args string) tools.Output {
	tb.Helper()
	return mustRunFor(tb, d, "ULOCAL", name, args)
}

// wantOK checks that out succeeded and contains every want.
func wantOK(tb testing.TB, out tools.Output, want ...string) {
	tb.Helper()
	if out.IsError {
		tb.Fatalf("got error output %q, want success", out.Content)
	}
	wantContains(tb, out.Content, want...)
}

// wantToolError checks that out is an error output that contains every want.
func wantToolError(tb testing.TB, out tools.Output, want ...string) {
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

// wantArgError checks that err is an *tools.ArgError for tool whose message contains every want.
func wantArgError(tb testing.TB, err error, tool string, want ...string) {
	tb.Helper()
	var argErr *tools.ArgError
	if !errors.As(err, &argErr) {
		tb.Fatalf("got error %v (%T), want *tools.ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	wantContains(tb, argErr.Msg, want...)
}

// wantTransient checks that err is a *tools.TransientError.
func wantTransient(tb testing.TB, err error) *tools.TransientError {
	tb.Helper()
	var te *tools.TransientError
	if !errors.As(err, &te) {
		tb.Fatalf("got error %v (%T), want *tools.TransientError", err, err)
	}
	if !te.Retryable() {
		tb.Errorf("TransientError.Retryable() = false")
	}
	return te
}

// Run runs a call through a Runner bound to d, as the worker does.
func (d *Slack) Run(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	// The tools still declared in package tools itself (linked with it) need their domain too.
	runner, err := tools.NewRunner(zerolog.Nop(), []any{d})
	if err != nil {
		return tools.Output{}, err
	}
	return runner.Run(ctx, inv)
}
