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
	// Shared offers the server's tools in every member's runs; without it they are offered in
	// AddedBy's runs only. Only an admin shares (SharedBy).
	Shared   bool   `json:"shared,omitempty"`
	SharedBy string `json:"sharedBy,omitempty"`
	// SafeTools are the tools the approval of the connect (or of the sharing) named as running
	// without a person's approval; every other tool of the server asks at each call.
	SafeTools []string `json:"safeTools,omitempty"`
	// MaxConcurrent is the service catalogue's limit of the server's calls at once in one worker
	// (Server.MaxConcurrent; 0: none), for a server connected by name.
	MaxConcurrent int `json:"maxConcurrent,omitempty"`
}

func (r record) server() Server {
	return Server{Name: r.Name, URL: r.URL, Type: r.Type, Credential: r.Credential, AddedBy: r.AddedBy,
		Shared: r.Shared, SharedBy: r.SharedBy, SafeTools: slices.Clone(r.SafeTools), MaxConcurrent: r.MaxConcurrent}
}

// Bounds on what a team connects from chat: every server is listed before every run, and its tools'
// schemas go to the model with every call.
const (
	// MaxTeamServers is how many servers a team may connect from chat, personal and shared together.
	MaxTeamServers = 20
	// MaxSafeTools is how many tools one connect may mark as running without approval.
	MaxSafeTools = 50
)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ConnectServer,
		Description: "Connect a remote MCP server (streamable HTTP), so that its tools are offered from the next request on, as " +
			"mcp__<name>__<tool>. By default the server is the requester's own: its tools are offered only in their requests. " +
			"An admin can set share_with_team to offer it in every member's requests (also to share a server already " +
			"connected: the same name, URL and credential). Give a short name, its URL, and, if it needs a token, the name of " +
			"a stored credential (never the token itself): it is sent as \"Authorization: Bearer\", and connecting binds it to " +
			"the server's address. If that credential is not stored yet, the person gets an Add key button. Every call of the " +
			"server's tools asks for a person's approval, except the tools listed in safe_tools (read-only ones the person " +
			"trusts to run unasked). Needs a person's approval.",
		Destructive: true,
		Human:       "connecting an MCP server",
	},
	Required: []string{"name", "url"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("name", "A short name for the server: letters, digits, '-' and '_' (e.g. \"github\"). Its tools are named after it.", 1, 32),
			tools.StrProp("url", "The server's MCP endpoint, an https URL (e.g. \"https://mcp.example.com/mcp\").", 1, 2048),
			tools.StrProp("credential", "The name of the stored credential sent as a bearer token (e.g. \"github\"); omit for a server without one.", 0, 63),
			{Name: "safe_tools", Schema: map[string]any{"type": "array", "maxItems": MaxSafeTools,
				"description": "Names of the server's tools (as the server names them, e.g. \"search\") that run without asking " +
					"for approval: only ones that read and change nothing. Omit to have every call approved.",
				"items": map[string]any{"type": "string", "minLength": 1, "maxLength": 128}}},
			{Name: "share_with_team", Schema: map[string]any{"type": "boolean",
				"description": "Admins only: offer the server's tools in every member's requests, not only the requester's. " +
					"Its credential must be the admin's own or already shared, and becomes usable in everyone's requests."}},
		}
	},
	Approval: connectApproval,
}, (*Source).connectServer)

