package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/lucy-agent/lucy/secrets"
)

// TokenSet is a server's tokens for a team: the tokens as kept (encrypted) in the credential store,
// and, never read from there, what its grant says they are for and how they are refreshed.
type TokenSet struct {
	Version int       `json:"v"`
	Access  string    `json:"access"`
	Refresh string    `json:"refresh,omitempty"`
	Type    string    `json:"type,omitempty"`
	Expiry  time.Time `json:"expiry,omitzero"`

	// From the grant (grant.go), never from the stored value: a value written under the token set's
	// name by anything else than the callback cannot choose where a refresh goes.
	// ServerURL is the MCP endpoint the tokens were issued for: they are never sent to another
	// (a server disconnected and connected again under the same name elsewhere gets a new sign-in).
	ServerURL     string   `json:"-"`
	TokenEndpoint string   `json:"-"`
	Resource      string   `json:"-"`
	Client        Client   `json:"-"`
	Scopes        []string `json:"-"`
	Trusted       bool     `json:"-"`
	Owner         string   `json:"-"` // the member whose own server it is; "" for a team-wide one
	User          string   `json:"-"` // the person the sign-in link was shown to
	// Person is whose own sign-in these are; "" for the team's service account.
	Person string `json:"-"`
}

// ErrNotSignedIn is a server the team has not signed in to (or whose tokens are for another URL).
var ErrNotSignedIn = errors.New("not signed in")

