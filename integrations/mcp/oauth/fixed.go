package oauth

import (
	"context"
	"errors"
	"strings"

	"golang.org/x/oauth2"
)

// Endpoints are an authorization server whose endpoints are known in advance rather than
// discovered: a mailbox provider's (Google's, Microsoft's), whose authorization and token endpoints
// are fixed and published, and whose client the operator registered (no dynamic registration).
type Endpoints struct {
	AuthURL, TokenURL string
	// Params are extra parameters of the authorization URL (Google's access_type=offline and
	// prompt=consent, without which it issues no refresh token).
	Params map[string]string
}

// FixedInput is a sign-in to fixed endpoints: Team, User, Owner and Serves as in BeginInput;
// Server names the grant and its token set (CredentialName(Server)); ServerURL is what the tokens
// are for (Token refuses them for any other); Client and Scopes the operator's.
type FixedInput struct {
	Team, User        string
	Server, ServerURL string
	Owner, Serves     string
	Client            Client
	Scopes            []string
	Endpoints         Endpoints
}

// BeginFixed prepares a sign-in as Begin does (the pending sign-in sealed under a new state, the
// authorization URL with PKCE S256), to endpoints given rather than discovered. They are the
// operator's (Lucy's code or configuration, never chat), so the callback reaches the token endpoint
// with its trusted client. The callback, Token and Fresh then serve it as any other sign-in.
func (f *Flow) BeginFixed(ctx context.Context, in FixedInput) (SignIn, error) {
	if !f.SignInPossible() {
		return SignIn{}, errors.New("signing in needs Lucy's public URL (LUCY_PUBLIC_URL), which is not set")
	}
	if in.Client.ID == "" || in.Endpoints.AuthURL == "" || in.Endpoints.TokenURL == "" {
		return SignIn{}, errors.New("the sign-in has no client or no endpoints")
	}
	client := in.Client
	if client.AuthStyle == 0 {
		// client_secret_post: RFC 6749 2.3.1's form parameters, which Google and Microsoft both take.
		client.AuthStyle = int(oauth2.AuthStyleInParams)
	}
	verifier := oauth2.GenerateVerifier()
	state, id := newState(in.Team)
	cfg := oauth2.Config{ClientID: client.ID, Endpoint: oauth2.Endpoint{AuthURL: in.Endpoints.AuthURL}, RedirectURL: f.RedirectURI(), Scopes: in.Scopes}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	for k, v := range in.Endpoints.Params {
		opts = append(opts, oauth2.SetAuthURLParam(k, v))
	}
	authURL := cfg.AuthCodeURL(state, opts...)
	expires := f.now().Add(PendingTTL)
	f.prunePending(ctx, in.Team)
	err := f.savePending(ctx, id, pending{Team: in.Team, Server: strings.ToLower(in.Server), ServerURL: in.ServerURL, User: in.User, Verifier: verifier,
		Client: client, TokenEndpoint: in.Endpoints.TokenURL, RedirectURI: f.RedirectURI(), Scopes: in.Scopes,
		Trusted: true, Owner: in.Owner, Serves: in.Serves, Expires: expires})
	if err != nil {
		return SignIn{}, err
	}
	return SignIn{URL: authURL, Expires: expires, Client: client}, nil
}
