package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workspace"
)

// The sign-in callback of MCP servers is served on the gateway's listener in both modes (the
// Events API's handler and Socket Mode's operational one), without Slack's signature (a browser
// brings it), GET only, and answered by the callback handler, which refuses a state it never made
// and hands nothing to Temporal.
func TestOAuthCallbackIsServedInEveryMode(t *testing.T) {
	f := &fakeHandoff{}
	var key secrets.Key
	st := workspace.NewLocalAt(t.TempDir())
	vault, err := secrets.New(st, key)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := oauth.New(st, vault, key, "https://lucy.example.com")
	if err != nil {
		t.Fatal(err)
	}
	g := New(Options{Handoff: f, Log: zerolog.Nop(), OAuthCallback: &oauth.Callback{Flow: flow, Log: zerolog.Nop()}})
	for name, h := range map[string]http.Handler{"events API": g.HTTPHandler("secret"), "socket mode": g.OpsHandler()} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, OAuthCallbackPath+"?code=c&state=T1.AAAAAAAAAAAAAAAAAAAAAAAAAA", nil))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "unknown or was already used") ||
			rec.Header().Get("Cache-Control") != "no-store" || rec.Header().Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: %d %v %s", name, rec.Code, rec.Header(), rec.Body.String())
		}
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, OAuthCallbackPath, nil))
		if rec.Code != http.StatusMethodNotAllowed {
			t.Errorf("%s: POST answered %d", name, rec.Code)
		}
	}
	if oauth.CallbackPath != OAuthCallbackPath {
		t.Errorf("the gateway serves %s, the redirect URI names %s", OAuthCallbackPath, oauth.CallbackPath)
	}
	if f.handoffs() != 0 {
		t.Errorf("the callback handed %d things off", f.handoffs())
	}
	// Without the handler the path is not served at all.
	rec := httptest.NewRecorder()
	New(Options{Handoff: f, Log: zerolog.Nop()}).OpsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, OAuthCallbackPath, nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without OAuthCallback: %d", rec.Code)
	}
}