// connectApproval is what the person approves: where the server is, which key goes there (and that
// it is bound there), who will be offered its tools, and which tools will run unasked.
func connectApproval(args map[string]any) (string, string) {
	name := tools.ArgString(args, "name")
	if name == "" {
		name = "(no name given)"
	}
	u := tools.ArgString(args, "url")
	if u == "" {
		u = "(no URL given)"
	}
	origin := secrets.OriginOf(u)
	if origin == "" {
		origin = u
	}
	share, _ := args["share_with_team"].(bool)
	cred := tools.ArgString(args, "credential")
	credLine := "Credential: none"
	if cred != "" {
		credLine = "Credential: " + cred + " (the stored key of that name, sent to this URL as a bearer token; connecting binds " +
			"it to " + origin + ", so it may be sent there from now on)"
		if share {
			credLine += ". Sharing the server shares this key: it becomes usable in every member's requests"
		}
	}
	var safe []string
	if list, ok := args["safe_tools"].([]any); ok {
		for _, v := range list {
			if s, ok := v.(string); ok && strings.TrimSpace(s) != "" {
				safe = append(safe, strings.TrimSpace(s))
			}
		}
	}
	safeLine := "Tools that run without asking: none (every call of its tools asks for approval first)"
	if len(safe) > 0 {
		safeLine = "Tools that run without asking: " + tools.Truncate(strings.Join(safe, ", "), 1500) +
			" (every other tool asks for approval at each call)"
	}
	scope, summary := "Its tools will be offered only in your own requests.", "connect the MCP server "+name+" for your own requests"
	if share {
		scope, summary = "Its tools will be offered in every member's requests in this workspace (shared with the team).",
			"connect the MCP server "+name+" shared with everyone in this workspace"
	}
	return summary, "Name: " + name + "\nURL: " + u + "\n" + credLine + "\n" + safeLine + "\n" + scope
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: DisconnectServer,
		Description: "Disconnect an MCP server this workspace connected from chat: its tools are no longer offered. A personal " +
			"server: the person who connected it or an admin; a server shared with the team: an admin. Servers of the " +
			"operator's configuration cannot be removed here. Needs a person's approval.",
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
	Name       string   `json:"name"`
	URL        string   `json:"url"`
	Credential string   `json:"credential"`
	SafeTools  []string `json:"safe_tools"`
	Share      bool     `json:"share_with_team"`
}

func (s *Source) admin(user string) bool { return user != "" && slices.Contains(s.d.Admins, user) }

// scopeOf says who a server's tools are offered to, for the person reading a message.
func scopeOf(srv Server) string {
	if srv.Shared {
		return "shared with everyone in this workspace"
	}
	return "<@" + srv.AddedBy + ">'s own (offered only in their requests)"
}

func (s *Source) connectServer(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	return s.connect(ctx, inv, 0)
}

