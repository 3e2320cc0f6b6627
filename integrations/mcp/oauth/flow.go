// Package oauth signs a workspace in to a remote MCP server that requires OAuth (the MCP
// authorization specification: RFC 9728 protected resource metadata, RFC 8414 authorization server
// metadata, RFC 7591 dynamic client registration, the authorization code grant with PKCE).
//
// The go-sdk's own handler runs the whole grant in one call that blocks until the browser comes
// back with the code; an activity cannot wait for a person like that, so the grant is split in two:
//
//   - Begin (in the worker, when a server answers 401) discovers the authorization server,
//     registers Lucy as a client if the server allows it (or uses the operator's client), and keeps
//     what the second half needs, sealed, in Lucy's state store under a random state (10 minutes,
//     single use). It returns the authorization URL, which a tool result and the server's status
//     show: the model passes it on, and the person opens it.
//   - Callback (on the gateway's HTTP listener, GET /mcp/oauth/callback) takes the browser's
//     redirect, exchanges the code with the PKCE verifier at the token endpoint, and stores the
//     token set encrypted in the team's credential store (mcp-oauth.<server>, secrets.KindOAuth), and
//     what the tokens are for (endpoint, token endpoint, client, whose requests) as the sealed grant
//     in the state store (grant.go). It calls no model and posts nothing: it answers the browser
//     with a small page that says whose requests the sign-in serves.
//
// The MCP client then sends the stored access token as the bearer, refreshing it with the refresh
// token when it expires (Token, Fresh). No token or code is ever in a result, a status, an error,
// a log line or workflow history.
package oauth

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workspace"
)

// CallbackPath is where the authorization server sends the browser back, on the gateway's
// public URL (LUCY_PUBLIC_URL): the redirect URI an operator registers with a provider.
const CallbackPath = "/mcp/oauth/callback"

// StartPath is the link a person opens (the Sign in button's URL): it sends the browser on to the
// provider, giving it the cookie the callback then asks for (Callback serves both).
const StartPath = "/mcp/oauth/start"

// cookiePath scopes the sign-in's browser cookie to the two endpoints.
const cookiePath = "/mcp/oauth/"

// PendingTTL is how long an authorization URL works: long enough to read a message, open it and
// sign in; short enough that a link found later in a thread is dead.
const PendingTTL = 10 * time.Minute

// CredentialName is the name of the team's service account token set for a server in the team's
// credential store (the name every sign-in used before sign-ins were per person).
func CredentialName(server string) string { return "mcp-oauth." + strings.ToLower(server) }

// PersonCredentialName is the name of person's own token set for a server: mcp-oauth.<server>.<person>
// (a server's name has no '.', so the two never collide; a Slack user ID fits the 63 characters).
func PersonCredentialName(server, person string) string {
	return CredentialName(server) + "." + strings.ToLower(person)
}

func credentialName(server, person string) string {
	if person == "" {
		return CredentialName(server)
	}
	return PersonCredentialName(server, person)
}

// Vault is the teams' credential store (*secrets.Store), where token sets are kept encrypted.
type Vault interface {
	Get(ctx context.Context, team, service string) (string, secrets.Meta, error)
	PutBound(ctx context.Context, team, service, value, user string, b secrets.Binding) (secrets.Meta, error)
	Delete(ctx context.Context, team, service string) error
}

// Flow is what the worker (Begin, Token, Fresh) and the gateway (Callback) share: Lucy's state
// store for the pending sign-ins, the credential store for the tokens, the key that seals pending
// sign-ins (LUCY_SECRETS_KEY, the same in every process), and the public URL of the callback.
type Flow struct {
	state     workspace.Store
	vault     Vault
	aead      cipher.AEAD
	publicURL string
	now       func() time.Time
}

// New returns the flow over Lucy's state store and credential store. publicURL is LUCY_PUBLIC_URL
// ("" when Lucy has none: sign-in is then not offered, SignInPossible says so).
func New(state workspace.Store, vault Vault, key secrets.Key, publicURL string) (*Flow, error) {
	if state == nil || vault == nil {
		return nil, errors.New("the OAuth sign-in needs Lucy's state store and credential store")
	}
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Flow{state: state, vault: vault, aead: aead, publicURL: strings.TrimRight(publicURL, "/"), now: time.Now}, nil
}

// SignInPossible reports whether a person can be sent to sign in: the provider must be able to
// send the browser back to Lucy, which needs a public URL.
func (f *Flow) SignInPossible() bool { return f != nil && f.publicURL != "" }

// RedirectURI is the callback URL registered with authorization servers.
func (f *Flow) RedirectURI() string { return f.publicURL + CallbackPath }

// httpClient returns c, or a client with a timeout: no request of the grant may hang a listing or
// the gateway.
func httpClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: 15 * time.Second}
}
