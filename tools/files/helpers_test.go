package files

import (
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

const testTeam = tooltest.Team

var (
	run           = tooltest.Run
	mustRun       = tooltest.MustRun
	wantOK        = tooltest.WantOK
	wantToolError = tooltest.WantToolError
	wantContains  = tooltest.WantContains
	wantArgError  = tooltest.WantArgError
	wantHeld      = tooltest.WantHeld
	runAs         = tooltest.RunApproved
	jsonArgs      = tooltest.JSONArgs
)

// newTestFiles is a Runner of the file tools over store, without Slack.
func newTestFiles(tb testing.TB, store workspace.Store) *tools.Runner {
	tb.Helper()
	return tooltest.Runner(tb, New(store, nil))
}
