// Package toolset builds the tools a worker runs: every compiled-in domain of tools (files, Slack, the
// web, documents, scripts, recurring jobs and monitors, …) from one set of dependencies, and the
// run-time sources a team connects. It is the only package that knows every domain: adding one is a
// line here and a blank line nowhere else (docs/architecture.md, "How to add a tool").
package toolset

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"strings"

	// The delegation tools are declared by the sub-agents' package; the workflow runs them, and the
	// model is described them through this worker's catalogue.
	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/catalog"
	"github.com/lucy-agent/lucy/integrations/email"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/integrations/openapi"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/skills"
	"github.com/lucy-agent/lucy/spend"
	_ "github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/activitylog"
	"github.com/lucy-agent/lucy/tools/browser"
	_ "github.com/lucy-agent/lucy/tools/builtin" // the tools the workflow runs: declared, no domain
	"github.com/lucy-agent/lucy/tools/clock"
	"github.com/lucy-agent/lucy/tools/documents"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/filesearch"
	"github.com/lucy-agent/lucy/tools/script"
	"github.com/lucy-agent/lucy/tools/slackaccess"
	"github.com/lucy-agent/lucy/tools/slacktools"
	"github.com/lucy-agent/lucy/tools/web"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/rs/zerolog"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Deps are the clients and settings of every domain; the worker builds them, tests pass fakes.
