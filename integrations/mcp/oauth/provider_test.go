package oauth

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workspace"
)

// Begin with a provider given (a mail provider's published endpoints) skips discovery: the link is
// Lucy's start link, bound to its person like any other, and the authorization URL the start sends
// the browser to has the operator's client, the callback on the public URL, the scopes, PKCE S256
// and the provider's extra parameters, and no resource indicator when none is given; its pending
// sign-in keeps the trusted token endpoint, the client's authentication and Share. Without a
// public URL, a client or endpoints, it refuses.
func TestBeginWithAGivenProvider(t *testing.T) {
	ctx := context.Background()
	in := BeginInput{Team: "T1", User: "U1", Server: "email.support", ServerURL: "imap://imap.gmail.com:993", Trusted: true, Share: true,
		Client: &Client{ID: "cid", Secret: "csecret", AuthStyle: 1}, Scopes: []string{"https://mail.google.com/"},
		Provider: &Provider{AuthorizationEndpoint: "https://accounts.google.com/o/oauth2/v2/auth", TokenEndpoint: "https://oauth2.googleapis.com/token",
			Params: map[string]string{"access_type": "offline", "login_hint": "a@b.c"}}}
	st := workspace.NewLocalAt(t.TempDir())
	vault, err := secrets.New(st, secrets.Key{1})
	if err != nil {
		t.Fatal(err)
	}
	noURL, _ := New(st, vault, secrets.Key{2}, "")
	if _, err := noURL.Begin(ctx, in); err == nil || !strings.Contains(err.Error(), "LUCY_PUBLIC_URL") {
		t.Fatalf("without a public URL: %v", err)
	}
	f, _ := testFlow(t)
	bad := in
	bad.Client = nil
	if _, err := f.Begin(ctx, bad); err == nil {
		t.Fatal("a sign-in without a client was begun")
	}
	bad = in
	bad.Provider = &Provider{AuthorizationEndpoint: in.Provider.AuthorizationEndpoint}
	if _, err := f.Begin(ctx, bad); err == nil {
		t.Fatal("a sign-in without a token endpoint was begun")
	}
	si, err := f.Begin(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if si.URL != "https://lucy.example.com"+StartPath+"?state="+url.QueryEscape(si.State) || si.User != "U1" {
		t.Fatalf("the link is not Lucy's start link for U1: %+v", si)
	}
	if _, err := f.start(ctx, si.State, browserHash); err != errNotOpened {
		t.Fatalf("started without its person's click: %v", err)
	}
	if err := f.Opened(ctx, si.State, "U1"); err != nil {
		t.Fatal(err)
	}
	authURL, err := f.start(ctx, si.State, browserHash)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if u.Host != "accounts.google.com" || q.Get("client_id") != "cid" || q.Get("redirect_uri") != "https://lucy.example.com"+CallbackPath ||
		q.Get("scope") != "https://mail.google.com/" || q.Get("code_challenge_method") != "S256" || q.Get("access_type") != "offline" ||
		q.Get("login_hint") != "a@b.c" || q.Get("state") != si.State || q.Has("resource") || strings.Contains(authURL, "csecret") {
		t.Fatalf("the authorization URL: %s", authURL)
	}
	c, err := f.claim(ctx, si.State, browserHash)
	if err != nil {
		t.Fatal(err)
	}
	p := c.p
	if !p.Trusted || !p.Share || p.TokenEndpoint != "https://oauth2.googleapis.com/token" || p.Server != "email.support" || p.Client.Secret != "csecret" ||
		p.Client.AuthStyle != 1 || p.ServerURL != "imap://imap.gmail.com:993" || p.Resource != "" {
		t.Fatalf("the pending sign-in: %+v", p)
	}
}
