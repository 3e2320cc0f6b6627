// Package mcp is Lucy's MCP client: the servers of the operator's configuration file
// (LUCY_MCP_CONFIG, for every team) and those a team connects from chat (lucy_connect_mcp_server,
// kept in the state store) offer their tools to the model at run time, as mcp__{server}__{tool},
// through a tools.Source; lucy_list_integrations shows them through Integrations.
//
// Listing must be fast, because the route activity lists every team's tools before each run: each
// server's tools are cached per worker for a minute (refreshed at once when the server says its list
// changed), a server that fails is left out and retried in the background, and no listing waits
// longer than one bounded connect-and-list. Sessions are kept per server (per team for a server that
// uses a team's credential or that a team connected) and reconnected when they break.
package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// Limits bound what a server may cost a run; zero fields take the defaults.
type Limits struct {
	// ConnectTimeout bounds connecting to a server and listing its tools (10 s).
	ConnectTimeout time.Duration
	// TTL is how long a server's tool list is used before it is listed again (60 s), unless the
	// server says its list changed.
	TTL time.Duration
	// RetryAfter is how long a server that failed is left alone before it is tried again (30 s).
	RetryAfter time.Duration
	// TeamTTL is how long a team's own server list is cached (10 s): another worker's connect or
	// disconnect shows here within it.
	TeamTTL time.Duration
	// MaxTools is how many tools one server may offer (100); a server with more is refused whole.
	MaxTools int
}

func (l Limits) withDefaults() Limits {
	if l.ConnectTimeout <= 0 {
		l.ConnectTimeout = 10 * time.Second
	}
	if l.TTL <= 0 {
		l.TTL = time.Minute
	}
	if l.RetryAfter <= 0 {
		l.RetryAfter = 30 * time.Second
	}
	if l.TeamTTL <= 0 {
		l.TeamTTL = 10 * time.Second
	}
	if l.MaxTools <= 0 {
		l.MaxTools = 100
	}
	return l
}

// Deps are what the MCP client needs from the worker.
type Deps struct {
	// Servers are the operator's (LUCY_MCP_CONFIG): trusted, any address, for every team.
	Servers []Server
	// State is Lucy's state store, where each team's own servers live (mcp/<name>.json); nil means
	// teams cannot connect servers from chat.
	State workspace.Store
	// Credentials are the teams' stored keys a server may be called with; nil means none.
	Credentials Credentials
	// Keys asks a person for a credential a server needs; nil means it cannot be asked.
	Keys integrations.KeyRequester
	// Admins may disconnect any team server (LUCY_ADMIN_USERS).
	Admins []string
	// HTTP is the client for the servers teams connect from chat: it must refuse private addresses
	// when it dials (tools.NewGuardedClient). Nil builds that client, allowing no private host.
	HTTP *http.Client
	// CheckURL refuses a URL a team's server may not be at (private, loopback, link-local, unless
	// the operator allows it: tools.PrivateHosts.CheckURL). Nil allows no private host.
	CheckURL func(ctx context.Context, u *url.URL) error
	// OAuth signs a team in to a remote server that answers 401 and uses the tokens it stored; nil
	// means sign-in is not offered (a 401 then asks for a stored credential).
	OAuth *oauth.Flow
	// TrustedHTTP makes the sign-in's requests (discovery, registration, refresh) for the
	// operator's servers, which may be internal. Nil uses a client with a 15 s timeout.
	TrustedHTTP *http.Client
	Log         zerolog.Logger
	Limits      Limits
}

// Credentials are the teams' stored keys as the MCP client uses them (*secrets.Store): read inside
// the activity that sends them, and bound to a server's address when its connect is approved (the
// key's owner or an admin), unbound when the server is disconnected, shared when an admin shares a
// server that uses it.
type Credentials interface {
	integrations.Credentials
	Bind(ctx context.Context, team, service, origin string) (secrets.Meta, error)
	Unbind(ctx context.Context, team, service, origin string) (secrets.Meta, error)
	SetShared(ctx context.Context, team, service string, shared bool) (secrets.Meta, error)
}

// Source is the MCP client of a worker: the tools.Source of every team's MCP tools, the Lister of its
// servers, and the domain of the connect and disconnect tools. It is safe for concurrent use.
type Source struct {
	d        Deps
	limits   Limits
	log      zerolog.Logger
	operator []Server

	mu     sync.Mutex
	conns  map[connKey]*conn
	teams  map[string]*teamCache
	closed bool
	// perTeam are the operator's servers found to want each team signed in (a 401 without a
	// configured credential): their sessions are per team from then on.
	perTeam map[string]bool
	// slots bound the calls of a server at once in this worker, per team (Server.MaxConcurrent).
	slots integrations.Slots
}

