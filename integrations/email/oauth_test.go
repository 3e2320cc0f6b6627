package email

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/email/mailtest"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// The XOAUTH2 initial response is the one of Google's page (developers.google.com/workspace/gmail/
// imap/xoauth2-protocol, "Initial client response"): its example user and token give its base64.
func TestXOAUTH2InitialResponse(t *testing.T) {
	mech, ir, err := xoauth2{"someuser@example.com", "ya29.vF9dft4qmTc2Nvb3RlckBhdHRhdmlzdGEuY29tCg"}.Start()
	if err != nil || mech != "XOAUTH2" {
		t.Fatalf("Start: %q, %v", mech, err)
	}
	const want = "dXNlcj1zb21ldXNlckBleGFtcGxlLmNvbQFhdXRoPUJlYXJlciB5YTI5LnZGOWRmdDRxbVRjMk52YjNSbGNrQmhkSFJoZG1semRHRXVZMjl0Q2cBAQ=="
	if got := base64.StdEncoding.EncodeToString(ir); got != want {
		t.Errorf("initial response %s, want %s", got, want)
	}
	// The error challenge is answered with an empty response (the same page, "Error response").
	if resp, err := (xoauth2{}).Next([]byte(`{"status":"401"}`)); err != nil || len(resp) != 0 {
		t.Errorf("Next: %q, %v; want an empty response", resp, err)
	}
}

func TestInferAuth(t *testing.T) {
	for _, c := range []struct{ addr, host, want string }{
		{"a@gmail.com", "", AuthGoogle}, {"a@googlemail.com", "", AuthGoogle}, {"a@acme.com", "imap.gmail.com", AuthGoogle},
		{"a@contoso.com", "outlook.office365.com", AuthMicrosoft}, {"a@gmail.com", "imap.fastmail.com", AuthPassword},
		{"a@acme.com", "", AuthPassword},
	} {
		if got := inferAuth(c.addr, c.host); got != c.want {
			t.Errorf("inferAuth(%q, %q) = %q, want %q", c.addr, c.host, got, c.want)
		}
	}
}

// oauthFixture is the mail domain over the mailtest servers accepting XOAUTH2 with the tokens of a
// fake Google (mailtest.OAuth), with the MCP sign-in's flow, its start link and its callback on a
// gateway, and the Slack side of its Sign in buttons.
type oauthFixture struct {
	google  *mailtest.OAuth
	ms      *mailtest.Servers
	e       *Email
	r       *tools.Runner
	creds   *secrets.Store
	state   workspace.Store
	flow    *oauth.Flow
	buttons *buttons
}

func newOAuthFixture(t *testing.T) *oauthFixture {
	t.Helper()
	f := &oauthFixture{google: mailtest.StartOAuth(t), ms: mailtest.Start(t)}
	f.ms.AcceptBearer(f.google.Valid)
	f.setup(t, nil)
	return f
}

// setup makes the flow, its start link and callback on a gateway and the mail domain; tweak
// changes its Deps.
func (f *oauthFixture) setup(t *testing.T, tweak func(*Deps)) {
	t.Helper()
	f.state = workspace.NewLocalAt(t.TempDir())
	var err error
	if f.creds, err = secrets.New(f.state, secrets.Key{7}); err != nil {
		t.Fatal(err)
	}
	// The gateway, at Lucy's public URL: the Sign in button's start link, and the callback the
	// provider sends the browser back to (gateway/http.go mounts the same handler on both).
	var cb http.Handler
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { cb.ServeHTTP(w, r) }))
	t.Cleanup(gw.Close)
	if f.flow, err = oauth.New(f.state, f.creds, secrets.Key{9}, gw.URL); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h := &oauth.Callback{Flow: f.flow, Trusted: &http.Client{Timeout: 10 * time.Second}, Log: zerolog.Nop(), OpenWait: 300 * time.Millisecond}
	mux.Handle("GET "+oauth.CallbackPath, h)
	mux.Handle("GET "+oauth.StartPath, h)
	cb = mux
	google := GoogleProvider(f.google.ClientID, f.google.ClientSecret)
	google.Endpoints.AuthorizationEndpoint, google.Endpoints.TokenEndpoint = f.google.URL+"/auth", f.google.URL+"/token"
	f.buttons = &buttons{}
	d := Deps{State: f.state, Workspace: workspace.NewLocalAt(t.TempDir()), Credentials: f.creds, Hosts: tools.AllowAllPrivate(),
		Log: zerolog.Nop(), Timeout: 10 * time.Second, Admins: []string{"UBOSS"}, OAuth: f.flow, Providers: map[string]Provider{AuthGoogle: google},
		Keys: f.buttons}
	if tweak != nil {
		tweak(&d)
	}
	f.e = New(d)
	f.r = tooltest.Runner(t, f.e)
}

