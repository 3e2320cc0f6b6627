package oauth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// pendingDir is where a team's pending sign-ins live in Lucy's state store (never in workflow
// history: the verifier and a client secret are in them).
const pendingDir = "mcp-oauth"

// claimHold is how long a claimed sign-in stays refused to a second callback: the exchange takes
// seconds; a gateway that died in the middle frees it after this.
const claimHold = time.Minute

// Client is an OAuth client of an authorization server: the operator's (mcp.json "oauth") or one
// registered dynamically. AuthStyle is the token endpoint's client authentication
// (oauth2.AuthStyle: 0 detect, 1 in the form, 2 HTTP Basic).
type Client struct {
	ID        string `json:"id"`
	Secret    string `json:"secret,omitempty"`
	AuthStyle int    `json:"authStyle,omitempty"`
}

// pending is one sign-in between Begin and the callback: everything the exchange needs.
type pending struct {
	Team          string   `json:"team"`
	Server        string   `json:"server"`
	ServerURL     string   `json:"serverUrl"` // the MCP endpoint the token will be sent to
	User          string   `json:"user,omitempty"`
	Verifier      string   `json:"verifier"`
	Client        Client   `json:"client"`
	TokenEndpoint string   `json:"tokenEndpoint"`
	RedirectURI   string   `json:"redirectUri"`
	Resource      string   `json:"resource,omitempty"`
	Scopes        []string `json:"scopes,omitempty"`
	Trusted       bool     `json:"trusted,omitempty"` // the operator's server: its token endpoint may be private
	Owner         string   `json:"owner,omitempty"`   // the member whose own server it is ("" team-wide)
	Serves        string   `json:"serves,omitempty"`  // whose requests the tokens serve, in words for the page
	Title         string   `json:"title,omitempty"`   // what is signed in to, in words for the page ("" the server's name)
	// Share makes the tokens the team's service account (an admin's explicit choice, made when the
	// sign-in began): they serve every member's requests that have no sign-in of their own. Without
	// it the tokens are User's own.
	Share bool `json:"share,omitempty"`
	// AuthURL is the provider's authorization URL, where the start endpoint sends the browser.
	AuthURL string    `json:"authUrl,omitempty"`
	Expires time.Time `json:"expires"`
}

// pendingObject is a pending sign-in as stored: the expiry and the claim in clear (the callback
// decides on them without opening anything), the rest sealed with the team and the state's ID as
// additional data, so that an object copied under another name does not open.
type pendingObject struct {
	Version int       `json:"v"`
	Expires time.Time `json:"expires"`
	Claimed time.Time `json:"claimed,omitzero"`
	// OpenedBy are the Slack users whose click on the sign-in button Slack delivered to the gateway
	// (Opened): the callback stores tokens only when the person the link was made for, and no one
	// else, opened it.
	OpenedBy []string `json:"openedBy,omitempty"`
	// Browser is the SHA-256 of the cookie the start endpoint gave the one browser that opened the
	// link (Start): the callback accepts the return of that browser only.
	Browser string `json:"browser,omitempty"`
	Nonce   []byte `json:"nonce"`
	Data    []byte `json:"data"`
}

func pendingPath(id string) string { return path.Join(pendingDir, id+".json") }

func pendingAD(team, id string) []byte { return []byte("lucy-mcp-oauth:v1:" + team + ":" + id) }

// newState returns a state for team: the team (so that the callback knows where to look) and 130
// random bits (rand.Text) that make it unguessable.
func newState(team string) (state, id string) {
	id = rand.Text()
	return team + "." + id, id
}

// parseState splits a state into its team and ID, refusing anything Lucy did not make.
func parseState(state string) (team, id string, ok bool) {
	team, id, ok = strings.Cut(state, ".")
	if !ok || !workspace.ValidTeam(team) || len(id) != 26 {
		return "", "", false
	}
	for _, c := range id {
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return "", "", false
		}
	}
	return team, id, true
}

// seal encodes v and seals it with a fresh nonce under ad (the record's team and name), as the
// pending sign-ins and the grants are kept.
func (f *Flow) seal(v any, ad []byte) (nonce, sealed []byte, err error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return nil, nil, err
	}
	nonce = make([]byte, f.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, nil, err
	}
	return nonce, f.aead.Seal(nil, nonce, plain, ad), nil
}

func (f *Flow) savePending(ctx context.Context, id string, p pending) error {
	nonce, sealed, err := f.seal(p, pendingAD(p.Team, id))
	if err != nil {
		return err
	}
	obj := pendingObject{Version: 1, Expires: p.Expires, Nonce: nonce, Data: sealed}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	if _, err := f.state.Write(ctx, p.Team, pendingPath(id), data, workspace.Cond{IfNoneMatch: true}); err != nil {
		return fmt.Errorf("keep the sign-in: %w", err)
	}
	return nil
}

