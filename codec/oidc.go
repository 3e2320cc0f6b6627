package codec

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// Login is the OpenID Connect login the codec endpoint requires of its callers: the one the
// Temporal Web UI signs its users in with. With it set, a decode or encode request must carry a
// token the issuer signed for the audience, unexpired; without it the endpoint decodes for anyone
// who reaches it (`lucy dev`, on loopback only).
type Login struct {
	// Issuer is the OIDC issuer URL (LUCY_CODEC_OIDC_ISSUER), for example https://accounts.google.com.
	// Its keys come from the jwks_uri its discovery document names.
	Issuer string
	// Audience is the client ID the token must be issued to (LUCY_CODEC_OIDC_AUDIENCE): the Web UI's
	// OIDC client ID, as the UI's ID token is what the codec checks.
	Audience string
	// Client fetches the discovery document and the keys; nil is a client with a 10-second timeout.
	Client *http.Client
}

// loginGuard verifies the caller's token before next runs. The issuer's discovery document is
// fetched on the first request that needs it, not at start-up, so a worker starts while the
// identity provider is unreachable (the codec only answers 503 until it is back); a failed fetch is
// retried on the next request.
type loginGuard struct {
	login Login
	next  http.Handler

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
}

func (g *loginGuard) getVerifier() (*oidc.IDTokenVerifier, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.verifier != nil {
		return g.verifier, nil
	}
	client := g.login.Client
	if client == nil {
		client = &http.Client{Timeout: 10 * time.Second}
	}
	// The key set go-oidc builds keeps this context for every later key fetch (oidc/jwks.go), so it
	// must outlive the request: Background, with the client that carries the timeout.
	ctx := oidc.ClientContext(context.Background(), client)
	// Discovery (https://openid.net/specs/openid-connect-discovery-1_0.html §4): the document at
	// <issuer>/.well-known/openid-configuration, whose "issuer" must equal the configured one
	// (go-oidc refuses a mismatch), names the jwks_uri the signing keys are read from.
	p, err := oidc.NewProvider(ctx, g.login.Issuer)
	if err != nil {
		return nil, err
	}
	// Verify checks the signature against the issuer's keys, iss, aud (contains Audience) and exp
	// (OpenID Connect Core 1.0 §3.1.3.7).
	g.verifier = p.Verifier(&oidc.Config{ClientID: g.login.Audience})
	return g.verifier, nil
}

// callerToken is the token a request proves its login with. The Web UI, with its codec's
// passAccessToken on and an https endpoint, sends the user's access token as "Authorization:
// Bearer …" and the ID token, raw, in "Authorization-Extras" (ui-server v2.54.1's UI bundle,
// ui/assets/local/_app/immutable/chunks/CUmAztt8.js). Like ui-server's own API check
// (server/auth/auth.go, ValidateAuthHeaderExists), the ID token is preferred when present: it is
// a JWT at every provider and is issued to the UI's client ID, whereas an access token may be
// opaque (Google's are). A proxy that sends the ID token as the bearer (oauth2-proxy's
// --pass-authorization-header) is served by the second case.
func callerToken(r *http.Request) string {
	if t := strings.TrimSpace(r.Header.Get("Authorization-Extras")); t != "" {
		return strings.TrimPrefix(t, "Bearer ")
	}
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if len(auth) > 7 && strings.EqualFold(auth[:7], "Bearer ") {
		return strings.TrimSpace(auth[7:])
	}
	return ""
}

func (g *loginGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token := callerToken(r)
	if token == "" {
		refuse(w, "codec: sign in to the Web UI first (no token; the UI sends one only with TEMPORAL_CODEC_PASS_ACCESS_TOKEN=true and an https codec endpoint)")
		return
	}
	v, err := g.getVerifier()
	if err != nil {
		http.Error(w, "codec: cannot reach the login provider to check the token; try again", http.StatusServiceUnavailable)
		return
	}
	if _, err := v.Verify(r.Context(), token); err != nil {
		var expired *oidc.TokenExpiredError
		if errors.As(err, &expired) {
			refuse(w, "codec: the login has expired; reload the Web UI")
			return
		}
		// go-oidc's message names what failed (issuer, audience, signature), never the token.
		refuse(w, "codec: the token is not valid for this endpoint: "+err.Error())
		return
	}
	g.next.ServeHTTP(w, r)
}

// refuse answers 401 with the challenge RFC 6750 §3 defines for a bearer-token resource.
func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="lucy-codec"`)
	http.Error(w, msg, http.StatusUnauthorized)
}
