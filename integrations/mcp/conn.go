package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// conn is one server's session and its last listing, for one scope (connKey).
type conn struct {
	s    *Source
	srv  Server
	team string // whose credential it uses, or whose server it is; "" when shared
	// forCall is the conn of one person's calls to a server that needs a sign-in (person "" for a
	// request with no requester), base the team's conn whose listing offered the tools; a conn
	// that is not forCall lists the server's tools (Flow.ListingToken) and makes no call of a sign-in.
	forCall bool
	person  string
	base    *conn

	// connecting serializes connects, so that concurrent calls share one new session.
	connecting sync.Mutex

	mu       sync.Mutex
	session  *sdk.ClientSession
	scrub    []string         // secret values this session uses: scrubbed from results and errors
	auth     *headerTransport // the session's HTTP transport (nil for stdio): the 401s and 403s it saw
	list     []listedTool
	listedAt time.Time
	failedAt time.Time
	status   string
	healthy  bool
	tried    bool
	waited   bool
	refresh  chan struct{} // open while a listing runs
	changed  bool          // the server said its list changed while a listing ran
	progress map[string]func(*sdk.ProgressNotificationParams)
	stderr   *tail
	closed   bool

	// The OAuth sign-in of a remote server without a configured credential that answered 401.
	tokens     *oauth.TokenSet // the team's tokens in use, refreshed as they expire
	seen       []string        // every token value this conn used: scrubbed from results and errors
	signIn     *oauth.SignIn   // the link last offered, reused while it works
	client     *oauth.Client   // the client registered for it, reused by the next sign-in
	awaiting   bool            // the last listing asked for a sign-in
	requester  string          // the last person whose request used this server: who the sign-in is for
	challenge  []string        // the WWW-Authenticate of the listing's last 401 (the scopes a sign-in asks for)
	refreshing sync.Mutex      // one refresh of the tokens at a time
}

// listedTool is a tool a server listed, checked: its schema resolved, its parameters for the model.
type listedTool struct {
	raw    *sdk.Tool
	schema *jsonschema.Resolved
	params map[string]any
}

func newConn(s *Source, srv Server, team string) *conn {
	return &conn{s: s, srv: srv, team: team, progress: map[string]func(*sdk.ProgressNotificationParams){}}
}

type connState struct {
	status  string
	healthy bool
}

func (c *conn) state() connState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return connState{status: c.status, healthy: c.healthy}
}

// wait says whether a listing waits for a refresh it starts.
type wait int

const (
	// waitFirst waits only when the server was never listed in this worker: afterwards a listing
	// answers from the cache (stale or failed) at once and refreshes in the background, so a server
	// that hangs delays one listing per worker, by ConnectTimeout at most.
	waitFirst wait = iota
	// waitAlways waits for a fresh listing (the connect tool, which reports what it found).
	waitAlways
	// waitKnown waits until the server's state is known (its first listing ended, or ConnectTimeout
	// passed), whoever started it: lucy_list_integrations, which reports health rather than tools.
	waitKnown
)

