package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// The tools a team manages its own MCP servers with.
const (
	ConnectServer    = "lucy_connect_mcp_server"
	DisconnectServer = "lucy_disconnect_mcp_server"
)

// stateDir is where a team's servers live in the state store: one object per server.
const stateDir = "mcp"

func stateObject(name string) string { return path.Join(stateDir, name+".json") }

// record is a team server as stored.
type record struct {
	Version    int       `json:"v"`
	Name       string    `json:"name"`
	URL        string    `json:"url"`
	Type       string    `json:"type,omitempty"`
	Credential string    `json:"credential,omitempty"`
	AddedBy    string    `json:"addedBy"`
	Added      time.Time `json:"added"`
}

func (r record) server() Server {
	return Server{Name: r.Name, URL: r.URL, Type: r.Type, Credential: r.Credential, AddedBy: r.AddedBy}
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ConnectServer,
		Description: "Connect a remote MCP server (streamable HTTP) to this Slack workspace, so that its tools are offered " +
			"from the next request on, as mcp__<name>__<tool>. Give a short name, its URL, and, if it needs a token, the " +
			"name of a stored credential (never the token itself): it is sent as \"Authorization: Bearer\". If that " +
			"credential is not stored yet, the person gets an Add key button. Needs a person's approval.",
		Destructive: true,
		Human:       "connecting an MCP server",
	},
	Required: []string{"name", "url"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("name", "A short name for the server: letters, digits, '-' and '_' (e.g. \"github\"). Its tools are named after it.", 1, 32),
			tools.StrProp("url", "The server's MCP endpoint, an https URL (e.g. \"https://mcp.example.com/mcp\").", 1, 2048),
			tools.StrProp("credential", "The name of the stored credential sent as a bearer token (e.g. \"github\"); omit for a server without one.", 0, 63),
		}
	},
	Approval: func(args map[string]any) (string, string) {
		name := tools.ArgString(args, "name")
		if name == "" {
			name = "(no name given)"
		}
		u := tools.ArgString(args, "url")
		if u == "" {
			u = "(no URL given)"
		}
		cred := tools.ArgString(args, "credential")
		credLine := "Credential: none"
		if cred != "" {
			credLine = "Credential: " + cred + " (the stored key of that name, sent to this URL as a bearer token)"
		}
		return "connect the MCP server " + name + " to this workspace",
			"Name: " + name + "\nURL: " + u + "\n" + credLine + "\nIts tools will be offered to Lucy in every conversation of this workspace."
	},
}, (*Source).connectServer)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: DisconnectServer,
		Description: "Disconnect an MCP server this workspace connected from chat: its tools are no longer offered. Only " +
			"the person who connected it or an admin may. Servers of the operator's configuration cannot be removed here. " +
			"Needs a person's approval.",
		Destructive: true,
		Human:       "disconnecting an MCP server",
	},
	Required: []string{"name"},
	Props: func() []tools.Prop {
		return []tools.Prop{tools.StrProp("name", "The server's name, as lucy_list_integrations shows it.", 1, 32)}
	},
	Approval: func(args map[string]any) (string, string) {
		name := tools.ArgString(args, "name")
		if name == "" {
			name = "(no name given)"
		}
		return "disconnect the MCP server " + name + " from this workspace", "Name: " + name + "\nIts tools will no longer be offered."
	},
}, (*Source).disconnectServer)

type connectArgs struct {
	Name       string `json:"name"`
	URL        string `json:"url"`
	Credential string `json:"credential"`
}

