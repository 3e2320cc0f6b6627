// Package integrations connects Lucy to a team's other tools: MCP servers (integrations/mcp) and
// OpenAPI services (integrations/openapi), whose tools arrive at run time as tools.Sources, and the
// credentials they use, which never reach the model (package secrets).
//
// This package holds what the kinds share: how a source reads a stored credential (Credentials), how
// a run asks a person for one (KeyRequester: the Add key button), what lucy_list_integrations shows
// (Lister, Integration), and the tools that are about credentials rather than one kind
// (lucy_store_api_key, lucy_list_integrations). Each kind's package declares its own tools.
package integrations

import (
	"context"

	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/tools"
)

// Credentials is how a source reads a team's stored credential, inside the activity that uses it
// (*secrets.Store). Get returns secrets.ErrNotFound when the team has none for service.
type Credentials interface {
	Get(ctx context.Context, team, service string) (string, secrets.Meta, error)
	Stat(ctx context.Context, team, service string) (secrets.Meta, error)
}

// KeyRequester asks a person for a credential: it posts an Add key button in the run's thread (the
// terminal asks for the key without echo). The key then goes from the form to the credential store
// through the gateway, never through the model; the person's submission arrives in the thread as
// their message, which answers a run waiting for it. why is one line on what the key is for; for says
// what the key will be bound to when stored (its origin and integration; Kind and Shared are not
// taken from a request: a key from the form is a KindKey and its submitter's own).
type KeyRequester interface {
	RequestKey(ctx context.Context, inv tools.Invocation, service, why string, for_ secrets.Binding) error
}

// Integration is one connected MCP server or OpenAPI service as lucy_list_integrations shows it.
type Integration struct {
	Kind string // "mcp", "openapi" or "email"
	Name string // the server's or the service's name
	// Scope is "every team" for the operator's configuration (LUCY_MCP_CONFIG), "this workspace"
	// (or "shared with this workspace") for what a team connected from chat, and "yours (only your
	// requests)" or "<@U>'s own (only their requests)" for a member's own integration.
	Scope string
	// Where is the URL or the command (credentials masked).
	Where string
	// Credential names the stored credential it uses ("" for none).
	Credential string
	Healthy    bool
	// Status says why it is not healthy, or what it offers ("12 tools").
	Status string
	Tools  int
	// AddedBy is the Slack user who connected it ("" for the operator's configuration).
	AddedBy string
	// SignIn says, for a service each person signs in to (an MCP server with OAuth), whose
	// account the asker's requests use: their own, the team's (an admin's choice), or none yet.
	SignIn string
	// Owner is the one person whose requests it serves (a member's own MCP server or API service);
	// empty when it serves the team. Another person's own integration is left out of what a run's
	// prompt lists and of what lucy_list_integrations shows a member (Visible).
	Owner string
}

// Visible reports whether in is listed to user: the team's integrations, and user's own. Admins
// see every member's too in lucy_list_integrations (they can share or disconnect them); a run's
// prompt never lists another person's.
func (in Integration) Visible(user string, admin bool) bool {
	return in.Owner == "" || in.Owner == user || admin
}

// Lister lists a kind's integrations of a team, with their health as last seen.
type Lister interface {
	Integrations(ctx context.Context, team string) ([]Integration, error)
}

// UserLister is a Lister whose integrations may be one person's own: IntegrationsFor lists them as
// user sees them (Scope "yours (only your requests)" for user's own).
type UserLister interface {
	IntegrationsFor(ctx context.Context, team, user string) ([]Integration, error)
}
