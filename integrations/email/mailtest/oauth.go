package mailtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// OAuth is a fake of Google's OAuth 2.0 server for a web application (the authorization code grant
// with PKCE, refresh, and the userinfo endpoint Dovecot's oauth2 passdb asks), on loopback. The
// person "signing in" at its authorization endpoint is Account, who consents at once. It speaks
// the wire format of RFC 6749 (sections 4.1 and 6, errors of 5.2), RFC 7636 (S256) and Google's
// developers.google.com/identity/protocols/oauth2/web-server, where each rule below is documented.
type OAuth struct {
	URL                    string
	ClientID, ClientSecret string
	// Scope is the scope every authorization must ask for (Google's mail scope).
	Scope string
	// Account is whose mailbox the tokens open.
	Account string
	// accessTTL is the lifetime of the access tokens it issues (expires_in): SetAccessTTL.
	accessTTL time.Duration

	mu       sync.Mutex
	codes    map[string]codeGrant
	access   map[string]accessToken
	refresh  map[string]bool
	grants   []string // "authorization_code" / "refresh_token", each accepted grant in order
	denied   []string // the error of each refused token request
	userinfo int
}

type codeGrant struct {
	redirect, challenge string
	issued              time.Time
}

type accessToken struct {
	account string
	expires time.Time
	revoked bool
}

// StartOAuth starts the fake with a client and account of its own.
func StartOAuth(t testing.TB) *OAuth {
	t.Helper()
	o := &OAuth{ClientID: "lucy-test.apps.googleusercontent.com", ClientSecret: "GOCSPX-" + token(), Scope: "https://mail.google.com/",
		Account: Addr, accessTTL: time.Hour, codes: map[string]codeGrant{}, access: map[string]accessToken{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth", o.authorize)
	mux.HandleFunc("POST /token", o.token)
	mux.HandleFunc("GET /userinfo", o.userInfo)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	o.URL = srv.URL
	return o
}

func token() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// authorize is the authorization endpoint: the parameters checked as Google documents them
// ("Step 2: Redirect to Google's OAuth 2.0 server": client_id, redirect_uri, response_type=code,
// scope; code_challenge with code_challenge_method S256), then the browser is sent back to
// redirect_uri with the code and the state (RFC 6749 4.1.2). An error that is the client's fault
// is shown to the person, not redirected (RFC 6749 4.1.2.1: not for a bad client or redirect URI).
func (o *OAuth) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != o.ClientID {
		http.Error(w, "Error 401: invalid_client", http.StatusUnauthorized)
		return
	}
	redirect := q.Get("redirect_uri")
	ru, err := url.Parse(redirect)
	if err != nil || redirect == "" || ru.Scheme == "" {
		http.Error(w, "Error 400: redirect_uri_mismatch", http.StatusBadRequest)
		return
	}
	back := func(params url.Values) {
		qq := ru.Query()
		for k, v := range params {
			qq[k] = v
		}
		ru.RawQuery = qq.Encode()
		http.Redirect(w, r, ru.String(), http.StatusFound)
	}
	if q.Get("response_type") != "code" {
		back(url.Values{"error": {"unsupported_response_type"}, "state": {q.Get("state")}})
		return
	}
	if !strings.Contains(" "+q.Get("scope")+" ", " "+o.Scope+" ") {
		back(url.Values{"error": {"invalid_scope"}, "state": {q.Get("state")}})
		return
	}
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		back(url.Values{"error": {"invalid_request"}, "error_description": {"code_challenge S256 is required"}, "state": {q.Get("state")}})
		return
	}
	code := "4/" + token()
	o.mu.Lock()
	o.codes[code] = codeGrant{redirect: redirect, challenge: q.Get("code_challenge"), issued: time.Now()}
	o.mu.Unlock()
	back(url.Values{"code": {code}, "state": {q.Get("state")}})
}

