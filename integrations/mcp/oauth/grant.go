package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
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
	// Person is whose own sign-in it is; "" for the team's service account (an admin's choice, or a
	// sign-in stored before sign-ins were per person: see TokenFor).
	Person string `json:"person,omitempty"`
}

type grantObject struct {
	Version int    `json:"v"`
	Nonce   []byte `json:"nonce"`
	Data    []byte `json:"data"`
}

// grantPath is where the grant of person ("" the team's service account) for server lives: the
// team's at the path every sign-in used before sign-ins were per person, a person's beside it.
func grantPath(server, person string) string {
	if person == "" {
		return path.Join(grantDir, strings.ToLower(server)+".json")
	}
	return path.Join(grantDir, strings.ToLower(server), strings.ToLower(person)+".json")
}

func grantAD(team, server, person string) []byte {
	ad := "lucy-mcp-oauth-grant:v1:" + team + ":" + strings.ToLower(server)
	if person != "" {
		ad += ":person:" + strings.ToLower(person)
	}
	return []byte(ad)
}

func (f *Flow) saveGrant(ctx context.Context, g grant) error {
	nonce, sealed, err := f.seal(g, grantAD(g.Team, g.Server, g.Person))
	if err != nil {
		return err
	}
	data, err := json.Marshal(grantObject{Version: 1, Nonce: nonce, Data: sealed})
	if err != nil {
		return err
	}
	if _, err := f.state.Write(ctx, g.Team, grantPath(g.Server, g.Person), data, workspace.Cond{}); err != nil {
		return fmt.Errorf("keep the sign-in to %s: %w", g.Server, err)
	}
	return nil
}

// readGrant returns person's grant for server ("" the team's); ErrNotSignedIn when there is none (or
// it does not open: written by something else than the callback, or under another person's name).
func (f *Flow) readGrant(ctx context.Context, team, server, person string) (grant, error) {
	data, _, err := f.state.Read(ctx, team, grantPath(server, person))
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
	plain, err := f.aead.Open(nil, obj.Nonce, obj.Data, grantAD(team, server, person))
	if err != nil {
		return grant{}, ErrNotSignedIn
	}
	var g grant
	if err := json.Unmarshal(plain, &g); err != nil || g.Team != team || !strings.EqualFold(g.Server, server) || !strings.EqualFold(g.Person, person) {
		return grant{}, ErrNotSignedIn
	}
	return g, nil
}

// people are the members with a sign-in of their own to server, sorted.
func (f *Flow) people(ctx context.Context, team, server string) []string {
	infos, err := f.state.List(ctx, team, path.Join(grantDir, strings.ToLower(server)))
	if err != nil {
		return nil
	}
	var out []string
	for _, in := range infos {
		if name, ok := strings.CutSuffix(path.Base(in.Path), ".json"); ok && name != "" {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// Forget ends every sign-in of team to server, the team's and each person's (the server was
// disconnected, or a member's own server was shared with the team): their grants and their tokens
// are deleted, and the next use asks for a new sign-in.
func (f *Flow) Forget(ctx context.Context, team, server string) error {
	if f == nil {
		return nil
	}
	for _, person := range append(f.people(ctx, team, server), "") {
		if _, err := f.SignOut(ctx, team, server, person); err != nil {
			return err
		}
	}
	return nil
}