// Why a callback's state is refused; the page says it in words.
var (
	errUnknownState = errors.New("this sign-in link is unknown or was already used")
	errExpired      = errors.New("this sign-in link has expired (links work for 10 minutes)")
	errInUse        = errors.New("this sign-in is being completed in another request")
	// errNotOpened: no click on the link's button in Slack by the person it was made for reached
	// Lucy; a link copied out of Slack, or opened before the click arrived, is not theirs to use.
	errNotOpened = errors.New("this sign-in link was not opened from its Sign in button in Slack by the person it was made for " +
		"(a link copied out of Slack cannot be used). Nothing was stored")
	// errOpenedByOther: someone else clicked the button of a link made for another person.
	errOpenedByOther = errors.New("this sign-in link was made for another person and was opened by someone else in Slack, " +
		"so it no longer works and nothing was stored. Each person gets their own link: ask Lucy in Slack")
	errNotStarted = errors.New("this sign-in was not started from its Sign in button in Slack in this browser " +
		"(a link copied out of Slack, or completed in another browser, cannot be used). Nothing was stored")
	errOtherBrowser = errors.New("this sign-in link was opened in more than one browser, so it no longer works and nothing was stored. " +
		"Ask Lucy in Slack for a new one, and open it only from its Sign in button")
	errForNoOne = errors.New("this sign-in link was made for no one in particular (it was not asked for in a Slack request), " +
		"so it cannot be bound to whoever opens it. Nothing was stored")
)

// ErrUnknownLink is a click on a sign-in button whose link Lucy no longer knows (used, expired).
var ErrUnknownLink = errUnknownState

// Opened records that Slack user clicked the sign-in button of state: Slack delivers the click of a
// URL button to the app's interactivity endpoint too (block_actions, signed by Slack, with the
// clicking user), so the gateway knows who opened the link, which the browser's return cannot say.
// The callback then refuses the state unless exactly the person it was made for opened it
// (docs/security.md). A conditional write: two clicks at once on two gateways are both recorded.
func (f *Flow) Opened(ctx context.Context, state, user string) error {
	team, id, ok := parseState(state)
	if !ok || user == "" {
		return errUnknownState
	}
	for range 5 {
		data, info, err := f.state.Read(ctx, team, pendingPath(id))
		if errors.Is(err, fs.ErrNotExist) {
			return errUnknownState
		}
		if err != nil {
			return fmt.Errorf("read the sign-in: %w", err)
		}
		var obj pendingObject
		if err := json.Unmarshal(data, &obj); err != nil || obj.Version != 1 {
			return errUnknownState
		}
		if !f.now().Before(obj.Expires) {
			return errExpired
		}
		if slices.Contains(obj.OpenedBy, user) {
			return nil
		}
		if len(obj.OpenedBy) >= 8 {
			return nil // enough to refuse it: a different user is among them already
		}
		obj.OpenedBy = append(obj.OpenedBy, user)
		out, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		_, err = f.state.Write(ctx, team, pendingPath(id), out, workspace.Cond{IfMatch: info.ETag})
		if errors.Is(err, workspace.ErrPrecondition) {
			continue // a callback's hold or another click changed it meanwhile: read again
		}
		if errors.Is(err, fs.ErrNotExist) {
			return errUnknownState
		}
		return err
	}
	return errInUse
}

// claimed is a pending sign-in the callback holds: release gives it back after a failure (so the
// person can try the same link again), done removes it after success.
type claimed struct {
	p    pending
	f    *Flow
	team string
	id   string
	obj  pendingObject
}

// claim takes the pending sign-in of state for one callback: unknown, expired, or held by another
// callback is refused. The hold is a conditional write, so of two callbacks with one state (a
// replayed redirect) exactly one proceeds, on any number of gateways.
func (f *Flow) claim(ctx context.Context, state, browser string) (*claimed, error) {
	team, id, ok := parseState(state)
	if !ok {
		return nil, errUnknownState
	}
	data, info, err := f.state.Read(ctx, team, pendingPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errUnknownState
	}
	if err != nil {
		return nil, fmt.Errorf("read the sign-in: %w", err)
	}
	var obj pendingObject
	if err := json.Unmarshal(data, &obj); err != nil || obj.Version != 1 {
		return nil, errUnknownState
	}
	now := f.now()
	if !now.Before(obj.Expires) {
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return nil, errExpired
	}
	if !obj.Claimed.IsZero() && now.Sub(obj.Claimed) < claimHold {
		return nil, errInUse
	}
	plain, err := f.aead.Open(nil, obj.Nonce, obj.Data, pendingAD(team, id))
	if err != nil {
		return nil, errors.New("this sign-in cannot be read with this LUCY_SECRETS_KEY (is it the same in the gateway and the workers?)")
	}
	var p pending
	if err := json.Unmarshal(plain, &p); err != nil || p.Team != team {
		return nil, errUnknownState
	}
	switch {
	case p.User == "":
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return nil, errForNoOne
	case slices.ContainsFunc(obj.OpenedBy, func(u string) bool { return u != p.User }):
		// Shown to, and opened by, someone else: the link is spent, whoever comes back with it.
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return nil, errOpenedByOther
	case len(obj.OpenedBy) == 0:
		return nil, errNotOpened
	case obj.Browser == "" || browser == "":
		return nil, errNotStarted
	case subtle.ConstantTimeCompare([]byte(obj.Browser), []byte(browser)) != 1:
		// Another browser than the one the link was started in came back with a code: spent.
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return nil, errOtherBrowser
	}
	obj.Claimed = now
	held, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if _, err := f.state.Write(ctx, team, pendingPath(id), held, workspace.Cond{IfMatch: info.ETag}); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrNotExist) {
			return nil, errInUse
		}
		return nil, fmt.Errorf("hold the sign-in: %w", err)
	}
	obj.Claimed = time.Time{}
	return &claimed{p: p, f: f, team: team, id: id, obj: obj}, nil
}

