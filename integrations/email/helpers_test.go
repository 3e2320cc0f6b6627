package email

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/localslack"
	"github.com/lucy-agent/lucy/tools/slackaccess"

	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// fixture is the mail domain over the servers, with the mailbox connected and its password stored.
type fixture struct {
	ms    *mailtest.Servers
	e     *Email
	r     *tools.Runner
	state workspace.Store
	ws    workspace.Store
	creds *secrets.Store
	slack *localslack.Server
	now   time.Time
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ms := mailtest.Start(t)
	state := workspace.NewLocalAt(t.TempDir())
	creds, err := secrets.New(state, secrets.Key{7})
	if err != nil {
		t.Fatal(err)
	}
	ws := workspace.NewLocalAt(t.TempDir())
	f := &fixture{ms: ms, state: state, ws: ws, creds: creds, now: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	f.e = New(Deps{State: state, Workspace: ws, Credentials: creds, Hosts: tools.AllowAllPrivate(), Log: zerolog.Nop(), Timeout: 10 * time.Second,
		Admins: []string{"UBOSS"}, Access: f.accessRule(t)})
	f.r = tooltest.Runner(t, f.e)
	return f
}

// accessRule is the access rule (slackaccess, as the worker wires it) over a local Slack workspace:
// ULOCAL is in #mail (CMAIL), #exec (CEXEC) is private to Alice, DLOCAL is ULOCAL's DM with Lucy
// and DALICE Alice's. Its membership cache goes by f.now.
func (f *fixture) accessRule(t *testing.T) func(ctx context.Context, team, user, channel string) (string, error) {
	t.Helper()
	srv, base := localslack.NewTestServer(t, localslack.Options{
		Team:  tooltest.Team,
		Users: []localslack.User{{ID: "ULOCAL", Name: "local"}, {ID: "UALICE", Name: "alice"}, {ID: "UBOSS", Name: "boss"}},
		Channels: []localslack.Channel{
			{ID: "CLOCAL", Name: "general"},
			{ID: "CMAIL", Name: "mail", Members: []string{"ULOCAL", "UALICE", localslack.DefaultBotUserID}},
			{ID: "CEXEC", Name: "exec", IsPrivate: true, Members: []string{"UALICE", localslack.DefaultBotUserID}},
			{ID: "DLOCAL", IsIM: true, User: "ULOCAL"},
			{ID: "DALICE", IsIM: true, User: "UALICE"},
		},
	})
	f.slack = srv
	bot := slack.New(localslack.DefaultToken, slack.OptionAPIURL(base))
	rule := slackaccess.New([]string{"UBOSS"}, func(string) slackaccess.API { return bot }, func() time.Time { return f.now })
	return rule.ScheduleAccess
}

// connect connects the test mailbox through the tool, approved, and stores its password.
func (f *fixture) connect(t *testing.T) {
	t.Helper()
	if _, err := f.creds.Put(context.Background(), tooltest.Team, "email-support", mailtest.Password, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, tooltest.JSONArgs(t, map[string]any{
		"address": mailtest.Addr, "imap_host": "127.0.0.1", "imap_port": f.ms.IMAPPort, "imap_tls": "plain",
		"smtp_host": "127.0.0.1", "smtp_port": f.ms.SMTPPort, "smtp_tls": "plain",
	}))
	tooltest.WantOK(t, out, "Connected the mailbox support", "IMAP login works")
}

func workspaceCond() workspace.Cond { return workspace.Cond{} }

var approvedCalls atomic.Int64

// runApproved runs a call as user as an approved run would: when the tool asks for approval
// (NeedsApproval), it is run again approved, with the Guard of what was asked.
func runApproved(t *testing.T, r *tools.Runner, user, name, args string) tools.Output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inv := tooltest.Invocation(name, args, user)
	inv.CallID = fmt.Sprintf("call_approved_%d", approvedCalls.Add(1)) // each call sends its own message
	out, err := r.Run(ctx, inv)
	if err == nil && out.NeedsApproval != nil {
		inv.Approved, inv.Guard = true, out.NeedsApproval.Guard
		out, err = r.Run(ctx, inv)
	}
	if err != nil {
		t.Fatalf("%s(%s) as %s: %v", name, args, user, err)
	}
	return out
}
