package openapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// errNoKey is a call's failure when the team has no key stored for the service.
var errNoKey = errors.New("no key stored")

// binder changes where a stored key may go and who may use it (a *secrets.Store does): resolving a
// service binds its key to the API's origin and, for a shared service, shares it; disconnecting
// unbinds it.
type binder interface {
	Bind(ctx context.Context, team, service, origin string) (secrets.Meta, error)
	Unbind(ctx context.Context, team, service, origin string) (secrets.Meta, error)
	SetShared(ctx context.Context, team, service string, shared bool) (secrets.Meta, error)
}

// binder returns the credential store's binder, nil when it has none.
func (s *Services) binder() binder {
	b, _ := s.d.Credentials.(binder)
	return b
}

// credential reads the service's stored key, inside the call that uses it, and checks that it may
// go where this call sends it: bound to each origin the key reaches (the API's, an OAuth2 token
// endpoint's) and usable by the run's requester (secrets.Applies). A refusal is returned as
// refusal, in words for the person; nothing has been sent.
func (s *Services) credential(ctx context.Context, inv tools.Invocation, rec record) (string, error) {
	if s.d.Credentials == nil {
		return "", errNoKey
	}
	v, meta, err := s.d.Credentials.Get(ctx, inv.Team, rec.Credential)
	if errors.Is(err, secrets.ErrNotFound) {
		return "", errNoKey
	}
	if err != nil {
		return "", fmt.Errorf("read the stored key for %s: %w", rec.Service, err)
	}
	if meta.KindOrKey() != secrets.KindKey || secrets.Reserved(meta.Service) {
		return "", refusal(fmt.Sprintf("%q is not an API key (it belongs to one of Lucy's mailboxes or sign-ins) and is never sent to an API", rec.Credential))
	}
	if rec.Shared && !meta.UsableBy(inv.User) && meta.Owner == rec.SharedBy && s.isAdmin(rec.SharedBy) && s.binder() != nil {
		// The admin who shared the service stored its key after sharing it (the Add key button
		// makes a key its submitter's own): sharing the service was sharing its key.
		if meta, err = s.binder().SetShared(ctx, inv.Team, rec.Credential, true); err != nil {
			return "", fmt.Errorf("share the key of %s: %w", rec.Service, err)
		}
	}
	for _, origin := range rec.credentialOrigins() {
		if err := secrets.Applies(meta, origin, inv.User); err != nil {
			return "", refusal(err.Error())
		}
	}
	return v, nil
}