// listing returns the server's tools: the cached list while it is fresh; otherwise it starts a
// refresh and, as w says, waits for it (bounded by ConnectTimeout and ctx).
func (c *conn) listing(ctx context.Context, w wait) []listedTool {
	if w != waitAlways && c.signedInSince(ctx) {
		// Someone signed in since the listing that asked them to: list now, with the tokens,
		// rather than after RetryAfter; this listing waits for it.
		w = waitAlways
	}
	c.mu.Lock()
	now := time.Now()
	lim := c.s.limits
	if c.list != nil && now.Sub(c.listedAt) < lim.TTL && w != waitAlways {
		l := c.list
		c.mu.Unlock()
		return l
	}
	if c.list == nil && c.tried && now.Sub(c.failedAt) < lim.RetryAfter && c.refresh == nil && w != waitAlways {
		c.mu.Unlock()
		return nil // failed lately: not again yet
	}
	done := c.startRefreshLocked()
	l, tried, waited := c.list, c.tried, c.waited
	c.mu.Unlock()
	if (w == waitFirst && (l != nil || tried || waited)) || (w == waitKnown && (l != nil || tried)) {
		return l
	}
	t := time.NewTimer(lim.ConnectTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-ctx.Done():
	case <-t.C:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waited = true // one listing waited its bound: the next ones answer at once, even if the refresh still runs
	return c.list
}

// startRefreshLocked starts a listing unless one runs, and returns the channel closed when it ends.
func (c *conn) startRefreshLocked() chan struct{} {
	if c.refresh != nil {
		return c.refresh
	}
	done := make(chan struct{})
	c.refresh = done
	go c.doRefresh(done)
	return done
}

func (c *conn) doRefresh(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.limits.ConnectTimeout)
	defer cancel()
	if c.usesSignIn() {
		// The listing's tokens are read again too: a member whose sign-in it used may have signed
		// out (in any worker), and theirs are then no longer sent, not even for a listing.
		_ = c.recheck(ctx)
	}
	list, err := c.fetch(ctx)
	msg := ""
	if err != nil {
		msg = c.scrubbed(plainError(err, ctx))
	}
	var need *needSignIn
	var perTeam *perTeamSignIn
	if errors.As(err, &perTeam) {
		c.s.markPerTeam(c.srv.Name)
	}
	c.mu.Lock()
	c.tried = true
	c.awaiting = errors.As(err, &need)
	if err != nil {
		if c.status != msg || c.healthy {
			c.s.log.Warn().Str("server", c.srv.Name).Str("team", c.team).Str("reason", msg).Msg("MCP server left out")
		}
		c.list, c.healthy, c.status, c.failedAt = nil, false, msg, time.Now()
	} else {
		c.list, c.healthy, c.listedAt = list, true, time.Now()
		c.status = fmt.Sprintf("%d tools", len(list))
		if len(list) == 1 {
			c.status = "1 tool"
		}
	}
	c.refresh = nil
	again := c.changed && !c.closed
	c.changed = false
	if again {
		c.startRefreshLocked()
	}
	c.mu.Unlock()
	close(done)
}

// plainError says in words why a server could not be listed.
func plainError(err error, ctx context.Context) string {
	var need *needCredential
	var sign *needSignIn
	var perTeam *perTeamSignIn
	switch {
	case errors.As(err, &need):
		return need.Error()
	case errors.As(err, &sign):
		return sign.Error()
	case errors.As(err, &perTeam):
		return perTeam.Error()
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return "did not answer within the time allowed (it may be down or hanging): " + err.Error()
	}
	return err.Error()
}

// fetch lists the server's tools, connecting first if need be; a session that broke since its last
// use is replaced once.
func (c *conn) fetch(ctx context.Context) ([]listedTool, error) {
	list, err := c.fetchOnce(ctx)
	if errors.Is(err, errTokenRefreshed) {
		list, err = c.fetchOnce(ctx)
	}
	return list, err
}

func (c *conn) fetchOnce(ctx context.Context) ([]listedTool, error) {
	cs, reused, err := c.sessionFor(ctx)
	if err != nil {
		return nil, err
	}
	ht, mark := c.authMark()
	list, err := c.listTools(ctx, cs)
	if err != nil {
		if serr := c.signInAfter(ctx, cs, ht, mark); serr != nil {
			return nil, serr
		}
	}
	if err != nil && reused && ctx.Err() == nil && !isRefusal(err) {
		c.drop(cs)
		if cs, _, err = c.sessionFor(ctx); err != nil {
			return nil, err
		}
		list, err = c.listTools(ctx, cs)
	}
	if err != nil && !isRefusal(err) {
		c.drop(cs) // a session that listed garbage or failed is not kept
	}
	return list, err
}

// refusal is a server Lucy refuses for what it listed (too many tools, a bad schema): reconnecting
// does not help.
type refusal struct{ msg string }

func (r *refusal) Error() string { return r.msg }

func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

