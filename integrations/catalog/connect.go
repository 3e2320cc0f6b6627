package catalog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// ConnectService is the tool that connects a catalogue service by name.
const ConnectService = "lucy_connect_service"

// Connector is the domain of lucy_connect_service and what lucy_list_integrations shows of the
// catalogue (integrations.Connectable).
type Connector struct {
	cat     *Catalog
	mcp     *mcp.Source
	openapi *openapi.Services
	listers []integrations.Lister
	admins  []string
}

// NewConnector returns the domain over the catalogue in force, the two paths an entry connects
// through (nil: that kind cannot be connected here), the kinds' listers (what is connected already)
// and the admins (LUCY_ADMIN_USERS), who alone share a service with the team.
func NewConnector(cat *Catalog, m *mcp.Source, o *openapi.Services, listers []integrations.Lister, admins []string) *Connector {
	if cat == nil {
		cat = Builtin()
	}
	return &Connector{cat: cat, mcp: m, openapi: o, listers: listers, admins: slices.Clone(admins)}
}

// The approval is asked by the tool (ChecksFirst): what is connected comes from the catalogue in
// force, which the operator's file changes and which workflow code must not read; the prompt is
// built in the activity from the entry, and its Guard makes the approved call connect only what the
// person saw.
var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ConnectService,
		Description: "Connect a well-known service by its name (\"connect Linear\", \"add GitHub\"): Lucy's service catalogue " +
			"knows its official MCP server or API description, how to sign in (an OAuth link, or an Add key button), and " +
			"which of its tools only read and so run without asking; every other tool asks for approval at each call. " +
			"By default the service is the requester's own (offered only in their requests); an admin can set " +
			"share_with_team. The person approves what is connected first. An unknown name is answered with the close " +
			"matches; lucy_list_integrations lists what can be connected.",
		Destructive: true,
		ChecksFirst: true,
		Human:       "connecting a service",
		Long:        true,
	},
	Required: []string{"service"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("service", "The service's name as the person says it, e.g. \"Linear\", \"GitHub\", \"Google Drive\".", 1, 64),
			{Name: "share_with_team", Schema: map[string]any{"type": "boolean",
				"description": "Admins only: offer the service's tools in every member's requests, not only the requester's."}},
		}
	},
	// Asked from the arguments only by a run that did not record this tool's flags (none, since it
	// was declared with ChecksFirst); the call itself asks with the entry's details.
	Approval: func(args map[string]any) (string, string) {
		name := tools.ArgString(args, "service")
		share, _ := args["share_with_team"].(bool)
		if share {
			return "connect the service " + name + " for everyone in this workspace", "Service: " + name + " (from Lucy's service catalogue)"
		}
		return "connect the service " + name + " for your own requests", "Service: " + name + " (from Lucy's service catalogue)"
	},
}, (*Connector).connect)

type connectArgs struct {
	Service string `json:"service"`
	Share   bool   `json:"share_with_team"`
}

func (c *Connector) admin(user string) bool { return user != "" && slices.Contains(c.admins, user) }

func (c *Connector) connect(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args connectArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	e, ok := c.cat.Lookup(args.Service)
	if !ok {
		return tools.ToolError("%s", c.unknown(args.Service)), nil
	}
	if args.Share && !c.admin(inv.User) {
		return tools.ToolError("only an admin (LUCY_ADMIN_USERS) can connect %s for everyone in this workspace: nothing was connected. "+
			"Connect it without share_with_team to use it in your own requests, or ask an admin", e.DisplayName()), nil
	}
	if inv.User == "" && !args.Share {
		return tools.ToolError("a service connected from chat is its requester's own, and this request has no requester; ask an admin to connect it shared with the team"), nil
	}
	if in, ok := c.connected(ctx, inv, e); ok && !args.Share {
		return tools.Output{Content: fmt.Sprintf("%s is connected already (%s %s, %s): its tools are offered. To connect it again, "+
			"disconnect it first.", e.DisplayName(), kindWord(in.Kind), in.Name, in.Scope)}, nil
	}
	if e.Kind() == "mcp" {
		return c.connectMCP(ctx, inv, e, args.Share)
	}
	return c.connectOpenAPI(ctx, inv, e, args.Share)
}

// unknown is the answer to a name the catalogue does not hold: the close matches, what it holds,
// and the ways to connect a service it does not know.
func (c *Connector) unknown(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Lucy's service catalogue has no service named %q.", strings.TrimSpace(name))
	if near := c.cat.Suggest(name, 3); len(near) > 0 {
		fmt.Fprintf(&b, " Did the person mean %s?", strings.Join(near, " or "))
	}
	var all []string
	for _, e := range c.cat.Entries() {
		all = append(all, e.DisplayName())
	}
	fmt.Fprintf(&b, " It knows: %s. A service it does not know connects with its MCP server's URL (lucy_connect_mcp_server) "+
		"or its OpenAPI document (lucy_resolve_custom_integration). Nothing was connected.", strings.Join(all, ", "))
	return b.String()
}

