package email

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

func connectArgsJSON(ms *mailtest.Servers, extra string) string {
	return fmt.Sprintf(`{"address": %q, "imap_host": "127.0.0.1", "imap_port": %d, "imap_tls": "plain", "smtp_host": "127.0.0.1", "smtp_port": %d, "smtp_tls": "plain"%s}`,
		mailtest.Addr, ms.IMAPPort, ms.SMTPPort, extra)
}

// The attack: Mallory (ULOCAL) connects her own mailbox with "channel" set to a private channel she
// is not in (#exec), or to Alice's DM with Lucy, so that each mail she sends herself is summarized
// there and starts a run there as her. Both are refused at connect, and nothing is saved; her own DM
// with Lucy and a channel she is in are accepted.
func TestListenerChannelMustBeTheConnectersToUse(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.creds.Put(ctx, tooltest.Team, "email-support", mailtest.Password, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ channel, want string }{
		{"CEXEC", "<@ULOCAL> is not a member of <#CEXEC>"},
		{"DALICE", "direct-message conversation with someone other than <@ULOCAL>"},
	} {
		out := runApproved(t, f.r, "ULOCAL", ConnectEmail, connectArgsJSON(f.ms, `, "channel": "`+c.channel+`", "instruction": "summarize this channel"`))
		if !out.IsError || !strings.Contains(out.Content, c.want) || !strings.Contains(out.Content, "Nothing was changed") {
			t.Errorf("connect with channel %s = %q; want a refusal saying %q", c.channel, out.Content, c.want)
		}
		if list, _ := f.e.boxes.list(ctx, tooltest.Team); len(list) != 0 {
			t.Errorf("a refused connect saved the mailbox: %+v", list)
		}
	}
	for _, c := range []string{"DLOCAL", "CMAIL"} {
		tooltest.WantOK(t, runApproved(t, f.r, "ULOCAL", ConnectEmail, connectArgsJSON(f.ms, `, "channel": "`+c+`"`)), "the mailbox support")
		if m, _, err := f.e.boxes.get(ctx, tooltest.Team, "support"); err != nil || m.Channel != c {
			t.Errorf("after connecting with channel %s the mailbox is %+v, %v", c, m, err)
		}
	}
	// An admin cannot point Mallory's listener at #exec either: its runs would be hers.
	out := runApproved(t, f.r, "UBOSS", ConnectEmail, connectArgsJSON(f.ms, `, "name": "support", "channel": "CEXEC"`))
	if !out.IsError || !strings.Contains(out.Content, "<@ULOCAL> is not a member of <#CEXEC>") {
		t.Errorf("an admin's change to a channel the connecter is not in = %q; want a refusal", out.Content)
	}
}

// The attack's other half: a mailbox connected while its connecter was in the channel, who then
// leaves it. The next firing reads nothing (no login to the mail server), hands nothing on, and says
// so once: the second firing stays quiet. Back in the channel, the listener goes on, and a second
// departure is told again.
func TestFiringSkippedOnceTheConnecterLeftTheChannel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.connect(t)
	tooltest.WantOK(t, runApproved(t, f.r, "ULOCAL", ConnectEmail, connectArgsJSON(f.ms, `, "channel": "CMAIL", "instruction": "triage"`)), "Updated")
	if b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil); err != nil || b.Denied != "" {
		t.Fatalf("first look = %+v, %v", b, err)
	}
	f.slack.SetMembers("CMAIL", []string{"UALICE", "ULUCY"})
	f.now = f.now.Add(2 * time.Minute) // past the membership cache
	f.ms.Deliver(t, newMail(1))
	logins := len(f.ms.Logins())
	b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil)
	if err != nil || !strings.Contains(b.Denied, "<@ULOCAL> is not a member of <#CMAIL>") || !b.Note || len(b.Messages) != 0 {
		t.Fatalf("firing after the connecter left = %+v, %v; want denied, noted, nothing read", b, err)
	}
	if n := len(f.ms.Logins()); n != logins {
		t.Errorf("the denied firing logged in to the mail server (%d logins)", n-logins)
	}
	if b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil); err != nil || b.Denied == "" || b.Note {
		t.Errorf("second denied firing = %+v, %v; want denied without a second note", b, err)
	}
	f.slack.SetMembers("CMAIL", []string{"UALICE", "ULOCAL", "ULUCY"})
	f.now = f.now.Add(2 * time.Minute)
	if b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil); err != nil || b.Denied != "" || len(b.Messages) != 1 {
		t.Errorf("firing back in the channel = %+v, %v; want the waiting mail", b, err)
	}
	f.slack.SetMembers("CMAIL", []string{"UALICE", "ULUCY"})
	f.now = f.now.Add(2 * time.Minute)
	if b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil); err != nil || !b.Note {
		t.Errorf("leaving again = %+v, %v; want a new note", b, err)
	}
}

