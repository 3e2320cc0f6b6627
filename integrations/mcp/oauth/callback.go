package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"
)

// Callback answers the browser's return from an authorization server (GET CallbackPath?code=…&
// state=…): it takes the pending sign-in of the state (once, before it expires), exchanges the
// code with the PKCE verifier at the token endpoint, stores the tokens in the team's credential
// store and answers a page saying so. A refusal (unknown, expired or used state, consent denied, a
// failed exchange) is a page saying what happened, and changes nothing: the tokens stored before,
// if any, stay, and a link that failed at the exchange can be tried again while it is valid.
//
// It is mounted on the gateway's HTTP listener. It never calls a model and never posts to Slack;
// the person goes back to Slack and tells Lucy, whose next listing finds the tokens.
type Callback struct {
	Flow *Flow
	// Guarded exchanges codes at the token endpoints of servers connected from chat: a client
	// that refuses private addresses unless LUCY_ALLOWED_PRIVATE_HOSTS allows them
	// (tools.NewGuardedClient).
	Guarded *http.Client
	// Trusted exchanges them for the operator's servers, whose token endpoints may be internal.
	Trusted *http.Client
	Log     zerolog.Logger
	// OpenWait is how long a callback waits for the click on the link's button (0: openWait).
	OpenWait time.Duration
}

// exchangeBudget bounds one exchange: the person is waiting in front of the page.
const exchangeBudget = 20 * time.Second

func (cb *Callback) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == StartPath {
		cb.serveStart(w, r)
		return
	}
	q := r.URL.Query()
	ctx, cancel := context.WithTimeout(r.Context(), exchangeBudget)
	defer cancel()
	log := cb.Log.With().Str("component", "mcp-oauth").Logger()
	if e := q.Get("error"); e != "" {
		// The provider sent the person back without a code: they declined, or it failed. The
		// pending sign-in stays, so the same link works if they change their mind.
		msg := "Signing in was not completed: the provider answered \"" + clip(e, 100) + "\"."
		if e == "access_denied" {
			msg = "Signing in was cancelled: access was not granted, so Lucy is not connected."
		}
		if d := q.Get("error_description"); d != "" {
			msg += " (" + clip(d, 200) + ")"
		}
		log.Info().Str("error", clip(e, 100)).Msg("MCP sign-in not completed at the provider")
		page(w, http.StatusBadRequest, "Not connected", msg+" You can close this tab; ask Lucy again to get a new link.")
		return
	}
	code, state := q.Get("code"), q.Get("state")
	if code == "" || state == "" {
		page(w, http.StatusBadRequest, "Not connected", "This page is where a sign-in provider sends you back to Lucy; "+
			"it was opened without a sign-in code. Ask Lucy again to get a sign-in link.")
		return
	}
	c, err := cb.claim(ctx, state, browserOf(r, state))
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case errors.Is(err, errInUse):
			status = http.StatusConflict
		case errors.Is(err, errNotOpened), errors.Is(err, errOpenedByOther), errors.Is(err, errForNoOne),
			errors.Is(err, errNotStarted), errors.Is(err, errOtherBrowser):
			status = http.StatusForbidden
			log.Warn().Str("reason", err.Error()).Msg("MCP sign-in refused: the link was not opened by the person it was made for")
		case !errors.Is(err, errUnknownState) && !errors.Is(err, errExpired):
			status = http.StatusInternalServerError
			log.Error().Err(err).Msg("MCP sign-in could not be read")
		}
		page(w, status, "Not connected", sentence(err)+" Ask Lucy again to get a new sign-in link.")
		return
	}
	p := c.p
	log = log.With().Str("team", p.Team).Str("server", p.Server).Str("user", p.User).Logger()
	name := p.Title // how the pages name what was signed in to
	if name == "" {
		name = p.Server
	}
	hc := cb.Guarded
	if p.Trusted {
		hc = cb.Trusted
	}
	cfg := oauth2.Config{ClientID: p.Client.ID, ClientSecret: p.Client.Secret, RedirectURL: p.RedirectURI, Scopes: p.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: p.TokenEndpoint, AuthStyle: oauth2.AuthStyle(p.Client.AuthStyle)}}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(p.Verifier)}
	if p.Resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", p.Resource))
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, httpClient(hc)), code, opts...)
	if err != nil {
		c.release(context.WithoutCancel(ctx))
		reason := exchangeReason(err, code, p.Verifier, p.Client.Secret)
		log.Warn().Str("reason", reason).Msg("MCP sign-in: the token endpoint refused the code")
		page(w, http.StatusBadGateway, "Not connected", "The sign-in to "+name+" could not be completed at its token endpoint ("+
			reason+"). Nothing was changed. You can try the same link again, or ask Lucy for a new one.")
		return
	}
	if tok.AccessToken == "" {
		c.release(context.WithoutCancel(ctx))
		page(w, http.StatusBadGateway, "Not connected", "The sign-in to "+name+" could not be completed: its token endpoint gave no access token. Nothing was changed.")
		return
	}
	person := p.User // the person's own sign-in, unless an admin chose to make it the team's
	if p.Share {
		person = ""
	}
	ts := &TokenSet{Access: tok.AccessToken, Refresh: tok.RefreshToken, Type: tok.TokenType, Expiry: tok.Expiry, ServerURL: p.ServerURL, Person: person}
	g := grant{Team: p.Team, Server: p.Server, ServerURL: p.ServerURL, TokenEndpoint: p.TokenEndpoint, Resource: p.Resource,
		Client: p.Client, Scopes: p.Scopes, Trusted: p.Trusted, Owner: p.Owner, User: p.User, Person: person}
	err = cb.Flow.saveGrant(context.WithoutCancel(ctx), g)
	if err == nil {
		err = cb.Flow.store(context.WithoutCancel(ctx), p.Team, p.Server, ts, p.User)
	}
	if err != nil {
		c.release(context.WithoutCancel(ctx))
		log.Error().Str("reason", exchangeReason(err, ts.Secrets()...)).Msg("MCP sign-in: the tokens could not be stored")
		page(w, http.StatusInternalServerError, "Not connected", "Signed in to "+name+", but Lucy could not keep the sign-in. Nothing was changed; ask Lucy for a new link.")
		return
	}
	if err := c.done(context.WithoutCancel(ctx)); err != nil {
		// The tokens are stored; the state stays held (claimHold) and expires with its link.
		log.Warn().Err(err).Msg("MCP sign-in: the used state could not be removed")
	}
	log.Info().Bool("refreshable", ts.Refresh != "").Msg("MCP sign-in completed")
	serves := p.Serves
	switch {
	case serves == "" && p.Share:
		serves = "every member's requests in your workspace that have no sign-in of their own"
	case serves == "":
		serves = "your own requests only"
	}
	page(w, http.StatusOK, "Connected", "Lucy is connected to "+name+" with the account you signed in with. It is used for "+serves+
		" (this sign-in link was made for Slack user "+orSomeone(p.User)+"); if that is not what you meant, ask Lucy to disconnect "+
		name+" or revoke Lucy's access in that account. You can close this tab and go back to Slack.")
}

