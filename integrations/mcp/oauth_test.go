package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// authServer is an OAuth authorization server for tests: metadata (RFC 8414), dynamic client
// registration (RFC 7591), an authorization endpoint that "signs the person in" at once and sends
// the browser to the redirect URI with a code, and a token endpoint that checks the PKCE verifier
// and issues (and rotates) tokens. firstLifetime is the lifetime of the tokens a code gives.
type authServer struct {
	*httptest.Server
	mu            sync.Mutex
	challenges    map[string]string // code -> code_challenge
	redirects     map[string]string // code -> redirect_uri
	access        map[string]time.Time
	refresh       map[string]bool
	issued        []string // every token issued, access and refresh
	refreshes     int
	registrations int
	exchanges     int
	firstLifetime int
	n             int
	// Scopes: what each code, access and refresh token was granted (the authorization request's
	// scope), and the scope a call of a tool needs (needScope; protectedServer answers 403
	// insufficient_scope without it).
	codeScope, tokenScope map[string]string
	needScope             map[string]string
	// Whose account each code and token is (the person signed in at the authorization endpoint,
	// whose browser session the test's X-Test-User header stands for), and, in order, whose token
	// each tools/call the MCP server received carried: the identity the server acts as.
	codeSubject, tokenSubject map[string]string
	callers                   []string
	listers                   []string // whose token each tools/list carried
}

const clientSecret = "dcr-client-secret-5f2b9c"

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{challenges: map[string]string{}, redirects: map[string]string{}, access: map[string]time.Time{}, refresh: map[string]bool{}, firstLifetime: 3600,
		codeScope: map[string]string{}, tokenScope: map[string]string{}, needScope: map[string]string{},
		codeSubject: map[string]string{}, tokenSubject: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{
			"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
			"registration_endpoint": a.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"mcp", "offline_access"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post"},
		})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		a.mu.Lock()
		a.registrations++
		a.mu.Unlock()
		writeJSON(w, 201, map[string]any{"client_id": "client-1", "client_secret": clientSecret, "redirect_uris": m["redirect_uris"],
			"token_endpoint_auth_method": "client_secret_post"})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "client-1" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
			q.Get("response_type") != "code" || q.Get("state") == "" {
			http.Error(w, "bad authorization request: "+r.URL.RawQuery, 400)
			return
		}
		a.mu.Lock()
		a.n++
		code := fmt.Sprintf("code-%d-7c1e", a.n)
		a.challenges[code], a.redirects[code], a.codeScope[code] = q.Get("code_challenge"), q.Get("redirect_uri"), q.Get("scope")
		a.codeSubject[code] = r.Header.Get("X-Test-User")
		a.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		if r.PostForm.Get("client_id") != "client-1" || r.PostForm.Get("client_secret") != clientSecret {
			writeJSON(w, 401, map[string]any{"error": "invalid_client"})
			return
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		lifetime := 3600
		scope, subject := "", ""
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			code := r.PostForm.Get("code")
			ch, ok := a.challenges[code]
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch || r.PostForm.Get("redirect_uri") != a.redirects[code] {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant", "error_description": "code or verifier refused"})
				return
			}
			delete(a.challenges, code) // a code works once
			a.exchanges++
			scope, subject = a.codeScope[code], a.codeSubject[code]
			lifetime = a.firstLifetime
		case "refresh_token":
			rt := r.PostForm.Get("refresh_token")
			if !a.refresh[rt] {
				writeJSON(w, 400, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(a.refresh, rt) // rotation
			a.refreshes++
			scope, subject = a.tokenScope[rt], a.tokenSubject[rt]
		default:
			writeJSON(w, 400, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		a.n++
		at, rt := fmt.Sprintf("at-%d-9d3f0a7b21", a.n), fmt.Sprintf("rt-%d-4e8c6a1f05", a.n)
		a.access[at], a.refresh[rt] = time.Now().Add(time.Duration(lifetime)*time.Second), true
		a.tokenScope[at], a.tokenScope[rt] = scope, scope
		a.tokenSubject[at], a.tokenSubject[rt] = subject, subject
		a.issued = append(a.issued, at, rt)
		writeJSON(w, 200, map[string]any{"access_token": at, "refresh_token": rt, "token_type": "Bearer", "expires_in": lifetime})
	})
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	return a
}

func (a *authServer) valid(token string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.access[token]
	return ok && time.Now().Before(exp)
}

// granted is the scope an access token was granted.
func (a *authServer) granted(token string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokenScope[token]
}

// scopeNeeded is the scope the JSON-RPC request in r's body needs: a tools/call of a tool in
// needScope. The body is left for the handler.
func (a *authServer) scopeNeeded(r *http.Request) string {
	a.mu.Lock()
	empty := len(a.needScope) == 0
	a.mu.Unlock()
	if empty || r.Method != http.MethodPost {
		return ""
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method != "tools/call" {
		return ""
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.needScope[msg.Params.Name]
}

// issue gives subject tokens as a completed grant would have (a sign-in made before a test began).
func (a *authServer) issue(subject string) (access, refresh string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.n++
	at, rt := fmt.Sprintf("at-%d-9d3f0a7b21", a.n), fmt.Sprintf("rt-%d-4e8c6a1f05", a.n)
	a.access[at], a.refresh[rt] = time.Now().Add(time.Hour), true
	a.tokenScope[at], a.tokenScope[rt] = "mcp", "mcp"
	a.tokenSubject[at], a.tokenSubject[rt] = subject, subject
	a.issued = append(a.issued, at, rt)
	return at, rt
}

// calledAs is whose token each tools/call carried, in order.
func (a *authServer) calledAs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.callers)
}

// recordCaller notes whose token a tools/call in r's body carries. The body is left for the handler.
func (a *authServer) recordCaller(r *http.Request, token string) {
	if r.Method != http.MethodPost {
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &msg) == nil {
		a.mu.Lock()
		switch msg.Method {
		case "tools/call":
			a.callers = append(a.callers, a.tokenSubject[token])
		case "tools/list":
			a.listers = append(a.listers, a.tokenSubject[token])
		}
		a.mu.Unlock()
	}
}

// listedAs is whose token each tools/list carried, in order.
func (a *authServer) listedAs() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.listers)
}