func (f *oauthFixture) connectArgs(t *testing.T) string {
	return tooltest.JSONArgs(t, map[string]any{"address": mailtest.Addr, "auth": "google",
		"imap_host": "127.0.0.1", "imap_port": f.ms.IMAPPort, "imap_tls": "plain",
		"smtp_host": "127.0.0.1", "smtp_port": f.ms.SMTPPort, "smtp_tls": "plain"})
}

// buttons is the Slack side of the mail tools for these tests: the Sign in buttons Lucy posts (for
// whom, the link, its state), as integrations.SlackKeys posts them in the thread, and the Add key
// buttons.
type buttons struct {
	mu     sync.Mutex
	signIn []postedSignIn
	keys   []string
}

type postedSignIn struct {
	user string
	req  integrations.SignInRequest
}

func (b *buttons) RequestKey(_ context.Context, _ tools.Invocation, service, _ string, _ secrets.Binding) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.keys = append(b.keys, service)
	return nil
}

func (b *buttons) RequestSignIn(_ context.Context, inv tools.Invocation, req integrations.SignInRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.signIn = append(b.signIn, postedSignIn{user: inv.User, req: req})
	return nil
}

// last is the last Sign in button posted, and for whom.
func (b *buttons) last(t *testing.T) postedSignIn {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.signIn) == 0 {
		t.Fatal("no Sign in button was posted")
	}
	return b.signIn[len(b.signIn)-1]
}

func (b *buttons) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.signIn)
}

// click is Slack's block_actions of user's click on the last Sign in button, as the gateway records
// it (gateway/signin.go calls Flow.Opened).
func (f *oauthFixture) click(t *testing.T, user string) postedSignIn {
	t.Helper()
	b := f.buttons.last(t)
	if err := f.flow.Opened(context.Background(), b.req.State, user); err != nil {
		t.Fatal(err)
	}
	return b
}

// browse opens link as a browser does, with its own cookies: Lucy's start link, which sets the
// sign-in's cookie and sends it on to the provider's authorization endpoint, whose redirect comes
// back to Lucy's callback; the last page, and the provider's authorization URL if it was reached.
func browse(t *testing.T, link string) (status int, page string, authURL *url.URL) {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Timeout: 10 * time.Second, Jar: jar, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if strings.HasSuffix(r.URL.Path, "/auth") {
			authURL = r.URL
		}
		return nil
	}}
	resp, err := c.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), authURL
}

// signIn is the connecter's sign-in: user clicks the last Sign in button and their browser
// follows its link through the provider back to the callback, whose page it returns.
func (f *oauthFixture) signIn(t *testing.T, user string) (int, string) {
	t.Helper()
	status, page, _ := browse(t, f.click(t, user).req.URL)
	return status, page
}