// connect is lucy_connect_mcp_server's call; maxConcurrent is the limit of the server's calls at once
// that a connect by name carries from the service catalogue (0: none).
func (s *Source) connect(ctx context.Context, inv tools.Invocation, maxConcurrent int) (tools.Output, error) {
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
		if secrets.Reserved(n) {
			// A mailbox's password or a sign-in's token set is read by its own integration only.
			return tools.Output{}, tools.ArgErrorf(ConnectServer, "%q cannot be used as a server's credential: %v", n, secrets.ErrReserved)
		}
		cred = n
	}
	if cred != "" && u.Scheme != "https" {
		return tools.Output{}, tools.ArgErrorf(ConnectServer, "a credential is sent only over https, and %s is http; give the https URL", tools.RedactURL(u))
	}
	var safe []string
	for _, t := range args.SafeTools {
		if t = strings.TrimSpace(t); t != "" && !slices.Contains(safe, t) {
			safe = append(safe, t)
		}
	}
	slices.Sort(safe)
	admin := s.admin(inv.User)
	if args.Share && !admin {
		return tools.ToolError("only an admin (LUCY_ADMIN_USERS) can share an MCP server with everyone in this workspace: nothing was " +
			"connected. Connect it without share_with_team to use it in your own requests, or ask an admin to share it"), nil
	}
	if inv.User == "" && !args.Share {
		return tools.ToolError("a server connected from chat is its requester's own, and this request has no requester; ask an admin to connect it shared with the team"), nil
	}
	if s.d.State == nil {
		return tools.ToolError("this Lucy has no state store, so MCP servers cannot be connected from chat; an operator can add them to the MCP configuration file"), nil
	}
	origin := secrets.Origin(u)
	rec := record{Version: 1, Name: name, URL: u.String(), Credential: cred, AddedBy: inv.User, Added: time.Now().UTC(),
		SafeTools: safe, MaxConcurrent: maxConcurrent}
	if args.Share {
		rec.Shared, rec.SharedBy = true, inv.User
	}
	cond := workspace.Cond{IfNoneMatch: true}
	old, oldInfo, err := s.readRecordInfo(ctx, inv.Team, name)
	switch {
	case err == nil:
		if !args.Share || old.Shared || old.URL != rec.URL || old.Credential != cred {
			return tools.ToolError("this workspace already has an MCP server named %s (%s, connected by <@%s>, %s): disconnect it first, or choose another name",
				name, old.server().Where(), old.AddedBy, scopeOf(old.server())), nil
		}
		// An admin shares a member's server: the member stays its author; its safe tools are the
		// ones this approval showed, and a sign-in made for the member is not lent to the team.
		rec.AddedBy, rec.Added, rec.Type = old.AddedBy, old.Added, old.Type
		cond = workspace.Cond{IfMatch: oldInfo.ETag}
	case errors.Is(err, fs.ErrNotExist):
		own, err := s.teamServersFresh(ctx, inv.Team)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: ConnectServer, Err: err}
		}
		if len(own) >= MaxTeamServers {
			return tools.ToolError("this workspace has %d MCP servers connected from chat, the most Lucy keeps (%d): nothing was connected. "+
				"Disconnect one it no longer needs first (lucy_list_integrations lists them)", len(own), MaxTeamServers), nil
		}
	default:
		return tools.Output{}, err
	}

	stored := false
	if cred != "" && s.d.Credentials != nil {
		meta, err := s.d.Credentials.Stat(ctx, inv.Team, cred)
		switch {
		case err == nil:
			stored = true
			if msg := mayUse(meta, origin, inv.User, admin, args.Share); msg != "" {
				return tools.ToolError("%s. Nothing was connected", msg), nil
			}
			// The checks passed and the person approved: the key may go to this server.
			if !meta.BoundTo(origin) {
				if _, err := s.d.Credentials.Bind(ctx, inv.Team, cred, origin); err != nil {
					return tools.Output{}, &tools.TransientError{Tool: ConnectServer, Err: err}
				}
			}
			if args.Share && !meta.Shared && meta.Owner != secrets.OperatorOwner {
				if _, err := s.d.Credentials.SetShared(ctx, inv.Team, cred, true); err != nil {
					return tools.Output{}, &tools.TransientError{Tool: ConnectServer, Err: err}
				}
			}
		case !errors.Is(err, secrets.ErrNotFound):
			return tools.Output{}, &tools.TransientError{Tool: ConnectServer, Err: err}
		}
	}

	data, err := json.Marshal(rec)
	if err != nil {
		return tools.Output{}, err
	}
	if _, err := s.d.State.Write(ctx, inv.Team, stateObject(name), data, cond); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) || errors.Is(err, fs.ErrExist) {
			now, _ := s.readRecord(ctx, inv.Team, name)
			return tools.ToolError("this workspace already has an MCP server named %s (%s, connected by <@%s>): disconnect it first, or choose another name",
				name, now.server().Where(), now.AddedBy), nil
		}
		return tools.Output{}, fmt.Errorf("save the MCP server %s: %w", name, err)
	}
	if rec.Shared && old.Name != "" && s.d.OAuth != nil {
		if err := s.d.OAuth.Forget(ctx, inv.Team, name); err != nil {
			s.log.Warn().Err(err).Str("team", inv.Team).Str("server", name).Msg("the personal sign-in of a server now shared could not be removed")
		}
	}
	s.forget(inv.Team, name)
	srv := rec.server()
	shown := srv.Where()
	scope := "in your own requests"
	if rec.Shared {
		scope = "in every member's requests"
	}

	if cred != "" && !stored {
		msg := fmt.Sprintf("Connected the MCP server %s (%s, %s). It is called with the credential %q, which this workspace has not stored yet, "+
			"so its tools are not offered until it is.", name, shown, scopeOf(srv), cred)
		if s.d.Keys != nil {
			if err := s.d.Keys.RequestKey(ctx, inv, cred, "the MCP server "+name+" ("+shown+")", secrets.Binding{Origins: []string{origin}, Integration: "mcp:" + name}); err != nil {
				return tools.Output{Content: msg + " Asking for the key failed (" + tools.RedactCredentials(err.Error()) +
					"): tell the person to store it with an Add key button or ask an operator."}, nil
			}
			return tools.Output{Content: msg + " I posted an Add key button in this thread: tell the person to add the key " +
				"there (never in a message). Its tools are offered from the next request after that."}, nil
		}
		return tools.Output{Content: msg + " Tell the person an operator must store it (lucy secrets)."}, nil
	}
	c := s.conn(connKey{team: inv.Team, name: name, own: true}, srv)
	c.setRequester(inv.User)
	list := c.listing(ctx, waitAlways)
	st := c.state()
	if c.awaitingSignIn() && !st.healthy && inv.User != "" {
		// The connector signs in as themselves: a Sign in button for them alone (rule 16).
		err := s.callConn(c, inv.User).offerSignIn(withInvocation(ctx, inv), inv, c.lastChallenge(), false)
		var need *needSignIn
		if errors.As(err, &need) {
			return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s, %s). It requires signing in with OAuth before its tools "+
				"can be used: %s. Its tools are offered from the next request after the sign-in.", name, shown, scopeOf(srv), need.Error())}, nil
		}
		return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s, %s), but it requires signing in and a sign-in cannot be "+
			"offered: %s.", name, shown, scopeOf(srv), c.scrubbed(err.Error()))}, nil
	}
	if !st.healthy {
		status := st.status
		if status == "" {
			status = "it did not answer in time"
		}
		return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s, %s), but it cannot be used now: %s. It is tried again "+
			"in later requests; tell the person, or disconnect it with %s.", name, shown, scopeOf(srv), status, DisconnectServer)}, nil
	}
	names := make([]string, 0, len(list))
	for _, t := range list {
		names = append(names, t.raw.Name)
	}
	slices.Sort(names)
	var unknown []string
	for _, t := range safe {
		if !slices.Contains(names, t) {
			unknown = append(unknown, t)
		}
	}
	approval := "Every call of its tools asks for approval."
	if len(safe) > len(unknown) {
		approval = "Its tools ask for approval at each call, except " + strings.Join(slices.DeleteFunc(slices.Clone(safe), func(t string) bool {
			return slices.Contains(unknown, t)
		}), ", ") + "."
	}
	if len(unknown) > 0 {
		approval += " The server lists no tool named " + strings.Join(unknown, ", ") + "."
	}
	return tools.Output{Content: fmt.Sprintf("Connected the MCP server %s (%s). It offers %d tools: %s. They are offered %s from the "+
		"next request on, named mcp__%s__<tool>. %s", name, shown, len(list), tools.Truncate(strings.Join(names, ", "), 2000), scope,
		cleanName(name), approval)}, nil
}

