package integrations

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// The tools that are about credentials rather than one kind of integration.
const (
	StoreAPIKey      = "lucy_store_api_key"
	ShareAPIKey      = "lucy_share_api_key"
	ListIntegrations = "lucy_list_integrations"
)

// StoredKeys is what the tools read of the credential store (*secrets.Store): names, owners and
// dates, never a value; and the one change they make to a key's record, its sharing.
type StoredKeys interface {
	Stat(ctx context.Context, team, service string) (secrets.Meta, error)
	List(ctx context.Context, team string) ([]secrets.Meta, error)
	SetShared(ctx context.Context, team, service string, shared bool) (secrets.Meta, error)
}

// Keys is the domain of lucy_store_api_key, lucy_share_api_key and lucy_list_integrations.
type Keys struct {
	store   StoredKeys
	request KeyRequester
	listers []Lister
	admins  []string
	// connectable lists the catalogue's services not connected yet (WithConnectable); nil: none.
	connectable Connectable
}

// NewKeys returns the domain over the team's stored keys, the way to ask a person for one (nil: it
// cannot be asked here), the kinds' listers (MCP servers, OpenAPI services) and the admins
// (LUCY_ADMIN_USERS), who alone share a key with the team.
func NewKeys(store StoredKeys, request KeyRequester, listers []Lister, admins []string) *Keys {
	return &Keys{store: store, request: request, listers: listers, admins: slices.Clone(admins)}
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: StoreAPIKey,
		Description: "Ask the person you work for to give Lucy an API key or token for a service (GitHub, Jira, an MCP " +
			"server, an OpenAPI service), stored encrypted for this workspace. It posts an Add key button in this " +
			"thread: the person clicks it and pastes the key into a private form; you never see the key. The key is " +
			"that person's own: it is used only in their requests, and only with the server or service it was given " +
			"for; an admin can share it with the team (lucy_share_api_key). Names starting with \"email-\" or " +
			"\"mcp-oauth.\" belong to Lucy's mailboxes and sign-ins and cannot be asked for. Never ask for a key in " +
			"chat, and never repeat one. After calling it, end your turn by asking the person to click the button " +
			"(ask_human).",
		Human: "asking for a key",
	},
	Required: []string{"service", "purpose"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("service", "The key's name in Lucy's store: lowercase letters, digits, '.', '_' or '-', e.g. \"github\" "+
				"or \"jira\"; the name an integration's configuration refers to.", 1, 63),
			tools.StrProp("purpose", "One line the person sees on the button: what the key is for, e.g. \"read the open issues "+
				"of acme/api\".", 1, 200),
		}
	},
}, (*Keys).storeAPIKey)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ShareAPIKey,
		Description: "Share a stored key with the whole team, so that it is used in everyone's requests (still only with the " +
			"servers and services it was given for), or make a shared key its owner's own again. Only an admin " +
			"(LUCY_ADMIN_USERS) may; a key a member added is otherwise used only in that member's requests. Keys of " +
			"mailboxes and sign-ins are never shared this way. Needs a person's approval.",
		Destructive: true,
		Human:       "sharing a key",
	},
	Required: []string{"service", "with"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("service", "The key's name, as lucy_list_integrations shows it.", 1, 63),
			tools.EnumProp("with", "\"team\" to share it with everyone in this workspace; \"owner\" to make it its owner's own again.",
				"team", "owner"),
		}
	},
	Approval: func(args map[string]any) (string, string) {
		service := tools.ArgString(args, "service")
		if service == "" {
			service = "(no name given)"
		}
		if tools.ArgString(args, "with") == "owner" {
			return "make the key " + service + " its owner's own again",
				"Key: " + service + "\nIt will be used only in its owner's requests; the rest of the team's requests stop using it."
		}
		return "share the key " + service + " with the whole team",
			"Key: " + service + "\nEveryone in this workspace: their requests will use it with the servers and services it was given for."
	},
}, (*Keys).shareAPIKey)

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: ListIntegrations,
		Description: "List what this workspace has connected: the stored keys (names, whose they are, whether they are " +
			"shared with the team, the servers they may be sent to, who added them and when; never their values), the " +
			"MCP servers and OpenAPI services with their health and tools, and the mailboxes with their health.",
		Idempotent: true,
		Human:      "listing the integrations",
	},
}, (*Keys).listIntegrations)

type storeAPIKeyArgs struct {
	Service string `json:"service"`
	Purpose string `json:"purpose"`
}

