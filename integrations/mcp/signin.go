package mcp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// needSignIn is a server that wants a person to sign in as themselves. Its message is what the
// model and the person are told: that a Sign in button was posted for them (posted), or the link
// with the rule that it works only from that button, or, for a listing that is no one's request
// (url ""), how a person gets their own link.
type needSignIn struct {
	server  string
	url     string
	expires time.Time
	person  string // whom the link is for
	posted  bool   // a Sign in button for person was posted in the thread
	serves  string // whose requests the sign-in serves, in words
}

func (e *needSignIn) Error() string {
	switch {
	case e.url == "":
		return fmt.Sprintf("it requires signing in, and each person signs in as themselves: a person asks Lucy to sign them in to %s "+
			"(%s), and Lucy posts a Sign in button that works for them only; an admin can instead sign in once for the whole team "+
			"(%s with share_with_team)", e.server, SignInService, SignInService)
	case e.posted:
		return fmt.Sprintf("it requires <@%s> to sign in to %s as themselves: a Sign in button for them was posted in this thread "+
			"(it works until %s UTC, only when they open it; %s). Tell them to click it, then ask again", e.person, e.server,
			e.expires.UTC().Format("15:04"), e.serves)
	}
	return fmt.Sprintf("it requires <@%s> to sign in to %s as themselves, and Lucy could not post the Sign in button that does it "+
		"(a sign-in link is accepted only when its person opens it from that button in Slack)", e.person, e.server)
}

// tokenOwner is whose requests this server's sign-in serves: the member whose own server it is, or
// "" for a server every member's requests use.
func (c *conn) tokenOwner() string {
	if c.srv.FromChat() && !c.srv.Shared {
		return c.srv.AddedBy
	}
	return ""
}

// serves says whose requests a sign-in serves, in words (the button's message, the callback's page).
func (c *conn) serves(share bool) string {
	if share {
		return "every member's requests in your workspace that use " + c.srv.Name + " and have no sign-in of their own"
	}
	if owner := c.tokenOwner(); owner != "" {
		return "the requests of Slack user " + owner + " only"
	}
	return "your own requests only"
}

// perTeamSignIn is the operator's server, listed with a session shared by every team, that asked
// for a sign-in: each team signs in for itself, so its sessions become per team.
type perTeamSignIn struct{}

func (perTeamSignIn) Error() string {
	return "it requires each workspace to sign in (HTTP 401); it is listed per workspace from now on"
}

// errTokenRefreshed: the server refused the signed-in token, and it was refreshed; connect again.
var errTokenRefreshed = errors.New("the server refused the token; it was refreshed")

// signInReuse is how long a link must still work to be shown again rather than replaced.
const signInReuse = 2 * time.Minute

// signInError answers a 401 of a server Lucy may sign in to: a refused token is refreshed once;
// otherwise a sign-in is started (or the one offered lately shown again) and the error carries its
// link, or says plainly why none can be offered and what works instead.
func (c *conn) signInError(ctx context.Context, challenge []string, hadToken, refreshed bool) error {
	if c.team == "" {
		return &perTeamSignIn{}
	}
	flow := c.s.d.OAuth
	if hadToken && !refreshed {
		c.mu.Lock()
		ts := c.tokens
		c.mu.Unlock()
		if ts != nil && ts.Refresh != "" {
			next, err := flow.Fresh(ctx, c.team, c.srv.Name, ts, c.refreshHTTP(ts), true)
			if err == nil {
				c.useTokens(next)
				return errTokenRefreshed
			}
			c.s.log.Info().Str("server", c.srv.Name).Str("team", c.team).Str("reason", c.scrubbed(err.Error())).
				Msg("MCP server refused the signed-in token and it could not be refreshed; asking for a new sign-in")
		}
	}
	if !flow.SignInPossible() {
		return fmt.Errorf("it requires signing in with OAuth (HTTP 401), and signing in needs Lucy's public URL (LUCY_PUBLIC_URL), " +
			"which is not set (as with Socket Mode, Lucy may have none): the provider must be able to send the browser back to Lucy. " +
			"Instead, store a bearer token for it (a personal access token or API key: the Add key button or lucy secrets) and " +
			"connect the server with that credential, or ask an operator to set LUCY_PUBLIC_URL")
	}
	if !c.forCall || c.person == "" {
		// A listing (no one's request) or a request with no requester: a link made for no one could
		// not be bound to whoever opens it, so none is made (docs/security.md, rule 16). The
		// challenge is kept: a person's sign-in asked for later asks for its scopes.
		c.mu.Lock()
		c.challenge = slices.Clone(challenge)
		c.mu.Unlock()
		return &needSignIn{server: c.srv.Name}
	}
	return c.offerSignIn(ctx, invocationFrom(ctx), challenge, false)
}