func (c *conn) listTools(ctx context.Context, cs *sdk.ClientSession) ([]listedTool, error) {
	max := c.s.limits.MaxTools
	var out []listedTool
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing its tools failed: %w", err)
		}
		if len(out) == max {
			return nil, &refusal{fmt.Sprintf("offers more than %d tools, more than Lucy takes from one server; none of them is offered (split it, or turn tools off on the server)", max)}
		}
		lt, err := checkTool(t)
		if err != nil {
			return nil, &refusal{err.Error() + "; none of its tools is offered until it is fixed"}
		}
		if seen[t.Name] {
			return nil, &refusal{fmt.Sprintf("lists the tool %q twice; none of its tools is offered until it is fixed", t.Name)}
		}
		seen[t.Name] = true
		out = append(out, lt)
	}
	if out == nil {
		out = []listedTool{} // listed, and empty: not the same as never listed
	}
	return out, nil
}

// maxSchemaBytes bounds one tool's input schema: it is sent to the model with every call.
const maxSchemaBytes = 32 << 10

// checkTool checks one listed tool: a name, and an input schema that is a JSON Schema of an object.
func checkTool(t *sdk.Tool) (listedTool, error) {
	if t == nil || strings.TrimSpace(t.Name) == "" {
		return listedTool{}, errors.New("lists a tool without a name")
	}
	if len(t.Name) > 128 || strings.IndexFunc(t.Name, unicode.IsControl) >= 0 {
		return listedTool{}, fmt.Errorf("lists a tool whose name is not usable (%q)", tools.Truncate(t.Name, 60))
	}
	data, err := json.Marshal(t.InputSchema)
	if err != nil || t.InputSchema == nil {
		return listedTool{}, fmt.Errorf("tool %q has no input schema", t.Name)
	}
	if len(data) > maxSchemaBytes {
		return listedTool{}, fmt.Errorf("tool %q has an input schema of %d KB, more than the %d KB Lucy sends the model", t.Name, len(data)>>10, maxSchemaBytes>>10)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(data, &schema); err != nil {
		return listedTool{}, fmt.Errorf("tool %q has an input schema that is not JSON Schema: %v", t.Name, err)
	}
	if schema.Type != "object" {
		return listedTool{}, fmt.Errorf("tool %q has an input schema whose type is %q, not \"object\"", t.Name, schema.Type)
	}
	if err := checkTypes(params0(data), "inputSchema"); err != nil {
		return listedTool{}, fmt.Errorf("tool %q has an input schema that is not valid JSON Schema: %v", t.Name, err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return listedTool{}, fmt.Errorf("tool %q has an input schema that is not valid JSON Schema: %v", t.Name, err)
	}
	var params map[string]any
	if err := json.Unmarshal(data, &params); err != nil {
		return listedTool{}, fmt.Errorf("tool %q has an input schema that is not a JSON object", t.Name)
	}
	if _, ok := params["properties"]; !ok {
		params["properties"] = map[string]any{} // some models refuse an object schema without it
	}
	// The listing's own decoded schemas (InputSchema, OutputSchema: trees of maps as the SDK decoded
	// them) are not kept: params and the resolved schema are what the tool offers and validates
	// with, and a third copy of every schema was a third of what a cached listing held
	// (BenchmarkListingRetained).
	kept := *t
	kept.InputSchema, kept.OutputSchema = nil, nil
	return listedTool{raw: &kept, schema: resolved, params: params}, nil
}

// needCredential is a server whose credential the team has not stored.
type needCredential struct{ service string }

func (e *needCredential) Error() string {
	return fmt.Sprintf("needs the credential %q, which this workspace has not stored yet", e.service)
}

// sessionFor returns the live session, connecting when there is none; reused says it was made before.
func (c *conn) sessionFor(ctx context.Context) (cs *sdk.ClientSession, reused bool, err error) {
	c.mu.Lock()
	cs = c.session
	c.mu.Unlock()
	if cs != nil {
		return cs, true, nil
	}
	c.connecting.Lock()
	defer c.connecting.Unlock()
	c.mu.Lock()
	cs = c.session
	closed := c.closed
	c.mu.Unlock()
	if cs != nil {
		return cs, true, nil
	}
	if closed {
		return nil, false, errors.New("the MCP client is shutting down")
	}
	cs, scrub, ht, err := c.connect(ctx)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		_ = cs.Close()
		return nil, false, errors.New("the MCP client is shutting down")
	}
	c.session, c.scrub, c.auth = cs, scrub, ht
	c.mu.Unlock()
	go func() {
		_ = cs.Wait()
		c.drop(cs) // the server went away: the next use connects again
	}()
	return cs, false, nil
}

// drop forgets cs (closing it) if it is still the session.
func (c *conn) drop(cs *sdk.ClientSession) {
	c.mu.Lock()
	mine := c.session == cs
	if mine {
		c.session, c.auth = nil, nil
	}
	c.mu.Unlock()
	if mine {
		_ = cs.Close()
	}
}

func (c *conn) close() {
	c.mu.Lock()
	c.closed = true
	cs := c.session
	c.session = nil
	c.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

// connect starts or reaches the server and initializes a session; a signed-in token the server
// refused is refreshed, and the connect tried once more with the new one.
func (c *conn) connect(ctx context.Context) (*sdk.ClientSession, []string, *headerTransport, error) {
	cs, scrub, ht, err := c.connectOnce(ctx, false)
	if errors.Is(err, errTokenRefreshed) {
		cs, scrub, ht, err = c.connectOnce(ctx, true)
	}
	return cs, scrub, ht, err
}

func (c *conn) connectOnce(ctx context.Context, refreshed bool) (*sdk.ClientSession, []string, *headerTransport, error) {
	scrub := c.srv.secretValues()
	var refused *atomic.Int32 // the HTTP status of a refused authorization (401, 403), for the status
	var transport sdk.Transport
	var ht *headerTransport
	hadToken := false
	if c.srv.Remote() {
		headers := c.srv.Headers
		if c.srv.Credential != "" {
			value, err := c.credential(ctx)
			if err != nil {
				return nil, nil, nil, err
			}
			scrub = append(scrub, value)
			headers = c.srv.credentialHeaders(value)
		}
		var bearer func(context.Context) (string, error)
		if c.signInEligible() && c.team != "" {
			ts, err := c.storedTokens(ctx)
			switch {
			case err == nil:
				c.useTokens(ts)
				bearer, hadToken = c.bearer, true
			case !errors.Is(err, oauth.ErrNotSignedIn):
				return nil, nil, nil, fmt.Errorf("its sign-in cannot be read: %w", err)
			}
		}
		u, err := url.Parse(c.srv.URL)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("its URL does not parse: %w", err)
		}
		base := &http.Client{}
		if c.srv.AddedBy != "" {
			// A server a team connected from chat may not be, or lead to, a private address.
			if err := c.s.d.CheckURL(ctx, u); err != nil {
				return nil, nil, nil, fmt.Errorf("its address is not allowed: %w", err)
			}
			base = c.s.d.HTTP
		}
		hc := *base
		ht = &headerTransport{base: base.Transport, host: u.Host, headers: headers, bearer: bearer}
		hc.Transport = ht
		refused = &ht.refused
		if c.srv.Type == "sse" {
			transport = &detached{t: &sdk.SSEClientTransport{Endpoint: c.srv.URL, HTTPClient: &hc}}
		} else {
			// Few reconnects: a server that went away is reconnected by the next listing or call,
			// and a call should learn of it quickly.
			transport = &sdk.StreamableClientTransport{Endpoint: c.srv.URL, HTTPClient: &hc, MaxRetries: 1}
		}
	} else {
		cmd := exec.Command(c.srv.Command, c.srv.Args...)
		cmd.Env = childEnv(c.srv.Env)
		cmd.Dir = c.srv.Dir
		c.mu.Lock()
		c.stderr = &tail{}
		cmd.Stderr = c.stderr
		c.mu.Unlock()
		transport = &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "lucy", Version: "1"}, &sdk.ClientOptions{
		// No roots, sampling or elicitation: Lucy offers a server nothing but calls.
		Capabilities:                &sdk.ClientCapabilities{},
		ToolListChangedHandler:      func(context.Context, *sdk.ToolListChangedRequest) { c.listChanged() },
		ProgressNotificationHandler: c.onProgress,
	})
	cs, err := client.Connect(ctx, transport, nil)
	if d, ok := transport.(*detached); ok {
		if err != nil {
			d.end()
		} else {
			go func() { _ = cs.Wait(); d.end() }()
		}
	}
	if err != nil {
		if refused != nil {
			if code := refused.Load(); code != 0 {
				if code == http.StatusUnauthorized && c.signInEligible() {
					return nil, nil, nil, c.signInError(ctx, ht.lastChallenge(), hadToken, refreshed)
				}
				return nil, nil, nil, c.authError(int(code))
			}
		}
		return nil, nil, nil, c.connectError(err)
	}
	return cs, scrub, ht, nil
}