func (a *authServer) tokens() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string{}, a.issued...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// protectedServer is the MCP test server behind a bearer check, with its protected resource
// metadata (RFC 9728) naming a; without a valid token it answers 401 with resource_metadata.
func protectedServer(t *testing.T, a *authServer) *httptest.Server {
	h := mcptest.Handler(mcptest.New(mcptest.Normal, ""))
	var rs *httptest.Server
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": rs.URL + "/mcp", "authorization_servers": []string{a.URL}, "scopes_supported": []string{"mcp"}})
	})
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !a.valid(token) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+rs.URL+`/.well-known/oauth-protected-resource/mcp", scope="mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if need := a.scopeNeeded(r); need != "" && !slices.Contains(strings.Fields(a.granted(token)), need) {
			// A step-up: the token is good, its scope too small for this call (RFC 6750 section 3.1;
			// the MCP authorization specification's scope challenge handling).
			w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="mcp `+need+`", resource_metadata="`+
				rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		a.recordCaller(r, token)
		h.ServeHTTP(w, r)
	})
	rs = httptest.NewServer(mux)
	t.Cleanup(rs.Close)
	return rs
}

// syncBuffer is the log's output, written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// signIns is the Slack side of a sign-in for tests: it keeps each Sign in button Lucy posts (for
// whom, the link, its state), as integrations.SlackKeys would post it in the thread.
type signIns struct {
	mu     sync.Mutex
	posted []posted
}

type posted struct {
	user string
	req  integrations.SignInRequest
}

func (k *signIns) RequestKey(context.Context, tools.Invocation, string, string, secrets.Binding) error {
	return errors.New("no key is asked for in these tests")
}

func (k *signIns) RequestSignIn(_ context.Context, inv tools.Invocation, req integrations.SignInRequest) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.posted = append(k.posted, posted{user: inv.User, req: req})
	return nil
}

// last is the last button posted for user.
func (k *signIns) last(t *testing.T, user string) integrations.SignInRequest {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	for i := len(k.posted) - 1; i >= 0; i-- {
		if k.posted[i].user == user {
			return k.posted[i].req
		}
	}
	t.Fatalf("no Sign in button was posted for %s", user)
	return integrations.SignInRequest{}
}

type oauthRig struct {
	cookies map[string][]*http.Cookie // the start endpoint's cookie, by state
	keys    *signIns
	as      *authServer
	rs      *httptest.Server
	dir     string
	creds   *secrets.Store
	flow    *oauth.Flow
	cb      *oauth.Callback
	src     *mcp.Source
	log     *syncBuffer
}

