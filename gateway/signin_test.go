package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workspace"
)

// signInClick is Slack's block_actions payload of user's click on a Sign in button: a URL button
// still sends one, with the button's value (https://docs.slack.dev/reference/block-kit/block-elements/button-element;
// the payload's fields: https://docs.slack.dev/reference/interaction-payloads/block_actions-payload).
func signInClick(t *testing.T, user, state string) string {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"type": "block_actions", "user": map[string]any{"id": user}, "team": map[string]any{"id": testTeam},
		"channel":   map[string]any{"id": "C1"},
		"container": map[string]any{"type": "message", "message_ts": "1700000000.000900", "channel_id": "C1"},
		"actions": []map[string]any{{"action_id": slackwire.SignInAction, "block_id": slackwire.SignInBlock, "type": "button",
			"value": state, "url": "https://as.example.com/authorize?state=" + url.QueryEscape(state), "action_ts": "1700000001.000100"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return url.Values{"payload": {string(payload)}}.Encode()
}

// Through the gateway's listener: Slack's signed click on U1's Sign in button by U2 is recorded, and
// the browser's return with that link is refused and exchanges nothing; a fresh link clicked by U1
// completes and stores U1's own sign-in. No click is handed to Temporal.
func TestSignInClickBindsTheLinkToTheClicker(t *testing.T) {
	var exchanges atomic.Int32
	tokenEndpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		exchanges.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"at-1f9c2b7e","token_type":"Bearer","expires_in":3600}`)) // RFC 6749 section 5.1
	}))
	defer tokenEndpoint.Close()
	var key secrets.Key
	copy(key[:], "0123456789abcdef0123456789abcdef")
	st := workspace.NewLocalAt(t.TempDir())
	vault, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := oauth.New(st, vault, key, "https://lucy.example.com")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeHandoff{}
	cb := &oauth.Callback{Flow: flow, Guarded: http.DefaultClient, Trusted: http.DefaultClient, Log: zerolog.Nop(), OpenWait: 200 * time.Millisecond}
	h := New(Options{Handoff: f, Team: testTeam, Log: zerolog.Nop(), OAuthCallback: cb, SignInOpened: flow.Opened}).HTTPHandler(testSecret)
	begin := func() string {
		si, err := flow.Begin(context.Background(), oauth.BeginInput{Team: testTeam, User: "U1", Server: "acme", ServerURL: "https://acme.example.com/mcp",
			Client: &oauth.Client{ID: "lucy"}, Provider: &oauth.Provider{AuthorizationEndpoint: "https://as.example.com/authorize", TokenEndpoint: tokenEndpoint.URL}})
		if err != nil {
			t.Fatal(err)
		}
		return si.State
	}
	open := func(state string) *httptest.ResponseRecorder {
		return serve(h, httptest.NewRequest(http.MethodGet, OAuthStartPath+"?state="+url.QueryEscape(state), nil))
	}
	back := func(state string, cookies []*http.Cookie) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, OAuthCallbackPath+"?code=c1&state="+url.QueryEscape(state), nil)
		for _, c := range cookies {
			r.AddCookie(c)
		}
		return serve(h, r)
	}

	state := begin()
	if w := postInteraction(t, h, signInClick(t, "U2", state)); w.Code != http.StatusOK {
		t.Fatalf("click acknowledged with %d", w.Code)
	}
	if w := open(state); w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "opened by someone else") {
		t.Fatalf("a link U2 opened: %d %s", w.Code, w.Body.String())
	}
	if w := back(state, nil); w.Code != http.StatusBadRequest {
		t.Fatalf("callback of the spent link: %d %s", w.Code, w.Body.String())
	}
	if exchanges.Load() != 0 {
		t.Fatal("a code was exchanged for a link someone else opened")
	}

	state = begin()
	postInteraction(t, h, signInClick(t, "U1", state))
	w := open(state)
	if w.Code != http.StatusFound || !strings.HasPrefix(w.Header().Get("Location"), "https://as.example.com/authorize?") {
		t.Fatalf("U1's link: %d %v", w.Code, w.Header())
	}
	if w := back(state, w.Result().Cookies()); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "your own requests only") {
		t.Fatalf("callback of U1's own link: %d %s", w.Code, w.Body.String())
	}
	if _, err := flow.TokenFor(context.Background(), testTeam, "acme", "https://acme.example.com/mcp", "", "U1"); err != nil {
		t.Fatalf("U1's sign-in: %v", err)
	}
	if _, err := flow.Token(context.Background(), testTeam, "acme", "https://acme.example.com/mcp", ""); err == nil {
		t.Error("U1's sign-in is readable as the team's")
	}
	if f.handoffs() != 0 {
		t.Errorf("%d hand-offs for sign-in clicks", f.handoffs())
	}
}