// signInEligible is a remote server Lucy may sign in to: one the operator gave no credential or
// Authorization header (those are the way in, and a 401 means they are wrong), with sign-in wired.
func (c *conn) signInEligible() bool {
	if !c.srv.Remote() || c.srv.Credential != "" || c.s.d.OAuth == nil {
		return false
	}
	for k := range c.srv.Headers {
		if strings.EqualFold(k, "Authorization") {
			return false
		}
	}
	return true
}

// authError says what to do about a server that refused Lucy's authorization.
func (c *conn) authError(code int) error {
	if c.srv.Credential != "" {
		return fmt.Errorf("it refused the stored credential %q (HTTP %d): store a valid key or token under that name", c.srv.Credential, code)
	}
	return fmt.Errorf("it requires authorization (HTTP %d): connect it with a credential (an API key or personal access token "+
		"stored under a name, sent as a bearer token); signing in with OAuth is not available in this Lucy", code)
}

// detached connects a transport whose stream lives in the context it is connected with (the SSE
// client's GET) so that the stream outlives the bounded connect: the connect is cancelled if ctx ends
// first, the stream only when the session ends (end).
type detached struct {
	t      sdk.Transport
	mu     sync.Mutex
	cancel context.CancelFunc
}

func (d *detached) Connect(ctx context.Context) (sdk.Connection, error) {
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	conn, err := d.t.Connect(sctx)
	if !stop() || err != nil { // ctx ended during the connect, or it failed
		cancel()
		if err == nil {
			_ = conn.Close()
			err = ctx.Err()
		}
		return nil, err
	}
	d.mu.Lock()
	d.cancel = cancel
	d.mu.Unlock()
	return conn, nil
}