// Secrets are the values a result, an error or a log line must never show.
func (t *TokenSet) Secrets() []string {
	var out []string
	for _, v := range []string{t.Access, t.Refresh, t.Client.Secret} {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// expiring is a token that expires within a minute: refreshed before use rather than refused mid-call.
func (t *TokenSet) expiring(now time.Time) bool {
	return !t.Expiry.IsZero() && !now.Add(time.Minute).Before(t.Expiry)
}

// Token returns the team's service account tokens for the server at serverURL whose tokens serve
// owner's requests (the member whose own server it is, "" for a team-wide one); ErrNotSignedIn when
// there are none for that URL and scope. Where they go and how they are refreshed come from the
// sign-in's grant; the stored value gives the tokens only, and only a value the sign-in stored
// (secrets.KindOAuth).
func (f *Flow) Token(ctx context.Context, team, server, serverURL, owner string) (*TokenSet, error) {
	return f.tokenOf(ctx, team, server, serverURL, owner, "")
}

// TokenFor returns the tokens a request of person uses for the server: person's own sign-in
// first, else the team's service account (an admin's choice; a sign-in stored before sign-ins
// were per person is one, read as such: the migration on read, docs/security.md); ErrNotSignedIn
// when neither exists, and the person is asked to sign in. Another member's own sign-in is never
// returned.
func (f *Flow) TokenFor(ctx context.Context, team, server, serverURL, owner, person string) (*TokenSet, error) {
	if person != "" {
		ts, err := f.tokenOf(ctx, team, server, serverURL, owner, person)
		if !errors.Is(err, ErrNotSignedIn) {
			return ts, err
		}
	}
	return f.tokenOf(ctx, team, server, serverURL, owner, "")
}

// ListingToken returns the tokens the list of the server's tools is read with, outside any one
// person's request: the team's service account, else the first member's own sign-in (by Slack user
// ID). A listing reads the server's tool catalogue only; every call is made with the requester's
// tokens (TokenFor), never with these.
func (f *Flow) ListingToken(ctx context.Context, team, server, serverURL, owner string) (*TokenSet, error) {
	ts, err := f.tokenOf(ctx, team, server, serverURL, owner, "")
	if !errors.Is(err, ErrNotSignedIn) {
		return ts, err
	}
	for _, person := range f.people(ctx, team, server) {
		if ts, err := f.tokenOf(ctx, team, server, serverURL, owner, person); err == nil {
			return ts, nil
		}
	}
	return nil, ErrNotSignedIn
}

// SignedIn reports whether person ("" the team) has a sign-in of their own to server.
func (f *Flow) SignedIn(ctx context.Context, team, server, person string) bool {
	_, err := f.readGrant(ctx, team, server, person)
	return err == nil
}

// SignOut ends person's own sign-in to server ("" the team's service account): the grant and the
// stored tokens are deleted. It reports whether there was one.
func (f *Flow) SignOut(ctx context.Context, team, server, person string) (bool, error) {
	if f == nil {
		return false, nil
	}
	had := false
	err := f.state.Delete(ctx, team, grantPath(server, person))
	switch {
	case err == nil:
		had = true
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	err = f.vault.Delete(ctx, team, credentialName(server, person))
	switch {
	case err == nil:
		had = true
	case !errors.Is(err, secrets.ErrNotFound):
		return had, err
	}
	return had, nil
}

func (f *Flow) tokenOf(ctx context.Context, team, server, serverURL, owner, person string) (*TokenSet, error) {
	g, err := f.readGrant(ctx, team, server, person)
	if err != nil {
		return nil, err
	}
	if g.ServerURL != serverURL || g.Owner != owner {
		return nil, ErrNotSignedIn
	}
	name := credentialName(server, person)
	raw, meta, err := f.vault.Get(ctx, team, name)
	if errors.Is(err, secrets.ErrNotFound) {
		return nil, ErrNotSignedIn
	}
	if err != nil {
		return nil, err
	}
	if meta.Kind != secrets.KindOAuth {
		return nil, ErrNotSignedIn // not written by a sign-in: a new one replaces it
	}
	var ts TokenSet
	if err := json.Unmarshal([]byte(raw), &ts); err != nil || ts.Version != 1 || ts.Access == "" {
		return nil, fmt.Errorf("the stored sign-in %s is damaged; sign in again", name)
	}
	ts.ServerURL, ts.TokenEndpoint, ts.Resource, ts.Client, ts.Scopes = g.ServerURL, g.TokenEndpoint, g.Resource, g.Client, g.Scopes
	ts.Trusted, ts.Owner, ts.User, ts.Person = g.Trusted, g.Owner, g.User, person
	return &ts, nil
}

// ErrExpired is a token that expired and cannot be refreshed: the person signs in again.
var ErrExpired = errors.New("the sign-in expired")

// Fresh returns ts, refreshed with its refresh token when it expires within a minute (or when force,
// after the server refused it), and writes a refreshed set back to the credential store. Two
// workers refreshing at once may both try; the loser's refresh token may be spent (rotation), so
// on a failure the stored set is read again and used if another process refreshed it meanwhile.
func (f *Flow) Fresh(ctx context.Context, team, server string, ts *TokenSet, hc *http.Client, force bool) (*TokenSet, error) {
	now := f.now()
	if !force && !ts.expiring(now) {
		return ts, nil
	}
	if ts.Refresh == "" {
		return nil, ErrExpired
	}
	cfg := oauth2.Config{ClientID: ts.Client.ID, ClientSecret: ts.Client.Secret, Scopes: ts.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: ts.TokenEndpoint, AuthStyle: oauth2.AuthStyle(ts.Client.AuthStyle)}}
	rctx := context.WithValue(ctx, oauth2.HTTPClient, httpClient(hc))
	tok, err := cfg.TokenSource(rctx, &oauth2.Token{RefreshToken: ts.Refresh, Expiry: now.Add(-time.Hour)}).Token()
	if err != nil {
		if other, gerr := f.tokenOf(ctx, team, server, ts.ServerURL, ts.Owner, ts.Person); gerr == nil && other.Access != ts.Access && !other.expiring(now) {
			return other, nil
		}
		return nil, fmt.Errorf("%w: refreshing it failed (%s)", ErrExpired, exchangeReason(err, ts.Secrets()...))
	}
	next := *ts
	next.Access, next.Type, next.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		next.Refresh = tok.RefreshToken // rotated
	}
	if err := f.store(ctx, team, server, &next, ""); err != nil {
		return nil, err
	}
	return &next, nil
}

// store writes ts's tokens as ts.Person's token set for server ("" the team's), on behalf of user
// ("" keeps the stored owner: PutBound keeps the owner of an existing credential), as a sign-in's
// (secrets.KindOAuth, bound to the server's origin): no person can store, attach or read it from
// Slack.
func (f *Flow) store(ctx context.Context, team, server string, ts *TokenSet, user string) error {
	ts.Version = 1
	data, err := json.Marshal(ts)
	if err != nil {
		return err
	}
	if user == "" {
		user = "lucy"
	}
	b := secrets.Binding{Kind: secrets.KindOAuth, Integration: "mcp:" + strings.ToLower(server)}
	if o := secrets.OriginOf(ts.ServerURL); o != "" {
		b.Origins = []string{o}
	}
	if _, err := f.vault.PutBound(ctx, team, credentialName(server, ts.Person), string(data), user, b); err != nil {
		return fmt.Errorf("store the sign-in to %s: %w", server, err)
	}
	return nil
}

// exchangeReason says why the token endpoint refused, in its own words (RFC 6749's error and
// description), never with the body or anything secret in it.
func exchangeReason(err error, secretValues ...string) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		msg := re.ErrorCode
		if msg == "" && re.Response != nil {
			msg = fmt.Sprintf("HTTP %d", re.Response.StatusCode)
		}
		if re.ErrorDescription != "" {
			msg += ": " + re.ErrorDescription
		}
		return secrets.Scrub(clip(msg, 300), secretValues...)
	}
	return secrets.Scrub(clip(err.Error(), 300), secretValues...)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