// offerSignIn starts a sign-in for inv's requester (c.person for a call's conn) and posts the Sign
// in button for them; share makes it the team's service account (an admin's choice, checked by the
// caller). The link offered lately is posted again while it works.
func (c *conn) offerSignIn(ctx context.Context, inv tools.Invocation, challenge []string, share bool) error {
	flow := c.s.d.OAuth
	user := c.person
	if !c.forCall || user == "" {
		user = inv.User
	}
	if user == "" {
		return &needSignIn{server: c.srv.Name}
	}
	c.mu.Lock()
	si := c.signIn
	c.mu.Unlock()
	if share || si == nil || si.User != user || time.Until(si.Expires) <= signInReuse || !flow.Usable(ctx, si.State, user) {
		in := oauth.BeginInput{Team: c.team, User: user, Server: c.srv.Name, ServerURL: c.srv.URL, Challenge: challenge,
			HTTP: c.oauthHTTP(), Trusted: !c.srv.FromChat(), Client: c.registered(), Owner: c.tokenOwner(), Serves: c.serves(share), Share: share}
		if o := c.srv.OAuth; o != nil {
			secret := o.ClientSecret
			if name := o.credentialSecret(); name != "" {
				v, err := c.credentialNamed(ctx, name)
				if err != nil {
					return err
				}
				secret = v
				c.remember(v)
			}
			in.Client, in.Scopes = &oauth.Client{ID: o.ClientID, Secret: secret}, o.Scopes
		}
		started, err := flow.Begin(ctx, in)
		if err != nil {
			return fmt.Errorf("it requires signing in with OAuth (HTTP 401), but a sign-in cannot be offered: %v. Instead, store a bearer "+
				"token for it (a personal access token or API key) and connect the server with that credential", err)
		}
		if c.srv.OAuth == nil {
			c.register(started.Client) // the next sign-in does not register another client
		}
		c.remember(started.Client.Secret)
		si = &started
		if !share {
			c.mu.Lock()
			c.signIn = si
			c.mu.Unlock()
		}
	}
	need := &needSignIn{server: c.srv.Name, url: si.URL, expires: si.Expires, person: user, serves: c.serves(share)}
	if req, ok := c.s.d.Keys.(integrations.SignInRequester); ok && inv.User == user {
		err := req.RequestSignIn(ctx, inv, integrations.SignInRequest{Service: c.srv.Name, URL: si.URL, State: si.State, Expires: si.Expires, Serves: need.serves})
		if err != nil {
			c.s.log.Warn().Str("server", c.srv.Name).Str("team", c.team).Str("reason", tools.RedactCredentials(err.Error())).
				Msg("the Sign in button could not be posted")
		}
		need.posted = err == nil
	}
	return need
}

// lastChallenge is the WWW-Authenticate of the 401 that made the listing ask for a sign-in.
func (c *conn) lastChallenge() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.challenge)
}