func (d *detached) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.cancel != nil {
		d.cancel()
	}
}

// connectError says why a connect failed, with what a started server wrote on its standard error.
func (c *conn) connectError(err error) error {
	msg := "could not connect: " + err.Error()
	c.mu.Lock()
	st := c.stderr
	c.mu.Unlock()
	if st != nil {
		if last := st.last(); last != "" {
			msg += " (it wrote: " + last + ")"
		}
	}
	return errors.New(msg)
}

// credential reads the server's stored key and checks, before anything is sent, that it may go
// there: a key bound to the server's origin and usable in the runs this session serves
// (secrets.Applies). A key stored before keys were bound (no origins) is bound now only when the
// person who connected the server could have attached it: its owner, or an admin (for the
// operator's servers, a key of the operator or an admin).
func (c *conn) credential(ctx context.Context) (string, error) {
	if c.s.d.Credentials == nil || c.team == "" {
		return "", &needCredential{service: c.srv.Credential}
	}
	value, meta, err := c.s.d.Credentials.Get(ctx, c.team, c.srv.Credential)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", &needCredential{service: c.srv.Credential}
	}
	if err != nil {
		return "", fmt.Errorf("its credential %q cannot be read: %w", c.srv.Credential, err)
	}
	if secrets.Reserved(meta.Service) || meta.KindOrKey() != secrets.KindKey {
		return "", fmt.Errorf("its credential %q is not a key a server may be given (%v)", c.srv.Credential, secrets.ErrReserved)
	}
	origin := secrets.OriginOf(c.srv.URL)
	if len(meta.Origins) == 0 && c.mayBindLegacy(meta) {
		if meta, err = c.s.d.Credentials.Bind(ctx, c.team, c.srv.Credential, origin); err != nil {
			return "", fmt.Errorf("its credential %q cannot be bound to it: %w", c.srv.Credential, err)
		}
	}
	if c.srv.Shared && !meta.Shared && meta.Owner != "" && meta.Owner == c.srv.sharer() && meta.BoundTo(origin) {
		// The admin who shared the server added its key afterwards (the Add key button): the
		// approval of the sharing said its key is usable in everyone's requests.
		if meta, err = c.s.d.Credentials.SetShared(ctx, c.team, c.srv.Credential, true); err != nil {
			return "", fmt.Errorf("its credential %q cannot be shared: %w", c.srv.Credential, err)
		}
	}
	if err := secrets.Applies(meta, origin, c.keyRequester(meta)); err != nil {
		return "", fmt.Errorf("its credential is not sent: %w", err)
	}
	return value, nil
}