// connKey names one session: the operator's servers share one across teams unless they use a
// team's credential; a team's own server is the team's.
type connKey struct {
	team string // "" for a shared session
	name string
	own  bool // a server the team connected
	// forCall and person name one person's session with a server that needs a sign-in: the calls
	// of person's requests, made with person's own tokens (or the team's service account).
	forCall bool
	person  string
}

type teamCache struct {
	servers []Server
	at      time.Time
}

// New returns the MCP client over d. It connects to nothing until a team's tools are listed.
func New(d Deps) *Source {
	if d.CheckURL == nil {
		d.CheckURL = tools.PrivateHosts{}.CheckURL
	}
	if d.HTTP == nil {
		d.HTTP = tools.NewGuardedClient(nil, tools.PrivateHosts{})
	}
	if d.TrustedHTTP == nil {
		// http.DefaultTransport dials by itself, which tells the SDK's discovery that the caller
		// chose its own network policy: the operator's servers may be internal.
		d.TrustedHTTP = &http.Client{Timeout: 15 * time.Second, Transport: http.DefaultTransport}
	}
	return &Source{d: d, limits: d.Limits.withDefaults(), log: d.Log.With().Str("component", "mcp").Logger(),
		operator: slices.Clone(d.Servers), conns: map[connKey]*conn{}, teams: map[string]*teamCache{}, perTeam: map[string]bool{}}
}

// Close ends every session and stops the servers Lucy started.
func (s *Source) Close() {
	s.mu.Lock()
	conns := s.conns
	s.conns = map[connKey]*conn{}
	s.closed = true
	s.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// servers returns the operator's servers and the team's own, sorted by name (the operator's first
// on a clash, which connect refuses anyway).
func (s *Source) servers(ctx context.Context, team string) []scoped {
	out := make([]scoped, 0, len(s.operator))
	for _, srv := range s.operator {
		out = append(out, scoped{srv, s.key(team, srv, false)})
	}
	own, err := s.teamServers(ctx, team)
	if err != nil {
		s.log.Warn().Err(err).Str("team", team).Msg("cannot read the team's MCP servers; only the operator's are offered")
	}
	for _, srv := range own {
		if s.operatorServer(srv.Name) != nil {
			continue
		}
		out = append(out, scoped{srv, s.key(team, srv, true)})
	}
	return out
}

type scoped struct {
	srv Server
	key connKey
}

func (s *Source) key(team string, srv Server, own bool) connKey {
	s.mu.Lock()
	perTeam := s.perTeam[srv.Name]
	s.mu.Unlock()
	if own || srv.Credential != "" || srv.OAuth != nil || perTeam {
		return connKey{team: team, name: srv.Name, own: own}
	}
	return connKey{name: srv.Name}
}

func (s *Source) operatorServer(name string) *Server {
	for i := range s.operator {
		if strings.EqualFold(s.operator[i].Name, name) {
			return &s.operator[i]
		}
	}
	return nil
}

// conn returns the session holder of key, made on first use; a holder whose server changed (a team
// server disconnected and connected again elsewhere) is replaced.
func (s *Source) conn(k connKey, srv Server) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[k]
	if c != nil && sameServer(c.srv, srv) {
		return c
	}
	if c != nil {
		go c.close()
	}
	c = newConn(s, srv, k.team)
	if !s.closed {
		s.conns[k] = c
	}
	return c
}

func sameServer(a, b Server) bool {
	return a.Name == b.Name && a.URL == b.URL && a.Credential == b.Credential && a.Type == b.Type &&
		a.Command == b.Command && slices.Equal(a.Args, b.Args) && a.AddedBy == b.AddedBy && a.Shared == b.Shared &&
		slices.Equal(a.SafeTools, b.SafeTools)
}

// callConn returns the conn of person's calls to base's server, made on first use.
func (s *Source) callConn(base *conn, person string) *conn {
	k := connKey{team: base.team, name: base.srv.Name, own: base.srv.FromChat(), forCall: true, person: person}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conns[k]
	if c != nil && c.base == base {
		return c
	}
	if c != nil {
		go c.close() // base's server changed (connected again elsewhere): a new session
	}
	c = newConn(s, base.srv, base.team)
	c.forCall, c.person, c.base = true, person, base
	if !s.closed {
		s.conns[k] = c
	}
	return c
}