// registered is the client registered dynamically for this server, shared by every person's conn.
func (c *conn) registered() *oauth.Client {
	b := c
	if c.base != nil {
		b = c.base
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.client
}

func (c *conn) register(cl oauth.Client) {
	b := c
	if c.base != nil {
		b = c.base
	}
	b.mu.Lock()
	b.client = &cl
	b.mu.Unlock()
}

type invocationKey struct{}

// withInvocation carries the tool call a connect is made for, so that a sign-in it asks for posts
// its button in the call's thread, for the call's requester.
func withInvocation(ctx context.Context, inv tools.Invocation) context.Context {
	return context.WithValue(ctx, invocationKey{}, inv)
}

func invocationFrom(ctx context.Context) tools.Invocation {
	inv, _ := ctx.Value(invocationKey{}).(tools.Invocation)
	return inv
}

// oauthHTTP is the client of the sign-in's requests: the guarded one for a server a team
// connected from chat (its authorization server may not be private either), the operator's
// otherwise.
func (c *conn) oauthHTTP() *http.Client {
	if c.srv.AddedBy != "" {
		return c.s.d.HTTP
	}
	return c.s.d.TrustedHTTP
}

// refreshHTTP is the client a refresh of ts is posted with: the operator's only for the operator's
// server whose grant Begin made as trusted (its token endpoint came from the discovery of a server
// in the operator's file); the guarded one otherwise, which refuses private addresses.
func (c *conn) refreshHTTP(ts *oauth.TokenSet) *http.Client {
	if !c.srv.FromChat() && ts.Trusted {
		return c.s.d.TrustedHTTP
	}
	return c.s.d.HTTP
}

// useTokens makes ts the tokens of this conn's requests.
func (c *conn) useTokens(ts *oauth.TokenSet) {
	c.mu.Lock()
	c.tokens, c.signIn, c.awaiting = ts, nil, false
	c.mu.Unlock()
	c.remember(ts.Secrets()...)
}

// remember adds values that results, errors and statuses must never show.
func (c *conn) remember(values ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range values {
		if v != "" && !slices.Contains(c.seen, v) {
			c.seen = append(c.seen, v)
		}
	}
}

// bearer is the access token of a request, refreshed first when it expires; "" when there is none
// usable (the server then answers 401 and a sign-in is asked for). Refreshes are serialized: one
// refresh token is spent once.
func (c *conn) bearer(ctx context.Context) (string, error) {
	c.refreshing.Lock()
	defer c.refreshing.Unlock()
	c.mu.Lock()
	ts := c.tokens
	c.mu.Unlock()
	if ts == nil {
		return "", nil
	}
	next, err := c.s.d.OAuth.Fresh(ctx, c.team, c.srv.Name, ts, c.refreshHTTP(ts), false)
	if err != nil {
		c.s.log.Info().Str("server", c.srv.Name).Str("team", c.team).Str("reason", c.scrubbed(err.Error())).
			Msg("MCP sign-in expired and could not be refreshed")
		return "", nil
	}
	if next != ts {
		c.useTokens(next)
	}
	return next.Access, nil
}

// signedInSince reports whether the team signed in since this conn's listing asked it to: then the
// listing runs again at once instead of waiting out RetryAfter.
func (c *conn) signedInSince(ctx context.Context) bool {
	c.mu.Lock()
	awaiting := c.awaiting && c.refresh == nil
	c.mu.Unlock()
	if !awaiting || c.s.d.OAuth == nil || c.team == "" {
		return false
	}
	if _, err := c.storedTokens(ctx); err != nil {
		return false
	}
	c.mu.Lock()
	c.awaiting = false
	c.mu.Unlock()
	return true
}

// setRequester records who is using the server now: a sign-in started for their request is theirs.
func (c *conn) setRequester(user string) {
	if user == "" {
		return
	}
	c.mu.Lock()
	c.requester = user
	c.mu.Unlock()
}

// awaitingSignIn reports whether the last listing asked for a sign-in.
func (c *conn) awaitingSignIn() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.awaiting
}

func (c *conn) credentialNamed(ctx context.Context, name string) (string, error) {
	if c.s.d.Credentials == nil {
		return "", &needCredential{service: name}
	}
	v, _, err := c.s.d.Credentials.Get(ctx, c.team, name)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", &needCredential{service: name}
	}
	if err != nil {
		return "", fmt.Errorf("its OAuth client secret %q cannot be read: %w", name, err)
	}
	return v, nil
}

