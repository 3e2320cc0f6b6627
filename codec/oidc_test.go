package codec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/internal/fakeoidc"
)

const uiClientID = "temporal-ui"

// codecCall posts one encrypted payload to /codec/decode with the given headers.
func codecCall(t *testing.T, url string, body []byte, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/codec/decode", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Namespace", "default")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// With a login configured, the codec endpoint decodes only for a caller with a valid token of that
// issuer and audience, as the Web UI sends it; everyone else gets 401 and nothing decoded.
func TestCodecRequiresLogin(t *testing.T) {
	issuer := fakeoidc.New(t)
	other := fakeoidc.New(t) // another identity provider, with its own keys
	keys, _ := ParseKeys("k1:" + key(1))
	dc, _ := DataConverter(keys)
	p, _ := dc.ToPayload("secret text")
	h, err := Handler(keys, &Login{Issuer: issuer.URL, Audience: uiClientID}, "https://temporal.example.com")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/codec", h))
	defer srv.Close()
	body, _ := json.Marshal(map[string]any{"payloads": []any{json.RawMessage(mustProtoJSON(t, p))}})
	plainB64 := base64.StdEncoding.EncodeToString([]byte(`"secret text"`))

	valid := issuer.Token(t, uiClientID, "ada", time.Hour, nil)
	// A token signed by the right key but claiming the other issuer, so that the issuer check
	// (not only the signature) is what refuses it.
	forgedIss := issuer.Token(t, uiClientID, "ada", time.Hour, map[string]any{"iss": other.URL})
	refused := []struct {
		name    string
		headers map[string]string
		want    string
	}{
		{"no token", nil, "sign in"},
		{"not a bearer", map[string]string{"Authorization": "Basic YWRhOnB3"}, "sign in"},
		{"garbage", map[string]string{"Authorization": "Bearer not-a-jwt"}, "not valid"},
		{"another issuer", map[string]string{"Authorization": "Bearer " + other.Token(t, uiClientID, "ada", time.Hour, nil)}, "not valid"},
		{"another issuer's claim", map[string]string{"Authorization": "Bearer " + forgedIss}, "not valid"},
		{"another audience", map[string]string{"Authorization": "Bearer " + issuer.Token(t, "some-other-app", "ada", time.Hour, nil)}, "not valid"},
		{"expired", map[string]string{"Authorization": "Bearer " + issuer.Token(t, uiClientID, "ada", -time.Minute, nil)}, "expired"},
		// The UI sends the ID token in Authorization-Extras; an invalid one there is not rescued by
		// a valid bearer beside it (the ID token is what is checked when present).
		{"expired ID token beside a valid bearer", map[string]string{
			"Authorization":        "Bearer " + valid,
			"Authorization-Extras": issuer.Token(t, uiClientID, "ada", -time.Minute, nil),
		}, "expired"},
	}
	for _, c := range refused {
		code, resp, hdr := codecCall(t, srv.URL, body, c.headers)
		if code != http.StatusUnauthorized || !strings.Contains(resp, c.want) {
			t.Errorf("%s: %d %q, want 401 saying %q", c.name, code, resp, c.want)
		}
		if strings.Contains(resp, plainB64) || strings.Contains(resp, "secret text") {
			t.Errorf("%s: decoded for a caller without a valid login: %q", c.name, resp)
		}
		if hdr.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without a WWW-Authenticate challenge", c.name)
		}
	}

	accepted := []struct {
		name    string
		headers map[string]string
	}{
		// What the Web UI sends (passAccessToken): an access token, here opaque as Google's are,
		// and the ID token in Authorization-Extras.
		{"as the Web UI sends it", map[string]string{"Authorization": "Bearer ya29.opaque-access-token", "Authorization-Extras": valid, "Origin": "https://temporal.example.com"}},
		// What an authenticating proxy sends (oauth2-proxy --pass-authorization-header).
		{"ID token as the bearer", map[string]string{"Authorization": "Bearer " + valid}},
	}
	for _, c := range accepted {
		code, resp, hdr := codecCall(t, srv.URL, body, c.headers)
		if code != http.StatusOK || !strings.Contains(resp, plainB64) {
			t.Errorf("%s: %d %q, want the payload decoded", c.name, code, resp)
		}
		if o := c.headers["Origin"]; o != "" && hdr.Get("Access-Control-Allow-Origin") != o {
			t.Errorf("%s: CORS for the UI: %q", c.name, hdr.Get("Access-Control-Allow-Origin"))
		}
	}

	// A browser's preflight carries no credentials; it is answered (so the real request can be
	// sent) with the headers the UI needs, and decodes nothing.
	req, _ := http.NewRequest(http.MethodOptions, srv.URL+"/codec/decode", nil)
	req.Header.Set("Origin", "https://temporal.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,authorization-extras,content-type,x-namespace")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	if resp.StatusCode != http.StatusNoContent || !strings.Contains(allowed, "authorization-extras") || !strings.Contains(allowed, "authorization,") {
		t.Errorf("preflight: %d, allowed headers %q", resp.StatusCode, allowed)
	}
}

// An identity provider that cannot be reached makes the endpoint answer 503 (nothing decoded) and
// does not stick: the next request after it is back is checked normally.
func TestCodecLoginProviderDown(t *testing.T) {
	keys, _ := ParseKeys("k1:" + key(1))
	dc, _ := DataConverter(keys)
	p, _ := dc.ToPayload("secret text")
	body, _ := json.Marshal(map[string]any{"payloads": []any{json.RawMessage(mustProtoJSON(t, p))}})

	issuer := fakeoidc.New(t)
	var down atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		resp, err := http.Get(issuer.URL + r.URL.Path)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		// The discovery document names the issuer's own URL; served from here it must name this one.
		b = bytes.ReplaceAll(b, []byte(issuer.URL), []byte("http://"+r.Host))
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		_, _ = w.Write(b)
	}))
	defer proxy.Close()

	h, err := Handler(keys, &Login{Issuer: proxy.URL, Audience: uiClientID})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.StripPrefix("/codec", h))
	defer srv.Close()
	tok := issuer.Token(t, uiClientID, "ada", time.Hour, map[string]any{"iss": proxy.URL})
	down.Store(true)
	if code, resp, _ := codecCall(t, srv.URL, body, map[string]string{"Authorization": "Bearer " + tok}); code != http.StatusServiceUnavailable {
		t.Errorf("provider down: %d %q, want 503", code, resp)
	}
	down.Store(false)
	if code, resp, _ := codecCall(t, srv.URL, body, map[string]string{"Authorization": "Bearer " + tok}); code != http.StatusOK {
		t.Errorf("provider back: %d %q, want 200", code, resp)
	}
}

func TestLoginNeedsIssuerAndAudience(t *testing.T) {
	keys, _ := ParseKeys("k1:" + key(1))
	if _, err := Handler(keys, &Login{Issuer: "https://accounts.google.com"}); err == nil {
		t.Error("a login without an audience was accepted")
	}
}
