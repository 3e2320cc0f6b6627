package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/integrations/email"
	"github.com/lucy-agent/lucy/integrations/email/listener"
	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workspace"
)

var sentMessageID = regexp.MustCompile(`Message-ID (lucy\.[0-9a-f]+@acme\.test)`)

// Through the whole stack, against Debian's Dovecot and Postfix (skipped where they cannot run): a
// worker process configured as an operator would (LUCY_MAIL_CA_FILE naming the servers' CA,
// LUCY_ALLOWED_PRIVATE_HOSTS the loopback mail server) answers a mail with lucy_reply_to_email over
// SMTPS (implicit TLS, the default). The tool asks first: the prompt shows the real "Re:" subject and
// the SMTP server; once approved, Postfix delivers the reply to Dovecot, where it is read back in the
// original's thread.
func TestReplyOverSMTPSToRealPostfix(t *testing.T) {
	rs := mailtest.StartReal(t)
	var origID string
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		if last := req.Messages[len(req.Messages)-1]; last.Role == "tool" {
			return fakellm.Reply{Content: "Done: " + last.Text()}
		}
		return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("reply1", email.ReplyToEmail,
			fmt.Sprintf(`{"message_id": %q, "to": [%q], "body": "Paid today.\n\nLucy"}`, origID, mailtest.Addr))}}
	})
	s.stopWorker()
	s.startWorkerProcess(t, "LUCY_ALLOWED_PRIVATE_HOSTS=127.0.0.1", "LUCY_MAIL_CA_FILE="+rs.CAFile)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r := s.realMailRunner(t, ctx, rs)
	s.mustTool(t, r, human, email.ConnectEmail, fmt.Sprintf(`{"address": %q, "imap_host": "127.0.0.1", "imap_port": %d, `+
		`"smtp_host": "127.0.0.1", "smtp_port": %d}`, mailtest.Addr, rs.IMAPSPort, rs.SMTPSPort),
		"Connected the mailbox support", "IMAP login works, and SMTP login works")
	// The original: a message to the mailbox, through Postfix.
	out := s.mustTool(t, r, human, email.SendEmail, fmt.Sprintf(`{"to": [%q], "subject": "Invoice 4411 overdue", "body": "Please pay."}`,
		mailtest.Addr), "Sent the message")
	m := sentMessageID.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no Message-ID in %q", out)
	}
	origID = m[1]
	s.waitFor("the original in the INBOX", 30*time.Second, func() bool {
		out, err := s.tool(r, human, email.SearchEmails, `{"subject": "Invoice 4411 overdue"}`)
		return err == nil && strings.Contains(out.Content, "1 of 1 matching")
	})

	text := "<@ULUCY> answer the invoice mail"
	root := s.say(text, "")
	s.event("app_mention", "Ev-realmail", text, root, "", human)
	var value string
	s.waitFor("the approval prompt", time.Minute, func() bool { value = s.approvalValue(root); return value != "" })
	var shown strings.Builder
	for _, msg := range s.botMessages(root) {
		shown.WriteString(string(msg.Blocks) + msg.Text)
	}
	for _, want := range []string{"Subject: Re: Invoice 4411 overdue", fmt.Sprintf("sent through 127.0.0.1:%d, tls", rs.SMTPSPort), "Paid today."} {
		if !strings.Contains(shown.String(), want) {
			t.Errorf("the approval prompt does not show %q:\n%s", want, shown.String())
		}
	}
	s.click(human, value, "lucy_approve")
	s.waitFor("the reply's result", 2*time.Minute, func() bool { return s.answered(root, "Replied in the thread of "+origID) })
	s.waitFor("the reply in the INBOX", 30*time.Second, func() bool {
		out, err := s.tool(r, human, email.GetEmailThread, fmt.Sprintf(`{"message_id": %q}`, origID))
		return err == nil && strings.Contains(out.Content, "Subject: Re: Invoice 4411 overdue") && strings.Contains(out.Content, "Paid today.") &&
			strings.Count(out.Content, "--- message") >= 2
	})
	if t.Failed() {
		t.Log(rs.Logs())
	}
}

// realMailRunner is mailRunner for the real servers: their CA trusted as LUCY_MAIL_CA_FILE makes
// the worker trust it, and the loopback server listed as LUCY_ALLOWED_PRIVATE_HOSTS lists it.
func (s *stack) realMailRunner(t *testing.T, ctx context.Context, rs *mailtest.Real) *tools.Runner {
	t.Helper()
	key, err := secrets.ParseKey(workerProcessSecretsKey)
	if err != nil {
		t.Fatal(err)
	}
	state := workspace.NewLocalAt(filepath.Join(s.cfg.DataDir, worker.StateDir))
	creds, err := secrets.New(state, key)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := creds.Put(ctx, team, "email-support", mailtest.Password, human); err != nil {
		t.Fatal(err)
	}
	roots, err := config.MailRootCAs(rs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := tools.ParseAllowedPrivateHosts("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return toolset.New(toolset.Deps{DataDir: s.cfg.DataDir, State: state, Credentials: creds, Log: s.log, PrivateHosts: hosts,
		MailRootCAs: roots, Slack: func(string) tools.SlackAPI { return s.botSlack() },
		EmailListeners: &listener.Schedules{API: s.client.ScheduleClient(), Every: 10 * time.Second}}).Runner
}