// A Gmail mailbox connected with "auth": "google" gets a Sign in button for the person connecting it
// (the MCP sign-in's one flow: the button's link is Lucy's start link, which sends their browser to
// the provider's authorization endpoint with the operator's client, the public callback, Google's
// mail scope, offline access, PKCE S256 and the address as the login hint); once they click it and
// sign in (the fake Google redirects to the gateway's callback, which exchanges the code), the
// tokens are the mailbox's, connecting it again checks both logins with XOAUTH2, and the mail tools
// read and send with the access token. An access token the servers refuse is refreshed and the
// login tried again; one about to expire is refreshed before it is used; a revoked refresh token
// makes every tool say to sign in again, and no token is ever in an answer.
func TestMailboxSignsInWithOAuth(t *testing.T) {
	f := newOAuthFixture(t)
	var outputs []string
	run := func(name, args string) tools.Output {
		t.Helper()
		out := runApproved(t, f.r, "ULOCAL", name, args)
		outputs = append(outputs, out.Content)
		return out
	}
	out := run(ConnectEmail, f.connectArgs(t))
	tooltest.WantOK(t, out, "Connected the mailbox support", "Google sign-in, which is not done yet", "Sign in button", "<@ULOCAL>", "as "+mailtest.Addr)
	if strings.Contains(out.Content, "http") {
		t.Fatalf("the answer carries a link rather than the button: %s", out.Content)
	}
	b := f.click(t, "ULOCAL")
	if b.user != "ULOCAL" || !strings.Contains(b.req.URL, oauth.StartPath+"?state=") || !strings.Contains(b.req.Serves, "the mailbox "+mailtest.Addr) {
		t.Fatalf("the Sign in button: %+v", b)
	}
	// Nothing can be read before the sign-in.
	out = run(ReadEmails, `{"mailbox": "support"}`)
	tooltest.WantToolError(t, out, "not signed in to Google", "Sign in again")

	status, page, u := browse(t, b.req.URL)
	if status != http.StatusOK || !strings.Contains(page, "Lucy is connected to the mailbox "+mailtest.Addr) {
		t.Fatalf("the callback answered %d: %s", status, page)
	}
	if u == nil {
		t.Fatal("the start link did not send the browser to the provider")
	}
	q := u.Query()
	for k, want := range map[string]string{"client_id": f.google.ClientID, "scope": "https://mail.google.com/", "access_type": "offline",
		"prompt": "consent", "login_hint": mailtest.Addr, "code_challenge_method": "S256", "response_type": "code", "resource": ""} {
		if q.Get(k) != want {
			t.Errorf("the authorization URL's %s is %q, want %q", k, q.Get(k), want)
		}
	}
	if !strings.HasSuffix(q.Get("redirect_uri"), oauth.CallbackPath) {
		t.Errorf("redirect_uri %q is not the callback", q.Get("redirect_uri"))
	}
	meta, err := f.creds.Stat(context.Background(), tooltest.Team, oauth.CredentialName("email.support"))
	if err != nil || meta.Kind != secrets.KindOAuth {
		t.Fatalf("the tokens are not stored as a sign-in's: %+v, %v", meta, err)
	}

	out = run(ConnectEmail, f.connectArgs(t))
	tooltest.WantOK(t, out, "Updated the mailbox support", "IMAP login works, and SMTP login works")
	logins := f.ms.Logins()
	if len(logins) < 2 || logins[len(logins)-2].Mech != "XOAUTH2" || logins[len(logins)-1].Mech != "XOAUTH2" ||
		logins[len(logins)-2].Proto != "imap" || logins[len(logins)-1].Proto != "smtp" || logins[len(logins)-1].User != mailtest.Addr {
		t.Fatalf("the logins were not XOAUTH2 to IMAP then SMTP: %+v", logins)
	}

	f.ms.Deliver(t, "From: bob@example.com\nTo: "+mailtest.Addr+"\nSubject: Invoice 42\nMessage-ID: <inv42@example.com>\n\nPlease pay.\n")
	tooltest.WantOK(t, run(ReadEmails, `{"mailbox": "support"}`), "Invoice 42", "Please pay.")
	out = run(SendEmail, `{"mailbox": "support", "to": ["bob@example.com"], "subject": "Paid", "body": "Done."}`)
	tooltest.WantOK(t, out, "Sent the message to bob@example.com")
	if got := f.ms.Got(); len(got) != 1 || !strings.Contains(string(got[0].Data), "Subject: Paid") {
		t.Fatalf("the SMTP server received %+v", got)
	}

	// The servers refuse the access token before its expiry: refreshed, and the login tried again.
	f.google.ExpireAccess()
	before := len(f.ms.Logins())
	tooltest.WantOK(t, run(ReadEmails, `{"mailbox": "support"}`), "Invoice 42")
	grants, _ := f.google.Grants()
	if grants[len(grants)-1] != "refresh_token" {
		t.Fatalf("no refresh after the refused token: %v", grants)
	}
	if l := f.ms.Logins()[before:]; len(l) != 2 || l[0].Password == l[1].Password {
		t.Fatalf("want a refused login then one with a new token, got %d logins", len(l))
	}

	// A token that expires within the minute is refreshed before it is sent.
	f.google.SetAccessTTL(30 * time.Second)
	f.google.ExpireAccess()
	tooltest.WantOK(t, run(ReadEmails, `{"mailbox": "support"}`), "Invoice 42") // refused, refreshed: a 30-second token
	n := len(grants)
	grants, _ = f.google.Grants()
	before = len(f.ms.Logins())
	tooltest.WantOK(t, run(ReadEmails, `{"mailbox": "support"}`), "Invoice 42")
	after, _ := f.google.Grants()
	if len(after) != len(grants)+1 || len(grants) != n+1 {
		t.Fatalf("want one refresh per read (forced, then ahead of expiry): %v", after)
	}
	if l := f.ms.Logins()[before:]; len(l) != 1 {
		t.Fatalf("the token about to expire was sent before being refreshed: %d logins", len(l))
	}

	// The person revoked Lucy's access: every tool says to sign in again, and sends nothing.
	f.google.Revoke()
	out = run(ReadEmails, `{"mailbox": "support"}`)
	tooltest.WantToolError(t, out, "expired or was revoked", "invalid_grant", "Sign in again", ConnectEmail)
	out = run(SendEmail, `{"mailbox": "support", "to": ["bob@example.com"], "subject": "Again", "body": "x"}`)
	tooltest.WantToolError(t, out, "Sign in again")
	if len(f.ms.Got()) != 1 {
		t.Fatalf("a message was sent without a sign-in")
	}
	// Connecting again gives a new Sign in button.
	n = f.buttons.count()
	out = run(ConnectEmail, f.connectArgs(t))
	tooltest.WantOK(t, out, "not done yet", "Sign in button")
	if f.buttons.count() != n+1 || f.buttons.last(t).req.State == b.req.State {
		t.Fatalf("no new Sign in button: %s", out.Content)
	}

	// Disconnecting deletes the tokens.
	tooltest.WantOK(t, run(DisconnectEmail, `{"mailbox": "support"}`), "Disconnected the mailbox support")
	if _, err := f.creds.Stat(context.Background(), tooltest.Team, oauth.CredentialName("email.support")); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("the tokens outlived the mailbox: %v", err)
	}
	for _, o := range outputs {
		if strings.Contains(o, "ya29.") || strings.Contains(o, "1//") || strings.Contains(o, f.google.ClientSecret) {
			t.Errorf("an answer shows a token or the client secret: %s", o)
		}
	}
}

