// Package conformance_test runs the MCP conformance suite's client scenarios
// (@modelcontextprotocol/conformance, installed by `task mcp-deps`) against Lucy's MCP client.
//
// The suite starts a test server for each scenario and runs a client command with the server's URL
// as its last argument and the scenario's name in MCP_CONFORMANCE_SCENARIO (the suite's README,
// "Client Testing"). The command is this test binary: with EnvClient set, TestMain is that client
// (runClient) instead of running tests. It drives integrations/mcp the way a run does: the operator's
// server in a Source, its tools listed, one called through its handler, and for a server that asks
// for OAuth, Lucy's own sign-in (integrations/mcp/oauth): the link Lucy offers, the browser's visit
// to the authorization endpoint, the gateway's callback, and the call again with the tokens.
package conformance_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// EnvClient makes this test binary the conformance suite's client (TestMain).
const EnvClient = "LUCY_MCP_CONFORMANCE_CLIENT"

const (
	team = "TCONFORMANCE"
	user = "UCONFORMANCE"
	// publicURL is Lucy's public URL as the sign-in's redirect URI names it; the browser's return is
	// handed to the callback handler directly, so nothing listens there.
	publicURL = "http://localhost:8099"
)

// scenarioCalls is the tool each scenario's test server offers and the arguments the client calls
// it with (the suite's scenarios, src/scenarios/client/*). A scenario not named here is a connect
// and a listing (initialize) or, for the auth scenarios, the call of their one tool, test-tool.
var scenarioCalls = map[string]struct{ tool, args string }{
	"tools_call":                          {"add_numbers", `{"a":5,"b":3}`},
	"sse-retry":                           {"test_reconnection", `{}`},
	"elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults", `{}`},
}

// runClient is the conformance client: it returns the process's exit code.
func runClient(scenario, serverURL string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	log := zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr, NoColor: true}).Level(zerolog.DebugLevel).With().Timestamp().Logger()
	if err := drive(ctx, log, scenario, serverURL); err != nil {
		fmt.Fprintf(os.Stderr, "lucy conformance client, scenario %s: %v\n", scenario, err)
		return 1
	}
	return 0
}

