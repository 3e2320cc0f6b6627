package oauth

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workspace"
)

// BeginFixed makes the authorization URL of endpoints given rather than discovered: the operator's
// client, the callback on the public URL, the scopes, PKCE S256 and the extra parameters; its
// pending sign-in is the operator's (trusted token endpoint) and opens only under its state.
// Without a public URL, a client or endpoints, it refuses.
func TestBeginFixed(t *testing.T) {
	state := workspace.NewLocalAt(t.TempDir())
	vault, err := secrets.New(state, secrets.Key{1})
	if err != nil {
		t.Fatal(err)
	}
	in := FixedInput{Team: "T1", User: "U1", Server: "Email.Support", ServerURL: "imap://imap.gmail.com:993",
		Client: Client{ID: "cid", Secret: "csecret"}, Scopes: []string{"https://mail.google.com/"},
		Endpoints: Endpoints{AuthURL: "https://accounts.google.com/o/oauth2/v2/auth", TokenURL: "https://oauth2.googleapis.com/token",
			Params: map[string]string{"access_type": "offline", "login_hint": "a@b.c"}}}
	noURL, _ := New(state, vault, secrets.Key{2}, "")
	if _, err := noURL.BeginFixed(context.Background(), in); err == nil || !strings.Contains(err.Error(), "LUCY_PUBLIC_URL") {
		t.Fatalf("without a public URL: %v", err)
	}
	f, _ := New(state, vault, secrets.Key{2}, "https://lucy.example.com/")
	bad := in
	bad.Client = Client{}
	if _, err := f.BeginFixed(context.Background(), bad); err == nil {
		t.Fatal("a sign-in without a client was begun")
	}
	si, err := f.BeginFixed(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(si.URL)
	q := u.Query()
	if u.Host != "accounts.google.com" || q.Get("client_id") != "cid" || q.Get("redirect_uri") != "https://lucy.example.com"+CallbackPath ||
		q.Get("scope") != "https://mail.google.com/" || q.Get("code_challenge_method") != "S256" || q.Get("access_type") != "offline" ||
		q.Get("login_hint") != "a@b.c" || q.Get("resource") != "" || strings.Contains(si.URL, "csecret") {
		t.Fatalf("the authorization URL: %s", si.URL)
	}
	c, err := f.claim(context.Background(), q.Get("state"))
	if err != nil {
		t.Fatal(err)
	}
	p := c.p
	if !p.Trusted || p.TokenEndpoint != "https://oauth2.googleapis.com/token" || p.Server != "email.support" || p.Client.Secret != "csecret" ||
		p.Client.AuthStyle != 1 || p.ServerURL != "imap://imap.gmail.com:993" {
		t.Fatalf("the pending sign-in: %+v", p)
	}
}
