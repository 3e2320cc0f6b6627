package e2e

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/gateway"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/mcptest"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/internal/fakellm"
	"github.com/lucy-agent/lucy/worker"
)

// oauthProvider is an authorization server (RFC 8414 metadata, RFC 7591 registration, the
// authorization code grant with PKCE, RFC 6749 and 7636) in front of an MCP server that requires its
// bearer tokens (RFC 9728 protected resource metadata; the MCP authorization specification). Its
// authorization endpoint signs in at once the person whose browser session the X-Test-User header
// stands for, and the MCP server records whose token each tools/call carried.
type oauthProvider struct {
	as, rs  *httptest.Server
	mu      sync.Mutex
	codes   map[string][2]string // code -> code_challenge, subject
	tokens  map[string]string    // access token -> subject
	callers []string
	n       int
}

func newOAuthProvider(t *testing.T) *oauthProvider {
	p := &oauthProvider{codes: map[string][2]string{}, tokens: map[string]string{}}
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"issuer": p.as.URL, "authorization_endpoint": p.as.URL + "/authorize", "token_endpoint": p.as.URL + "/token",
			"registration_endpoint": p.as.URL + "/register", "response_types_supported": []string{"code"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"}})
	})
	mux.HandleFunc("POST /register", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 201, map[string]any{"client_id": "lucy-e2e", "token_endpoint_auth_method": "none"}) // RFC 7591 section 3.2.1
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != "lucy-e2e" || q.Get("code_challenge_method") != "S256" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorization request", 400)
			return
		}
		p.mu.Lock()
		p.n++
		code := fmt.Sprintf("code-%d", p.n)
		p.codes[code] = [2]string{q.Get("code_challenge"), r.Header.Get("X-Test-User")}
		p.mu.Unlock()
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		p.mu.Lock()
		defer p.mu.Unlock()
		c, ok := p.codes[r.PostForm.Get("code")]
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || r.PostForm.Get("grant_type") != "authorization_code" || base64.RawURLEncoding.EncodeToString(sum[:]) != c[0] {
			writeJSON(w, 400, map[string]any{"error": "invalid_grant"}) // RFC 6749 section 5.2
			return
		}
		delete(p.codes, r.PostForm.Get("code"))
		p.n++
		at := fmt.Sprintf("at-%d-5c2e9a", p.n)
		p.tokens[at] = c[1]
		writeJSON(w, 200, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": 3600})
	})
	p.as = httptest.NewServer(mux)
	t.Cleanup(p.as.Close)

	h := mcptest.Handler(mcptest.New(mcptest.Normal, ""))
	rmux := http.NewServeMux()
	rmux.HandleFunc("GET /.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": p.rs.URL + "/mcp", "authorization_servers": []string{p.as.URL}})
	})
	rmux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p.mu.Lock()
		subject, ok := p.tokens[token]
		p.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+p.rs.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodPost && r.ContentLength != 0 {
			var body strings.Builder
			buf := make([]byte, 4096)
			for {
				n, err := r.Body.Read(buf)
				body.Write(buf[:n])
				if err != nil {
					break
				}
			}
			if strings.Contains(body.String(), `"tools/call"`) {
				p.mu.Lock()
				p.callers = append(p.callers, subject)
				p.mu.Unlock()
			}
			r.Body = readCloser{strings.NewReader(body.String())}
		}
		h.ServeHTTP(w, r)
	})
	p.rs = httptest.NewServer(rmux)
	t.Cleanup(p.rs.Close)
	return p
}

type readCloser struct{ *strings.Reader }

func (readCloser) Close() error { return nil }

func (p *oauthProvider) calledAs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.callers...)
}

// signInButton is the Sign in button Lucy posted in the thread for user: its state and its link.
func (s *stack) signInButton(ts, user string) (state, link string) {
	for _, m := range s.botMessages(ts) {
		if m.Blocks == nil || !strings.Contains(string(m.Blocks), "lucy_sign_in") || !strings.Contains(string(m.Blocks), "@"+user) {
			continue
		}
		var blocks []struct {
			Elements []struct {
				ActionID string `json:"action_id"`
				Value    string `json:"value"`
				URL      string `json:"url"`
			} `json:"elements"`
		}
		if json.Unmarshal(m.Blocks, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			for _, e := range b.Elements {
				if e.ActionID == "lucy_sign_in" {
					state, link = e.Value, e.URL
				}
			}
		}
	}
	return state, link
}

