package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
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
	Team          string    `json:"team"`
	Server        string    `json:"server"`
	ServerURL     string    `json:"serverUrl"` // the MCP endpoint the token will be sent to
	User          string    `json:"user,omitempty"`
	Verifier      string    `json:"verifier"`
	Client        Client    `json:"client"`
	TokenEndpoint string    `json:"tokenEndpoint"`
	RedirectURI   string    `json:"redirectUri"`
	Resource      string    `json:"resource,omitempty"`
	Scopes        []string  `json:"scopes,omitempty"`
	Trusted       bool      `json:"trusted,omitempty"` // the operator's server: its token endpoint may be private
	Owner         string    `json:"owner,omitempty"`   // the member whose own server it is ("" team-wide)
	Serves        string    `json:"serves,omitempty"`  // whose requests the tokens serve, in words for the page
	Expires       time.Time `json:"expires"`
}

// pendingObject is a pending sign-in as stored: the expiry and the claim in clear (the callback
// decides on them without opening anything), the rest sealed with the team and the state's ID as
// additional data, so that an object copied under another name does not open.
type pendingObject struct {
	Version int       `json:"v"`
	Expires time.Time `json:"expires"`
	Claimed time.Time `json:"claimed,omitzero"`
	Nonce   []byte    `json:"nonce"`
	Data    []byte    `json:"data"`
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
)

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
func (f *Flow) claim(ctx context.Context, state string) (*claimed, error) {
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
