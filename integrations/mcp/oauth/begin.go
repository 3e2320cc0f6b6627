package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// BeginInput is one server's 401, and what Lucy knows of the server.
type BeginInput struct {
	Team, User string
	// Server is the server's name; ServerURL its MCP endpoint (the resource the token is for).
	Server, ServerURL string
	// Challenge are the WWW-Authenticate values of the 401 (resource_metadata, scope), if any.
	Challenge []string
	// HTTP makes the discovery and registration requests: for a server connected from chat, the
	// guarded client (tools.NewGuardedClient), which refuses private addresses.
	HTTP *http.Client
	// Trusted is the operator's server: its token endpoint may be on a private address.
	Trusted bool
	// Owner is the member whose own server it is ("" for a server every member's requests use): the
	// tokens serve that scope only (Token). Serves says so in words, for the callback's page
	// ("the requests of Slack user U123 only").
	Owner, Serves string
	// Title names what is signed in to on the callback's pages ("the mailbox support@acme.com");
	// "" is Server.
	Title string
	// Client is the client to use (the operator's, or one registered before); nil registers one
	// dynamically if the authorization server allows it.
	Client *Client
	// Scopes are the operator's scopes; nil takes what the server asks for.
	Scopes []string
	// Share makes the sign-in the team's service account rather than User's own: the caller's
	// decision, which only an admin's explicit choice may make (docs/security.md).
	Share bool
	// Provider, when set, is the authorization server as known beforehand (a catalogue's entry, a
	// mail provider's documented endpoints): discovery is skipped and Client must be given.
	Provider *Provider
}

// Provider is an authorization server given rather than discovered: its authorization and token
// endpoints (RFC 6749 section 3), and the resource indicator (RFC 8707) its tokens are for, if any.
// They are the operator's (Lucy's code or configuration, never chat): a mail provider's published
// endpoints, a catalogue's entry.
type Provider struct {
	AuthorizationEndpoint, TokenEndpoint, Resource string
	// Params are extra parameters of the authorization URL: Google's access_type=offline and
	// prompt=consent, without which it issues no refresh token, or a login_hint.
	Params map[string]string
}

// SignIn is a started sign-in: the URL the person opens, until when it works, and the client it
// was made for (kept by the caller, so that the next sign-in does not register another).
type SignIn struct {
	// URL is the link a person opens: Lucy's start endpoint (StartPath) with the state, which sends
	// the browser on to the provider once the person it was made for clicked the Sign in button.
	URL     string
	Expires time.Time
	Client  Client
	// State is the link's state, which the Sign in button carries so that the gateway can record
	// who clicked it (Opened). It grants nothing by itself: the code is the provider's to give.
	State string
	// User is whom the link was made for.
	User string
}

// Begin prepares a sign-in: it discovers the server's authorization server (the protected resource
// metadata named by the 401 or at the well-known URLs, then the authorization server's metadata),
// registers a client if none is given, and keeps the pending sign-in (verifier, client, token
// endpoint) under a new state for PendingTTL. The URL it returns is the authorization endpoint
// with the client, the redirect URI, the scopes, the state and the PKCE challenge (S256).
func (f *Flow) Begin(ctx context.Context, in BeginInput) (SignIn, error) {
	if !f.SignInPossible() {
		return SignIn{}, errors.New("signing in needs Lucy's public URL (LUCY_PUBLIC_URL), which is not set")
	}
	hc := httpClient(in.HTTP)
	challenges, _ := oauthex.ParseWWWAuthenticate(in.Challenge) // a malformed header: discovery by the well-known URLs
	if pv := in.Provider; pv != nil {
		if in.Client == nil || pv.AuthorizationEndpoint == "" || pv.TokenEndpoint == "" {
			return SignIn{}, errors.New("a provider given beforehand needs its authorization and token endpoints and Lucy's client")
		}
		asm := &oauthex.AuthServerMeta{AuthorizationEndpoint: pv.AuthorizationEndpoint, TokenEndpoint: pv.TokenEndpoint}
		return f.begin(ctx, in, asm, pv.Resource, nil, challenges)
	}
	prm := protectedResource(ctx, hc, challenges, in.ServerURL)
	issuer, resource := "", in.ServerURL
	var supported []string
	if prm != nil {
		if len(prm.AuthorizationServers) == 0 {
			return SignIn{}, errors.New("its protected resource metadata names no authorization server")
		}
		issuer, resource, supported = prm.AuthorizationServers[0], prm.Resource, prm.ScopesSupported
	} else {
		// Servers of the 2025-03-26 specification: the MCP server's origin is the authorization server.
		u, err := url.Parse(in.ServerURL)
		if err != nil {
			return SignIn{}, fmt.Errorf("its URL does not parse: %w", err)
		}
		issuer = u.Scheme + "://" + u.Host
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, hc)
	if err != nil {
		return SignIn{}, fmt.Errorf("its authorization server %s cannot be used: %v", issuer, err)
	}
	if asm == nil {
		return SignIn{}, fmt.Errorf("no OAuth metadata was found for its authorization server %s", issuer)
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return SignIn{}, fmt.Errorf("its authorization server %s does not support PKCE with S256, which Lucy requires", issuer)
	}
	if asm.AuthorizationEndpoint == "" || asm.TokenEndpoint == "" {
		return SignIn{}, fmt.Errorf("its authorization server %s names no authorization or token endpoint", issuer)
	}
	return f.begin(ctx, in, asm, resource, supported, challenges)
}

