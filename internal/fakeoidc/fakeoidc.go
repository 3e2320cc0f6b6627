// Package fakeoidc is an OpenID Connect issuer for tests: an httptest server on loopback that serves
// the discovery document and the JSON Web Key Set, and signs ID tokens with an RSA key generated for
// it. It speaks the published wire format, so the verifier under test (go-oidc, ui-server) runs its
// real discovery, key fetch and checks against it.
package fakeoidc

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Issuer is one fake identity provider.
type Issuer struct {
	// URL is the issuer identifier: the server's base URL (http://127.0.0.1:port).
	URL string
	key *rsa.PrivateKey
	kid string
}

// New starts an issuer; it stops when the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &Issuer{key: key, kid: "test-key-1"}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL = srv.URL
	// OpenID Connect Discovery 1.0 §4 (https://openid.net/specs/openid-connect-discovery-1_0.html):
	// the document is at <issuer>/.well-known/openid-configuration, and its "issuer" is exactly
	// the issuer URL (§4.3). §3 makes issuer, authorization_endpoint, jwks_uri,
	// response_types_supported, subject_types_supported and id_token_signing_alg_values_supported
	// REQUIRED (token_endpoint too, for the code flow the Web UI uses).
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.URL,
			"authorization_endpoint":                is.URL + "/authorize",
			"token_endpoint":                        is.URL + "/token",
			"jwks_uri":                              is.URL + "/jwks",
			"response_types_supported":              []string{"code"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"scopes_supported":                      []string{"openid", "profile", "email"},
		})
	})
	// RFC 7517 §5 (https://www.rfc-editor.org/rfc/rfc7517#section-5): a JWK Set is {"keys": [...]};
	// each RSA public key has kty "RSA", n and e (RFC 7518 §6.3.1), and a "kid" that matches the
	// token header's, "use": "sig" (§4.2) and "alg" (§4.4).
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
			Key: &key.PublicKey, KeyID: is.kid, Algorithm: string(jose.RS256), Use: "sig",
		}}})
	})
	return is
}

// Token signs an ID token (RS256, the algorithm every OpenID Provider must support: OpenID Connect
// Core 1.0 §15.1) with the standard claims of Core §2: iss (this issuer), sub, aud, iat and exp
// (iat + ttl; a negative ttl makes an expired token). extra adds or overrides claims.
func (is *Issuer) Token(t testing.TB, audience, subject string, ttl time.Duration, extra map[string]any) string {
	t.Helper()
	now := time.Now()
	iat := now
	if ttl < 0 {
		iat = now.Add(2 * ttl)
	}
	claims := map[string]any{
		"iss": is.URL, "sub": subject, "aud": audience,
		"iat": iat.Unix(), "exp": now.Add(ttl).Unix(),
		"email": subject + "@example.com",
	}
	for k, v := range extra {
		claims[k] = v
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: is.key, KeyID: is.kid}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		t.Fatal(err)
	}
	obj, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := obj.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
