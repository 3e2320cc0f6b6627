package openapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/workspace"
)

// The fixed names of the package's tools, and the prefix of the tools a service gets.
const (
	ResolveTool = "lucy_resolve_custom_integration"
	DeleteTool  = "lucy_delete_custom_integration"
	// ToolPrefix starts every service's tool: lucy_custom_{service}_{operation}.
	ToolPrefix = "lucy_custom_"
)

// Limits.
const (
	// DefaultMaxOperations is how many operations of one service become tools when
	// LUCY_OPENAPI_MAX_OPERATIONS is not set: enough for a focused integration, few enough that the
	// tools' schemas do not crowd the model's context.
	DefaultMaxOperations = 30
	// MaxOperationsLimit bounds LUCY_OPENAPI_MAX_OPERATIONS.
	MaxOperationsLimit = 100
	// MaxTeamTools bounds the tools of all of a team's services together: a run is offered its
	// requester's services and the shared ones, and model APIs take at most 128 tools in all (the
	// compiled-in ones and a team's MCP servers' included).
	MaxTeamTools = 60
	// maxNameLen is the longest tool name model APIs accept.
	maxNameLen = 64
	// maxServiceLen bounds a service's name, so that its tools' names keep room for the operation.
	maxServiceLen = 24
	// DefaultMaxDocumentBytes bounds a fetched or read OpenAPI document when
	// LUCY_OPENAPI_MAX_DOCUMENT_MB is not set: room for GitHub's REST description (13 MB as
	// published) and its Enterprise ones. Only what is chosen of a JSON document is held while it is
	// read (index.go), so the cap bounds the download rather than the memory a resolve keeps.
	DefaultMaxDocumentBytes = 32 << 20
	// MaxDocumentBytesLimit bounds LUCY_OPENAPI_MAX_DOCUMENT_MB.
	MaxDocumentBytesLimit = 256 << 20
	// maxStoredDocBytes bounds the pruned document kept in the registry.
	maxStoredDocBytes = 2 << 20
	// maxRecordBytes bounds a service's whole registry record (its document, tools and schemas), checked
	// before it is written: every worker keeps the team's records in memory.
	maxRecordBytes = 2 << 20
	// maxTeamSchemaBytes bounds the descriptions and schemas of all of a team's services' tools
	// together (MaxTeamTools bounds their number): a run sends those it is offered with every model
	// call.
	maxTeamSchemaBytes = 256 << 10
	// maxResponseBytes bounds an API response read (the runner caps what the model sees).
	maxResponseBytes = 2 << 20
	// cacheTTL is how long a worker answers a team's services from memory before it looks at the
	// shared registry again: runs ask the Source several times per turn, and another worker's
	// resolve shows here within this time.
	cacheTTL = 5 * time.Second
)

// Deps are what the services need; toolset builds them from toolset.Deps.
type Deps struct {
	// State is Lucy's durable store shared by every worker: the registry. Nil means none, and the
	// tools say so.
	State workspace.Store
	// Workspace is the teams' files, where a document can be read from.
	Workspace *files.Workspace
	// Credentials are the teams' stored keys, read only inside a call. Nil means none are stored. A
	// store that can also bind keys (Bind, Unbind, SetShared: a *secrets.Store) lets a resolve attach
	// an existing key to its API; without that, only new keys (bound by the Add key form) are used.
	Credentials integrations.Credentials
	// Keys asks a person for a missing key (the Add key button); nil means it cannot be asked.
	Keys integrations.KeyRequester
	// HTTP is the client for documents, API calls and token endpoints. Nil means
	// tools.NewGuardedClient's own client (it refuses private addresses when dialing too).
	HTTP *http.Client
	// Hosts are the private hosts an operator allows (LUCY_ALLOWED_PRIVATE_HOSTS;
	// tools.AllowAllPrivate in tests with httptest). The zero value allows none.
	Hosts tools.PrivateHosts
	// CheckURL refuses a URL Lucy may not reach; nil means Hosts.CheckURL. Tests replace it.
	CheckURL func(ctx context.Context, u *url.URL) error
	// Admins (LUCY_ADMIN_USERS) may share a service with the team, replace or delete anyone's, and
	// attach anyone's key to an API.
	Admins []string
	// MaxOperations is the cap of operations per service (LUCY_OPENAPI_MAX_OPERATIONS); 0 means
	// DefaultMaxOperations.
	MaxOperations int
	// MaxDocumentBytes is the largest document read (LUCY_OPENAPI_MAX_DOCUMENT_MB); 0 means
	// DefaultMaxDocumentBytes.
	MaxDocumentBytes int64
	Log              zerolog.Logger
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// Services is the domain: the two tools, the Source of the services' tools and the Lister of the
// team's services. It is safe for concurrent use.
type Services struct {
	d   Deps
	api *http.Client // API calls: no redirects followed
	// tokenHTTP fetches OAuth2 tokens: as api, with a timeout of its own, since a token source
	// refreshes outside any call's deadline.
	tokenHTTP *http.Client
	fetch     *http.Client // documents: redirects followed, each checked
	checkFn   func(ctx context.Context, u *url.URL) error
	mu        sync.Mutex
	teams     map[string]*teamCache // team -> its services as last read
	// cachedBytes is the teams' cachedSize in all, bounded by maxCached (maxCachedBytes; tests set
	// less); tick orders the teams' use for the eviction.
	cachedBytes, maxCached int
	tick                   uint64
	tokens                 map[string]*tokenSource // OAuth2 tokens per team, service and credential
	failures               map[string]failure      // team/service -> the last failed call on this worker
	// slots bound the calls of a service at once in this worker (record.MaxConcurrent).
	slots integrations.Slots
}

// New returns the services over d.
func New(d Deps) *Services {
	if d.MaxOperations <= 0 {
		d.MaxOperations = DefaultMaxOperations
	}
	if d.MaxDocumentBytes <= 0 {
		d.MaxDocumentBytes = DefaultMaxDocumentBytes
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	s := &Services{d: d, teams: map[string]*teamCache{}, maxCached: maxCachedBytes, tokens: map[string]*tokenSource{}, failures: map[string]failure{}}
	s.fetch = tools.NewGuardedClient(d.HTTP, d.Hosts)
	api := *tools.NewGuardedClient(d.HTTP, d.Hosts)
	// An API's redirect is reported, not followed: a POST must not be repeated elsewhere, and a key
	// in the query must not travel to another host.
	api.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	s.api = &api
	tok := api
	tok.Timeout = 30 * time.Second
	s.tokenHTTP = &tok
	s.checkFn = d.CheckURL
	if s.checkFn == nil {
		s.checkFn = d.Hosts.CheckURL
	}
	return s
}

func (s *Services) isAdmin(user string) bool { return user != "" && slices.Contains(s.d.Admins, user) }

// Source returns the services as a tools.Source (the Services value is one; this names it for
// wiring).
func (s *Services) Source() tools.Source { return s }

var (
	_ tools.Source        = (*Services)(nil)
	_ integrations.Lister = (*Services)(nil)
)
