package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// The browser of these tests: its sign-in cookie's value and the hash the start endpoint keeps.
const browserCookie = "test-browser-cookie"

var browserHash = func() string { s := sha256.Sum256([]byte(browserCookie)); return hex.EncodeToString(s[:]) }()

// withBrowser adds the sign-in cookie the start endpoint gave the test's browser for state.
func withBrowser(r *http.Request, state string) *http.Request {
	_, id, _ := parseState(state)
	r.AddCookie(&http.Cookie{Name: cookieName(id), Value: browserCookie})
	return r
}

func testFlow(t *testing.T) (*Flow, *secrets.Store) {
	t.Helper()
	var key secrets.Key
	copy(key[:], "0123456789abcdef0123456789abcdef")
	st := workspace.NewLocalAt(t.TempDir())
	vault, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(st, vault, key, "https://lucy.example.com")
	if err != nil {
		t.Fatal(err)
	}
	return f, vault
}

// A link older than PendingTTL is refused with a page that says it expired, its token endpoint is
// never called, and it is removed; a fresh one held by another callback is refused too.
func TestCallbackRefusesExpiredAndHeldStates(t *testing.T) {
	ctx := context.Background()
	f, vault := testFlow(t)
	called := 0
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called++ }))
	defer tokenEndpoint.Close()
	cb := &Callback{Flow: f, Guarded: http.DefaultClient, Trusted: http.DefaultClient, Log: zerolog.Nop()}
	save := func() string {
		state, id := newState("T1")
		if err := f.savePending(ctx, id, pending{Team: "T1", User: "U1", AuthURL: "https://as.example.com/authorize", Server: "acme", ServerURL: "https://acme.example.com/mcp", Verifier: "v",
			Client: Client{ID: "c"}, TokenEndpoint: tokenEndpoint.URL, RedirectURI: f.RedirectURI(), Expires: f.now().Add(PendingTTL)}); err != nil {
			t.Fatal(err)
		}
		if err := f.Opened(ctx, state, "U1"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.start(ctx, state, browserHash); err != nil {
			t.Fatal(err)
		}
		return state
	}
	get := func(state string) (int, string) {
		rec := httptest.NewRecorder()
		cb.ServeHTTP(rec, withBrowser(httptest.NewRequest(http.MethodGet, CallbackPath+"?code=abc&state="+state, nil), state))
		return rec.Code, rec.Body.String()
	}

	expired := save()
	f.now = func() time.Time { return time.Now().Add(PendingTTL + time.Second) }
	if code, body := get(expired); code != http.StatusBadRequest || !strings.Contains(body, "expired") {
		t.Errorf("expired link: %d %s", code, body)
	}
	f.now = time.Now
	if code, body := get(expired); code != http.StatusBadRequest || !strings.Contains(body, "unknown") {
		t.Errorf("expired link, again: %d %s (it should have been removed)", code, body)
	}

	held := save()
	if _, err := f.claim(ctx, held, browserHash); err != nil {
		t.Fatal(err)
	}
	if code, body := get(held); code != http.StatusConflict || !strings.Contains(body, "another request") {
		t.Errorf("held link: %d %s", code, body)
	}
	if called != 0 {
		t.Errorf("the token endpoint was called %d times for refused links", called)
	}
	if _, _, err := vault.Get(ctx, "T1", PersonCredentialName("acme", "U1")); err == nil {
		t.Error("tokens stored for a refused link")
	}
}

// A failed exchange changes nothing and leaves the link usable; a code the endpoint refuses is
// not shown on the page.
func TestFailedExchangeReleasesTheLink(t *testing.T) {
	ctx := context.Background()
	f, vault := testFlow(t)
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid_grant","error_description":"code secret-code-123456 is not valid"}`))
	}))
	defer tokenEndpoint.Close()
	cb := &Callback{Flow: f, Guarded: http.DefaultClient, Trusted: http.DefaultClient, Log: zerolog.Nop()}
	state, id := newState("T1")
	if err := f.savePending(ctx, id, pending{Team: "T1", User: "U1", AuthURL: "https://as.example.com/authorize", Server: "acme", ServerURL: "https://acme.example.com/mcp", Verifier: "v",
		Client: Client{ID: "c"}, TokenEndpoint: tokenEndpoint.URL, RedirectURI: f.RedirectURI(), Expires: f.now().Add(PendingTTL)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Opened(ctx, state, "U1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.start(ctx, state, browserHash); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	cb.ServeHTTP(rec, withBrowser(httptest.NewRequest(http.MethodGet, CallbackPath+"?code=secret-code-123456&state="+state, nil), state))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "invalid_grant") || strings.Contains(rec.Body.String(), "secret-code-123456") {
		t.Errorf("failed exchange: %d %s", rec.Code, rec.Body.String())
	}
	if _, _, err := vault.Get(ctx, "T1", PersonCredentialName("acme", "U1")); err == nil {
		t.Error("tokens stored after a failed exchange")
	}
	if _, err := f.claim(ctx, state, browserHash); err != nil {
		t.Errorf("the link is not usable again after a failed exchange: %v", err)
	}
}

// The guarded client refuses a chat-connected server's private token endpoint; the exchange is
// then refused and nothing stored.
func TestExchangeOfAChatServerUsesTheGuardedClient(t *testing.T) {
	ctx := context.Background()
	f, vault := testFlow(t)
	called := false
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { called = true }))
	defer tokenEndpoint.Close()
	// Lucy's guard with no private host allowed: httptest's loopback endpoint is refused.
	cb := &Callback{Flow: f, Guarded: tools.NewGuardedClient(nil, tools.PrivateHosts{}), Trusted: http.DefaultClient, Log: zerolog.Nop()}
	state, id := newState("T1")
	if err := f.savePending(ctx, id, pending{Team: "T1", User: "U1", AuthURL: "https://as.example.com/authorize", Server: "acme", ServerURL: "https://acme.example.com/mcp", Verifier: "v",
		Client: Client{ID: "c"}, TokenEndpoint: tokenEndpoint.URL, RedirectURI: f.RedirectURI(), Expires: f.now().Add(PendingTTL)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Opened(ctx, state, "U1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.start(ctx, state, browserHash); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	cb.ServeHTTP(rec, withBrowser(httptest.NewRequest(http.MethodGet, CallbackPath+"?code=abc&state="+state, nil), state))
	if rec.Code != http.StatusBadGateway || called || !strings.Contains(rec.Body.String(), "is a private") {
		t.Errorf("exchange at a private endpoint: %d called=%v %s", rec.Code, called, rec.Body.String())
	}
	if _, _, err := vault.Get(ctx, "T1", PersonCredentialName("acme", "U1")); err == nil {
		t.Error("tokens stored")
	}
}
