package documents

import (
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
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
	wantTransient = tooltest.WantTransient
	wantHeld      = tooltest.WantHeld
)

// testDocs runs the document tools (and the file tools, to read back) over a fresh data folder.
type testDocs struct {
	*tools.Runner
	dir string           // the data folder: files are under dir/workspaces/<team>/
	now func() time.Time // the documents' clock; a test may change it
}

func newTestDocs(tb testing.TB, slack func(team string) files.Slack) *testDocs {
	tb.Helper()
	d := &testDocs{dir: tb.TempDir(), now: tooltest.Now}
	ws := files.New(workspace.NewLocal(d.dir), slack)
	d.Runner = tooltest.Runner(tb, ws, New(ws, func() time.Time { return d.now() }))
	return d
}

// slackWorkspace is a localslack workspace with a bot client (Lucy's) and a user client (Alice's, to
// write the messages Lucy reads), and the document tools wired to it.
type slackWorkspace struct {
	srv   *localslack.Server
	alice *slack.Client
	r     *testDocs
}

func newSlackWorkspace(t *testing.T) *slackWorkspace {
	t.Helper()
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team:       testTeam,
		Users:      []localslack.User{{ID: "ULOCAL", Name: "local", RealName: "Local Person"}, {ID: "UALICE", Name: "alice", RealName: "Alice"}},
		UserTokens: map[string]string{"xoxp-alice": "UALICE"},
		Channels:   []localslack.Channel{{ID: "CLOCAL", Name: "general"}},
	})
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	alice := slack.New("xoxp-alice", slack.OptionAPIURL(base))
	r := newTestDocs(t, func(team string) files.Slack {
		if team != testTeam {
			return nil
		}
		return bot
	})
	return &slackWorkspace{srv: srv, alice: alice, r: r}
}

// say posts as Alice and returns the ts.
func (w *slackWorkspace) say(t *testing.T, channel, text string, opts ...slack.MsgOption) string {
	t.Helper()
	_, ts, err := w.alice.PostMessageContext(t.Context(), channel, append(opts, slack.MsgOptionText(text, false))...)
	if err != nil {
		t.Fatalf("post %q: %v", text, err)
	}
	return ts
}