type Deps struct {
	// Slack returns the client for a team; nil (or a nil result) means Slack is not available.
	Slack func(team string) tools.SlackAPI
	// HTTP is the client for lucy_web_fetch. Nil means a client that also checks, at dial time, that it
	// connects to no private address (so DNS rebinding cannot reach one). A client given here gets the
	// redirect checks, and the address checks before each request.
	HTTP *http.Client
	// DataDir is the root of local files: workspace files live under DataDir/workspaces/<team>/
	// unless Workspace is set.
	DataDir string
	// Workspace is where the teams' workspace files live (LUCY_WORKSPACE_STORE); nil means the
	// local folder under DataDir.
	Workspace workspace.Store
	Log       zerolog.Logger
	// AllowPrivateNetworks lets lucy_web_fetch reach loopback, private, link-local and reserved
	// addresses. Tests set it to fetch from httptest; production leaves it false so that the model
	// cannot probe the internal network or a cloud metadata endpoint.
	AllowPrivateNetworks bool
	// PrivateHosts are the internal hosts that URLs from chat (lucy_web_fetch, monitors, connected
	// MCP servers and OpenAPI services) may reach nonetheless: LUCY_ALLOWED_PRIVATE_HOSTS, set by the
	// operator only. Zero means none. Use NetPolicy, which AllowPrivateNetworks overrides.
	PrivateHosts tools.PrivateHosts
	// Schedules manages Temporal Schedules (recurring jobs and monitors); nil means this process
	// cannot, and those tools say so.
	Schedules client.ScheduleClient
	// DataConverter decodes what schedules hold (a job's input, its memo); it must be the Temporal
	// client's. nil means the SDK's default.
	DataConverter converter.DataConverter
	// Sandbox is the command that runs lucy_run_script's child process; zero means this executable
	// (which must run sandbox.Main when sandbox.EnvChild is set, as cmd/lucy and the tests do).
	Sandbox sandbox.Command
	// ScriptLimits bound each script; zero means sandbox.DefaultLimits (LUCY_SCRIPT_*).
	ScriptLimits sandbox.Limits
	// Search is lucy_web_search's provider (LUCY_SEARCH_*); zero means not configured.
	Search web.SearchConfig
	// SlackUser returns a client with a user token (xoxp-, SLACK_USER_TOKEN) for a team, which
	// search.messages needs; nil (or a nil result) means only the bot token exists.
	SlackUser func(team string) tools.SlackSearchAPI
	// SlackArchive is the archive of the channels' messages the Slack search reads without a user
	// token (package slackarchive, worker.SlackArchive); nil: none (LUCY_SLACK_ARCHIVE_DAYS=0).
	SlackArchive slacktools.Archive
	// Admins are the Slack user IDs that may manage anyone's jobs and monitors (LUCY_ADMIN_USERS).
	Admins []string
	// ScheduleLimits bound the jobs and monitors of a workspace and a person, and how often they
	// fire (LUCY_MAX_JOBS_PER_*, LUCY_MAX_MONITORS_PER_*, LUCY_MIN_*_INTERVAL); zero fields mean
	// schedules.DefaultScheduleLimits.
	ScheduleLimits schedules.ScheduleLimits
	// State is Lucy's own durable store, shared by every worker (worker.StateStore): a team's
	// connected integrations live there, out of the file tools' reach. nil means none: the tools
	// that connect an integration say so.
	State workspace.Store
	// Credentials are the teams' stored keys (package secrets), read only inside the activity that
	// uses one; nil means none are stored.
	Credentials integrations.Credentials
	// Keys asks a person for a missing credential (the Add key button); nil means it cannot be asked.
	Keys integrations.KeyRequester
	// OpenAPIMaxOperations is how many operations of one OpenAPI service become tools
	// (LUCY_OPENAPI_MAX_OPERATIONS); zero means openapi.DefaultMaxOperations.
	OpenAPIMaxOperations int
	// OpenAPIMaxDocumentBytes is the largest OpenAPI document read (LUCY_OPENAPI_MAX_DOCUMENT_MB);
	// zero means openapi.DefaultMaxDocumentBytes.
	OpenAPIMaxDocumentBytes int64
	// Listers are the integration kinds' lists that lucy_list_integrations and the system prompt
	// show, besides the OpenAPI services this package builds (the MCP client's).
	Listers []integrations.Lister
	// MCPServers are the operator's MCP servers (LUCY_MCP_CONFIG), offered to every team.
	MCPServers []mcp.Server
	// Services is the service catalogue in force (the built-in one with LUCY_SERVICE_CATALOG's
	// entries on top: catalog.Load); nil means the built-in one.
	Services *catalog.Catalog
	// MCPLimits bound what an MCP server may cost a run; zero means mcp.Limits' defaults.
	MCPLimits mcp.Limits
	// MCPOAuth signs teams in to remote MCP servers that require OAuth; nil: not offered.
	MCPOAuth *oauth.Flow
	// Chromium is lucy_browse's browser binary (LUCY_CHROMIUM; "" looks for chromium on PATH). Where
	// none is found the tool is not offered.
	Chromium string
	// BrowserLimits bound each lucy_browse call; zero means browser.DefaultLimits.
	BrowserLimits browser.Limits
	// BrowserSessions keeps lucy_browse's named sessions (cookies and storage sealed in the state
	// store, browser.NewSessions); nil: a call naming a session is refused. Its fill_secret steps
	// read Credentials (when the store can bind a key: *secrets.Store) and ask with Keys.
	BrowserSessions *browser.Sessions
	// EmailListeners keeps each connected mailbox's new-mail Schedule in step with its settings
	// (email.ScheduleManager); nil means mailboxes connect without a listener.
	EmailListeners email.ListenerSchedules
	// MailRootCAs verify the certificates of mail servers (LUCY_MAIL_CA_FILE added to the system's
	// roots); nil means the system's roots.
	MailRootCAs *x509.CertPool
	// MailProviders are the OAuth mail providers the operator registered a client with
	// (email.GoogleProvider, email.MicrosoftProvider by auth); empty: password mailboxes only.
	MailProviders map[string]email.Provider
	// Memory is the teams' notes (lucy_remember, lucy_recall, lucy_forget), in the state store; nil
	// means memory is not available here, and the tools say so.
	Memory *memory.Store
	// Visibility lists the agent runs for lucy_activity (the worker's Temporal client); nil: the
	// tool lists side effects only.
	Visibility audit.Visibility
	// Spend is the spend ledger (package spend) lucy_set_spend_limit changes; nil means spend limits
	// are not kept here, and the tool says so.
	Spend *spend.Ledger
}

