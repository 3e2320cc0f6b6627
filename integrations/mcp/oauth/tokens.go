package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/lucy-agent/lucy/secrets"
)

// TokenSet is a server's tokens for a team, as kept (encrypted) in the credential store, with what
// a refresh needs.
type TokenSet struct {
	Version int       `json:"v"`
	Access  string    `json:"access"`
	Refresh string    `json:"refresh,omitempty"`
	Type    string    `json:"type,omitempty"`
	Expiry  time.Time `json:"expiry,omitzero"`
	// ServerURL is the MCP endpoint the tokens were issued for: they are never sent to another
	// (a server disconnected and connected again under the same name elsewhere gets a new sign-in).
	ServerURL     string   `json:"serverUrl"`
	TokenEndpoint string   `json:"tokenEndpoint"`
	Resource      string   `json:"resource,omitempty"`
	Client        Client   `json:"client"`
	Scopes        []string `json:"scopes,omitempty"`
	Trusted       bool     `json:"trusted,omitempty"`
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

// Token returns team's tokens for the server at serverURL; ErrNotSignedIn when there are none
// for that URL.
func (f *Flow) Token(ctx context.Context, team, server, serverURL string) (*TokenSet, error) {
	raw, _, err := f.vault.Get(ctx, team, CredentialName(server))
	if errors.Is(err, secrets.ErrNotFound) {
		return nil, ErrNotSignedIn
	}
	if err != nil {
		return nil, err
	}
	var ts TokenSet
	if err := json.Unmarshal([]byte(raw), &ts); err != nil || ts.Version != 1 || ts.Access == "" {
		return nil, fmt.Errorf("the stored sign-in %s is damaged; sign in again", CredentialName(server))
	}
	if ts.ServerURL != serverURL {
		return nil, ErrNotSignedIn
	}
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
		if other, gerr := f.Token(ctx, team, server, ts.ServerURL); gerr == nil && other.Access != ts.Access && !other.expiring(now) {
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

// store writes ts as team's tokens for server, on behalf of user ("" keeps the stored owner:
// Put keeps the owner of an existing credential).
func (f *Flow) store(ctx context.Context, team, server string, ts *TokenSet, user string) error {
	ts.Version = 1
	data, err := json.Marshal(ts)
	if err != nil {
		return err
	}
	if user == "" {
		user = "lucy"
	}
	if _, err := f.vault.Put(ctx, team, CredentialName(server), string(data), user); err != nil {
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
