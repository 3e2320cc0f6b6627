package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/lucy-agent/lucy/workspace"
)

// A grant is what a completed sign-in was made for and how its tokens are refreshed: the MCP
// endpoint, the token endpoint, the client and the scopes Begin found, whose requests it serves.
// It is written by the callback from the pending sign-in (which only Begin writes), sealed in Lucy's
// state store, and is the only source of those fields: the token set in the credential store holds
// the tokens alone. A value stored under a token set's name by anyone else (a squatted
// mcp-oauth.<server>) therefore never decides where a refresh is posted or which URL a token goes to.

// grantDir is where a team's grants live in the state store, one object per server.
const grantDir = "mcp-oauth-grants"

type grant struct {
	Team          string   `json:"team"`
	Server        string   `json:"server"`
	ServerURL     string   `json:"serverUrl"`
	TokenEndpoint string   `json:"tokenEndpoint"`
	Resource      string   `json:"resource,omitempty"`
	Client        Client   `json:"client"`
	Scopes        []string `json:"scopes,omitempty"`
	Trusted       bool     `json:"trusted,omitempty"`
	// Owner is the member whose own server it is ("" for a server every member's requests use):
	// the tokens serve that scope only.
	Owner string `json:"owner,omitempty"`
	// User is the person Lucy showed the link to.
	User string `json:"user,omitempty"`
}

type grantObject struct {
	Version int    `json:"v"`
	Nonce   []byte `json:"nonce"`
	Data    []byte `json:"data"`
}

func grantPath(server string) string { return path.Join(grantDir, strings.ToLower(server)+".json") }

func grantAD(team, server string) []byte {
	return []byte("lucy-mcp-oauth-grant:v1:" + team + ":" + strings.ToLower(server))
}

func (f *Flow) saveGrant(ctx context.Context, g grant) error {
	nonce, sealed, err := f.seal(g, grantAD(g.Team, g.Server))
	if err != nil {
		return err
	}
	data, err := json.Marshal(grantObject{Version: 1, Nonce: nonce, Data: sealed})
	if err != nil {
		return err
	}
	if _, err := f.state.Write(ctx, g.Team, grantPath(g.Server), data, workspace.Cond{}); err != nil {
		return fmt.Errorf("keep the sign-in to %s: %w", g.Server, err)
	}
	return nil
}

// readGrant returns team's grant for server; ErrNotSignedIn when there is none (or it does not open:
// written by something else than the callback).
func (f *Flow) readGrant(ctx context.Context, team, server string) (grant, error) {
	data, _, err := f.state.Read(ctx, team, grantPath(server))
	if errors.Is(err, fs.ErrNotExist) {
		return grant{}, ErrNotSignedIn
	}
	if err != nil {
		return grant{}, err
	}
	var obj grantObject
	if err := json.Unmarshal(data, &obj); err != nil || obj.Version != 1 {
		return grant{}, ErrNotSignedIn
	}
	plain, err := f.aead.Open(nil, obj.Nonce, obj.Data, grantAD(team, server))
	if err != nil {
		return grant{}, ErrNotSignedIn
	}
	var g grant
	if err := json.Unmarshal(plain, &g); err != nil || g.Team != team || !strings.EqualFold(g.Server, server) {
		return grant{}, ErrNotSignedIn
	}
	return g, nil
}

// Forget ends team's sign-in to server (the server was disconnected, or a member's own server was
// shared with the team): its tokens are never used again, and the next use asks for a new sign-in.
func (f *Flow) Forget(ctx context.Context, team, server string) error {
	if f == nil {
		return nil
	}
	if err := f.state.Delete(ctx, team, grantPath(server)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
