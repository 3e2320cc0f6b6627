package integrations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// The tools that are about credentials rather than one kind of integration.
const (
	StoreAPIKey      = "lucy_store_api_key"
	ListIntegrations = "lucy_list_integrations"
)

// StoredKeys is what the tools read of the credential store (*secrets.Store): names, owners and
// dates, never a value.
type StoredKeys interface {
	Stat(ctx context.Context, team, service string) (secrets.Meta, error)
	List(ctx context.Context, team string) ([]secrets.Meta, error)
}

// Keys is the domain of lucy_store_api_key and lucy_list_integrations.
type Keys struct {
	store   StoredKeys
	request KeyRequester
	listers []Lister
}

// NewKeys returns the domain over the team's stored keys, the way to ask a person for one (nil: it
// cannot be asked here) and the kinds' listers (MCP servers, OpenAPI services).
func NewKeys(store StoredKeys, request KeyRequester, listers []Lister) *Keys {
	return &Keys{store: store, request: request, listers: listers}
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: StoreAPIKey,
		Description: "Ask the person you work for to give Lucy an API key or token for a service (GitHub, Jira, an MCP " +
			"server, an OpenAPI service), stored encrypted for this workspace. It posts an Add key button in this " +
			"thread: the person clicks it and pastes the key into a private form; you never see the key. Never ask " +
			"for a key in chat, and never repeat one. After calling it, end your turn by asking the person to click " +
			"the button (ask_human).",
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
		Name: ListIntegrations,
		Description: "List what this workspace has connected: the stored keys (names, who added them and when; never " +
			"their values), the MCP servers and OpenAPI services with their health and tools, and the mailboxes with their health.",
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
			existing = fmt.Sprintf(" A key for `%s` is already stored (added by <@%s> on %s): submitting the form replaces it, "+
				"which only <@%s> or an admin may do.", service, m.Owner, day(m.Created), m.Owner)
		case !errors.Is(err, secrets.ErrNotFound):
			return tools.Output{}, &tools.TransientError{Tool: StoreAPIKey, Err: err}
		}
	}
	if err := k.request.RequestKey(ctx, inv, service, why, secrets.Binding{}); err != nil {
		return tools.SlackFailed(ctx, StoreAPIKey, err)
	}
	return tools.Output{Content: fmt.Sprintf("An Add key button for `%s` is posted in this thread.%s What happens next: the person "+
		"clicks it, a private form opens, they paste the key and Lucy stores it encrypted; you never see it. Their submission "+
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
			fmt.Fprintf(&b, "Stored keys (%d; values are never shown):\n", len(metas))
			for _, m := range metas {
				fmt.Fprintf(&b, "- %s: added by <@%s> on %s", m.Service, m.Owner, day(m.Created))
				if m.UpdatedBy != "" {
					fmt.Fprintf(&b, ", replaced by <@%s> on %s", m.UpdatedBy, day(m.Updated))
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
		if err != nil {
			// One kind failing to list is a line of the answer, not the end of it.
			fmt.Fprintf(&b, "(Some integrations could not be listed: %s)\n", tools.Truncate(secrets.Scrub(err.Error()), 300))
			continue
		}
		all = append(all, list...)
	}
	if len(all) == 0 {
		b.WriteString("Connected MCP servers, OpenAPI services and mailboxes: none.")
		return tools.Output{Content: b.String()}, nil
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
	return tools.Output{Content: strings.TrimRight(b.String(), "\n")}, nil
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