func newOAuthRig(t *testing.T, publicURL string, servers []mcp.Server, fromChat bool) *oauthRig {
	t.Helper()
	r := &oauthRig{as: newAuthServer(t), dir: t.TempDir(), log: &syncBuffer{}, keys: &signIns{}}
	r.rs = protectedServer(t, r.as)
	var key secrets.Key
	copy(key[:], "0123456789abcdef0123456789abcdef")
	state := workspace.NewLocalAt(r.dir)
	var err error
	if r.creds, err = secrets.New(state, key); err != nil {
		t.Fatal(err)
	}
	if r.flow, err = oauth.New(state, r.creds, key, publicURL); err != nil {
		t.Fatal(err)
	}
	log := zerolog.New(r.log).Level(zerolog.DebugLevel)
	// The test servers are on loopback: the guard must allow them for a server connected from chat.
	guarded := tools.NewGuardedClient(nil, tools.AllowAllPrivate())
	r.cb = &oauth.Callback{Flow: r.flow, Guarded: guarded, Trusted: http.DefaultClient, Log: log, OpenWait: 300 * time.Millisecond}
	for i := range servers {
		servers[i].URL = r.rs.URL + "/mcp"
	}
	d := mcp.Deps{Servers: servers, Credentials: r.creds, OAuth: r.flow, Log: log, Limits: mcp.Limits{ConnectTimeout: 5 * time.Second},
		Keys: r.keys, Admins: []string{admin}}
	if fromChat {
		d.State, d.HTTP, d.CheckURL = state, guarded, tools.AllowAllPrivate().CheckURL
	}
	r.src = mcp.New(d)
	t.Cleanup(r.src.Close)
	return r
}

// admin is the rig's admin (LUCY_ADMIN_USERS).
const admin = "UADMIN"

// browse is the person's browser (signed in at the provider as "U1"): it opens the Sign in
// button's link (Lucy's start endpoint, which sends it on to the provider with a cookie) and
// returns where the authorization server sends it back (the callback URL with the code and the
// state).
func (r *oauthRig) browse(t *testing.T, link string) *url.URL {
	t.Helper()
	return r.browseAs(t, "U1", link)
}

// browseAs is browse by the person whose account at the provider is who.
func (r *oauthRig) browseAs(t *testing.T, who, link string) *url.URL {
	t.Helper()
	authURL, code, body := r.start(t, link)
	if code != http.StatusFound {
		t.Fatalf("the start endpoint answered %d: %s", code, body)
	}
	return r.provider(t, who, authURL)
}

// start opens link (Lucy's start endpoint) in a new browser: the provider's URL it sends the browser
// to, or its refusal. The cookie it gives is kept for the callback of that state.
func (r *oauthRig) start(t *testing.T, link string) (authURL string, code int, body string) {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil || u.Path != oauth.StartPath {
		t.Fatalf("the link %q is not Lucy's start endpoint", link)
	}
	rec := httptest.NewRecorder()
	r.cb.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, oauth.StartPath+"?"+u.RawQuery, nil))
	if rec.Code == http.StatusFound {
		if r.cookies == nil {
			r.cookies = map[string][]*http.Cookie{}
		}
		r.cookies[u.Query().Get("state")] = rec.Result().Cookies()
	}
	return rec.Header().Get("Location"), rec.Code, rec.Body.String()
}

// provider is the authorization endpoint's answer to who's browser: where it sends it back.
func (r *oauthRig) provider(t *testing.T, who, authURL string) *url.URL {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest(http.MethodGet, authURL, nil)
	req.Header.Set("X-Test-User", who)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorization endpoint answered %d", resp.StatusCode)
	}
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// callback delivers the browser's return to the gateway's handler, with the cookie the start
// endpoint gave the browser that opened its state, and returns its answer.
func (r *oauthRig) callback(t *testing.T, rawQuery string) (int, string) {
	t.Helper()
	q, _ := url.ParseQuery(rawQuery)
	return r.callbackWith(t, rawQuery, r.cookies[q.Get("state")])
}