func (k *Keys) storeAPIKey(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args storeAPIKeyArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	service, ok := secrets.NormalizeService(args.Service)
	if !ok {
		return tools.Output{}, tools.ArgErrorf(StoreAPIKey, "%q is not a key name: use 1 to 63 lowercase letters, digits, '.', '_' "+
			"or '-', starting with a letter or digit, such as \"github\"", args.Service)
	}
	if secrets.Reserved(service) {
		// A mailbox's password and a sign-in's token set are written by their integration; a key
		// stored under their name first would be taken for theirs (and squat it).
		return tools.ToolError("`%s` cannot be asked for: %v. Choose another name, such as the service's own (\"github\", \"jira\"); "+
			"a mailbox's password is asked by lucy_connect_email, a sign-in's tokens by the sign-in itself.", service, secrets.ErrReserved), nil
	}
	// The purpose is the model's text, shown to people: a key it somehow holds must not go there.
	why, _ := secrets.RemovePasted(strings.Join(strings.Fields(args.Purpose), " "))
	if k.request == nil {
		return tools.ToolError("Lucy cannot ask for a key in this conversation. An operator can store it with "+
			"`lucy secrets set --team %s %s` (the key on standard input).", inv.Team, service), nil
	}
	existing := ""
	if k.store != nil {
		m, err := k.store.Stat(ctx, inv.Team, service)
		switch {
		case err == nil:
			existing = fmt.Sprintf(" A key for `%s` is already stored (added by %s on %s): submitting the form replaces it, "+
				"which only they or an admin may do.", service, owner(m.Owner), day(m.Created))
		case !errors.Is(err, secrets.ErrNotFound):
			return tools.Output{}, &tools.TransientError{Tool: StoreAPIKey, Err: err}
		}
	}
	if err := k.request.RequestKey(ctx, inv, service, why, secrets.Binding{}); err != nil {
		return tools.SlackFailed(ctx, StoreAPIKey, err)
	}
	return tools.Output{Content: fmt.Sprintf("An Add key button for `%s` is posted in this thread.%s What happens next: the person "+
		"clicks it, a private form opens, they paste the key and Lucy stores it encrypted, as their own key (used in their "+
		"requests only, until an admin shares it with the team); you never see it. Their submission "+
		"arrives in this thread as their message \"I added the key for `%s`.\". End your turn now by asking them to click "+
		"Add key (ask_human), and never ask for the key in chat.", service, existing, service)}, nil
}

func (k *Keys) listIntegrations(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args struct{}
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	var b strings.Builder
	if k.store == nil {
		b.WriteString("Stored keys: none can be stored in this deployment.\n")
	} else {
		metas, err := k.store.List(ctx, inv.Team)
		if err != nil {
			return tools.Output{}, &tools.TransientError{Tool: ListIntegrations, Err: err}
		}
		if len(metas) == 0 {
			b.WriteString("Stored keys: none yet (lucy_store_api_key asks a person for one).\n")
		} else {
			fmt.Fprintf(&b, "Stored keys (%d; values are never shown). A member's key is used only in that member's requests "+
				"unless it is shared with the team; an operator's is the team's; each is sent only to the servers it was given for:\n", len(metas))
			for _, m := range metas {
				fmt.Fprintf(&b, "- %s: %s", m.Service, whose(m))
				switch kind := m.KindOrKey(); kind {
				case secrets.KindMailbox:
					b.WriteString(", a mailbox's password")
				case secrets.KindOAuth:
					b.WriteString(", a sign-in's tokens")
				}
				if len(m.Origins) > 0 {
					b.WriteString(", sent only to " + strings.Join(m.Origins, ", "))
				} else {
					b.WriteString(", not attached to any server yet")
				}
				if m.Integration != "" {
					b.WriteString(", for " + m.Integration)
				}
				fmt.Fprintf(&b, "; added by %s on %s", owner(m.Owner), day(m.Created))
				if m.UpdatedBy != "" {
					fmt.Fprintf(&b, ", replaced by %s on %s", owner(m.UpdatedBy), day(m.Updated))
				}
				b.WriteString("\n")
			}
		}
	}
	var all []Integration
	for _, l := range k.listers {
		var list []Integration
		var err error
		if ul, ok := l.(UserLister); ok {
			list, err = ul.IntegrationsFor(ctx, inv.Team, inv.User) // "yours" is the requester's
		} else {
			list, err = l.Integrations(ctx, inv.Team)
		}
		list = slices.DeleteFunc(list, func(in Integration) bool {
			return !in.Visible(inv.User, inv.User != "" && slices.Contains(k.admins, inv.User))
		})
		if err != nil {
			// One kind failing to list is a line of the answer, not the end of it.
			fmt.Fprintf(&b, "(Some integrations could not be listed: %s)\n", tools.Truncate(secrets.Scrub(err.Error()), 300))
			continue
		}
		all = append(all, list...)
	}
	if len(all) == 0 {
		b.WriteString("Connected MCP servers, OpenAPI services and mailboxes: none.")
		k.writeConnectable(ctx, &b, inv)
		return tools.Output{Content: strings.TrimRight(b.String(), "\n")}, nil
	}
	fmt.Fprintf(&b, "Connected MCP servers, OpenAPI services and mailboxes (%d):\n", len(all))
	for _, in := range all {
		fmt.Fprintf(&b, "- %s %s", kindLabel(in.Kind), in.Name)
		var facts []string
		if in.Scope != "" {
			facts = append(facts, in.Scope)
		}
		if in.Where != "" {
			facts = append(facts, in.Where)
		}
		if in.Credential != "" {
			facts = append(facts, "key "+in.Credential)
		}
		if in.AddedBy != "" {
			facts = append(facts, "added by <@"+in.AddedBy+">")
		}
		if in.SignIn != "" {
			facts = append(facts, in.SignIn)
		}
		if len(facts) > 0 {
			b.WriteString(" (" + strings.Join(facts, ", ") + ")")
		}
		health := "healthy"
		if !in.Healthy {
			health = "not healthy"
		}
		if in.Status != "" {
			health += ": " + in.Status
		} else if in.Healthy {
			health += fmt.Sprintf(", %d tools", in.Tools)
		}
		b.WriteString(": " + health + "\n")
	}
	k.writeConnectable(ctx, &b, inv)
	return tools.Output{Content: strings.TrimRight(b.String(), "\n")}, nil
}