// release frees the sign-in for another try of the same link.
func (c *claimed) release(ctx context.Context) {
	data, err := json.Marshal(c.obj)
	if err == nil {
		_, _ = c.f.state.Write(ctx, c.team, pendingPath(c.id), data, workspace.Cond{})
	}
}

// done removes the sign-in: its state never works again.
func (c *claimed) done(ctx context.Context) error {
	err := c.f.state.Delete(ctx, c.team, pendingPath(c.id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// prunePending removes team's expired sign-ins, so that links nobody opened do not pile up.
func (f *Flow) prunePending(ctx context.Context, team string) {
	infos, err := f.state.List(ctx, team, pendingDir)
	if err != nil {
		return
	}
	now := f.now()
	for _, in := range infos {
		data, _, err := f.state.Read(ctx, team, in.Path)
		if err != nil {
			continue
		}
		var obj pendingObject
		if json.Unmarshal(data, &obj) != nil || !now.Before(obj.Expires.Add(claimHold)) {
			_ = f.state.Delete(ctx, team, in.Path)
		}
	}
}

// start gives the link's one browser its place: once the person it was made for has clicked the Sign
// in button (and no one else), the first browser to open the link is recorded (browser, the hash of
// its cookie) and gets the provider's authorization URL; a second browser spends the link. So a
// link copied out of Slack and opened elsewhere either comes first (and its person's own opening,
// which the click makes, spends it) or second (and is refused): another person's sign-in is never
// stored under theirs.
func (f *Flow) start(ctx context.Context, state, browser string) (authURL string, err error) {
	team, id, ok := parseState(state)
	if !ok {
		return "", errUnknownState
	}
	data, info, err := f.state.Read(ctx, team, pendingPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", errUnknownState
	}
	if err != nil {
		return "", fmt.Errorf("read the sign-in: %w", err)
	}
	var obj pendingObject
	if err := json.Unmarshal(data, &obj); err != nil || obj.Version != 1 {
		return "", errUnknownState
	}
	if !f.now().Before(obj.Expires) {
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return "", errExpired
	}
	plain, err := f.aead.Open(nil, obj.Nonce, obj.Data, pendingAD(team, id))
	if err != nil {
		return "", errors.New("this sign-in cannot be read with this LUCY_SECRETS_KEY (is it the same in the gateway and the workers?)")
	}
	var p pending
	if err := json.Unmarshal(plain, &p); err != nil || p.Team != team || p.AuthURL == "" {
		return "", errUnknownState
	}
	switch {
	case p.User == "":
		return "", errForNoOne
	case slices.ContainsFunc(obj.OpenedBy, func(u string) bool { return u != p.User }):
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return "", errOpenedByOther
	case len(obj.OpenedBy) == 0:
		return "", errNotOpened
	case obj.Browser != "":
		_ = f.state.Delete(ctx, team, pendingPath(id))
		return "", errOtherBrowser
	}
	obj.Browser = browser
	out, err := json.Marshal(obj)
	if err != nil {
		return "", err
	}
	if _, err := f.state.Write(ctx, team, pendingPath(id), out, workspace.Cond{IfMatch: info.ETag}); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrNotExist) {
			// Another browser (or click) changed it meanwhile: two browsers at once, spent.
			_ = f.state.Delete(ctx, team, pendingPath(id))
			return "", errOtherBrowser
		}
		return "", fmt.Errorf("keep the sign-in: %w", err)
	}
	return p.AuthURL, nil
}

// Usable reports whether the link of state can still be offered to user: it is pending, not
// expired, opened by no one else and in no browser yet. A link that is not is made anew.
func (f *Flow) Usable(ctx context.Context, state, user string) bool {
	team, id, ok := parseState(state)
	if !ok {
		return false
	}
	data, _, err := f.state.Read(ctx, team, pendingPath(id))
	if err != nil {
		return false
	}
	var obj pendingObject
	if json.Unmarshal(data, &obj) != nil || obj.Version != 1 || !f.now().Before(obj.Expires) || obj.Browser != "" || !obj.Claimed.IsZero() {
		return false
	}
	return !slices.ContainsFunc(obj.OpenedBy, func(u string) bool { return u != user })
}