// A mailbox's sign-in follows rule 16 of docs/security.md: its Sign in button is bound to the person
// connecting the mailbox. Its link opened without their click (copied out of Slack) is refused;
// clicked by someone else it is spent, and the provider's code is never exchanged; only their own
// click and browser store the tokens. The tokens are then the mailbox's (its grant, not the
// person's own), bound to its IMAP origin as a sign-in's (kind oauth, Lucy's reserved name), and
// serve every member who uses the mailbox; another member may not sign it in again (they may not
// change it), an admin may.
func TestMailboxSignInIsBoundToItsConnecter(t *testing.T) {
	ctx := context.Background()
	f := newOAuthFixture(t)
	tooltest.WantOK(t, runApproved(t, f.r, "ULOCAL", ConnectEmail, f.connectArgs(t)), "Sign in button", "<@ULOCAL>")
	b := f.buttons.last(t)
	if b.user != "ULOCAL" {
		t.Fatalf("the button was posted for %s", b.user)
	}
	// Copied out of Slack: no click reached Lucy.
	status, page, u := browse(t, b.req.URL)
	if status != http.StatusForbidden || !strings.Contains(page, "was not opened from its Sign in button") || u != nil {
		t.Fatalf("a link opened without its click: %d %s", status, page)
	}
	// Bob clicks Ada's button: the link is spent and the provider is never reached.
	status, page, u = browse(t, f.click(t, "UBOB").req.URL)
	if status != http.StatusForbidden || !strings.Contains(page, "opened by someone else") || u != nil {
		t.Fatalf("a link someone else opened: %d %s", status, page)
	}
	if grants, _ := f.google.Grants(); len(grants) != 0 {
		t.Fatalf("a code was exchanged: %v", grants)
	}
	if _, err := f.creds.Stat(ctx, tooltest.Team, oauth.CredentialName("email.support")); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("tokens were stored for a link someone else opened: %v", err)
	}
	// Bob may not sign the mailbox in either: he did not connect it.
	n := f.buttons.count()
	tooltest.WantToolError(t, runApproved(t, f.r, "UBOB", ConnectEmail, f.connectArgs(t)), "only they or an admin can change it")
	if f.buttons.count() != n {
		t.Fatal("a Sign in button was posted for someone who may not change the mailbox")
	}

	// Ada's own click and browser.
	runApproved(t, f.r, "ULOCAL", ConnectEmail, f.connectArgs(t))
	if status, page := f.signIn(t, "ULOCAL"); status != http.StatusOK || !strings.Contains(page, "the mailbox "+mailtest.Addr) {
		t.Fatalf("the callback answered %d: %s", status, page)
	}
	meta, err := f.creds.Stat(ctx, tooltest.Team, oauth.CredentialName("email.support"))
	m := Mailbox{IMAPHost: "127.0.0.1", IMAPPort: f.ms.IMAPPort}
	if err != nil || meta.Kind != secrets.KindOAuth || len(meta.Origins) != 1 || meta.Origins[0] != m.imapOrigin() {
		t.Fatalf("the mailbox's tokens are not bound to its IMAP origin as a sign-in's: %+v, %v", meta, err)
	}
	if _, err := f.creds.Stat(ctx, tooltest.Team, oauth.PersonCredentialName("email.support", "ULOCAL")); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("the mailbox's sign-in was stored as Ada's own: %v", err)
	}
	// The mailbox's tokens serve whoever uses it.
	f.ms.Deliver(t, "From: bob@example.com\nTo: "+mailtest.Addr+"\nSubject: Invoice 43\nMessage-ID: <inv43@example.com>\n\nPlease pay.\n")
	tooltest.WantOK(t, runApproved(t, f.r, "UBOB", ReadEmails, `{"mailbox": "support"}`), "Invoice 43")

	// An admin may sign it in again: the button is bound to the admin, and the tokens they store
	// serve the mailbox.
	f.google.Revoke()
	tooltest.WantOK(t, runApproved(t, f.r, "UBOSS", ConnectEmail, f.connectArgs(t)), "Sign in button", "<@UBOSS>")
	if status, page := f.signIn(t, "UBOSS"); status != http.StatusOK {
		t.Fatalf("the admin's sign-in: %d %s", status, page)
	}
	tooltest.WantOK(t, runApproved(t, f.r, "UBOB", ReadEmails, `{"mailbox": "support"}`), "Invoice 43")
}