func orSomeone(user string) string {
	if user == "" {
		return "(unknown)"
	}
	return user
}

func sentence(err error) string {
	s := err.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:] + "."
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Lucy: {{.Title}}</title>
<style>body{font-family:system-ui,sans-serif;max-width:36em;margin:4em auto;padding:0 1em;line-height:1.5}</style>
</head><body><h1>{{.Title}}</h1><p>{{.Message}}</p></body></html>
`))

// openWait is how long the callback waits for the click on the link's button to reach Lucy: Slack
// delivers the click to the gateway as the browser opens the link, but a provider that signs the
// person in at once can send the browser back within a second.
const openWait = 5 * time.Second

// serveStart is the Sign in button's link (GET StartPath?state=…): once the click of the person the
// link was made for has reached Lucy (waiting up to OpenWait for it), the first browser to open it
// gets a cookie and is sent to the provider; anything else gets a page and, where someone else
// opened the link, spends it (Flow.start).
func (cb *Callback) serveStart(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), exchangeBudget)
	defer cancel()
	state := r.URL.Query().Get("state")
	secret := rand.Text()
	sum := sha256.Sum256([]byte(secret))
	browser := hex.EncodeToString(sum[:])
	wait := cb.OpenWait
	if wait <= 0 {
		wait = openWait
	}
	deadline := cb.Flow.now().Add(wait)
	var authURL string
	var err error
	for {
		authURL, err = cb.Flow.start(ctx, state, browser)
		if !errors.Is(err, errNotOpened) || !cb.Flow.now().Before(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err != nil {
		status := http.StatusForbidden
		switch {
		case errors.Is(err, errUnknownState), errors.Is(err, errExpired):
			status = http.StatusBadRequest
		case !errors.Is(err, errNotOpened) && !errors.Is(err, errOpenedByOther) && !errors.Is(err, errOtherBrowser) && !errors.Is(err, errForNoOne):
			status = http.StatusInternalServerError
			cb.Log.Error().Err(err).Str("component", "mcp-oauth").Msg("MCP sign-in could not be started")
		}
		page(w, status, "Not connected", sentence(err)+" Ask Lucy again to get a new sign-in link.")
		return
	}
	_, id, _ := parseState(state)
	http.SetCookie(w, &http.Cookie{Name: cookieName(id), Value: secret, Path: cookiePath, MaxAge: int(PendingTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(cb.Flow.publicURL, "https://"),
		// Lax: the provider's redirect back is a top-level GET navigation, which carries it.
		SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	http.Redirect(w, r, authURL, http.StatusFound)
}

func cookieName(id string) string { return "lucy_signin_" + id }

// browserOf is the hash of the sign-in cookie r carries for state, "" without one.
func browserOf(r *http.Request, state string) string {
	_, id, ok := parseState(state)
	if !ok {
		return ""
	}
	c, err := r.Cookie(cookieName(id))
	if err != nil || c.Value == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(c.Value))
	return hex.EncodeToString(sum[:])
}

// claim claims the state, waiting up to openWait for the click that says who opened the link.
func (cb *Callback) claim(ctx context.Context, state, browser string) (*claimed, error) {
	wait := cb.OpenWait
	if wait <= 0 {
		wait = openWait
	}
	deadline := cb.Flow.now().Add(wait)
	for {
		c, err := cb.Flow.claim(ctx, state, browser)
		if !errors.Is(err, errNotOpened) || !cb.Flow.now().Before(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// page answers the browser. The page holds no token and no code; it is not cached, sends no
// referrer (the callback's URL carries the code) and runs nothing.
func page(w http.ResponseWriter, status int, title, msg string) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	_ = pageTmpl.Execute(w, struct{ Title, Message string }{title, msg})
}