// keyRequester is whose runs this session serves, for secrets.Applies: a member's own server serves
// hers; a shared or operator's server serves everyone's, so its key must be shared or the
// operator's (an admin's key given to an operator's server serves the team: the admin's choice).
func (c *conn) keyRequester(meta secrets.Meta) string {
	switch {
	case c.srv.FromChat() && !c.srv.Shared:
		return c.srv.AddedBy
	case !c.srv.FromChat() && c.s.admin(meta.Owner):
		return meta.Owner
	}
	return ""
}

// mayBindLegacy says whether an unbound key may be bound to this server now: whoever set the server
// up could have attached it.
func (c *conn) mayBindLegacy(meta secrets.Meta) bool {
	if meta.Owner == "" {
		return false
	}
	if !c.srv.FromChat() {
		return meta.Owner == secrets.OperatorOwner || c.s.admin(meta.Owner)
	}
	by := c.srv.AddedBy
	if c.srv.Shared {
		by = c.srv.sharer()
	}
	return meta.Owner == by || c.s.admin(by)
}

func (c *conn) listChanged() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if c.refresh != nil {
		c.changed = true // list again once the running listing ends: it may predate the change
		return
	}
	c.startRefreshLocked()
}

func (c *conn) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	c.mu.Lock()
	f := c.progress[fmt.Sprint(req.Params.ProgressToken)]
	c.mu.Unlock()
	if f != nil {
		f(req.Params)
	}
}

func (c *conn) scrubbed(s string) string {
	c.mu.Lock()
	values := append(slices.Clone(c.scrub), c.seen...)
	c.mu.Unlock()
	return secrets.Scrub(tools.RedactCredentials(s), append(values, c.srv.secretValues()...)...)
}

// headerTransport adds the server's headers to the requests to its host only: a redirect elsewhere
// never carries its credential.
type headerTransport struct {
	base    http.RoundTripper
	host    string
	headers map[string]string
	refused atomic.Int32 // the last 401 or 403 the server answered
	// bearer gives the signed-in token of each request (refreshed as it expires); nil for none.
	bearer    func(context.Context) (string, error)
	challenge atomic.Pointer[[]string]
	// refusals counts the 401s and 403s, last is the latest with its WWW-Authenticate: a request
	// made after connecting learns whether the server refused it (signInAfter).
	refusals atomic.Int64
	last     atomic.Pointer[refusedRequest]
}

// refusedRequest is a request the server refused: 401 or 403, and its WWW-Authenticate values.
type refusedRequest struct {
	code      int
	challenge []string
}

// mark is the count of refusals so far (0 without a transport: stdio).
func (t *headerTransport) mark() int64 {
	if t == nil {
		return 0
	}
	return t.refusals.Load()
}