// mayUse says why requester may not connect a server at origin with the stored key meta ("" when
// they may). Attaching a key to a new address is for its owner or an admin; a personal server uses
// keys its owner may use; a shared one sends its key in everyone's requests, so the key must be the
// sharing admin's own or shared already.
func mayUse(meta secrets.Meta, origin, user string, admin, share bool) string {
	if secrets.Reserved(meta.Service) || meta.KindOrKey() != secrets.KindKey {
		return fmt.Sprintf("%q cannot be used as a server's credential: %v", meta.Service, secrets.ErrReserved)
	}
	if !meta.BoundTo(origin) {
		if err := secrets.MayAttach(meta, user, admin); err != nil {
			return err.Error()
		}
	}
	if share {
		if !meta.Shared && meta.Owner != secrets.OperatorOwner && meta.Owner != user {
			return fmt.Sprintf("a server shared with the team sends its key in everyone's requests, so the key must be yours or already "+
				"shared; %q is <@%s>'s own", meta.Service, meta.Owner)
		}
		return ""
	}
	if !meta.UsableBy(user) {
		return fmt.Sprintf("the key %q is <@%s>'s own and is used only in their requests", meta.Service, meta.Owner)
	}
	return ""
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
	switch {
	case s.admin(inv.User):
	case rec.Shared:
		// Its tools serve everyone: removing them is for an admin, as sharing them was.
		return tools.ToolError("the MCP server %s is shared with everyone in this workspace: only an admin can disconnect it", name), nil
	case inv.User == "" || inv.User != rec.AddedBy:
		return tools.ToolError("the MCP server %s was connected by <@%s>: only they or an admin can disconnect it", name, rec.AddedBy), nil
	}
	if err := s.d.State.Delete(ctx, inv.Team, stateObject(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return tools.Output{}, fmt.Errorf("remove the MCP server %s: %w", name, err)
	}
	s.forget(inv.Team, name)
	s.unbindCredential(ctx, inv.Team, rec)
	if s.d.OAuth != nil {
		// A server connected again under this name, at this or another address, signs in anew.
		if err := s.d.OAuth.Forget(ctx, inv.Team, name); err != nil {
			s.log.Warn().Err(err).Str("team", inv.Team).Str("server", name).Msg("the sign-in of a disconnected server could not be removed")
		}
	}
	return tools.Output{Content: fmt.Sprintf("Disconnected the MCP server %s (%s): its tools are no longer offered, from the next request on.",
		name, rec.server().Where())}, nil
}

// unbindCredential takes a disconnected server's address off its key, unless another server of
// the team still sends that key there: a key goes only where a connected server needs it.
func (s *Source) unbindCredential(ctx context.Context, team string, rec record) {
	if rec.Credential == "" || s.d.Credentials == nil {
		return
	}
	origin := secrets.OriginOf(rec.URL)
	others, err := s.teamServersFresh(ctx, team)
	if err != nil {
		s.log.Warn().Err(err).Str("team", team).Str("server", rec.Name).Msg("the key of a disconnected server was left bound: the team's servers could not be read")
		return
	}
	for _, o := range others {
		if o.Name != rec.Name && o.Credential == rec.Credential && secrets.OriginOf(o.URL) == origin {
			return
		}
	}
	for _, o := range s.operator {
		if o.Credential == rec.Credential && secrets.OriginOf(o.URL) == origin {
			return
		}
	}
	if _, err := s.d.Credentials.Unbind(ctx, team, rec.Credential, origin); err != nil && !errors.Is(err, secrets.ErrNotFound) {
		s.log.Warn().Err(err).Str("team", team).Str("server", rec.Name).Msg("the key of a disconnected server could not be unbound")
	}
}

func (s *Source) readRecord(ctx context.Context, team, name string) (record, error) {
	rec, _, err := s.readRecordInfo(ctx, team, name)
	return rec, err
}

func (s *Source) readRecordInfo(ctx context.Context, team, name string) (record, workspace.Info, error) {
	data, info, err := s.d.State.Read(ctx, team, stateObject(name))
	if err != nil {
		return record{}, info, err
	}
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Version != 1 || rec.Name != name {
		return record{}, info, fmt.Errorf("the stored MCP server %s is damaged; disconnect it and connect it again", name)
	}
	return rec, info, nil
}

// teamServersFresh is teamServers read now, not from the cache: for a count or a check that
// decides.
func (s *Source) teamServersFresh(ctx context.Context, team string) ([]Server, error) {
	s.mu.Lock()
	delete(s.teams, team)
	s.mu.Unlock()
	return s.teamServers(ctx, team)
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