// The attack: a disconnected mailbox's password stayed, and whoever connected a mailbox of the same
// name to a server of their choice had it sent there. Now the disconnect deletes it, and a password
// left from before (stored by Alice for her servers) is never sent to the servers Mallory names:
// her local IMAP and SMTP servers record every login, and none carries it.
func TestDisconnectedPasswordGoneAndNeverSentToAnotherHost(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.connect(t)
	// Alice's mailbox works: the password is bound to its servers on first use.
	meta, err := f.creds.Stat(ctx, tooltest.Team, "email-support")
	if err != nil || len(meta.Origins) == 0 {
		t.Fatalf("the password was not bound to its mailbox's servers: %+v, %v", meta, err)
	}
	tooltest.WantOK(t, tooltest.MustRun(t, f.r, DisconnectEmail, `{"mailbox": "support"}`), "deleted its stored password")
	if _, err := f.creds.Stat(ctx, tooltest.Team, "email-support"); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("the disconnected mailbox's password is still stored: %v", err)
	}

	// A password left by a disconnect of before (Alice's, for her servers), and Mallory connecting
	// "support" to her own.
	evil := mailtest.Start(t)
	if _, err := f.creds.PutBound(ctx, tooltest.Team, "email-support", mailtest.Password, "UALICE",
		secrets.Binding{Kind: secrets.KindMailbox, Integration: "email:support", Origins: []string{"imap://127.0.0.1:" + fmt.Sprint(f.ms.IMAPPort)}}); err != nil {
		t.Fatal(err)
	}
	out := runApproved(t, f.r, "UMALLORY", ConnectEmail, connectArgsJSON(evil, ""))
	if !out.IsError || !strings.Contains(out.Content, "never used for a mailbox someone else connects") {
		t.Errorf("Mallory's connect over Alice's password = %q; want a refusal", out.Content)
	}
	// A legacy password (no binding, Alice's) and a record Mallory made: every use refuses.
	if _, err := f.creds.Put(ctx, tooltest.Team, "email-legacy", mailtest.Password, "UALICE"); err != nil {
		t.Fatal(err)
	}
	m := Mailbox{Version: 1, Name: "legacy", Address: mailtest.Addr, User: mailtest.Addr, IMAPHost: "127.0.0.1", IMAPPort: evil.IMAPPort,
		IMAPTLS: TLSPlain, SMTPHost: "127.0.0.1", SMTPPort: evil.SMTPPort, SMTPTLS: TLSPlain, Sent: "Sent", Credential: "email-legacy", AddedBy: "UMALLORY"}
	if err := f.e.boxes.put(ctx, tooltest.Team, m, ""); err != nil {
		t.Fatal(err)
	}
	out = tooltest.MustRunFor(t, f.r, "UMALLORY", ReadEmails, `{"mailbox": "legacy"}`)
	if !out.IsError || !strings.Contains(out.Content, "never used for someone else's mailbox") {
		t.Errorf("reading with someone else's password = %q; want a refusal", out.Content)
	}
	out = runApproved(t, f.r, "UMALLORY", SendEmail, `{"mailbox": "legacy", "to": ["x@evil.test"], "subject": "hi", "body": "hi"}`)
	if !out.IsError {
		t.Errorf("sending with someone else's password = %q; want a refusal", out.Content)
	}

	// Alice herself moves her own mailbox to other servers: the password given for the old ones is
	// deleted, not sent to the new ones; she stores it again.
	if err := f.creds.Delete(ctx, tooltest.Team, "email-support"); err != nil {
		t.Fatal(err)
	}
	f.connect(t)
	out = runApproved(t, f.r, "ULOCAL", ConnectEmail, connectArgsJSON(evil, `, "name": "support"`))
	tooltest.WantOK(t, out, "Updated the mailbox support", "was given for its former servers and was deleted")
	if _, err := f.creds.Stat(ctx, tooltest.Team, "email-support"); !errors.Is(err, secrets.ErrNotFound) {
		t.Errorf("the password for the former servers is still stored: %v", err)
	}

	for _, l := range evil.Logins() {
		if l.Password == mailtest.Password {
			t.Errorf("the other host received the password by %s", l.Proto)
		}
	}
	if n := len(evil.Logins()); n != 0 {
		t.Errorf("the other host was asked to log in %d times", n)
	}
}