func drive(ctx context.Context, log zerolog.Logger, scenario, serverURL string) error {
	dir, err := os.MkdirTemp("", "lucy-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var key secrets.Key
	copy(key[:], "conformance-key-0123456789abcdef")
	state := workspace.NewLocalAt(dir)
	creds, err := secrets.New(state, key)
	if err != nil {
		return err
	}
	flow, err := oauth.New(state, creds, key, publicURL)
	if err != nil {
		return err
	}
	// The suite's servers are on loopback: the operator's server may be on a private address.
	cb := &oauth.Callback{Flow: flow, Guarded: tools.NewGuardedClient(nil, tools.AllowAllPrivate()), Trusted: http.DefaultClient, Log: log}
	srv := mcp.Server{Name: "conformance", URL: serverURL}
	// A scenario whose authorization server does not let clients register (auth/pre-registration)
	// gives the client an operator registered, as the MCP configuration file's "oauth" gives it.
	var given struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if raw := os.Getenv("MCP_CONFORMANCE_CONTEXT"); raw != "" {
		if err := json.Unmarshal([]byte(raw), &given); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if scenario == "auth/pre-registration" && given.ClientID != "" {
		srv.OAuth = &mcp.OAuthClient{ClientID: given.ClientID, ClientSecret: given.ClientSecret}
	}
	posted := &buttons{}
	src := mcp.New(mcp.Deps{
		Servers:     []mcp.Server{srv},
		Credentials: creds, OAuth: flow, Log: log, Limits: mcp.Limits{ConnectTimeout: 10 * time.Second}, Keys: posted,
	})
	defer src.Close()
	// A person signs in as themselves: Lucy posts a Sign in button for them, Slack tells the gateway
	// they clicked it (Flow.Opened), and their browser opens the link.
	signIn := func(req integrations.SignInRequest) error {
		if err := flow.Opened(ctx, req.State, user); err != nil {
			return err
		}
		return openLink(req.URL, cb)
	}

	// The listing connects (initialize, tools/list). A server that wants a sign-in is listed with the
	// link instead: the person opens it and comes back, and Lucy lists again.
	var list []tools.Tool
	for attempt := 0; ; attempt++ {
		if list, err = src.Tools(ctx, team); err != nil {
			return err
		}
		if len(list) > 0 || attempt == 3 {
			break
		}
		status, err := statusOf(ctx, src)
		if err != nil {
			return err
		}
		if !strings.Contains(status, "requires signing in") {
			if scenario == "initialize" {
				return nil // its server lists no tool
			}
			return fmt.Errorf("no tools and no sign-in asked for; the server's status: %s", status)
		}
		runner, err := tools.NewRunner(log, []any{src})
		if err != nil {
			return err
		}
		out, err := runner.Run(ctx, tools.Invocation{Name: mcp.SignInService, Arguments: `{"service":"conformance"}`, Team: team, User: user})
		if err != nil {
			return err
		}
		req, ok := posted.last()
		if !ok {
			return fmt.Errorf("no Sign in button was posted: %s", out.Content)
		}
		if err := signIn(req); err != nil {
			return err
		}
	}
	if scenario == "initialize" {
		return nil
	}
	want, ok := scenarioCalls[scenario]
	if !ok {
		want.tool, want.args = "test-tool", `{}`
	}
	name := ""
	for _, tl := range list {
		if strings.HasSuffix(tl.Spec.Name, "__"+want.tool) {
			name = tl.Spec.Name
		}
	}
	if name == "" {
		return fmt.Errorf("the server does not offer %s", want.tool)
	}
	for attempt := 0; ; attempt++ {
		out, err := runTool(ctx, src, name, want.args)
		if err != nil {
			return fmt.Errorf("%s: %w", want.tool, err)
		}
		if req, ok := posted.last(); ok && strings.Contains(out.Content, "Sign in button") && attempt < 3 {
			// The server asked for another sign-in (more scopes: a step-up): the person signs in again.
			if err := signIn(req); err != nil {
				return err
			}
			continue
		}
		if out.IsError {
			return fmt.Errorf("%s answered an error: %s", want.tool, out.Content)
		}
		fmt.Fprintf(os.Stderr, "%s: %s\n", want.tool, out.Content)
		return nil
	}
}

// runTool calls a tool through the Source as a run's tool activity does: the tool as the Source
// offers it now, its handler with the model's arguments.
func runTool(ctx context.Context, src *mcp.Source, name, args string) (tools.Output, error) {
	list, err := src.Tools(ctx, team)
	if err != nil {
		return tools.Output{}, err
	}
	for _, tl := range list {
		if tl.Spec.Name == name {
			return tl.Run(ctx, tools.Invocation{Name: name, Arguments: args, Team: team, User: user})
		}
	}
	return tools.Output{}, errors.New("no longer offered")
}

// statusOf is the server's status as lucy_list_integrations shows it.
func statusOf(ctx context.Context, src *mcp.Source) (string, error) {
	ints, err := src.Integrations(ctx, team)
	if err != nil {
		return "", err
	}
	for _, in := range ints {
		if in.Name == "conformance" {
			return in.Status, nil
		}
	}
	return "", errors.New("the server is not listed")
}

// buttons keeps the Sign in buttons Lucy posts, as Slack would show them in the thread.
type buttons struct {
	mu   sync.Mutex
	reqs []integrations.SignInRequest
}

func (b *buttons) RequestKey(context.Context, tools.Invocation, string, string, secrets.Binding) error {
	return errors.New("no key is asked for in the conformance scenarios")
}

func (b *buttons) RequestSignIn(_ context.Context, _ tools.Invocation, req integrations.SignInRequest) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqs = append(b.reqs, req)
	return nil
}

// last is the button posted last, once: a button is clicked once.
func (b *buttons) last() (integrations.SignInRequest, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.reqs) == 0 {
		return integrations.SignInRequest{}, false
	}
	r := b.reqs[len(b.reqs)-1]
	b.reqs = nil
	return r, true
}

// openLink is the person's browser: it opens the authorization URL (the suite's authorization
// server approves at once and redirects to Lucy's callback with a code), and the gateway's callback
// handler takes the return.
func openLink(link string, cb *oauth.Callback) error {
	// The Sign in button's link is Lucy's start endpoint (on LUCY_PUBLIC_URL, nothing listens there
	// in this test: its handler is called directly), which gives the browser a cookie and sends it on.
	u, err := url.Parse(link)
	if err != nil || u.Path != oauth.StartPath {
		return fmt.Errorf("the link %q is not Lucy's start endpoint", link)
	}
	rec := httptest.NewRecorder()
	cb.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, oauth.StartPath+"?"+u.RawQuery, nil))
	if rec.Code != http.StatusFound {
		return fmt.Errorf("the start endpoint answered %d: %s", rec.Code, rec.Body.String())
	}
	cookies := rec.Result().Cookies()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	resp, err := c.Get(rec.Header().Get("Location"))
	if err != nil {
		return fmt.Errorf("opening the sign-in link: %w", err)
	}
	resp.Body.Close()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode/100 != 3 {
		return fmt.Errorf("the authorization endpoint answered %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if back.Path != oauth.CallbackPath {
		return fmt.Errorf("the authorization endpoint sent the browser to %s, not Lucy's callback", back)
	}
	req := httptest.NewRequest(http.MethodGet, oauth.CallbackPath+"?"+back.RawQuery, nil)
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	rec = httptest.NewRecorder()
	cb.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		return fmt.Errorf("the callback answered %d: %s", rec.Code, rec.Body.String())
	}
	return nil
}
