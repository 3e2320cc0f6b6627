package slacktools

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/tooltest"
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

// The calls and checks every tool domain's tests share (package tooltest).
var (
	run           = tooltest.Run
	mustRun       = tooltest.MustRun
	mustRunFor    = tooltest.MustRunFor
	wantOK        = tooltest.WantOK
	wantToolError = tooltest.WantToolError
	wantArgError  = tooltest.WantArgError
	wantTransient = tooltest.WantTransient
)

// Run runs a call through a Runner bound to d, as the worker does.
func (d *Slack) Run(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	runner, err := tools.NewRunner(zerolog.Nop(), []any{d})
	if err != nil {
		return tools.Output{}, err
	}
	return runner.Run(ctx, inv)
}