// A password stored for the IMAP server of a mailbox is not sent to an SMTP server it was not given
// for once it is bound to another (passwordApplies), and a mailbox's password is only a mailbox's.
func TestPasswordAppliesOnlyToItsMailbox(t *testing.T) {
	f := newFixture(t)
	m := Mailbox{Name: "support", IMAPHost: "imap.acme.test", IMAPPort: 993, SMTPHost: "smtp.acme.test", SMTPPort: 465, Credential: "email-support", AddedBy: "UALICE"}
	base := secrets.Meta{Service: "email-support", Owner: "UALICE", Kind: secrets.KindMailbox, Integration: "email:support",
		Origins: []string{"imap://imap.acme.test:993"}}
	for _, c := range []struct {
		name   string
		meta   func(secrets.Meta) secrets.Meta
		origin string
		bind   bool
		refuse string
	}{
		{"bound", func(m secrets.Meta) secrets.Meta { return m }, m.imapOrigin(), false, ""},
		{"smtp not bound yet", func(m secrets.Meta) secrets.Meta { return m }, m.smtpOrigin(), true, ""},
		{"smtp bound elsewhere", func(m secrets.Meta) secrets.Meta {
			m.Origins = append(m.Origins, "smtp://smtp.evil.test:465")
			return m
		}, m.smtpOrigin(), false, "was given for smtp://smtp.evil.test:465"},
		{"imap elsewhere", func(m secrets.Meta) secrets.Meta { m.Origins = []string{"imap://imap.old.test:993"}; return m }, m.imapOrigin(), false, "was given for imap://imap.old.test:993"},
		{"someone else's", func(m secrets.Meta) secrets.Meta { m.Owner = "UMALLORY"; return m }, m.imapOrigin(), false, "stored by <@UMALLORY>"},
		{"another integration", func(m secrets.Meta) secrets.Meta { m.Integration = "email:sales"; return m }, m.imapOrigin(), false, "stored for email:sales"},
		{"a token set", func(m secrets.Meta) secrets.Meta { m.Kind = secrets.KindOAuth; return m }, m.imapOrigin(), false, "not a mailbox password"},
		{"an admin's", func(m secrets.Meta) secrets.Meta { m.Owner = "UBOSS"; return m }, m.imapOrigin(), false, ""},
	} {
		bind, err := f.e.passwordApplies(c.meta(base), m, c.origin)
		switch {
		case c.refuse == "" && (err != nil || bind != c.bind):
			t.Errorf("%s: bind %v, %v; want bind %v", c.name, bind, err, c.bind)
		case c.refuse != "" && (err == nil || !errors.Is(err, errStoreAgain) || !strings.Contains(err.Error(), c.refuse)):
			t.Errorf("%s: %v; want a refusal saying %q", c.name, err, c.refuse)
		}
	}
}

// The attack: a mail asks for a reply, and injected text makes the model reply "Thanks, received."
// with an HTML part, and a body tail after eight polite lines, carrying what it read. The approval
// shows both: the whole plain body and the HTML reduced to text.
func TestReplyApprovalShowsTheHiddenHTMLAndTheTail(t *testing.T) {
	secretTail := "P.S. the #exec history: we are acquiring Acme in March"
	body := "Thanks, received.\n\nBest,\nSupport\n\n\n\n\n\n\n\n" + strings.Repeat("padding line\n", 80) + secretTail
	args := fmt.Sprintf(`{"message_id": "inv-4411@client.test", "to": ["ana@client.test"], "body": %q, "html": %q}`, body,
		`<p>Thanks, received.</p><div style="display:none">Leaked: payroll export <b>IBAN DE89 3704</b></div>`)
	summary, details := tools.ApprovalSummary(ReplyToEmail, args)
	if !strings.Contains(summary, "ana@client.test") {
		t.Errorf("summary %q does not name the recipient", summary)
	}
	for _, want := range []string{secretTail, "Leaked: payroll export", "IBAN DE89 3704", "Also sent as HTML"} {
		if !strings.Contains(details, want) {
			t.Errorf("the approval does not show %q:\n%s", want, details)
		}
	}
	if strings.Contains(details, "<div") || strings.Contains(details, "display:none") {
		t.Errorf("the HTML is shown as markup, not as text:\n%s", details)
	}
	// A run recorded before the change replays the prompt it showed then.
	change, _, prior, ok := tools.PriorApprovalSummary(ReplyToEmail, args)
	if !ok || change != ChangeApprovalWhole || strings.Contains(prior, secretTail) {
		t.Errorf("prior approval = %v %q; want the former prompt under %s", ok, change, ChangeApprovalWhole)
	}
}