// writeConnectable adds the services that can be connected by name and are not yet.
func (k *Keys) writeConnectable(ctx context.Context, b *strings.Builder, inv tools.Invocation) {
	if k.connectable == nil {
		return
	}
	list := k.connectable.ConnectableFor(ctx, inv.Team, inv.User)
	if len(list) == 0 {
		return
	}
	fmt.Fprintf(b, "\nNot connected yet, connectable by name (lucy_connect_service; the person says e.g. \"connect Linear\"):\n")
	for _, line := range list {
		b.WriteString("- " + line + "\n")
	}
}

type shareAPIKeyArgs struct {
	Service string `json:"service"`
	With    string `json:"with"`
}

// shareAPIKey shares a key with the team or makes it its owner's own again: an admin's decision,
// since it changes whose key everyone's requests use; the approval only stops injected text.
func (k *Keys) shareAPIKey(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args shareAPIKeyArgs
	if err := tools.DecodeArgs(inv, &args); err != nil {
		return tools.Output{}, err
	}
	service, ok := secrets.NormalizeService(args.Service)
	if !ok {
		return tools.Output{}, tools.ArgErrorf(ShareAPIKey, "%q is not a key name: lucy_list_integrations shows the stored keys", args.Service)
	}
	if k.store == nil {
		return tools.ToolError("no keys can be stored in this deployment"), nil
	}
	if inv.User == "" || !slices.Contains(k.admins, inv.User) {
		return tools.ToolError("only an admin can share a key with the team or unshare it: a member's key is used only in " +
			"their own requests. Ask an admin (LUCY_ADMIN_USERS)."), nil
	}
	m, err := k.store.Stat(ctx, inv.Team, service)
	switch {
	case errors.Is(err, secrets.ErrNotFound):
		return tools.ToolError("no key named `%s` is stored (lucy_list_integrations shows the stored keys)", service), nil
	case err != nil:
		return tools.Output{}, &tools.TransientError{Tool: ShareAPIKey, Err: err}
	}
	if secrets.Reserved(service) || m.KindOrKey() != secrets.KindKey {
		return tools.ToolError("`%s` is not a key a person shares: %v", service, secrets.ErrReserved), nil
	}
	shared := args.With == "team"
	if m.Owner == secrets.OperatorOwner {
		return tools.ToolError("`%s` is the operator's key: it is the team's already, in every request", service), nil
	}
	if m, err = k.store.SetShared(ctx, inv.Team, service, shared); errors.Is(err, secrets.ErrNotFound) {
		return tools.ToolError("the key `%s` was deleted meanwhile", service), nil
	} else if err != nil {
		return tools.Output{}, &tools.TransientError{Tool: ShareAPIKey, Err: err}
	}
	if shared {
		return tools.Output{Content: fmt.Sprintf("The key `%s` (added by %s) is shared with the team: everyone's requests use it, "+
			"only with %s.", service, owner(m.Owner), originsOrNone(m.Origins))}, nil
	}
	return tools.Output{Content: fmt.Sprintf("The key `%s` is %s's own again: only their requests use it.", service, owner(m.Owner))}, nil
}

// whose says whose key m is, for lucy_list_integrations.
func whose(m secrets.Meta) string {
	switch {
	case m.Owner == secrets.OperatorOwner:
		return "the team's (stored by the operator)"
	case m.Shared:
		return owner(m.Owner) + "'s, shared with the team"
	}
	return owner(m.Owner) + "'s own (used only in their requests)"
}

// owner names a key's owner for people: a mention, or "the operator".
func owner(user string) string {
	if user == secrets.OperatorOwner {
		return "the operator"
	}
	return "<@" + user + ">"
}

func originsOrNone(o []string) string {
	if len(o) == 0 {
		return "no server yet (its owner or an admin attaches it when connecting one)"
	}
	return strings.Join(o, ", ")
}

func kindLabel(kind string) string {
	switch kind {
	case "mcp":
		return "MCP server"
	case "openapi":
		return "OpenAPI service"
	case "email":
		return "mailbox"
	}
	return kind
}

func day(t time.Time) string {
	if t.IsZero() {
		return "an unknown date"
	}
	return t.UTC().Format("2006-01-02")
}