// A person signs in as themselves through the real gateway: Lucy's run posts a Sign in button bound
// to Ada; Bob clicks it in the thread (Slack's signed block_actions) and his browser is refused at
// Lucy's start link, which spends it; Ada asks again, clicks her new button, her browser goes
// through the start link and the provider and comes back to the gateway's callback, which stores
// her own sign-in; her next request calls the MCP server with her token.
func TestPerPersonSignInThroughTheGateway(t *testing.T) {
	p := newOAuthProvider(t)
	s := newStack(t, func(n int, req fakellm.Request) fakellm.Reply {
		var results []string
		for _, m := range req.Messages {
			if m.Role == "tool" {
				results = append(results, m.Text())
			}
		}
		if len(results) > 0 {
			return fakellm.Reply{Content: "Done: " + strings.Join(results, " | ")}
		}
		text := lastUserText(req)
		switch {
		case strings.Contains(text, "sign me in"):
			return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("s1", mcp.SignInService, `{"service":"acme"}`)}}
		case strings.Contains(text, "who am i"):
			for _, tl := range req.Tools {
				if tl.Function.Name == "mcp__acme__whoami" {
					return fakellm.Reply{ToolCalls: []fakellm.ToolCall{fakellm.Call("w1", "mcp__acme__whoami", `{}`)}}
				}
			}
			return fakellm.Reply{Content: "Done: whoami is not offered"}
		}
		return fakellm.Reply{Content: "Done."}
	})
	// The worker and the gateway share Lucy's public URL (the gateway's), the state store and its key.
	s.cfg.PublicURL = s.gw.URL
	s.stopWorker()
	s.startWorkerWith(worker.Deps{Log: s.log, MCPServers: []mcp.Server{{Name: "acme", URL: p.rs.URL + "/mcp"}}})
	creds, err := worker.Credentials(s.cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	state, err := worker.StateStore(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := oauth.New(state, creds, s.cfg.SecretsKey, s.cfg.PublicURL)
	if err != nil {
		t.Fatal(err)
	}
	gw := gateway.New(gateway.Options{Handoff: gateway.NewTemporalHandoff(s.client, s.cfg.ApprovalKey), BotUserID: "ULUCY", BotID: "BLUCY", Team: team,
		Log: s.log, Admins: s.cfg.AdminUsers, Credentials: creds,
		OAuthCallback: &oauth.Callback{Flow: flow, Guarded: http.DefaultClient, Trusted: http.DefaultClient, Log: s.log},
		SignInOpened:  flow.Opened})
	s.gw.Config.Handler = gw.HTTPHandler(secret)

	ask := func(id, text string) string {
		ts := s.say(text, "")
		s.event("app_mention", id, text, ts, "", human)
		s.waitFor("the answer to "+text, 120*time.Second, func() bool { return s.answered(ts, "Done") })
		return ts
	}
	browser := func(who string) *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			req.Header.Set("X-Test-User", who) // the person's session at the provider
			return nil
		}}
	}

	ts := ask("Ev-signin-1", "<@ULUCY> sign me in to acme")
	st, link := s.signInButton(ts, human)
	if st == "" || !strings.HasPrefix(link, s.gw.URL+oauth.StartPath+"?state=") {
		t.Fatalf("no Sign in button for Ada with Lucy's start link: %q %q; messages %+v", st, link, s.botMessages(ts))
	}
	s.click("UOTHER", st, "lucy_sign_in") // Bob clicks Ada's button in the thread
	resp, err := browser("UOTHER").Get(link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("Bob's browser at Ada's link: %d, want 403", resp.StatusCode)
	}

	ts = ask("Ev-signin-2", "<@ULUCY> sign me in to acme, again")
	st2, link2 := s.signInButton(ts, human)
	if st2 == "" || st2 == st {
		t.Fatalf("no new Sign in button for Ada: %q (the spent one was %q)", st2, st)
	}
	s.click(human, st2, "lucy_sign_in")
	resp, err = browser(human).Get(link2) // the start link, the provider, the callback: one browser
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != oauth.CallbackPath {
		t.Fatalf("Ada's sign-in ended at %s with %d", resp.Request.URL, resp.StatusCode)
	}
	if _, err := flow.TokenFor(t.Context(), team, "acme", p.rs.URL+"/mcp", "", human); err != nil {
		t.Fatalf("Ada's own sign-in is not stored: %v", err)
	}

	ts = ask("Ev-signin-3", "<@ULUCY> who am i at acme?")
	if !s.answered(ts, "you are Bearer") {
		t.Fatalf("whoami did not run: %+v", s.botMessages(ts))
	}
	if got := p.calledAs(); len(got) != 1 || got[0] != human {
		t.Fatalf("the MCP server was called as %v, want [%s]", got, human)
	}
}
