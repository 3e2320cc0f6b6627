package email

import (
	"context"
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// Against Debian's Dovecot 2.3 and Postfix 3.7 (mailtest.StartReal; skipped, with the reason, where
// they are not installed or cannot be started): with their CA named as LUCY_MAIL_CA_FILE names it,
// a mailbox connected over IMAPS and SMTPS (Postfix's wrapper mode, the port 465 way, the default)
// passes the connect check, sends a message that Postfix delivers to Dovecot over LMTP and that is
// read back from the INBOX over IMAP; the same over submission with STARTTLS (the 587 way); and the
// connect check names SMTP, and why, when the SMTP password is wrong while IMAP's is right.
func TestRealDovecotAndPostfix(t *testing.T) {
	rs := mailtest.StartReal(t)
	roots, err := config.MailRootCAs(rs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	state := workspace.NewLocalAt(t.TempDir())
	creds, err := secrets.New(state, secrets.Key{7})
	if err != nil {
		t.Fatal(err)
	}
	// The real servers are on loopback: the operator lists them, as for an internal mail server.
	hosts, err := tools.ParseAllowedPrivateHosts("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	e := New(Deps{State: state, Workspace: workspace.NewLocalAt(t.TempDir()), Credentials: creds, Hosts: hosts,
		TLS: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, Log: zerolog.Nop(), Timeout: 10 * time.Second})
	r := tooltest.Runner(t, e)
	ctx := context.Background()
	defer func() {
		if t.Failed() {
			t.Log(rs.Logs())
		}
	}()
	connect := func(r *tools.Runner, name, smtpTLS string, smtpPort int) tools.Output {
		t.Helper()
		return runApproved(t, r, "ULOCAL", ConnectEmail, tooltest.JSONArgs(t, map[string]any{
			"name": name, "address": mailtest.Addr, "imap_host": "127.0.0.1", "imap_port": rs.IMAPSPort,
			"smtp_host": "127.0.0.1", "smtp_port": smtpPort, "smtp_tls": smtpTLS,
		}))
	}

	for _, c := range []struct {
		name, mode string
		port       int
	}{{"smtps", TLSImplicit, rs.SMTPSPort}, {"submission", TLSStartTLS, rs.SubmissionPort}} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := creds.Put(ctx, tooltest.Team, "email-"+c.name, mailtest.Password, "ULOCAL"); err != nil {
				t.Fatal(err)
			}
			tooltest.WantOK(t, connect(r, c.name, c.mode, c.port), "Connected the mailbox "+c.name, "IMAP login works, and SMTP login works")
			subject := "Real " + c.name + " " + time.Now().Format("150405.000")
			start := time.Now()
			out := runApproved(t, r, "ULOCAL", SendEmail, tooltest.JSONArgs(t, map[string]any{
				"mailbox": c.name, "to": []string{mailtest.Addr}, "subject": subject, "body": "Sent over " + c.mode + " through Postfix.",
			}))
			tooltest.WantOK(t, out, "Sent the message to "+mailtest.Addr, "Its copy is in Sent")
			t.Logf("sent over %s in %s", c.mode, time.Since(start).Round(time.Millisecond))
			// Postfix queues, then delivers over LMTP: read the INBOX until it is there.
			deadline := time.Now().Add(20 * time.Second)
			for {
				out = tooltest.MustRun(t, r, SearchEmails, fmt.Sprintf(`{"mailbox": %q, "subject": %q}`, c.name, subject))
				if !out.IsError && strings.Contains(out.Content, "1 of 1 matching") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the message never reached the INBOX: %s", out.Content)
				}
				time.Sleep(200 * time.Millisecond)
			}
			tooltest.WantOK(t, out, "Subject: "+subject, "Sent over "+c.mode+" through Postfix.", mailtest.Addr, "Message-ID: lucy.")
			t.Logf("delivered and read back %s after the send began", time.Since(start).Round(time.Millisecond))
		})
	}

	// The SMTP password is wrong and IMAP's right: the check says IMAP works, and that SMTP failed,
	// where and why (the server's 535), without the password.
	if _, err := creds.Put(ctx, tooltest.Team, "email-split", mailtest.Password, "ULOCAL"); err != nil {
		t.Fatal(err)
	}
	out := runApproved(t, r, "ULOCAL", ConnectEmail, tooltest.JSONArgs(t, map[string]any{
		"name": "split", "address": mailtest.SplitAddr, "imap_host": "127.0.0.1", "imap_port": rs.IMAPSPort,
		"smtp_host": "127.0.0.1", "smtp_port": rs.SMTPSPort,
	}))
	tooltest.WantOK(t, out, "IMAP login works.", "But logging in to SMTP (127.0.0.1:"+fmt.Sprint(rs.SMTPSPort)+", tls) failed", "535",
		"Check the settings, or the stored password")
	t.Logf("the connect check with a wrong SMTP password: %s", out.Content)
	if strings.Contains(out.Content, "failed: SMTP 127.0.0.1") {
		t.Errorf("the check names the server twice: %s", out.Content)
	}
	if strings.Contains(out.Content, mailtest.Password) {
		t.Errorf("the check's answer shows the password: %s", out.Content)
	}

	// Without the CA (the system's roots only), both logins fail, and the check says the
	// certificate is why.
	e2 := New(Deps{State: state, Workspace: workspace.NewLocalAt(t.TempDir()), Credentials: creds, Hosts: hosts, Log: zerolog.Nop(),
		Timeout: 10 * time.Second})
	out = connect(tooltest.Runner(t, e2), "smtps", TLSImplicit, rs.SMTPSPort)
	tooltest.WantOK(t, out, "Updated the mailbox smtps", "logging in to IMAP", "logging in to SMTP", "certificate signed by unknown authority")
}
