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

	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
)

// needSignIn is a server that wants a person of the team to sign in: its message is what the model
// and the person are told, the authorization URL whole (it is no secret: it carries no token, and
// only the person who completes it grants anything).
type needSignIn struct {
	server  string
	url     string
	expires time.Time
	forWhom string // whose requests the sign-in serves, in words (signInFor)
}

func (e *needSignIn) Error() string {
	return fmt.Sprintf("it requires signing in. Sign in to %s: %s (the link works until %s UTC; %s)", e.server, e.url,
		e.expires.UTC().Format("15:04"), e.forWhom)
}

// tokenOwner is whose requests this server's sign-in serves: the member whose own server it is, or
// "" for a server every member's requests use.
func (c *conn) tokenOwner() string {
	if c.srv.FromChat() && !c.srv.Shared {
		return c.srv.AddedBy
	}
	return ""
}

// signInFor says, with the link, for whom a sign-in is and whose account it lends: Lucy cannot see
// who opens the link, so the person it was shown to must be the one who signs in.
func (c *conn) signInFor() string {
	c.mu.Lock()
	asked := c.requester
	c.mu.Unlock()
	who := "it was asked for in a request of this workspace"
	if asked != "" {
		who = "it is for <@" + asked + ">, who should open it themself and not pass it on"
	}
	if owner := c.tokenOwner(); owner != "" {
		return who + "; the account signed in with is used only in <@" + owner + ">'s requests"
	}
	return who + "; the account signed in with is used in every member's requests that use " + c.srv.Name
}

// serves says whose requests the sign-in serves, for the callback's page (a browser, where Slack's
// mentions do not render).
func (c *conn) serves() string {
	if owner := c.tokenOwner(); owner != "" {
		return "the requests of Slack user " + owner + " only"
	}
	return "every member's requests in your workspace that use " + c.srv.Name
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
	c.mu.Lock()
	si, client, user := c.signIn, c.client, c.requester
	c.mu.Unlock()
	if si != nil && time.Until(si.Expires) > signInReuse {
		return &needSignIn{server: c.srv.Name, url: si.URL, expires: si.Expires, forWhom: c.signInFor()}
	}
	in := oauth.BeginInput{Team: c.team, User: user, Server: c.srv.Name, ServerURL: c.srv.URL, Challenge: challenge,
		HTTP: c.oauthHTTP(), Trusted: !c.srv.FromChat(), Client: client, Owner: c.tokenOwner(), Serves: c.serves()}
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
	c.mu.Lock()
	c.signIn = &started
	if c.srv.OAuth == nil {
		c.client = &started.Client // the next sign-in does not register another client
	}
	c.mu.Unlock()
	c.remember(started.Client.Secret)
	return &needSignIn{server: c.srv.Name, url: started.URL, expires: started.Expires, forWhom: c.signInFor()}
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
	if _, err := c.s.d.OAuth.Token(ctx, c.team, c.srv.Name, c.srv.URL, c.tokenOwner()); err != nil {
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

// awaitingSignIn is the link the last listing offered, if it asked for a sign-in.
func (c *conn) awaitingSignIn() (*oauth.SignIn, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.signIn, c.awaiting && c.signIn != nil
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