// Set is what the worker's activities use: the Runner for tool calls, and the domain values whose
// other activities (a job's or a monitor's firing) need them.
type Set struct {
	Runner *tools.Runner
	// Schedules answers a job's or monitor's firing: access, the monitor's check, its state.
	Schedules *schedules.Manager
	// Integrations list a team's connected integrations of each kind, for the system prompt.
	Integrations []integrations.Lister
	// MCP is the MCP client: a tool source of the Runner, and the Lister of the teams' MCP servers
	// (lucy_list_integrations). Close it when the worker stops: it ends the servers it started.
	MCP *mcp.Source
	// Email is the mail domain: its tools, and what the new-mail listener's activities use.
	Email *email.Email
	// Skills are the skills of every source (platform, the operator's in DataDir/skills, each team's
	// in its workspace): the domain of lucy_load_skill and lucy_save_skill, and what the system
	// prompt lists.
	Skills *skills.Catalog
}

// New builds every domain from d and binds their tools; sources are the run-time tool sources (a
// team's MCP servers, OpenAPI services). A tool left without its domain is a wiring mistake of this
// package, caught by its tests, so New panics on it rather than start a worker that fails calls.
func New(d Deps, sources ...tools.Source) *Set {
	ws := files.New(workspaceStore(d), filesSlack(d.Slack))
	access := slackaccess.New(d.Admins, slacktools.AccessAPI(d.Slack), nil)
	slack := slacktools.New(d.Slack, d.SlackUser, access)
	if d.SlackArchive != nil {
		slack.WithArchive(d.SlackArchive)
	}
	fetcher := web.New(d.HTTP, d.NetPolicy(), d.Search)
	// The browser: the page and every request it makes meet the same address rule as a fetch.
	chromium := browser.Find(d.Chromium)
	if chromium == "" {
		d.Log.Info().Str("LUCY_CHROMIUM", d.Chromium).Msg("lucy_browse is not offered: no Chromium found (apt-get install chromium, or set LUCY_CHROMIUM)")
	}
	pages := browser.New(chromium, d.NetPolicy(), ws, d.BrowserLimits)
	if d.BrowserSessions != nil {
		pages.WithSessions(d.BrowserSessions)
	}
	if c, ok := d.Credentials.(browser.Credentials); ok {
		pages.WithCredentials(c, d.Keys)
	}
	sched := schedules.New(schedules.Deps{Schedules: d.Schedules, DataConverter: d.DataConverter, Admins: d.Admins,
		ScheduleLimits: d.ScheduleLimits, Slack: slack, Web: fetcher, Browser: pages})
	// A team's OpenAPI services: a domain (the tools that connect and disconnect them) and a source
	// (their operations' tools).
	custom := openapi.New(openapi.Deps{State: d.State, Workspace: ws, Credentials: d.Credentials, Keys: d.Keys, HTTP: d.HTTP,
		Hosts: d.NetPolicy(), Admins: d.Admins, MaxOperations: d.OpenAPIMaxOperations,
		MaxDocumentBytes: d.OpenAPIMaxDocumentBytes, Log: d.Log})
	// The MCP client: the operator's servers and each team's. A server a team connects from chat is a
	// URL a person chose: guarded as lucy_web_fetch's are.
	// The MCP client binds a key to a server's address when its connect is approved: it needs the
	// store's write side (*secrets.Store has it; a read-only store leaves MCP without keys).
	mcpCreds, _ := d.Credentials.(mcp.Credentials)
	mcpClient := mcp.New(mcp.Deps{Servers: d.MCPServers, State: d.State, Credentials: mcpCreds, Keys: d.Keys,
		Admins: d.Admins, Log: d.Log, Limits: d.MCPLimits, HTTP: tools.NewGuardedClient(d.HTTP, d.NetPolicy()),
		CheckURL: d.NetPolicy().CheckURL, OAuth: d.MCPOAuth})
	// A team's mailboxes: the mail tools, and a lister of their health. Mail servers are hosts a
	// person named, guarded as lucy_web_fetch's URLs are.
	// The listener's channel meets the access rule of recurring jobs, for the person who connected it.
	var mailAccess func(ctx context.Context, team, user, channel string) (string, error)
	if d.Slack != nil {
		mailAccess = access.ScheduleAccess
	}
	var mailTLS *tls.Config
	if d.MailRootCAs != nil {
		mailTLS = &tls.Config{RootCAs: d.MailRootCAs, MinVersion: tls.VersionTLS12}
	}
	mail := email.New(email.Deps{State: d.State, Workspace: workspaceStore(d), Credentials: d.Credentials, Keys: d.Keys,
		Hosts: d.NetPolicy(), Admins: d.Admins, Schedules: d.EmailListeners, Access: mailAccess, TLS: mailTLS, Log: d.Log,
		OAuth: d.MCPOAuth, Providers: d.MailProviders})
	listers := append([]integrations.Lister{mcpClient, custom, mail}, d.Listers...)
	// Skills: the platform's, the operator's and each team's (team skills in force only as approved,
	// which the state store records).
	skillSet := skills.New(skills.Deps{Platform: skills.PlatformFS(), Operator: skills.OperatorFS(d.DataDir),
		Workspace: workspaceStore(d), State: d.State, Admins: d.Admins, Log: d.Log})
	// The service catalogue: a service connected by name goes through the MCP client's connect or
	// the OpenAPI resolve; lucy_list_integrations lists the ones not connected yet.
	services := catalog.NewConnector(d.Services, mcpClient, custom, listers, d.Admins)
	keys := integrations.NewKeys(storedKeys(d.Credentials), d.Keys, listers, d.Admins).WithConnectable(services)
	// The file search finds by meaning too with memory's embedder (LUCY_MODEL_EMBEDDING), its vectors
	// kept in the state store for every worker.
	fileSearch := filesearch.New(ws).WithEmbeddings(d.Memory.Embedder(), d.State, d.Log)
	// What Lucy did: the side-effect record in the state store and the runs in visibility, filtered by
	// the access rule.
	var record *audit.Log
	if d.State != nil {
		record = audit.New(d.State, nil)
	}
	activity := activitylog.New(record, d.Visibility, d.DataConverter, access, nil)
	domains := []any{activity, skillSet, ws, documents.New(ws, nil), fileSearch, script.New(ws, d.Sandbox, d.ScriptLimits), clock.New(nil), slack, fetcher, pages, sched, custom,
		mcpClient, mail, keys, services, memory.NewTools(d.Memory, memory.NewViewer(access, slacktools.AccessAPI(d.Slack))),
		spend.NewTools(d.Spend, d.Admins, nil)}
	r, err := tools.NewRunner(d.Log, domains, append([]tools.Source{mcpClient, custom}, sources...)...)
	if err == nil && len(r.Unbound()) > 0 {
		err = fmt.Errorf("no domain given for %s", strings.Join(r.Unbound(), ", "))
	}
	if err != nil {
		panic(fmt.Sprintf("toolset: %v", err))
	}
	return &Set{Runner: r, Schedules: sched, Integrations: listers, MCP: mcpClient, Email: mail, Skills: skillSet}
}

