package schedules

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/tools/tooltest"
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
	// PrivateHosts are the private addresses monitors may check without AllowPrivateNetworks
	// (LUCY_ALLOWED_PRIVATE_HOSTS).
	PrivateHosts tools.PrivateHosts
}

// testSlack is the Slack domain over bot, as toolset builds it: the schedules use its access rule.
func testSlack(bot func(team string) tools.SlackAPI, admins []string) *slacktools.Slack {
	return slacktools.New(bot, nil, slackaccess.New(admins, slacktools.AccessAPI(bot), nil))
}

// newTestDomain returns the domain over d's clients and settings, fetching from private addresses
// only when d allows it, with a fixed clock.
func newTestDomain(tb testing.TB, d testDeps) *testDomain {
	tb.Helper()
	hosts := d.PrivateHosts
	if d.AllowPrivateNetworks {
		hosts = tools.AllowAllPrivate()
	}
	m := New(Deps{Schedules: d.Schedules, DataConverter: d.DataConverter, Admins: d.Admins,
		ScheduleLimits: d.ScheduleLimits, Slack: testSlack(d.Slack, d.Admins), Web: web.New(nil, hosts, web.SearchConfig{})})
	m.now = func() time.Time { return time.Date(2026, 5, 1, 18, 3, 22, 0, time.UTC) }
	r, err := tools.NewRunner(zerolog.Nop(), []any{m})
	if err != nil {
		tb.Fatal(err)
	}
	return &testDomain{Manager: m, runner: r}
}

// The calls and checks every tool domain's tests share (package tooltest).
var (
	run           = tooltest.Run
	mustRun       = tooltest.MustRun
	wantToolError = tooltest.WantToolError
	wantContains  = tooltest.WantContains
	wantArgError  = tooltest.WantArgError
)