// connected finds e among what inv's requester sees connected: the integration of e's kind that
// has its name, or whose address is its endpoint (an operator's server configured for every team).
func (c *Connector) connected(ctx context.Context, inv tools.Invocation, e Entry) (integrations.Integration, bool) {
	for _, in := range c.list(ctx, inv.Team, inv.User) {
		if in.Kind == e.Kind() && (in.Name == e.Name || sameEndpoint(in.Where, e.Endpoint())) {
			return in, true
		}
	}
	return integrations.Integration{}, false
}

// list is every integration the listers give, as user sees them (another member's own left out).
func (c *Connector) list(ctx context.Context, team, user string) []integrations.Integration {
	var all []integrations.Integration
	for _, l := range c.listers {
		var got []integrations.Integration
		var err error
		if ul, ok := l.(integrations.UserLister); ok {
			got, err = ul.IntegrationsFor(ctx, team, user)
		} else {
			got, err = l.Integrations(ctx, team)
		}
		if err != nil {
			continue // a kind that cannot be listed now: nothing of it counts as connected
		}
		all = append(all, slices.DeleteFunc(got, func(in integrations.Integration) bool { return !in.Visible(user, false) })...)
	}
	return all
}

func sameEndpoint(where, endpoint string) bool {
	t := func(s string) string { return strings.TrimSuffix(strings.TrimSpace(s), "/") }
	return where != "" && t(where) == t(endpoint)
}

func kindWord(kind string) string {
	switch kind {
	case "mcp":
		return "the MCP server"
	case "openapi":
		return "the API"
	}
	return kind
}

// whose says in whose requests the tools are offered, for the prompt.
func whose(share bool) string {
	if share {
		return "everyone in this workspace (shared by an admin): their requests use it"
	}
	return "only you: its tools are offered in your own requests"
}

// connectMCP asks for the approval of e's remote server, then connects it through the MCP
// client's connect (its record, key binding and sign-in link).
func (c *Connector) connectMCP(ctx context.Context, inv tools.Invocation, e Entry, share bool) (tools.Output, error) {
	if c.mcp == nil {
		return tools.ToolError("this Lucy has no MCP client, so %s cannot be connected", e.DisplayName()), nil
	}
	if o := e.Auth.OAuth; o != nil && o.Preregistered {
		// The authorization server registers no client by itself (RFC 7591 not offered): an
		// operator registers Lucy with it and configures that client for every team.
		return tools.ToolError("%s signs in only with an OAuth client registered with %s in advance, which an operator does: "+
			"they register Lucy there (redirect URI: Lucy's public URL + /mcp/oauth/callback) and add the server to Lucy's MCP "+
			"configuration (LUCY_MCP_CONFIG) with url %s and an \"oauth\" block holding the client's ID%s. It is then offered "+
			"to everyone, each person signing in with their own account. Nothing was connected; tell the person to ask an operator "+
			"(docs/operating.md, \"The service catalogue\").", e.DisplayName(), e.DisplayName(), e.MCP.URL, scopesClause(o.Scopes)), nil
	}
	cred := ""
	if e.Auth.Key != nil {
		cred = e.Name
	}
	summary, details := mcpPrompt(e, cred, share)
	if out, held := askFirst(inv, summary, details); held {
		return out, nil
	}
	return c.mcp.Connect(ctx, inv, mcp.ConnectRequest{Name: e.Name, URL: e.MCP.URL, Credential: cred,
		SafeTools: e.ReadOnly, Share: share, MaxConcurrent: e.MaxConcurrent})
}

func scopesClause(scopes []string) string {
	if len(scopes) == 0 {
		return ""
	}
	return " and the scopes " + strings.Join(scopes, " ")
}

// mcpPrompt is what the person approves: the endpoint, how Lucy signs in and whose account the
// calls act as, whose requests get the tools, and the tools that run unasked.
func mcpPrompt(e Entry, cred string, share bool) (summary, details string) {
	scope := "for your own requests"
	if share {
		scope = "for everyone in this workspace"
	}
	summary = fmt.Sprintf("connect %s (its MCP server %s) %s", e.DisplayName(), e.MCP.URL, scope)
	var b strings.Builder
	fmt.Fprintf(&b, "Service: %s, from Lucy's service catalogue (endpoint documented at %s)\n", e.DisplayName(), e.Source)
	fmt.Fprintf(&b, "Endpoint: %s (remote MCP server; every call of its tools goes there)\n", e.MCP.URL)
	switch {
	case e.Auth.OAuth != nil:
		scopes := "the scopes its server advertises"
		if len(e.Auth.OAuth.Scopes) > 0 {
			scopes = strings.Join(e.Auth.OAuth.Scopes, " ")
		}
		fmt.Fprintf(&b, "Sign-in: OAuth at %s (a sign-in link is posted); its calls act as the account that signs in. Scopes asked: %s\n",
			e.DisplayName(), scopes)
	case cred != "":
		fmt.Fprintf(&b, "Key: the stored key %q, sent as \"Authorization: Bearer\" only to %s (connecting binds it there); its calls act "+
			"as the account the key belongs to. If it is not stored yet, an Add key button follows", cred, secrets.OriginOf(e.MCP.URL))
		if e.Auth.Key.Where != "" {
			fmt.Fprintf(&b, " (create one at %s)", e.Auth.Key.Where)
		}
		b.WriteString("\n")
		if share {
			b.WriteString("Sharing the service shares this key: it becomes usable in every member's requests\n")
		}
	default:
		b.WriteString("Sign-in: none\n")
	}
	fmt.Fprintf(&b, "Who gets its tools: %s\n", whose(share))
	if len(e.ReadOnly) > 0 {
		fmt.Fprintf(&b, "Run without asking (read-only by the catalogue's review): %s\n", strings.Join(e.ReadOnly, ", "))
	} else {
		b.WriteString("Run without asking: none\n")
	}
	fmt.Fprintf(&b, "Every other tool of %s asks for approval at each call.", e.DisplayName())
	return summary, b.String()
}