// Without the operator's client for a provider, the tool says what to set and changes nothing.
func TestOAuthMailboxNeedsTheOperatorsClient(t *testing.T) {
	f := newOAuthFixture(t)
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, `{"address": "ops@contoso.com", "auth": "microsoft"}`)
	tooltest.WantToolError(t, out, "LUCY_MICROSOFT_CLIENT_ID and LUCY_MICROSOFT_CLIENT_SECRET", "Nothing was changed")
	if list, _ := f.e.boxes.list(context.Background(), tooltest.Team); len(list) != 0 {
		t.Fatalf("a mailbox was saved: %+v", list)
	}
	// A password mailbox still needs its servers.
	_, err := tooltest.RunFor(t, f.r, "ULOCAL", ConnectEmail, `{"address": "ops@acme.com"}`)
	if err == nil || !strings.Contains(err.Error(), "needs its servers") {
		t.Fatalf("a password mailbox without servers: %v", err)
	}
}

// The new-mail listener reads an OAuth mailbox as any other: its first look starts the cursor, the
// next finds the new message (with XOAUTH2 logins); once the sign-in is revoked it has nothing to
// read (Gone, no error to retry) and the mailbox's health says to sign in again.
func TestListenerReadsOAuthMailbox(t *testing.T) {
	ctx := context.Background()
	f := &oauthFixture{google: mailtest.StartOAuth(t), ms: mailtest.Start(t)}
	f.ms.AcceptBearer(f.google.Valid)
	// Everyone may use every conversation here: the access rule itself is
	// TestListenerChannelMustBeTheConnectersToUse's.
	f.setup(t, func(d *Deps) {
		d.Access = func(context.Context, string, string, string) (string, error) { return "", nil }
	})
	args := tooltest.JSONArgs(t, map[string]any{"address": mailtest.Addr, "auth": "google", "channel": "CMAIL",
		"imap_host": "127.0.0.1", "imap_port": f.ms.IMAPPort, "imap_tls": "plain",
		"smtp_host": "127.0.0.1", "smtp_port": f.ms.SMTPPort, "smtp_tls": "plain"})
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, args)
	tooltest.WantOK(t, out, "Sign in button")
	if status, page := f.signIn(t, "ULOCAL"); status != http.StatusOK {
		t.Fatalf("the callback answered %d: %s", status, page)
	}
	if b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil); err != nil || len(b.Messages) != 0 || b.Gone {
		t.Fatalf("first look = %+v, %v", b, err)
	}
	f.ms.Deliver(t, newMail(1))
	b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil)
	if err != nil || len(b.Messages) != 1 || b.Messages[0].Subject != "Request 1" {
		t.Fatalf("second look = %+v, %v; want request 1", b, err)
	}
	if l := f.ms.Logins(); l[len(l)-1].Mech != "XOAUTH2" {
		t.Fatalf("the listener did not log in with XOAUTH2: %+v", l[len(l)-1])
	}
	f.google.Revoke()
	if b, err := f.e.NewMail(ctx, tooltest.Team, "support", 10, nil); err != nil || !b.Gone {
		t.Fatalf("after the revocation = %+v, %v; want Gone", b, err)
	}
	list, err := f.e.Integrations(ctx, tooltest.Team)
	if err != nil || len(list) != 1 || list[0].Healthy || !strings.Contains(list[0].Status, "expired or was revoked") ||
		!strings.Contains(list[0].Status, "logs in with a Google sign-in") {
		t.Fatalf("the listing after the revocation: %+v, %v", list, err)
	}
}