// authMark is the session's HTTP transport and its count of refusals, taken before a request.
func (c *conn) authMark() (*headerTransport, int64) {
	c.mu.Lock()
	ht := c.auth
	c.mu.Unlock()
	return ht, ht.mark()
}

// signInAfter answers a request the server refused after the session was opened. The MCP
// authorization specification lets a server ask for a token on any request, not only at initialize
// (a 401 on tools/list after an anonymous initialize), and ask for more scope for one operation: a
// 403 with error="insufficient_scope" and the scopes it needs, a step-up
// (modelcontextprotocol.io/specification/2025-11-25/basic/authorization, "Scope Challenge
// Handling"; RFC 6750 section 3.1). The session is dropped (its token is the one refused) and the
// error is a sign-in's, as at connect: the link a person opens, asking for the scopes of the
// challenge, or errTokenRefreshed to try again. Nil when the request was not refused so.
func (c *conn) signInAfter(ctx context.Context, cs *sdk.ClientSession, ht *headerTransport, mark int64) error {
	r := ht.refusedSince(mark)
	if r == nil || !c.signInEligible() {
		return nil
	}
	c.mu.Lock()
	hadToken := c.tokens != nil
	c.mu.Unlock()
	switch {
	case r.code == http.StatusUnauthorized:
		c.drop(cs)
		return c.signInError(ctx, r.challenge, hadToken, false)
	case r.code == http.StatusForbidden && insufficientScope(r.challenge):
		c.drop(cs)
		c.mu.Lock()
		c.signIn = nil // the link offered before asked for less
		c.mu.Unlock()
		return c.signInError(ctx, r.challenge, hadToken, true) // a refresh adds no scope
	}
	return nil
}

// insufficientScope reports whether a 403's WWW-Authenticate says error="insufficient_scope".
func insufficientScope(challenge []string) bool {
	chs, _ := oauthex.ParseWWWAuthenticate(challenge)
	for _, ch := range chs {
		if ch.Scheme == "bearer" && ch.Params["error"] == "insufficient_scope" {
			return true
		}
	}
	return false
}

// storedTokens are the stored tokens this conn uses: a call's, its person's own or else the team's
// service account (Flow.TokenFor); a listing's, those Flow.ListingToken picks.
func (c *conn) storedTokens(ctx context.Context) (*oauth.TokenSet, error) {
	if c.forCall {
		return c.s.d.OAuth.TokenFor(ctx, c.team, c.srv.Name, c.srv.URL, c.tokenOwner(), c.person)
	}
	return c.s.d.OAuth.ListingToken(ctx, c.team, c.srv.Name, c.srv.URL, c.tokenOwner())
}

// usesSignIn reports whether the team's listing of the server needed a sign-in (it used tokens or
// asked for them): its calls are then made per person, each with the requester's own tokens.
func (c *conn) usesSignIn() bool {
	if c.team == "" || !c.signInEligible() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens != nil || c.awaiting
}

// recheck reads the call's stored sign-in again before a call, in whatever worker it runs: a person
// who signed out (here or in another worker), or whose sign-in was replaced by their own or by an
// admin's, is never called with the tokens this conn still holds. Tokens refreshed elsewhere are
// taken as they are; a changed sign-in drops the session, so the next connect uses the stored one.
func (c *conn) recheck(ctx context.Context) error {
	ts, err := c.storedTokens(ctx)
	if err != nil && !errors.Is(err, oauth.ErrNotSignedIn) {
		return err
	}
	c.mu.Lock()
	held, cs := c.tokens, c.session
	c.mu.Unlock()
	switch {
	case ts == nil && held == nil:
		return nil
	case ts != nil && held != nil && ts.Person == held.Person && ts.ServerURL == held.ServerURL:
		if ts.Access != held.Access {
			c.useTokens(ts)
		}
		return nil
	}
	c.mu.Lock()
	c.tokens = nil
	c.mu.Unlock()
	if cs != nil {
		c.drop(cs)
	}
	return nil
}