// askFirst holds a call nobody approved yet: it answers with the approval to ask for, whose Guard
// is the prompt itself, so that an approval applies only to what the person was shown.
func askFirst(inv tools.Invocation, summary, details string) (tools.Output, bool) {
	summary, details = tools.RedactCredentials(summary), tools.RedactCredentials(details)
	guard := tools.PartsHash(ConnectService, summary, details)
	if inv.Approved && inv.Guard == guard {
		return tools.Output{}, false
	}
	content := "Nothing was connected yet: it waits for the person's approval (the prompt shows the endpoint, the sign-in and the " +
		"tools that run without asking)."
	if inv.Approved {
		content = "Nothing was connected: what the person approved changed meanwhile (the catalogue), so they are asked again."
	}
	return tools.Output{Content: content, NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard}}, true
}

// connectOpenAPI connects e's API description through the OpenAPI resolve, whose own prompt (the
// address, the key and where it is sent, every operation and whether it asks) the person approves,
// headed by the catalogue's lines.
func (c *Connector) connectOpenAPI(ctx context.Context, inv tools.Invocation, e Entry, share bool) (tools.Output, error) {
	if c.openapi == nil {
		return tools.ToolError("this Lucy cannot connect APIs, so %s cannot be connected", e.DisplayName()), nil
	}
	req := openapi.ResolveRequest{URL: e.OpenAPI.URL, Name: e.Name, BaseURL: e.OpenAPI.BaseURL, Operations: e.OpenAPI.Operations,
		Safe: e.ReadOnly, Shared: share, MaxConcurrent: e.MaxConcurrent}
	// Every operation not on the catalogue's read-only list asks, GETs included.
	for _, op := range e.OpenAPI.Operations {
		if !slices.Contains(e.ReadOnly, op) {
			req.Destructive = append(req.Destructive, op)
		}
	}
	if k := e.Auth.Key; k != nil {
		req.Credential = e.Name
		switch {
		case k.Query != "":
			req.Auth = "query:" + k.Query
		case strings.EqualFold(k.Header, "Authorization"):
			req.Auth = "bearer"
		default:
			req.Auth = "header:" + k.Header
		}
	}
	ask := inv
	ask.Approved, ask.Guard = false, ""
	out, err := c.openapi.Resolve(ctx, ask, req)
	if err != nil || out.NeedsApproval == nil {
		return out, err // refused, or nothing to approve: the resolve's own answer
	}
	head := fmt.Sprintf("Service: %s, from Lucy's service catalogue (API description documented at %s)\n", e.DisplayName(), e.Source)
	if k := e.Auth.Key; k != nil && k.Where != "" {
		head += "Where the person creates the key: " + k.Where + "\n"
	}
	need := *out.NeedsApproval
	inner := need.Guard
	need.Details = head + need.Details
	need.Guard = tools.PartsHash(ConnectService, head, inner)
	if !inv.Approved || inv.Guard != need.Guard {
		out.NeedsApproval = &need
		return out, nil
	}
	approved := inv
	approved.Approved, approved.Guard = true, inner
	return c.openapi.Resolve(ctx, approved, req)
}

// ConnectableFor lists the catalogue's services user has not connected (nor sees connected for
// the team), for lucy_list_integrations: one line each, with how to connect it.
func (c *Connector) ConnectableFor(ctx context.Context, team, user string) []string {
	connected := c.list(ctx, team, user)
	var out []string
	for _, e := range c.cat.Entries() {
		if slices.ContainsFunc(connected, func(in integrations.Integration) bool {
			return in.Kind == e.Kind() && (in.Name == e.Name || sameEndpoint(in.Where, e.Endpoint()))
		}) {
			continue
		}
		how := "connect with: connect " + e.DisplayName()
		if o := e.Auth.OAuth; o != nil && o.Preregistered {
			how = "an operator configures its OAuth client first"
		}
		line := fmt.Sprintf("%s (%s", e.DisplayName(), how)
		if e.Notes != "" {
			line += "; " + e.Notes
		}
		out = append(out, line+")")
	}
	return out
}

var _ integrations.Connectable = (*Connector)(nil)