// refusedSince is the latest refusal after mark, or nil.
func (t *headerTransport) refusedSince(mark int64) *refusedRequest {
	if t == nil || t.refusals.Load() == mark {
		return nil
	}
	return t.last.Load()
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	r := req
	if req.URL.Host == t.host && len(t.headers) > 0 {
		r = req.Clone(req.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	if req.URL.Host == t.host && t.bearer != nil {
		token, err := t.bearer(req.Context())
		if err != nil {
			return nil, err
		}
		if token != "" {
			if r == req {
				r = req.Clone(req.Context())
			}
			r.Header.Set("Authorization", "Bearer "+token)
		}
	}
	resp, err := base.RoundTrip(r)
	if err == nil {
		noteThrottle(req.Context(), resp)
	}
	if err == nil && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) {
		t.refused.Store(int32(resp.StatusCode))
		ch := resp.Header.Values("WWW-Authenticate")
		if resp.StatusCode == http.StatusUnauthorized {
			t.challenge.Store(&ch)
		}
		t.last.Store(&refusedRequest{code: resp.StatusCode, challenge: ch})
		t.refusals.Add(1)
	}
	return resp, err
}

// lastChallenge is the WWW-Authenticate of the last 401 (resource_metadata, scope), if any.
func (t *headerTransport) lastChallenge() []string {
	if t == nil {
		return nil
	}
	if p := t.challenge.Load(); p != nil {
		return *p
	}
	return nil
}

// inheritedEnv are the variables a started server gets from the worker's environment: enough to find
// programs and a home; never the worker's own settings (Slack tokens, model keys), which an MCP
// server has no business reading. The server's "env" adds the rest.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ",
	"SYSTEMROOT", "APPDATA", "USERPROFILE"}

func childEnv(extra map[string]string) []string {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// tail keeps the end of what a started server writes on its standard error, for the status.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = t.buf[len(t.buf)-4096:]
	}
	return len(p), nil
}

// last is the last non-empty line, shortened.
func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimSpace(string(t.buf)), "\n")
	return tools.Truncate(strings.TrimSpace(lines[len(lines)-1]), 300)
}

func params0(data []byte) any {
	var v any
	_ = json.Unmarshal(data, &v)
	return v
}

// simpleTypes are the values JSON Schema's "type" takes.
var simpleTypes = map[string]bool{"null": true, "boolean": true, "object": true, "array": true, "number": true, "string": true, "integer": true}

// checkTypes checks every "type" keyword of a schema and its subschemas, which the resolver leaves
// unchecked: a schema with "type": "nonsense" would be described to the model and then match nothing.
func checkTypes(v any, at string) error {
	s, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); isBool || v == nil {
			return nil
		}
		return fmt.Errorf("%s is not a schema", at)
	}
	switch t := s["type"].(type) {
	case nil:
	case string:
		if !simpleTypes[t] {
			return fmt.Errorf("%s has the type %q, which JSON Schema does not have", at, t)
		}
	case []any:
		for _, e := range t {
			if name, ok := e.(string); !ok || !simpleTypes[name] {
				return fmt.Errorf("%s has the type %v, which JSON Schema does not have", at, e)
			}
		}
	default:
		return fmt.Errorf("%s has a type that is neither a name nor a list of names", at)
	}
	for _, k := range []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"} {
		if m, ok := s[k].(map[string]any); ok {
			for name, sub := range m {
				if err := checkTypes(sub, at+"."+k+"."+name); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames",
		"unevaluatedItems", "unevaluatedProperties", "additionalItems"} {
		if sub, ok := s[k]; ok {
			if list, isList := sub.([]any); isList { // draft 7's tuple form of items
				for i, e := range list {
					if err := checkTypes(e, fmt.Sprintf("%s.%s[%d]", at, k, i)); err != nil {
						return err
					}
				}
				continue
			}
			if err := checkTypes(sub, at+"."+k); err != nil {
				return err
			}
		}
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		if list, ok := s[k].([]any); ok {
			for i, e := range list {
				if err := checkTypes(e, fmt.Sprintf("%s.%s[%d]", at, k, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