// A Microsoft 365 mailbox's link asks Microsoft's scopes (IMAP.AccessAsUser.All, SMTP.Send,
// offline_access) of the operator's tenant, and without Google's offline parameters.
func TestMicrosoftSignInLink(t *testing.T) {
	f := &oauthFixture{google: mailtest.StartOAuth(t), ms: mailtest.Start(t)}
	f.setup(t, func(d *Deps) {
		p := MicrosoftProvider("11111111-2222-3333-4444-555555555555", "secret", "contoso.onmicrosoft.com")
		if !strings.HasPrefix(p.Endpoints.AuthorizationEndpoint, "https://login.microsoftonline.com/contoso.onmicrosoft.com/oauth2/v2.0/") {
			t.Fatalf("the tenant's endpoints: %+v", p.Endpoints)
		}
		p.Endpoints.AuthorizationEndpoint = f.google.URL + "/auth"
		d.Providers = map[string]Provider{AuthMicrosoft: p}
	})
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, tooltest.JSONArgs(t, map[string]any{"address": "ops@contoso.com",
		"imap_host": "outlook.office365.com", "smtp_host": "smtp.office365.com", "smtp_port": 587, "smtp_tls": "starttls"}))
	tooltest.WantOK(t, out, "Microsoft 365 sign-in, which is not done yet", "Sign in button")
	// The connecter's click and browser through the start link reach Microsoft's authorization
	// endpoint (here the fake's, which refuses another client: its page, not a redirect).
	_, _, u := browse(t, f.click(t, "ULOCAL").req.URL)
	if u == nil || u.Query().Get("client_id") != "11111111-2222-3333-4444-555555555555" {
		t.Fatalf("the start link did not reach Microsoft's authorization endpoint: %v", u)
	}
	q := u.Query()
	if q.Get("scope") != "https://outlook.office.com/IMAP.AccessAsUser.All https://outlook.office.com/SMTP.Send offline_access" ||
		q.Get("access_type") != "" || q.Get("login_hint") != "ops@contoso.com" {
		t.Fatalf("the link's parameters: %v", q)
	}
}

// A signed-in mailbox connected again with a password loses its sign-in: the tokens are deleted,
// never used for the password login, and the password is asked for.
func TestSwitchingToAPasswordDeletesTheSignIn(t *testing.T) {
	f := newOAuthFixture(t)
	out := runApproved(t, f.r, "ULOCAL", ConnectEmail, f.connectArgs(t))
	tooltest.WantOK(t, out, "Sign in button")
	if status, page := f.signIn(t, "ULOCAL"); status != http.StatusOK {
		t.Fatalf("the callback answered %d: %s", status, page)
	}
	out = runApproved(t, f.r, "ULOCAL", ConnectEmail, strings.Replace(f.connectArgs(t), `"google"`, `"password"`, 1))
	tooltest.WantOK(t, out, "Updated the mailbox support", "Its former credential was deleted", "not stored yet, under \"email-support\"")
	if _, err := f.creds.Stat(context.Background(), tooltest.Team, oauth.CredentialName("email.support")); !errors.Is(err, secrets.ErrNotFound) {
		t.Fatalf("the sign-in's tokens outlived the switch: %v", err)
	}
}
