package schedules

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/tools/web"
)

const testTeam = "TTEST"

// testDomain is the schedules domain as the tests use it: its Manager, and a Runner that binds its
// tools beside the Slack and web domains it relies on, so that calls go through argument validation
// as in production.
type testDomain struct {
	*Manager
	runner *tools.Runner
}

// Run runs one tool call through the Runner.
func (d *testDomain) Run(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	return d.runner.Run(ctx, inv)
}

// testDeps are what a test gives the schedules domain.
type testDeps struct {
	Slack                func(team string) tools.SlackAPI
	Schedules            client.ScheduleClient
	DataConverter        converter.DataConverter
	Admins               []string
	ScheduleLimits       ScheduleLimits
	AllowPrivateNetworks bool
}

// testSlack is the Slack domain over bot, as toolset builds it: the schedules use its access rule.
func testSlack(bot func(team string) tools.SlackAPI, admins []string) *slacktools.Slack {
	return slacktools.New(bot, nil, slackaccess.New(admins, slacktools.AccessAPI(bot), nil))
}

// newTestDomain returns the domain over d's clients and settings, fetching from private addresses
// only when d allows it, with a fixed clock.
func newTestDomain(tb testing.TB, d testDeps) *testDomain {
	tb.Helper()
	m := New(Deps{Schedules: d.Schedules, DataConverter: d.DataConverter, Admins: d.Admins,
		ScheduleLimits: d.ScheduleLimits, Slack: testSlack(d.Slack, d.Admins), Web: web.New(nil, d.AllowPrivateNetworks, web.SearchConfig{})})
	m.now = func() time.Time { return time.Date(2026, 5, 1, 18, 3, 22, 0, time.UTC) }
	r, err := tools.NewRunner(zerolog.Nop(), []any{m})
	if err != nil {
		tb.Fatal(err)
	}
	return &testDomain{Manager: m, runner: r}
}

// run calls the tool with args in the test team's conversation.
func run(tb testing.TB, r *testDomain, name, args string) (tools.Output, error) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, tools.Invocation{
		Name: name, Arguments: args, Team: testTeam, Channel: "CLOCAL", ThreadTS: "1700000000.000100",
		User: "ULOCAL", RunID: "lane:TTEST:CLOCAL:1700000000.000100/run-1", CallID: "call_1",
	})
}

// mustRun runs a call that must succeed without a Go error and returns its output.
func mustRun(tb testing.TB, r *testDomain, name, args string) tools.Output {
	tb.Helper()
	out, err := run(tb, r, name, args)
	if err != nil {
		tb.Fatalf("%s(%s): unexpected error: %v", name, args, err)
	}
	return out
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
		tb.Fatalf("got error %v (%T), want *ArgError", err, err)
	}
	if argErr.Tool != tool {
		tb.Errorf("ArgError.Tool = %q, want %q", argErr.Tool, tool)
	}
	wantContains(tb, argErr.Msg, want...)
}