// dropSignIns closes the call sessions of person ("" every person's: the team's service account
// went) with team's server name, after a sign-out: their tokens are never sent again from here.
func (s *Source) dropSignIns(team, name, person string) {
	s.mu.Lock()
	var gone []*conn
	for k, c := range s.conns {
		if k.team == team && strings.EqualFold(k.name, name) && k.forCall && (person == "" || k.person == person) {
			gone = append(gone, c)
			delete(s.conns, k)
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		c.close()
	}
}

// forget drops a team server's session and the team's cached list, after a connect or disconnect.
func (s *Source) forget(team, name string) {
	s.mu.Lock()
	k := connKey{team: team, name: name, own: true}
	c := s.conns[k]
	delete(s.conns, k)
	delete(s.teams, team)
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// Tools lists what the MCP servers offer team now: the operator's and the team's own, each from its
// cache. A server listed for the first time is waited for (at most ConnectTimeout, all servers at
// once); one that fails is left out, with its reason in Integrations and the log.
func (s *Source) Tools(ctx context.Context, team string) ([]tools.Tool, error) {
	servers := s.servers(ctx, team)
	lists := make([][]listedTool, len(servers))
	conns := make([]*conn, len(servers))
	var wg sync.WaitGroup
	for i, sc := range servers {
		conns[i] = s.conn(sc.key, sc.srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i] = conns[i].listing(ctx, waitFirst)
		}()
	}
	wg.Wait()
	s.relistPerTeam(ctx, team, servers, conns, lists)
	var all []named
	for i, list := range lists {
		list = slices.Clone(list)
		slices.SortFunc(list, func(a, b listedTool) int { return strings.Compare(a.raw.Name, b.raw.Name) })
		for _, t := range list {
			all = append(all, named{server: servers[i].srv.Name, tool: t, conn: conns[i]})
		}
	}
	assignNames(all)
	out := make([]tools.Tool, 0, len(all))
	for _, n := range all {
		t := n.conn.tool(n.name, n.tool)
		if base := n.conn; base.usesSignIn() {
			// A server that needs a sign-in: each call is made with the requester's own tokens, in
			// their own session, after reading their sign-in again (recheck).
			name, lt := n.name, n.tool
			t.Run = func(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
				c := s.callConn(base, inv.User)
				if err := c.recheck(ctx); err != nil {
					return tools.Output{}, &tools.TransientError{Tool: inv.Name, Err: fmt.Errorf("MCP server %s: its sign-in cannot be read: %w", base.srv.Name, err)}
				}
				return c.tool(name, lt).Run(withInvocation(ctx, inv), inv)
			}
		}
		if srv := n.conn.srv; srv.FromChat() && !srv.Shared {
			t.Owner = srv.AddedBy // a member's own server: offered and run in her runs only
		}
		out = append(out, t)
	}
	return s.withinBudget(team, out), nil
}

// The MCP tools one run is offered are bounded: each tool's schema and description go to the model
// with every call, and a model API refuses a request with too many tools. The team-wide tools (the
// operator's servers', then the shared ones', in server name order, each server's tools by name)
// come first; each person's own servers' tools come on top of those, counted for that person
// alone, so that one member's servers never crowd out another's or the team's.
const (
	// MaxRunTools is how many MCP tools one run is offered at most.
	MaxRunTools = 128
	// MaxRunSchemaBytes bounds the names, descriptions and input schemas of the MCP tools one run
	// is offered, together.
	MaxRunSchemaBytes = 256 << 10
)

// withinBudget keeps, of list (in the order above), the tools within MaxRunTools and
// MaxRunSchemaBytes for every run; the rest are left out, with a log line.
func (s *Source) withinBudget(team string, list []tools.Tool) []tools.Tool {
	type use struct{ n, bytes int }
	keep := make([]bool, len(list))
	var dropped []string
	fits := func(u *use, t tools.Tool) bool {
		size := toolSize(t)
		if u.n+1 > MaxRunTools || u.bytes+size > MaxRunSchemaBytes {
			dropped = append(dropped, t.Spec.Name)
			return false
		}
		u.n, u.bytes = u.n+1, u.bytes+size
		return true
	}
	var team0 use
	for i, t := range list {
		if t.Owner == "" {
			keep[i] = fits(&team0, t)
		}
	}
	own := map[string]*use{}
	for i, t := range list {
		if t.Owner == "" {
			continue
		}
		u := own[t.Owner]
		if u == nil {
			u = &use{team0.n, team0.bytes}
			own[t.Owner] = u
		}
		keep[i] = fits(u, t)
	}
	if len(dropped) == 0 {
		return list
	}
	s.log.Warn().Str("team", team).Int("left_out", len(dropped)).Strs("tools", dropped[:min(len(dropped), 20)]).
		Msgf("MCP tools beyond a run's budget (%d tools, %d KB of schema) are left out", MaxRunTools, MaxRunSchemaBytes>>10)
	out := make([]tools.Tool, 0, len(list)-len(dropped))
	for i, t := range list {
		if keep[i] {
			out = append(out, t)
		}
	}
	return out
}

// toolSize is what a tool costs a request: its name, description and parameters as sent.
func toolSize(t tools.Tool) int {
	data, _ := json.Marshal(t.Spec.Parameters)
	return len(t.Spec.Name) + len(t.Spec.Description) + len(data)
}

// Integrations lists the team's MCP servers for the system prompt's block, with their health: a
// member's own server says whose it is.
func (s *Source) Integrations(ctx context.Context, team string) ([]integrations.Integration, error) {
	return s.IntegrationsFor(ctx, team, "")
}

// IntegrationsFor lists the team's MCP servers for lucy_list_integrations in user's request, with
// their health and who is offered them ("yours", "shared with this workspace", "every team"): a
// server never listed in this worker is listed now (bounded by ConnectTimeout, all at once).
func (s *Source) IntegrationsFor(ctx context.Context, team, user string) ([]integrations.Integration, error) {
	servers := s.servers(ctx, team)
	out := make([]integrations.Integration, len(servers))
	var wg sync.WaitGroup
	for i, sc := range servers {
		c := s.conn(sc.key, sc.srv)
		wg.Add(1)
		go func() {
			defer wg.Done()
			list := c.listing(ctx, waitKnown)
			if k := s.key(team, sc.srv, sc.key.own); k != sc.key {
				// The shared session found that each team must sign in: the team's own says how.
				c = s.conn(k, sc.srv)
				list = c.listing(ctx, waitKnown)
			}
			st := c.state()
			scope := "every team"
			switch {
			case !sc.key.own:
			case sc.srv.Shared:
				scope = "shared with this workspace"
			case user != "" && sc.srv.AddedBy == user:
				scope = "yours (only your requests)"
			default:
				scope = "<@" + sc.srv.AddedBy + ">'s own (only their requests)"
			}
			status := st.status
			if status == "" {
				status = "not reached yet (still connecting)"
			}
			owner := ""
			if sc.key.own && !sc.srv.Shared {
				owner = sc.srv.AddedBy
			}
			out[i] = integrations.Integration{Kind: "mcp", Name: sc.srv.Name, Scope: scope, Where: sc.srv.Where(),
				Credential: sc.srv.Credential, Healthy: st.healthy, Status: status, Tools: len(list), AddedBy: sc.srv.AddedBy, Owner: owner}
			if user != "" && c.usesSignIn() {
				out[i].SignIn = s.signInOf(ctx, team, sc.srv.Name, user)
			}
		}()
	}
	wg.Wait()
	return out, nil
}

// signInOf says whose account user's requests to a server that needs a sign-in are made with,
// as Flow.TokenFor chooses it: their own sign-in first, else the team's service account.
func (s *Source) signInOf(ctx context.Context, team, server, user string) string {
	switch {
	case s.d.OAuth.SignedIn(ctx, team, server, user):
		return "you are signed in with your own account"
	case s.d.OAuth.SignedIn(ctx, team, server, ""):
		return "your requests use the team's account (an admin's choice) until you sign in with your own"
	default:
		return "you have not signed in: ask me to sign you in"
	}
}

// relistPerTeam lists again, with the team's own session, the operator's servers whose shared
// session just found that each team must sign in.
func (s *Source) relistPerTeam(ctx context.Context, team string, servers []scoped, conns []*conn, lists [][]listedTool) {
	for i, sc := range servers {
		if k := s.key(team, sc.srv, sc.key.own); k != sc.key {
			conns[i] = s.conn(k, sc.srv)
			lists[i] = conns[i].listing(ctx, waitFirst)
		}
	}
}

// markPerTeam makes name's sessions per team.
func (s *Source) markPerTeam(name string) {
	s.mu.Lock()
	s.perTeam[name] = true
	s.mu.Unlock()
}

var (
	_ tools.Source            = (*Source)(nil)
	_ integrations.Lister     = (*Source)(nil)
	_ integrations.UserLister = (*Source)(nil)
)

func (k connKey) String() string {
	if k.team == "" {
		return k.name
	}
	return k.team + "/" + k.name
}