func (r *oauthRig) callbackWith(t *testing.T, rawQuery string, cookies []*http.Cookie) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, oauth.CallbackPath+"?"+rawQuery, nil)
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	r.cb.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// run runs a tool of the MCP domain (lucy_sign_in_service, lucy_disconnect_service, …) as user.
func (r *oauthRig) run(t *testing.T, user, name, args string) tools.Output {
	t.Helper()
	runner, err := tools.NewRunner(zerolog.Nop(), []any{r.src})
	if err != nil {
		t.Fatal(err)
	}
	out, err := runner.Run(ctx(t), tools.Invocation{Name: name, Arguments: args, Team: team, User: user, Channel: "C1", ThreadTS: "1.1", RunID: "r", CallID: name + user})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// click is Slack's block_actions of user's click on the Sign in button of req, as the gateway
// records it.
func (r *oauthRig) click(t *testing.T, req integrations.SignInRequest, user string) {
	t.Helper()
	if err := r.flow.Opened(ctx(t), req.State, user); err != nil {
		t.Fatal(err)
	}
}

// signInAs asks for user's sign-in (share: the team's, by an admin), clicks its button as user,
// signs in at the provider and comes back: the callback's answer.
func (r *oauthRig) signInAs(t *testing.T, user string, share bool, server string) (int, string) {
	t.Helper()
	out := r.run(t, user, mcp.SignInService, fmt.Sprintf(`{"service":%q,"share_with_team":%v}`, server, share))
	if out.IsError || !strings.Contains(out.Content, "Sign in button") {
		t.Fatalf("%s for %s: %s", mcp.SignInService, user, out.Content)
	}
	req := r.keys.last(t, user)
	r.click(t, req, user)
	return r.callback(t, r.browseAs(t, user, req.URL).RawQuery)
}

// storedFor is the sign-in a request of person uses (their own, else the team's).
func (r *oauthRig) storedFor(t *testing.T, server, person string) (oauth.TokenSet, bool) {
	t.Helper()
	ts, err := r.flow.TokenFor(ctx(t), team, server, r.rs.URL+"/mcp", "", person)
	if errors.Is(err, oauth.ErrNotSignedIn) {
		return oauth.TokenSet{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return *ts, true
}

// stored is the team's sign-in to server as the flow reads it: the stored tokens, with what the
// grant says they are for (owner: whose own server it is, "" for a team-wide one).
func (r *oauthRig) stored(t *testing.T, server, owner string) (oauth.TokenSet, bool) {
	t.Helper()
	ts, err := r.flow.Token(ctx(t), team, server, r.rs.URL+"/mcp", owner)
	if errors.Is(err, oauth.ErrNotSignedIn) {
		return oauth.TokenSet{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return *ts, true
}

// stateFiles is everything in Lucy's state store, as bytes on disk.
func (r *oauthRig) stateFiles(t *testing.T) string {
	t.Helper()
	var all strings.Builder
	_ = filepath.WalkDir(r.dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			all.Write(b)
		}
		return nil
	})
	return all.String()
}

func statusOf(t *testing.T, s *mcp.Source, name string) (string, bool) {
	t.Helper()
	ints, err := s.Integrations(ctx(t), team)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ints {
		if in.Name == name {
			return in.Status, in.Healthy
		}
	}
	t.Fatalf("%s is not listed: %+v", name, ints)
	return "", false
}

// The whole sign-in to an operator's server that requires OAuth: the 401 gives a status with an
// authorization URL (PKCE S256, a state); the browser signs in and comes back to the gateway's
// callback, which exchanges the code and stores the tokens; the next listing and call use them,
// refreshing the short-lived first token. Unknown, garbled and replayed states, and a declined
// consent, are refused and change nothing. No token appears in a result, a status, the log or
// the state store in clear.
func TestOAuthSignInToAnOperatorServer(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.as.firstLifetime = 1 // the code's tokens expire at once: the first use refreshes them

	if list, _ := r.src.Tools(ctx(t), team); len(list) != 0 {
		t.Fatalf("tools offered before signing in: %v", names(list))
	}
	// A listing is no one's request: it makes no link (a link for no one could not be bound), and
	// says how a person gets their own.
	status, healthy := statusOf(t, r.src, "acme")
	if healthy || !strings.Contains(status, "each person signs in as themselves") || strings.Contains(status, "/authorize") {
		t.Fatalf("status before signing in: %q (healthy %v)", status, healthy)
	}
	if out := r.run(t, "U1", mcp.SignInService, `{"service":"acme"}`); out.IsError || !strings.Contains(out.Content, "Sign in button for them was posted") {
		t.Fatalf("%s: %+v", mcp.SignInService, out)
	}
	req := r.keys.last(t, "U1")
	if req.URL != "https://lucy.example.com/mcp/oauth/start?state="+url.QueryEscape(req.State) {
		t.Fatalf("the button's link %q is not Lucy's start endpoint with its state %q", req.URL, req.State)
	}
	// Asked again: the same link, not another registration or state.
	r.run(t, "U1", mcp.SignInService, `{"service":"acme"}`)
	if again := r.keys.last(t, "U1"); again.URL != req.URL {
		t.Errorf("the link changed between asks: %q", again.URL)
	}
	// Opened before its person's click reached Lucy (a link copied out of Slack): no provider URL.
	if _, code, body := r.start(t, req.URL); code != http.StatusForbidden || !strings.Contains(body, "not opened from its Sign in button") {
		t.Fatalf("start before the click: %d %s", code, body)
	}
	r.click(t, req, "U1")
	authURL, code, body := r.start(t, req.URL)
	if code != http.StatusFound {
		t.Fatalf("start after the click: %d %s", code, body)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || !strings.HasPrefix(q.Get("state"), team+".") ||
		q.Get("redirect_uri") != "https://lucy.example.com/mcp/oauth/callback" || q.Get("resource") != r.rs.URL+"/mcp" ||
		q.Get("client_id") != "client-1" || !strings.Contains(q.Get("scope"), "mcp") || !strings.Contains(q.Get("scope"), "offline_access") ||
		q.Get("state") != req.State {
		t.Fatalf("authorization URL: %s (button value %s)", authURL, req.State)
	}

	// Refused without changing anything: a state Lucy never made, a garbled one, no code.
	for _, query := range []string{
		"code=x&state=" + team + ".AAAAAAAAAAAAAAAAAAAAAAAAAA",
		"code=x&state=../../etc",
		"code=x&state=TOTHER." + strings.TrimPrefix(q.Get("state"), team+"."),
		"state=" + url.QueryEscape(q.Get("state")),
	} {
		if code, body := r.callback(t, query); code != http.StatusBadRequest || !strings.Contains(body, "Ask Lucy again") {
			t.Errorf("callback %q: %d %s", query, code, body)
		}
	}
	// The person declines at the provider: nothing stored, and the link still works afterwards.
	if code, body := r.callback(t, "error=access_denied&state="+url.QueryEscape(q.Get("state"))); code != http.StatusBadRequest || !strings.Contains(body, "cancelled") {
		t.Errorf("declined consent: %d %s", code, body)
	}
	if _, ok := r.storedFor(t, "acme", "U1"); ok {
		t.Fatal("tokens stored before a code was exchanged")
	}

	back := r.provider(t, "U1", authURL)
	if back.Host != "lucy.example.com" || back.Path != oauth.CallbackPath || back.Query().Get("state") != q.Get("state") {
		t.Fatalf("the provider sent the browser to %s", back)
	}
	// Another browser comes back with the code (the provider's URL passed on): refused, nothing
	// stored, and the link is spent.
	code, body = r.callbackWith(t, back.RawQuery, []*http.Cookie{{Name: r.cookies[req.State][0].Name, Value: "another-browser"}})
	if code != http.StatusForbidden || !strings.Contains(body, "more than one browser") {
		t.Fatalf("callback from another browser: %d %s", code, body)
	}
	if _, ok := r.storedFor(t, "acme", "U1"); ok {
		t.Fatal("tokens stored for another browser's return")
	}
	if code, body = r.callback(t, back.RawQuery); code != http.StatusBadRequest || !strings.Contains(body, "unknown or was already used") {
		t.Fatalf("the spent link, from its own browser: %d %s", code, body)
	}
	// A new link, clicked and opened by its person, and their own browser's return: connected.
	r.run(t, "U1", mcp.SignInService, `{"service":"acme"}`)
	req = r.keys.last(t, "U1")
	r.click(t, req, "U1")
	back = r.browse(t, req.URL)
	// Without the start's cookie (a browser that did not open the link): refused, the code kept.
	if code, body = r.callbackWith(t, back.RawQuery, nil); code != http.StatusForbidden || !strings.Contains(body, "in this browser") {
		t.Fatalf("callback without the cookie: %d %s", code, body)
	}
	code, body = r.callback(t, back.RawQuery)
	if code != http.StatusOK || !strings.Contains(body, "Lucy is connected to acme") || !strings.Contains(body, "your own requests only") {
		t.Fatalf("callback: %d %s", code, body)
	}
	first, ok := r.storedFor(t, "acme", "U1")
	if !ok || first.Access == "" || first.Refresh == "" || first.ServerURL != r.rs.URL+"/mcp" || first.Person != "U1" {
		t.Fatalf("stored after the callback: %+v %v", first, ok)
	}
	if _, ok := r.stored(t, "acme", ""); ok {
		t.Fatal("a person's own sign-in is readable as the team's service account")
	}
	for _, tok := range r.as.tokens() {
		if strings.Contains(body, tok) {
			t.Errorf("the page shows a token: %s", body)
		}
	}
	// Replayed (a reload, or someone with the URL): refused, the stored tokens untouched.
	if code, body := r.callback(t, back.RawQuery); code != http.StatusBadRequest || !strings.Contains(body, "already used") {
		t.Errorf("replayed callback: %d %s", code, body)
	}
	if again, _ := r.storedFor(t, "acme", "U1"); again.Access != first.Access {
		t.Error("the replay changed the stored tokens")
	}

	// The next request lists the server with the tokens: no wait for the retry delay. The first
	// token expired already: it is refreshed, and the new set written back.
	list, _ := r.src.Tools(ctx(t), team)
	tool, ok := byName(list)["mcp__acme__whoami"]
	if !ok {
		st, _ := statusOf(t, r.src, "acme")
		t.Fatalf("after signing in, tools %v; status %q", names(list), st)
	}
	if r.as.refreshes != 1 {
		t.Errorf("%d refreshes, want 1 (the first token had expired)", r.as.refreshes)
	}
	second, _ := r.storedFor(t, "acme", "U1")
	if second.Access == first.Access || second.Refresh == first.Refresh || !r.as.valid(second.Access) {
		t.Errorf("the refreshed tokens were not written back: %+v", second)
	}
	out, err := tool.Run(ctx(t), tools.Invocation{Name: "mcp__acme__whoami", Arguments: `{}`, Team: team, User: "U1"})
	if err != nil || !strings.Contains(out.Content, "you are Bearer "+secrets.Removed) {
		t.Fatalf("whoami = %+v, %v: the server should have been called with the token, and the result show it removed", out, err)
	}
	status, healthy = statusOf(t, r.src, "acme")
	if !healthy || !strings.Contains(status, "tools") {
		t.Errorf("status after signing in: %q", status)
	}

	seen := status + out.Content + body + r.log.String()
	state := r.stateFiles(t)
	for _, tok := range append(r.as.tokens(), clientSecret, back.Query().Get("code"), r.cookies[req.State][0].Value) {
		if strings.Contains(seen, tok) {
			t.Errorf("%q is in a result, a status, the page or the log", tok)
		}
		if strings.Contains(state, tok) {
			t.Errorf("%q is in Lucy's state store in clear", tok)
		}
	}
	if !strings.Contains(r.log.String(), "MCP sign-in completed") {
		t.Errorf("the sign-in was not logged: %s", r.log.String())
	}
}

// A server connected from chat: lucy_connect_mcp_server's output gives the sign-in link; the
// exchange goes through the guarded client; then the tools work.
func TestOAuthSignInFromTheConnectTool(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", nil, true)
	run := tools.Invocation{Name: mcp.ConnectServer, Team: team, User: "UREQ",
		Arguments: fmt.Sprintf(`{"name":"tracker","url":%q}`, r.rs.URL+"/mcp")}
	runner, err := tools.NewRunner(zerolog.Nop(), []any{r.src})
	if err != nil {
		t.Fatal(err)
	}
	run.CallID = "c1"
	out, err := runner.Run(ctx(t), run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.Content, "requires signing in with OAuth") || !strings.Contains(out.Content, "Sign in button for them was posted") ||
		!strings.Contains(out.Content, "<@UREQ>") || strings.Contains(out.Content, "/authorize") {
		t.Fatalf("connect output: %s", out.Content)
	}
	// The button is the connector's, and so is the page the browser comes back to: a member's own
	// server's sign-in serves her requests only.
	req := r.keys.last(t, "UREQ")
	r.click(t, req, "UREQ")
	if code, body := r.callback(t, r.browseAs(t, "UREQ", req.URL).RawQuery); code != http.StatusOK || !strings.Contains(body, "the requests of Slack user UREQ only") {
		t.Fatalf("callback: %d %s", code, body)
	}
	if _, ok := r.stored(t, "tracker", ""); ok {
		t.Error("a member's own sign-in is readable as the team's")
	}
	ts, err := r.flow.TokenFor(ctx(t), team, "tracker", r.rs.URL+"/mcp", "UREQ", "UREQ")
	if err != nil || ts.Trusted || ts.Person != "UREQ" {
		t.Fatalf("stored: %+v %v (a chat-connected server's tokens are not trusted)", ts, err)
	}
	list, _ := r.src.Tools(ctx(t), team)
	if _, ok := byName(list)["mcp__tracker__echo"]; !ok {
		t.Fatalf("tools after signing in: %v", names(list))
	}
	// Disconnecting the server ends every sign-in to it: the grant and the tokens are deleted.
	if out, err := runner.Run(ctx(t), tools.Invocation{Name: mcp.DisconnectServer, Arguments: `{"name":"tracker"}`, Team: team, User: "UREQ", Approved: true}); err != nil ||
		!strings.Contains(out.Content, "Disconnected") {
		t.Fatalf("disconnect: %+v %v", out, err)
	}
	if _, _, err := r.creds.Get(ctx(t), team, oauth.PersonCredentialName("tracker", "UREQ")); err == nil {
		t.Error("the sign-in's tokens outlived the server's disconnect")
	}
}

// Without LUCY_PUBLIC_URL the status says plainly that sign-in needs one, and what works instead.
func TestOAuthWithoutAPublicURL(t *testing.T) {
	r := newOAuthRig(t, "", []mcp.Server{{Name: "acme"}}, false)
	r.src.Tools(ctx(t), team)
	status, healthy := statusOf(t, r.src, "acme")
	if healthy || !strings.Contains(status, "LUCY_PUBLIC_URL") || !strings.Contains(status, "store a bearer token") || strings.Contains(status, "/authorize") {
		t.Fatalf("status: %q", status)
	}
	if r.as.registrations != 0 {
		t.Error("registered a client although no sign-in can complete")
	}
}

// The operator's "oauth" client: its secret from the environment or a stored credential, never
// marshalled, and mistakes said at load.
func TestOAuthClientInTheConfigurationFile(t *testing.T) {
	t.Setenv("LUCY_TEST_CRM_SECRET", "env-secret-8c2d1f")
	servers, err := mcp.ParseConfig([]byte(`{"mcpServers": {
		"crm": {"url": "https://crm.example.com/mcp", "oauth": {"clientId": "lucy", "clientSecret": "${env:LUCY_TEST_CRM_SECRET}", "scopes": ["crm.read"]}},
		"wiki": {"url": "https://wiki.example.com/mcp", "oauth": {"clientId": "lucy", "clientSecret": "${credential:Wiki-Client}"}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	crm, wiki := servers[0], servers[1]
	if crm.OAuth == nil || crm.OAuth.ClientSecret != "env-secret-8c2d1f" || crm.OAuth.Scopes[0] != "crm.read" || wiki.OAuth.ClientSecret != "${credential:wiki-client}" {
		t.Fatalf("parsed: %+v %+v", crm.OAuth, wiki.OAuth)
	}
	if data, _ := json.Marshal(crm); strings.Contains(string(data), "env-secret") {
		t.Errorf("a marshalled server carries its client secret: %s", data)
	}
	for entry, want := range map[string]string{
		`{"url": "https://x.example.com/mcp", "oauth": {"clientSecret": "s"}}`:                                      `needs the "clientId"`,
		`{"url": "https://x.example.com/mcp", "oauth": {"clientId": "c", "clientSecret": "${env:LUCY_NOT_SET_X}"}}`: "LUCY_NOT_SET_X, which is not set",
		`{"url": "https://x.example.com/mcp", "oauth": {"clientId": "c", "clientSecret": "${credential:a b}"}}`:     "needs a credential name",
		`{"url": "https://x.example.com/mcp", "credential": "k", "oauth": {"clientId": "c"}}`:                       "not both",
		`{"command": "npx", "oauth": {"clientId": "c"}}`:                                                            `"oauth" is for remote servers`,
		`{"url": "https://x.example.com/mcp", "oauth": {"clientId": "c", "scopes": ["a b"]}}`:                       "not one scope",
	} {
		if _, err := mcp.ParseConfig([]byte(`{"mcpServers": {"x": ` + entry + `}}`)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", entry, err, want)
		}
	}
}

// The review's F10, as run: Mallory stores her own value under the operator's server's token-set
// name, with the token endpoint at an internal address. The worker never posts there: before any
// sign-in the value is not a sign-in at all (no grant), and after one, the token endpoint, the
// client and the server URL come from the sign-in's own grant, never from the stored value.
func TestSquattedTokenSetNeverReachesAnInternalAddress(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "linear"}}, false)
	var hits atomic.Int32
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		hits.Add(1)
		writeJSON(w, 200, map[string]any{"access_token": "internal", "token_type": "Bearer", "expires_in": 3600})
	}))
	t.Cleanup(internal.Close)
	crafted := fmt.Sprintf(`{"v":1,"access":"x","refresh":"y","expiry":"2000-01-01T00:00:00Z","serverUrl":%q,"tokenEndpoint":%q}`,
		r.rs.URL+"/mcp", internal.URL+"/admin/reset")
	// Squatted as a plain key, as lucy_store_api_key allowed before names were reserved.
	if _, err := r.creds.Put(ctx(t), team, oauth.CredentialName("linear"), crafted, "UMALLORY"); err != nil {
		t.Fatal(err)
	}
	if list, _ := r.src.Tools(ctx(t), team); len(list) != 0 {
		t.Fatalf("the squatted value was used as a sign-in: %v", names(list))
	}
	if status, _ := statusOf(t, r.src, "linear"); !strings.Contains(status, "requires signing in") {
		t.Errorf("status %q, want a sign-in asked for", status)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the worker posted %d times to the internal address", n)
	}

	// A real sign-in (the team's service account, by an admin), then the stored value replaced
	// with the crafted one (even as a sign-in's kind).
	if code, body := r.signInAs(t, admin, true, "linear"); code != http.StatusOK {
		t.Fatalf("callback: %d %s", code, body)
	}
	if _, err := r.creds.PutBound(ctx(t), team, oauth.CredentialName("linear"), crafted, "UMALLORY",
		secrets.Binding{Kind: secrets.KindOAuth, Origins: []string{secrets.OriginOf(r.rs.URL)}}); err != nil {
		t.Fatal(err)
	}
	ts, ok := r.stored(t, "linear", "")
	if !ok || ts.TokenEndpoint != r.as.URL+"/token" || ts.ServerURL != r.rs.URL+"/mcp" || ts.Client.ID != "client-1" {
		t.Fatalf("the token set read back: %+v %v; want the grant's endpoint, URL and client", ts, ok)
	}
	// A new worker uses the expired crafted token: the refresh goes to the real token endpoint
	// (which refuses "y"), never to the internal address.
	fresh := mcp.New(mcp.Deps{Servers: []mcp.Server{{Name: "linear", URL: r.rs.URL + "/mcp"}}, Credentials: r.creds, OAuth: r.flow,
		Log: zerolog.Nop(), Limits: mcp.Limits{ConnectTimeout: 5 * time.Second}})
	t.Cleanup(fresh.Close)
	fresh.Tools(ctx(t), team)
	if n := hits.Load(); n != 0 {
		t.Fatalf("the worker posted %d times to the internal address", n)
	}
}

// A step-up: the server lets the signed-in token list and call read-only tools, but answers a call
// of add_item with 403 insufficient_scope naming the scope it needs. Nothing ran; the call's result
// is a new sign-in link asking for that scope (not the old link); once signed in again the call runs.
func TestOAuthStepUpForMoreScope(t *testing.T) {
	r := newOAuthRig(t, "https://lucy.example.com", []mcp.Server{{Name: "acme"}}, false)
	r.as.mu.Lock()
	r.as.needScope["add_item"] = "mcp:write"
	r.as.mu.Unlock()

	if code, body := r.signInAs(t, "U1", false, "acme"); code != http.StatusOK {
		t.Fatalf("callback: %d %s", code, body)
	}
	list, _ := r.src.Tools(ctx(t), team)
	add, ok := byName(list)["mcp__acme__add_item"]
	if !ok {
		t.Fatalf("after signing in, tools %v", names(list))
	}
	inv := tools.Invocation{Name: "mcp__acme__add_item", Arguments: `{"item":"milk"}`, Team: team, User: "U1"}
	out, err := add.Run(ctx(t), inv)
	if err != nil || !out.IsError || !strings.Contains(out.Content, "the call was not made") {
		t.Fatalf("add_item with too small a scope = %+v, %v; want a sign-in asked for, nothing run", out, err)
	}
	if !strings.Contains(out.Content, "Sign in button for them was posted") {
		t.Fatalf("no new Sign in button in %q", out.Content)
	}
	req := r.keys.last(t, "U1")
	r.click(t, req, "U1")
	authURL, code, body := r.start(t, req.URL)
	if code != http.StatusFound {
		t.Fatalf("start: %d %s", code, body)
	}
	u, _ := url.Parse(authURL)
	if scope := u.Query().Get("scope"); !strings.Contains(scope, "mcp:write") {
		t.Errorf("the step-up asks for scope %q, want mcp:write among them", scope)
	}
	if code, body := r.callback(t, r.provider(t, "U1", authURL).RawQuery); code != http.StatusOK {
		t.Fatalf("callback: %d %s", code, body)
	}
	out, err = add.Run(ctx(t), inv)
	if err != nil || out.IsError || out.Content != "added milk" {
		t.Fatalf("add_item after the step-up = %+v, %v", out, err)
	}
}