// hasCredential reports whether the team has a key stored for the service, without opening it.
func (s *Services) hasCredential(ctx context.Context, team, service string) (bool, error) {
	if s.d.Credentials == nil {
		return false, nil
	}
	_, err := s.d.Credentials.Stat(ctx, team, service)
	if errors.Is(err, secrets.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// secretsOf are the strings of a credential to scrub from results and errors: the whole value, and
// its halves for the kinds stored as "a:b" (a password or a client secret alone is as secret).
func secretsOf(a *auth, cred string) []string {
	out := []string{cred}
	if a != nil && (a.Kind == "basic" || a.Kind == "oauth2") {
		if user, pass, ok := strings.Cut(cred, ":"); ok {
			out = append(out, pass)
			if a.Kind == "basic" {
				out = append(out, user+":"+pass)
			}
		}
	}
	return out
}

// apply puts the credential on the request as the scheme says. It returns the strings to scrub from
// what the call returns (the credential, and an OAuth2 access token).
func (s *Services) apply(ctx context.Context, req *http.Request, team, service string, a *auth, cred string) ([]string, error) {
	scrub := secretsOf(a, cred)
	switch a.Kind {
	case "apiKey":
		switch a.In {
		case "header":
			req.Header.Set(a.Name, cred)
		case "query":
			q := req.URL.Query()
			q.Set(a.Name, cred)
			req.URL.RawQuery = q.Encode()
		case "cookie":
			req.AddCookie(&http.Cookie{Name: a.Name, Value: cred})
		}
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+cred)
	case "basic":
		user, pass, ok := strings.Cut(cred, ":")
		if !ok {
			return scrub, fmt.Errorf(`the key stored for %s is not "user:password", which its HTTP basic auth needs; `+
				"the person must store it again in that form", service)
		}
		req.SetBasicAuth(user, pass)
	case "oauth2":
		tok, err := s.token(ctx, team, service, a, cred)
		if err != nil {
			return scrub, err
		}
		scrub = append(scrub, tok)
		req.Header.Set("Authorization", "Bearer "+tok)
	default:
		return scrub, fmt.Errorf("unknown auth kind %q in the registry entry of %s", a.Kind, service)
	}
	return scrub, nil
}

// tokenSource is a cached OAuth2 client credentials token source.
type tokenSource struct {
	mu  sync.Mutex
	src oauth2.TokenSource
}

// token returns an access token for the client credentials in cred ("client_id:client_secret"),
// from this worker's cache while it is valid: a token endpoint is asked once per token lifetime,
// not once per call.
func (s *Services) token(ctx context.Context, team, service string, a *auth, cred string) (string, error) {
	id, secret, ok := strings.Cut(cred, ":")
	if !ok || id == "" || secret == "" {
		return "", fmt.Errorf(`the key stored for %s is not "client_id:client_secret", which its OAuth2 client credentials `+
			"need; the person must store it again in that form", service)
	}
	tu, err := url.Parse(a.TokenURL)
	if err != nil {
		return "", fmt.Errorf("the token URL of %s does not parse", service)
	}
	if err := s.checkURL(ctx, tu, true); err != nil {
		return "", fmt.Errorf("the token URL of %s: %w", service, err)
	}
	h := sha256.Sum256([]byte(team + "\x00" + service + "\x00" + a.TokenURL + "\x00" + strings.Join(a.Scopes, " ") + "\x00" + cred))
	key := hex.EncodeToString(h[:])
	s.mu.Lock()
	ts := s.tokens[key]
	if ts == nil {
		cfg := &clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: a.TokenURL, Scopes: a.Scopes}
		// The source outlives this call (it refreshes the token later): it gets a context of its own
		// that carries only the guarded client, never this call's deadline.
		base := context.WithValue(context.Background(), oauth2.HTTPClient, s.tokenHTTP)
		ts = &tokenSource{src: cfg.TokenSource(base)}
		s.tokens[key] = ts
	}
	s.mu.Unlock()
	type result struct {
		tok *oauth2.Token
		err error
	}
	done := make(chan result, 1)
	go func() {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		t, err := ts.src.Token()
		done <- result{t, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-done:
		if r.err != nil {
			var re *oauth2.RetrieveError
			if errors.As(r.err, &re) && re.Response != nil {
				msg := re.ErrorCode + " " + re.ErrorDescription
				if strings.TrimSpace(msg) == "" {
					msg = shortBody(re.Body)
				}
				return "", &tokenError{status: re.Response.StatusCode, msg: truncate(collapse(msg), 200)}
			}
			return "", &tokenError{msg: truncate(collapse(r.err.Error()), 300)}
		}
		return r.tok.AccessToken, nil
	}
}

// tokenError is a token endpoint's refusal or failure.
type tokenError struct {
	status int
	msg    string
}

func (e *tokenError) Error() string {
	if e.status != 0 {
		return fmt.Sprintf("the token endpoint answered HTTP %d %s", e.status, strings.TrimSpace(e.msg))
	}
	return "the token endpoint could not be reached: " + e.msg
}

// checkURL refuses a URL Lucy may not send to: not http(s), a private address (unless allowed),
// or, when it carries a credential, plain http to a public host.
func (s *Services) checkURL(ctx context.Context, u *url.URL, credential bool) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s is not an http or https URL", u.Redacted())
	}
	if err := s.checkFn(ctx, u); err != nil {
		return fmt.Errorf("%s is at a private, loopback or reserved address, which Lucy does not reach", u.Host)
	}
	// A key over plain http is refused, except to a private host the operator allowed (an internal
	// API on the team's own network): it is public networks a key must not cross in clear.
	var public tools.PrivateHosts
	if credential && u.Scheme == "http" && public.CheckURL(ctx, u) == nil {
		return fmt.Errorf("%s is plain http: Lucy sends keys over https only", u.Host)
	}
	return nil
}