func (s *Source) connectServer(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args connectArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	name := strings.ToLower(strings.TrimSpace(args.Name))
	if err := validName(name); err != nil {
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "%v", err)
	}
	if op := s.operatorServer(name); op != nil {
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "%q is the name of a server the operator configured for every team; choose another name", name)
	}
	raw := strings.TrimSpace(args.URL)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "%q is not an absolute https URL; give the server's MCP endpoint, e.g. https://mcp.example.com/mcp", raw)
	}
	if refused := tools.RefuseCredentials(u, tools.RedactURL(u)); refused != nil {
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "the URL carries a credential, which Lucy does not keep in a URL: store the token "+
			"as a credential and give its name in \"credential\", with the URL without it")
	}
	if err := s.d.CheckURL(ctx, u); err != nil {
		if tools.IsPrivateAddress(err) {
			return tools.Output{}, tools.ArgErrorf(ConnectServer, "%s: a server connected from chat must be on a public address "+
				"(the operator can add private ones in the MCP configuration file, or allow the host in LUCY_ALLOWED_PRIVATE_HOSTS)", err)
		}
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "%v", err)
	}
	cred := ""
	if c := strings.TrimSpace(args.Credential); c != "" {
		n, ok := secrets.NormalizeService(c)
		if !ok {
			return tools.Output{}, tools.ArgErrorf(ConnectServer, "%q is not a credential name: 1 to 63 lowercase letters, digits, '.', '_' and '-' (e.g. \"github\")", c)
		}
		cred = n
	}
	if cred != "" && u.Scheme != "https" {
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "a credential is sent only over https, and %s is http; give the https URL", tools.RedactURL(u))
	}
	if s.d.State == nil {
		return tools.ToolError("this Lucy has no state store, so MCP servers cannot be connected from chat; an operator can add them to the MCP configuration file"), nil
	}
	rec := record{Version: 1, Name: name, URL: u.String(), Credential: cred, AddedBy: inv.User, Added: time.Now().UTC()}
	data, err := json.Marshal(rec)
	if err != nil {
		return tools.Output{}, err
	}
	if _, err := s.d.State.Write(ctx, inv.Team, stateObject(name), data, workspace.Cond{IfNoneMatch: true}); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrExist) {
			old, _ := s.readRecord(ctx, inv.Team, name)
			return tools.ToolError("this workspace already has an MCP server named %s (%s, connected by <@%s>): disconnect it first, or choose another name",
				name, old.server().Where(), old.AddedBy), nil
		}
		return tools.Output{}, fmt.Errorf("save the MCP server %s: %w", name, err)
	}
	s.forget(inv.Team, name)
	srv := rec.server()
	shown := srv.Where()

	if cred != "" {
		stored := false
		if s.d.Credentials != nil {
			_, err := s.d.Credentials.Stat(ctx, inv.Team, cred)
			switch {
			case err == nil:
				stored = true
			case !errors.Is(err, secrets.ErrNotFound):
				return tools.Output{}, &tools.TransientError{Tool: ConnectServer, Err: err}
			}
		}
		if !stored {
			msg := fmt.Sprintf("Connected the MCP server %s (%s). It is called with the credential %q, which this workspace has not stored yet, "+
				"so its tools are not offered until it is.", name, shown, cred)
			if s.d.Keys != nil {
				if err := s.d.Keys.RequestKey(ctx, inv, cred, "the MCP server "+name+" ("+shown+")", secrets.Binding{Origins: []string{secrets.Origin(u)}, Integration: "mcp:" + name}); err != nil {
					return tools.Output{Content: msg + " Asking for the key failed (" + tools.RedactCredentials(err.Error()) +
						"): tell the person to store it with an Add key button or ask an operator."}, nil
				}
				return tools.Output{Content: msg + " I posted an Add key button in this thread: tell the person to add the key " +
					"there (never in a message). Its tools are offered from the next request after that."}, nil
			}
			return tools.Output{Content: msg + " Tell the person an operator must store it (lucy secrets)."}, nil
		}
	}
	c := s.conn(connKey{team: inv.Team, name: name, own: true}, srv)
	c.setRequester(inv.User)
	list := c.listing(ctx, waitAlways)
	st := c.state()
	if si, ok := c.awaitingSignIn(); ok && !st.healthy {
		return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s). It requires signing in with OAuth before its tools "+
			"can be used: tell the person to open this link and sign in (it works until %s UTC; whoever signs in connects this "+
			"workspace to %s with their own account): %s\nIts tools are offered from the next request after the sign-in.",
			name, shown, si.Expires.UTC().Format("15:04"), name, si.URL)}, nil
	}
	if !st.healthy {
		status := st.status
		if status == "" {
			status = "it did not answer in time"
		}
		return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s), but it cannot be used now: %s. It is tried again "+
			"in later requests; tell the person, or disconnect it with %s.", name, shown, status, DisconnectServer)}, nil
	}
	names := make([]string, 0, len(list))
	for _, t := range list {
		names = append(names, t.raw.Name)
	}
	slices.Sort(names)
	return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s). It offers %d tools: %s. They are offered from the "+
		"next request on, named mcp__%s__<tool>.", name, shown, len(list), tools.Truncate(strings.Join(names, ", "), 2000), cleanName(name))}, nil
}

