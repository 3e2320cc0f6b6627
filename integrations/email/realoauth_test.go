package email

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// Against Debian's Dovecot 2.3 and Postfix 3.7 configured for OAuth (mailtest.StartRealOAuth:
// Dovecot's oauth2 passdb validating each token at the fake Google's userinfo endpoint; Postfix's
// SMTP AUTH asks Dovecot), a mailbox signed in through the fake Google logs in to IMAPS and to
// SMTPS with SASL XOAUTH2: the connect check passes, a message sent through Postfix is delivered
// to Dovecot and read back, and once the person revokes Lucy's access both say to sign in again.
func TestRealDovecotXOAUTH2(t *testing.T) {
	f := &oauthFixture{google: mailtest.StartOAuth(t)}
	rs := mailtest.StartRealOAuth(t, f.google.URL+"/userinfo")
	defer func() {
		if t.Failed() {
			t.Log(rs.Logs())
		}
	}()
	roots, err := config.MailRootCAs(rs.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	hosts, err := tools.ParseAllowedPrivateHosts("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	f.setup(t, func(d *Deps) {
		d.Hosts, d.TLS = hosts, &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	})
	args := tooltest.JSONArgs(t, map[string]any{"address": mailtest.Addr, "auth": "google",
		"imap_host": "127.0.0.1", "imap_port": rs.IMAPSPort, "smtp_host": "127.0.0.1", "smtp_port": rs.SMTPSPort})
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, args)
	tooltest.WantOK(t, out, "not done yet", "Sign in button")
	status, page := f.signIn(t, "ULOCAL")
	if status != http.StatusOK {
		t.Fatalf("the callback answered %d: %s", status, page)
	}
	start := time.Now()
	out = runApproved(t, f.r, "ULOCAL", ConnectEmail, args)
	tooltest.WantOK(t, out, "IMAP login works, and SMTP login works")
	t.Logf("XOAUTH2 logins to Dovecot and to Postfix checked in %s", time.Since(start).Round(time.Millisecond))
	if f.google.UserInfoCalls() < 2 {
		t.Fatalf("Dovecot validated %d tokens at the userinfo endpoint, want one per login", f.google.UserInfoCalls())
	}

	subject := "Real XOAUTH2 " + time.Now().Format("150405.000")
	out = runApproved(t, f.r, "ULOCAL", SendEmail, tooltest.JSONArgs(t, map[string]any{
		"mailbox": "support", "to": []string{mailtest.Addr}, "subject": subject, "body": "Sent with a Google sign-in."}))
	tooltest.WantOK(t, out, "Sent the message to "+mailtest.Addr)
	deadline := time.Now().Add(20 * time.Second)
	for {
		out = tooltest.MustRun(t, f.r, SearchEmails, fmt.Sprintf(`{"mailbox": "support", "subject": %q}`, subject))
		if !out.IsError && strings.Contains(out.Content, "1 of 1 matching") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the message never reached the INBOX: %s", out.Content)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("sent through Postfix with XOAUTH2 and read back in %s", time.Since(start).Round(time.Millisecond))

	f.google.Revoke()
	out = tooltest.MustRun(t, f.r, ReadEmails, `{"mailbox": "support"}`)
	tooltest.WantToolError(t, out, "expired or was revoked", "Sign in again")
}