// NetPolicy is the private-address policy of every request to a URL from chat: PrivateHosts, or
// every private address when AllowPrivateNetworks (tests). A domain that makes such requests checks
// each URL with NetPolicy().CheckURL and sends it through tools.NewGuardedClient(client, NetPolicy()).
func (d Deps) NetPolicy() tools.PrivateHosts {
	if d.AllowPrivateNetworks {
		return tools.AllowAllPrivate()
	}
	return d.PrivateHosts
}

// storedKeys is what lucy_list_integrations and lucy_store_api_key read of the credentials: the
// store lists names and owners (a *secrets.Store does); nil when there is none.
func storedKeys(c integrations.Credentials) integrations.StoredKeys {
	if k, ok := c.(integrations.StoredKeys); ok {
		return k
	}
	return nil
}

// workspaceStore is Deps.Workspace, or the local folder under Deps.DataDir; nil without either.
func workspaceStore(d Deps) workspace.Store {
	if d.Workspace == nil && d.DataDir != "" {
		return workspace.NewLocal(d.DataDir)
	}
	return d.Workspace
}

// filesSlack gives the files domain the Slack clients it shares generated files with.
func filesSlack(slack func(team string) tools.SlackAPI) func(team string) files.Slack {
	if slack == nil {
		return nil
	}
	return func(team string) files.Slack {
		if api := slack(team); api != nil {
			return api
		}
		return nil // not a non-nil interface holding nothing
	}
}