type disconnectArgs struct {
	Name string `json:"name"`
}

func (s *Source) disconnectServer(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args disconnectArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	name := strings.ToLower(strings.TrimSpace(args.Name))
	if op := s.operatorServer(name); op != nil {
		return tools.ToolError("%s is in the operator's MCP configuration, for every team: it cannot be disconnected from chat; ask an operator", op.Name), nil
	}
	if s.d.State == nil {
		return tools.ToolError("this Lucy has no state store, so no MCP server was connected from chat"), nil
	}
	rec, err := s.readRecord(ctx, inv.Team, name)
	if errors.Is(err, fs.ErrNotExist) {
		own, _ := s.teamServers(ctx, inv.Team)
		var names []string
		for _, srv := range own {
			names = append(names, srv.Name)
		}
		if len(names) == 0 {
			return tools.ToolError("this workspace has no MCP server named %q; none is connected from chat", name), nil
		}
		return tools.ToolError("this workspace has no MCP server named %q; the ones connected from chat are: %s", name, strings.Join(names, ", ")), nil
	}
	if err != nil {
		return tools.Output{}, err
	}
	if inv.User == "" || (inv.User != rec.AddedBy && !slices.Contains(s.d.Admins, inv.User)) {
		return tools.ToolError("the MCP server %s was connected by <@%s>: only they or an admin can disconnect it", name, rec.AddedBy), nil
	}
	if err := s.d.State.Delete(ctx, inv.Team, stateObject(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Output{}, fmt.Errorf("remove the MCP server %s: %w", name, err)
	}
	s.forget(inv.Team, name)
	return tools.Output{Content: fmt.Sprintf("Disconnected the MCP server %s (%s): its tools are no longer offered, from the next request on.",
		name, rec.server().Where())}, nil
}

func (s *Source) readRecord(ctx context.Context, team, name string) (record, error) {
	data, _, err := s.d.State.Read(ctx, team, stateObject(name))
	if err != nil {
		return record{}, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Version != 1 || rec.Name != name {
		return record{}, fmt.Errorf("the stored MCP server %s is damaged; disconnect it and connect it again", name)
	}
	return rec, nil
}

// teamServers are the servers team connected from chat, sorted by name, from a short cache.
func (s *Source) teamServers(ctx context.Context, team string) ([]Server, error) {
	if s.d.State == nil || team == "" || !workspace.ValidTeam(team) {
		return nil, nil
	}
	s.mu.Lock()
	if tc := s.teams[team]; tc != nil && time.Since(tc.at) < s.limits.TeamTTL {
		s.mu.Unlock()
		return tc.servers, nil
	}
	s.mu.Unlock()
	infos, err := s.d.State.List(ctx, team, stateDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list the team's MCP servers: %w", err)
	}
	var out []Server
	for _, in := range infos {
		name, ok := strings.CutSuffix(path.Base(in.Path), ".json")
		if !ok {
			continue
		}
		rec, err := s.readRecord(ctx, team, name)
		if errors.Is(err, fs.ErrNotExist) {
			continue // disconnected since the listing
		}
		if err != nil {
			s.log.Warn().Err(err).Str("team", team).Str("server", name).Msg("a team's MCP server record is unreadable; left out")
			continue
		}
		out = append(out, rec.server())
	}
	s.mu.Lock()
	s.teams[team] = &teamCache{servers: out, at: time.Now()}
	s.mu.Unlock()
	return out, nil
}
