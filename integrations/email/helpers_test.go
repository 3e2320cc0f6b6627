package email

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

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
	e := New(Deps{State: state, Workspace: ws, Credentials: creds, Hosts: tools.AllowAllPrivate(), Log: zerolog.Nop(), Timeout: 10 * time.Second})
	f := &fixture{ms: ms, e: e, r: tooltest.Runner(t, e), state: state, ws: ws, creds: creds}
	return f
}

// connect connects the test mailbox through the tool, approved, and stores its password.
func (f *fixture) connect(t *testing.T) {
	t.Helper()
	if _, err := f.creds.Put(context.Background(), tooltest.Team, "email-support", mailtest.Password, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
	out := tooltest.MustRun(t, f.r, ConnectEmail, tooltest.JSONArgs(t, map[string]any{
		"address": mailtest.Addr, "imap_host": "127.0.0.1", "imap_port": f.ms.IMAPPort, "imap_tls": "plain",
		"smtp_host": "127.0.0.1", "smtp_port": f.ms.SMTPPort, "smtp_tls": "plain",
	}))
	tooltest.WantOK(t, out, "Connected the mailbox support", "IMAP login works")
}

func workspaceCond() workspace.Cond { return workspace.Cond{} }