// begin is the sign-in once the authorization server is known: the client (registered if need be),
// the scopes, the PKCE verifier and the pending sign-in kept under a new state.
func (f *Flow) begin(ctx context.Context, in BeginInput, asm *oauthex.AuthServerMeta, resource string, supported []string, challenges []oauthex.Challenge) (SignIn, error) {
	hc := httpClient(in.HTTP)
	issuer := asm.Issuer
	client := in.Client
	if client == nil {
		if asm.RegistrationEndpoint == "" {
			return SignIn{}, fmt.Errorf("its authorization server %s does not let clients register themselves: an operator must register "+
				"Lucy with it (redirect URI %s) and give the client in the MCP configuration file (\"oauth\": {\"clientId\": …})", issuer, f.RedirectURI())
		}
		c, err := f.register(ctx, hc, asm)
		if err != nil {
			return SignIn{}, fmt.Errorf("registering Lucy with its authorization server %s failed: %v", issuer, err)
		}
		client = &c
	} else if client.AuthStyle == 0 {
		client.AuthStyle = int(authStyle(preferredAuthMethod(asm.TokenEndpointAuthMethodsSupported)))
	}

	scopes := in.Scopes
	if scopes == nil {
		scopes = challengeScopes(challenges)
	}
	if scopes == nil {
		scopes = supported
	}
	// A refresh token spares the person signing in again every hour; servers that issue them
	// only for offline_access say so in their metadata.
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(slices.Clone(scopes), "offline_access")
	}

	verifier := oauth2.GenerateVerifier()
	state, id := newState(in.Team)
	var err error
	cfg := oauth2.Config{ClientID: client.ID, Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint}, RedirectURL: f.RedirectURI(), Scopes: scopes}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource)) // RFC 8707: the token is for this server only
	}
	if in.Provider != nil {
		for k, v := range in.Provider.Params {
			opts = append(opts, oauth2.SetAuthURLParam(k, v))
		}
	}
	authURL := cfg.AuthCodeURL(state, opts...)
	expires := f.now().Add(PendingTTL)
	f.prunePending(ctx, in.Team)
	err = f.savePending(ctx, id, pending{Team: in.Team, Server: in.Server, ServerURL: in.ServerURL, User: in.User, Verifier: verifier,
		Client: *client, TokenEndpoint: asm.TokenEndpoint, RedirectURI: f.RedirectURI(), Resource: resource, Scopes: scopes,
		Trusted: in.Trusted, Owner: in.Owner, Serves: in.Serves, Title: in.Title, Share: in.Share, AuthURL: authURL, Expires: expires})
	if err != nil {
		return SignIn{}, err
	}
	return SignIn{URL: f.publicURL + StartPath + "?state=" + url.QueryEscape(state), Expires: expires, Client: *client, State: state, User: in.User}, nil
}

// protectedResource finds the server's protected resource metadata (RFC 9728): at the URL its 401
// named, then at the well-known URL of its endpoint's path, then of its origin. Nil when none is
// found.
func protectedResource(ctx context.Context, hc *http.Client, challenges []oauthex.Challenge, serverURL string) *oauthex.ProtectedResourceMetadata {
	type candidate struct{ url, resource string }
	var cands []candidate
	for _, c := range challenges {
		if u := c.Params["resource_metadata"]; u != "" {
			cands = append(cands, candidate{u, serverURL})
			break
		}
	}
	if u, err := url.Parse(serverURL); err == nil {
		m := *u
		m.RawQuery, m.Fragment = "", ""
		m.Path = "/.well-known/oauth-protected-resource/" + strings.TrimLeft(u.Path, "/")
		cands = append(cands, candidate{m.String(), serverURL})
		m.Path = "/.well-known/oauth-protected-resource"
		root := *u
		root.Path, root.RawQuery, root.Fragment = "", "", ""
		cands = append(cands, candidate{m.String(), root.String()})
	}
	for _, c := range cands {
		if prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, hc); err == nil && prm != nil {
			return prm
		}
	}
	return nil
}

func challengeScopes(cs []oauthex.Challenge) []string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			return strings.Fields(c.Params["scope"])
		}
	}
	return nil
}

// register registers Lucy with the authorization server (RFC 7591) for the authorization code
// grant with refresh tokens, to the callback on the public URL.
func (f *Flow) register(ctx context.Context, hc *http.Client, asm *oauthex.AuthServerMeta) (Client, error) {
	method := preferredAuthMethod(asm.TokenEndpointAuthMethodsSupported)
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{f.RedirectURI()},
		TokenEndpointAuthMethod: method,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		ClientName:              "Lucy",
		ApplicationType:         "web",
	}, hc)
	if err != nil {
		return Client{}, err
	}
	if m := resp.TokenEndpointAuthMethod; m != "" {
		method = m
	}
	return Client{ID: resp.ClientID, Secret: resp.ClientSecret, AuthStyle: int(authStyle(method))}, nil
}

// preferredAuthMethod picks how Lucy authenticates at the token endpoint among what the server
// supports: with a secret when it can (Lucy keeps secrets safely), else as a public client.
func preferredAuthMethod(supported []string) string {
	for _, m := range []string{"client_secret_post", "client_secret_basic", "none"} {
		if slices.Contains(supported, m) {
			return m
		}
	}
	return "" // the server does not say: RFC 7591's default, client_secret_basic
}

func authStyle(method string) oauth2.AuthStyle {
	switch method {
	case "client_secret_post", "none":
		return oauth2.AuthStyleInParams
	case "client_secret_basic":
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleAutoDetect
}