// tokenError is RFC 6749 5.2's error response.
func (o *OAuth) tokenError(w http.ResponseWriter, status int, code, desc string) {
	o.denied = append(o.denied, code)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

// token is the token endpoint ("Step 5: Exchange authorization code for refresh and access tokens"
// and "Refreshing an access token (offline access)"): the client authenticates with its secret
// (in the form, or HTTP Basic: RFC 6749 2.3.1); a code is used once, within 10 minutes, with the
// redirect_uri it was issued for and the verifier of its challenge (RFC 7636 4.6); a refresh
// grant gives a new access token and no new refresh token, as Google does; a revoked refresh
// token is invalid_grant with Google's description.
func (o *OAuth) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != o.ClientID || secret != o.ClientSecret {
		o.tokenError(w, http.StatusUnauthorized, "invalid_client", "Unauthorized")
		return
	}
	grantType := r.PostForm.Get("grant_type")
	refresh := ""
	switch grantType {
	case "authorization_code":
		code := r.PostForm.Get("code")
		g, ok := o.codes[code]
		delete(o.codes, code)
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case !ok || time.Since(g.issued) > 10*time.Minute:
			o.tokenError(w, http.StatusBadRequest, "invalid_grant", "Malformed auth code.")
			return
		case g.redirect != r.PostForm.Get("redirect_uri"):
			o.tokenError(w, http.StatusBadRequest, "redirect_uri_mismatch", "Bad Request")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
			o.tokenError(w, http.StatusBadRequest, "invalid_grant", "Invalid code verifier.")
			return
		}
		refresh = "1//" + token()
		o.refresh[refresh] = true
	case "refresh_token":
		if !o.refresh[r.PostForm.Get("refresh_token")] {
			o.tokenError(w, http.StatusBadRequest, "invalid_grant", "Token has been expired or revoked.")
			return
		}
	default:
		o.tokenError(w, http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type: "+grantType)
		return
	}
	o.grants = append(o.grants, grantType)
	access := "ya29." + token()
	o.access[access] = accessToken{account: o.Account, expires: time.Now().Add(o.accessTTL)}
	body := map[string]any{"access_token": access, "expires_in": int(o.accessTTL / time.Second), "scope": o.Scope, "token_type": "Bearer"}
	if refresh != "" {
		body["refresh_token"] = refresh
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(body)
}

// userInfo answers a bearer token with its account's email, as Google's userinfo endpoint does
// (the introspection_url of Dovecot's Google example, introspection_mode = auth), 401 otherwise
// (RFC 6750 3.1: invalid_token).
func (o *OAuth) userInfo(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	account, ok := o.Valid(tok)
	o.mu.Lock()
	o.userinfo++
	o.mu.Unlock()
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"email": account, "verified_email": true})
}

// Valid reports whose mailbox an access token opens: false when it is unknown, expired or revoked.
func (o *OAuth) Valid(tok string) (account string, ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	a, found := o.access[tok]
	if !found || a.revoked || time.Now().After(a.expires) {
		return "", false
	}
	return a.account, true
}

// SetAccessTTL sets the lifetime of the access tokens issued from now on (Google's is an hour).
func (o *OAuth) SetAccessTTL(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.accessTTL = d
}

// ExpireAccess makes every access token issued so far invalid at the servers (as if expired before
// the client thought): a client refreshes and tries again.
func (o *OAuth) ExpireAccess() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, a := range o.access {
		a.revoked = true
		o.access[k] = a
	}
}

// Revoke revokes every token (the person removed the app's access in their account).
func (o *OAuth) Revoke() {
	o.ExpireAccess()
	o.mu.Lock()
	defer o.mu.Unlock()
	o.refresh = map[string]bool{}
}

// Grants are the grants the token endpoint accepted, in order; Denied the errors it answered.
func (o *OAuth) Grants() (accepted, denied []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.grants...), append([]string(nil), o.denied...)
}

// UserInfoCalls counts the userinfo requests (Dovecot's introspection).
func (o *OAuth) UserInfoCalls() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.userinfo
}
