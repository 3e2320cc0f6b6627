// Package config loads and validates Lucy's configuration from the environment.
//
// There is one Config for every process. Load reads every variable in one place, applies defaults and
// returns an actionable, one-line error for each mistake a person can make (a wrong token prefix, a
// malformed address, no LLM configured), so that `lucy` fails at start instead of at the first message.
package config

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/tools"
)

// Mode says which process is being configured; some settings are required only by some processes.
type Mode string

const (
	ModeDev     Mode = "dev"     // embedded Temporal + UI + worker + gateway
	ModeWorker  Mode = "worker"  // workflows and activities against TEMPORAL_ADDRESS
	ModeGateway Mode = "gateway" // Slack events in, signals out
	ModeChat    Mode = "chat"    // terminal conversation against a running stack
	ModeSetup   Mode = "setup"   // namespace and search attributes on a cluster, then exit
	ModeSecrets Mode = "secrets" // `lucy secrets`: the teams' stored keys, as an operator
)

// GatewayMode is how the gateway receives Slack events.
type GatewayMode string

const (
	GatewaySocket   GatewayMode = "socket"   // Socket Mode: SLACK_APP_TOKEN + SLACK_BOT_TOKEN
	GatewayHTTP     GatewayMode = "http"     // Events API: SLACK_SIGNING_SECRET + SLACK_BOT_TOKEN
	GatewayTerminal GatewayMode = "terminal" // stdin/stdout against the local workspace
)

// Tiers in escalation order. The names are part of the wire format (they appear in workflow history).
var Tiers = []string{"fast", "default", "code", "research", "document", "frontier"}

// Config is everything a Lucy process reads from its environment.
type Config struct {
	Mode Mode

	// Temporal
	TemporalAddress   string // TEMPORAL_ADDRESS; empty in dev means "embedded"
	TemporalNamespace string // TEMPORAL_NAMESPACE
	TemporalAPIKey    string // TEMPORAL_API_KEY (Temporal Cloud)
	TemporalProfile   string // TEMPORAL_PROFILE: the temporal.toml profile chosen, if any
	// temporal is Temporal's standard client configuration as loaded (temporal.go), and
	// temporalVars the variable names the operator used for the client certificate and key (the
	// old names still work), for error messages.
	temporal     envconfig.ClientConfigProfile
	temporalVars map[string]string
	// Deprecations are the lines a process logs at start about settings it read under an old name.
	Deprecations []string
	// SetupCreateNamespace is whether `lucy setup` may create a missing namespace
	// (LUCY_SETUP_CREATE_NAMESPACE, default true). Off where namespaces are made elsewhere, as on
	// Temporal Cloud (its API keys cannot register namespaces): then a missing one is an error that
	// says so.
	SetupCreateNamespace bool
	// ConnectTimeout is how long a process keeps retrying to reach Temporal at start
	// (LUCY_TEMPORAL_CONNECT_TIMEOUT): long enough to ride out a rolling restart of the cluster.
	ConnectTimeout time.Duration
	// WorkerStopTimeout is how long `lucy worker` lets in-flight activities finish after SIGTERM
	// before cancelling them (LUCY_WORKER_STOP_TIMEOUT); a Kubernetes pod's
	// terminationGracePeriodSeconds must be longer.
	WorkerStopTimeout time.Duration

	// Embedded development stack
	DataDir      string // LUCY_DATA_DIR
	TemporalPort int    // LUCY_TEMPORAL_PORT
	UIPort       int    // LUCY_UI_PORT

	HTTPAddr string // LUCY_HTTP_ADDR
	// WorkerHTTPAddr (LUCY_WORKER_HTTP_ADDR) is where `lucy worker` serves /healthz, /readyz and
	// /metrics. `lucy dev` serves them once, on HTTPAddr, for the whole process.
	WorkerHTTPAddr string
	// PublicURL (LUCY_PUBLIC_URL) is the gateway's base URL as a browser reaches it, without a
	// trailing slash: the sign-in to an MCP server that requires OAuth redirects the person's browser
	// to PublicURL + "/mcp/oauth/callback", which the gateway serves. Empty means no public URL (Socket
	// Mode behind a firewall): sign-in is not offered, and a stored token is the way in.
	PublicURL string

	// Slack
	SlackBotToken string // SLACK_BOT_TOKEN (xoxb-)
	// SlackUserToken (xoxp-, optional) lets lucy_search_slack_history use Slack's search.messages,
	// which refuses bot tokens.
	SlackUserToken     string // SLACK_USER_TOKEN
	SlackAppToken      string // SLACK_APP_TOKEN (xapp-)
	SlackSigningSecret string // SLACK_SIGNING_SECRET
	SlackAPIURL        string // SLACK_API_URL, always ends in "/"
	Gateway            GatewayMode

	// Approvals: Slack user IDs that may approve any destructive action, besides the requester.
	AdminUsers []string // LUCY_ADMIN_USERS (comma separated)
	// ApprovalKey is the secret the gateway signs messages and approval clicks with and the worker
	// checks them with (package signing), so that a signal sent straight to Temporal cannot approve
	// anything in someone's name. It is LUCY_APPROVAL_KEY when set, else derived from
	// SLACK_BOT_TOKEN, which `lucy worker` and `lucy gateway` both require: production needs no extra
	// setting. It is zero when neither is set (the terminal without Slack); `lucy dev` and `lucy chat`
	// then use a random key kept in LUCY_DATA_DIR (cmd/lucy does that file I/O; Load does none).
	ApprovalKey signing.Key
	// ApprovalKeySource says where ApprovalKey came from, for logs: "LUCY_APPROVAL_KEY",
	// "SLACK_BOT_TOKEN", a key file's path, or "" for none.
	ApprovalKeySource string
	// SecretsKey encrypts the credentials people store for their tools (LUCY_SECRETS_KEY, 32 bytes
	// in base64 or hex; package secrets). `lucy worker` and `lucy gateway` require it, the same in
	// every process; `lucy dev` and `lucy secrets` without it use the key file in LUCY_DATA_DIR
	// (cmd/lucy does that file I/O; Load does none). Zero when not set.
	SecretsKey secrets.Key

	// MCPConfig is the operator's MCP servers file (LUCY_MCP_CONFIG), for every team. Empty means
	// LUCY_DATA_DIR/mcp.json, where a missing file means no servers; a file named here must exist
	// and be valid, or the worker does not start (worker.MCPServers reads it: Load does no I/O).
	MCPConfig string
	// ServiceCatalog is the operator's service catalogue file (LUCY_SERVICE_CATALOG): its entries
	// replace the built-in ones of the same name and add new ones. Empty means the built-in
	// catalogue alone; a file named here must exist and be valid, or the worker does not start
	// (worker.ServiceCatalog reads it: Load does no I/O).
	ServiceCatalog string

	// MaxToolCalls is how many tool calls of one model reply are run (LUCY_MAX_TOOL_CALLS); the excess
	// calls get an error result, so a model that asks for fifty calls at once cannot make one turn
	// run unbounded work.
	MaxToolCalls int
	// MaxRunsPerTeam caps a workspace's agent runs at once (LUCY_MAX_RUNS_PER_TEAM); 0 means no cap.
	// A request over the cap waits in the workspace's line (workflows.RunSlots) and is told its place.
	MaxRunsPerTeam int
	// OpenAPIMaxOperations is how many operations of one OpenAPI service (a custom integration)
	// become tools (LUCY_OPENAPI_MAX_OPERATIONS): a larger API is connected in part, the operations
	// the request needs.
	OpenAPIMaxOperations int
	// OpenAPIMaxDocumentMB is the largest OpenAPI document a resolve reads, in MiB
	// (LUCY_OPENAPI_MAX_DOCUMENT_MB): room for GitHub's 13 MB REST description by default. Only the
	// chosen part of a JSON document is held while it streams in, so this bounds the download.
	OpenAPIMaxDocumentMB int
	// UserEventsPerMinute is how many messages one person may hand to Lucy per minute, per gateway
	// replica (LUCY_USER_EVENTS_PER_MINUTE; 0: no limit). "cancel that" is never limited.
	UserEventsPerMinute int
	// SlackArchiveDays is how long the Slack archive keeps the channels' messages for the search
	// tool (LUCY_SLACK_ARCHIVE_DAYS; 0: no archive). Package slackarchive.
	SlackArchiveDays int
	// SpendLimits are the operator's default model budgets of every team and person, daily and
	// monthly (LUCY_SPEND_TEAM_DAILY, …_TEAM_MONTHLY, …_PERSON_DAILY, …_PERSON_MONTHLY; unset or 0: no
	// limit); an admin overrides them per team (lucy_set_spend_limit). Package spend.
	SpendLimits spend.Limits
	// ModelConcurrency bounds the model calls one worker makes at once to one model
	// (LUCY_MODEL_CONCURRENCY); the rest wait, heartbeating, for a slot.
	ModelConcurrency int
	// MemoryTokens is the budget, in tokens, of the team memory block in a run's system prompt
	// (LUCY_MEMORY_TOKENS).
	MemoryTokens int
	// EmbeddingModel is the embeddings model on the OpenAI-compatible endpoint that adds semantic
	// recall to the lexical search of notes (LUCY_MODEL_EMBEDDING); empty means lexical only.
	EmbeddingModel string

	// Schedules bound the recurring jobs and monitors: how many a workspace and one person may have
	// (admins only the workspace's), and the least time between two firings of a job or two checks
	// of a monitor.
	Schedules ScheduleLimits

	// ScriptTimeout and ScriptMemoryMB bound each lucy_run_script (LUCY_SCRIPT_TIMEOUT,
	// LUCY_SCRIPT_MEMORY_MB); its CPU time is bounded to the timeout too.
	ScriptTimeout  time.Duration
	ScriptMemoryMB int

	// EmailPollInterval is how often each connected mailbox with a channel is checked for new mail
	// (LUCY_EMAIL_POLL_INTERVAL, 10s to 1h, default 1m).
	EmailPollInterval time.Duration
	// MailCAFile is LUCY_MAIL_CA_FILE: a PEM bundle of CA certificates trusted, besides the system's,
	// for the certificates of connected mailboxes' IMAP and SMTP servers (a company mail server with
	// a private CA). MailRootCAs is the system's roots with it added, checked at start; nil when
	// unset (the system's roots, which Go's SSL_CERT_FILE and SSL_CERT_DIR also change).
	MailCAFile  string
	MailRootCAs *x509.CertPool
	// GoogleClientID and GoogleClientSecret (LUCY_GOOGLE_CLIENT_ID, _SECRET) are the OAuth client an
	// operator registered at Google for Gmail and Google Workspace mailboxes; MicrosoftClientID,
	// MicrosoftClientSecret and MicrosoftTenant (LUCY_MICROSOFT_CLIENT_ID, _SECRET, _TENANT) the one
	// registered in Microsoft Entra for Microsoft 365 mailboxes. Unset: those mailboxes cannot sign
	// in (a password still works where the provider allows one).
	GoogleClientID, GoogleClientSecret                        string
	MicrosoftClientID, MicrosoftClientSecret, MicrosoftTenant string

	// LLM
	LLMBaseURL string            // OPENAI_BASE_URL, or OpenRouter's when OPENROUTER_API_KEY is set
	LLMAPIKey  string            // OPENAI_API_KEY or OPENROUTER_API_KEY
	Provider   string            // "openai", "openrouter" or "custom"
	Models     map[string]string // tier -> model, LUCY_MODEL_<TIER>
	// PayloadKeys, when set (LUCY_PAYLOAD_KEYS), encrypt every payload written to Temporal (package
	// codec); the first key seals, all of them open. CodecAddr (LUCY_CODEC_ADDR) is where `lucy
	// worker` serves the Web UI's codec endpoint; `lucy dev` serves it on a loopback port by itself.
	PayloadKeys []codec.Key
	CodecAddr   string
	// CodecLogin (LUCY_CODEC_OIDC_ISSUER, LUCY_CODEC_OIDC_AUDIENCE) is the Web UI's OpenID Connect
	// login, which `lucy worker`'s codec endpoint then requires of every caller (401 otherwise);
	// nil: none, allowed only on a loopback LUCY_CODEC_ADDR. CodecOrigins (LUCY_CODEC_ORIGINS) are
	// the Web UI origins the endpoint answers CORS for; empty: the loopback UI on LUCY_UI_PORT.
	CodecLogin   *codec.Login
	CodecOrigins []string
	// Search is lucy_web_search's provider: LUCY_SEARCH_PROVIDER (openrouter, perplexity, brave,
	// tavily), LUCY_SEARCH_API_KEY, LUCY_SEARCH_MODEL, LUCY_SEARCH_BASE_URL. With OPENROUTER_API_KEY
	// and no provider set, OpenRouter's online model with that key.
	SearchProvider, SearchAPIKey, SearchModel, SearchBaseURL string
	// Sampling is the temperature and output-token cap per tier (LUCY_TEMPERATURE_<TIER>,
	// LUCY_MAX_OUTPUT_TOKENS_<TIER>); the model activity leaves out what a model rejects.
	Sampling map[string]Sampling

	// AllowedPrivateHosts are the internal hosts that URLs from chat (lucy_web_fetch, monitors,
	// connected MCP servers and OpenAPI services) may reach although they are private, loopback,
	// link-local or reserved (LUCY_ALLOWED_PRIVATE_HOSTS: host names, host:port, IPs and CIDRs).
	// Only the operator sets it; zero means none.
	AllowedPrivateHosts tools.PrivateHosts
	// Chromium is the browser binary of lucy_browse (LUCY_CHROMIUM: a path or a name on PATH); empty
	// means chromium (or chromium-browser, google-chrome) on PATH. Without one, lucy_browse is not
	// offered.
	Chromium string

	// ContextWindow overrides the context window of every model, in tokens (LUCY_CONTEXT_WINDOW): for
	// local models served with a small window (Ollama defaults to a few thousand tokens).
	ContextWindow int

	LogLevel  string // LUCY_LOG_LEVEL
	LogFormat string // LUCY_LOG_FORMAT

	// Workspace store (LUCY_WORKSPACE_STORE): where the teams' files live. Empty S3Bucket means the
	// local folder LUCY_DATA_DIR/workspaces/<team>/, right for `lucy dev` and for one worker; with
	// several workers set s3://bucket/prefix so that they all see the same files.
	S3Bucket   string // from s3://<bucket>/…
	S3Prefix   string // from s3://…/<prefix>, without slashes at either end
	S3Endpoint string // LUCY_S3_ENDPOINT: an http(s) URL; empty means AWS S3
	S3Region   string // LUCY_S3_REGION
	// S3AccessKey and S3SecretKey (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN);
	// empty means the machine's role (instance metadata, web identity).
	S3AccessKey, S3SecretKey, S3SessionToken string
}

// ScheduleLimits are LUCY_MAX_JOBS_PER_TEAM, LUCY_MAX_JOBS_PER_USER, LUCY_MAX_MONITORS_PER_TEAM,
// LUCY_MAX_MONITORS_PER_USER, LUCY_MIN_JOB_INTERVAL and LUCY_MIN_MONITOR_INTERVAL.
type ScheduleLimits struct {
	JobsPerTeam, JobsPerUser, MonitorsPerTeam, MonitorsPerUser int
	MinJobInterval, MinMonitorInterval                         time.Duration
}

// Sampling is one tier's generation settings.
type Sampling struct {
	Temperature     float64
	MaxOutputTokens int
}

// DefaultSampling is the usual chat sampling (temperature 0.7, max_tokens 4096), with more
// room on the frontier tier, whose reasoning models spend output tokens on thinking.
func DefaultSampling(tier string) Sampling {
	if tier == "frontier" {
		return Sampling{Temperature: 0.7, MaxOutputTokens: 16384}
	}
	return Sampling{Temperature: 0.7, MaxOutputTokens: 4096}
}

// Defaults.
const (
	DefaultNamespace    = "default"
	DefaultDataDir      = ".lucy"
	DefaultTemporalPort = 7233
	DefaultUIPort       = 8233
	// DefaultHTTPAddr is `lucy gateway`'s: every interface, since Slack's Events API, probes and
	// Prometheus reach a pod on its own address.
	DefaultHTTPAddr = ":3000"
	// DefaultDevHTTPAddr is `lucy dev`'s: loopback, since on a laptop /metrics, /readyz and the
	// Slack endpoints have no business on the café's network (a tunnel for the Events API connects
	// to loopback too). LUCY_HTTP_ADDR=:3000 opens it up.
	DefaultDevHTTPAddr = "127.0.0.1:3000"
	// DefaultWorkerHTTPAddr listens on every interface, like DefaultHTTPAddr: Kubernetes probes and
	// Prometheus reach a pod on its own address, not on loopback. 9090 is not the gateway's port, so
	// a worker and a gateway run side by side on one machine without settings.
	DefaultWorkerHTTPAddr = ":9090"
	DefaultSlackAPIURL    = "https://slack.com/api/"
	OpenRouterBaseURL     = "https://openrouter.ai/api/v1"
	OpenAIBaseURL         = "https://api.openai.com/v1"
	DefaultMaxToolCalls   = 10
	// DefaultUserEventsPerMinute: a person typing fast sends a few messages a minute; a script or a
	// runaway integration posting as them sends hundreds, each of which would start a model call.
	DefaultUserEventsPerMinute = 20
	// DefaultSlackArchiveDays: a quarter of the team's conversations is what "what did we decide
	// about…" usually reaches back to, and bounds what the state store keeps.
	DefaultSlackArchiveDays = 90
	// DefaultModelConcurrency: a provider's rate limits are per key and model; 16 calls in flight per
	// model and worker keeps a burst of runs from turning into a burst of 429s, and HPA-scaled
	// workers multiply it.
	DefaultModelConcurrency = 16
	// MaxToolCallsLimit bounds LUCY_MAX_TOOL_CALLS: every call of one reply and its result land in one
	// turn of workflow history.
	MaxToolCallsLimit = 64
	// MaxRunsPerTeamLimit bounds LUCY_MAX_RUNS_PER_TEAM: the holders of a workspace's slots live in
	// one workflow's state (workflows.RunSlots), and are checked one Describe call each.
	MaxRunsPerTeamLimit = 1000
	// DefaultMemoryTokens is LUCY_MEMORY_TOKENS' default (memory.DefaultTokens: about 6,000
	// characters of notes); MinMemoryTokens and MaxMemoryTokens bound it, from a few notes to a
	// share of a small model's window.
	DefaultMemoryTokens = 1500
	MinMemoryTokens     = 200
	MaxMemoryTokens     = 20000
	// DefaultOpenAPIMaxOperations and MaxOpenAPIMaxOperations bound LUCY_OPENAPI_MAX_OPERATIONS (the
	// same as integrations/openapi's DefaultMaxOperations and MaxOperationsLimit, which config cannot
	// import): every tool's schema is sent with each model call.
	DefaultOpenAPIMaxOperations = 30
	MaxOpenAPIMaxOperations     = 100
	// DefaultOpenAPIMaxDocumentMB and MaxOpenAPIMaxDocumentMB bound LUCY_OPENAPI_MAX_DOCUMENT_MB (the
	// same as integrations/openapi's DefaultMaxDocumentBytes and MaxDocumentBytesLimit, in MiB).
	DefaultOpenAPIMaxDocumentMB = 32
	MaxOpenAPIMaxDocumentMB     = 256
	// Script limits (lucy_run_script).
	DefaultScriptTimeout = 10 * time.Second
	// DefaultEmailPollInterval is how often a mailbox is checked for new mail.
	DefaultEmailPollInterval = time.Minute
	MaxScriptTimeout         = 5 * time.Minute
	DefaultScriptMemoryMB    = 512
	// DefaultWorkerStopTimeout covers every activity but the long tools (30 minutes): model calls
	// (usually well under a minute), tools (2 minutes) and Slack writes.
	DefaultWorkerStopTimeout = 5 * time.Minute
	MaxWorkerStopTimeout     = time.Hour
	// Recurring jobs and monitors. A job's firing is a whole agent run as its creator (model calls,
	// tools, a post); every quarter of an hour allows "every 15 minutes" and refuses the every-minute
	// job (1,440 runs a day). A monitor's check is one HTTP request that posts only when its state
	// changes: its minimum is its default interval, 5 minutes. Fifty per workspace and ten per person
	// are many more than a team uses, and few enough that a flood stops early.
	DefaultMaxJobsPerTeam     = 50
	DefaultMaxJobsPerUser     = 10
	DefaultMaxMonitorsPerTeam = 50
	DefaultMaxMonitorsPerUser = 10
	DefaultMinJobInterval     = 15 * time.Minute
	DefaultMinMonitorInterval = 5 * time.Minute
	MaxSchedulesLimit         = 10000
	MaxMinScheduleInterval    = 24 * time.Hour
)

// defaultModels are per provider; a custom endpoint (vLLM, Ollama, LiteLLM) has no sensible default
// names, so every tier falls back to LUCY_MODEL_DEFAULT there.
var defaultModels = map[string]map[string]string{
	"openai": {
		"fast": "gpt-4.1-mini", "default": "gpt-4.1", "code": "gpt-4.1", "research": "gpt-4.1",
		"document": "gpt-4.1", "frontier": "o3",
	},
	"openrouter": {
		"fast": "google/gemini-2.5-flash", "default": "minimax/minimax-m2.5", "code": "minimax/minimax-m2.5",
		"research": "google/gemini-3-flash-preview", "document": "minimax/minimax-m2.5",
		"frontier": "google/gemini-3.1-pro-preview",
	},
}

func defaultHTTPAddr(mode Mode) string {
	if mode == ModeDev {
		return DefaultDevHTTPAddr
	}
	return DefaultHTTPAddr
}

// Load reads the configuration for mode from getenv and validates it.
func Load(mode Mode, getenv func(string) string) (*Config, error) {
	getenv = guard(getenv)
	env := func(k, def string) string {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return v
		}
		return def
	}
	c := &Config{
		Mode:               mode,
		DataDir:            env("LUCY_DATA_DIR", DefaultDataDir),
		HTTPAddr:           env("LUCY_HTTP_ADDR", defaultHTTPAddr(mode)),
		WorkerHTTPAddr:     env("LUCY_WORKER_HTTP_ADDR", DefaultWorkerHTTPAddr),
		SlackBotToken:      env("SLACK_BOT_TOKEN", ""),
		SlackUserToken:     env("SLACK_USER_TOKEN", ""),
		SlackAppToken:      env("SLACK_APP_TOKEN", ""),
		SlackSigningSecret: env("SLACK_SIGNING_SECRET", ""),
		SlackAPIURL:        env("SLACK_API_URL", DefaultSlackAPIURL),
		LogLevel:           strings.ToLower(env("LUCY_LOG_LEVEL", "info")),
		Models:             map[string]string{},
	}
	if err := c.loadTemporal(mode, getenv); err != nil {
		return nil, err
	}
	var err error
	if c.TemporalPort, err = port(env("LUCY_TEMPORAL_PORT", strconv.Itoa(DefaultTemporalPort)), "LUCY_TEMPORAL_PORT"); err != nil {
		return nil, err
	}
	if c.UIPort, err = port(env("LUCY_UI_PORT", strconv.Itoa(DefaultUIPort)), "LUCY_UI_PORT"); err != nil {
		return nil, err
	}
	if mode == ModeDev && c.TemporalPort == c.UIPort {
		return nil, fmt.Errorf("LUCY_TEMPORAL_PORT and LUCY_UI_PORT are both %d: pick two different ports", c.UIPort)
	}
	if c.TemporalAddress == "" && mode != ModeDev {
		c.TemporalAddress = fmt.Sprintf("127.0.0.1:%d", DefaultTemporalPort)
	}
	if c.TemporalAddress != "" {
		if _, _, err := net.SplitHostPort(c.TemporalAddress); err != nil {
			return nil, fmt.Errorf("TEMPORAL_ADDRESS %q is not host:port (for example 127.0.0.1:7233)", c.TemporalAddress)
		}
	}
	c.ConnectTimeout = 30 * time.Second
	if mode == ModeDev || mode == ModeChat {
		c.ConnectTimeout = 10 * time.Second
	}
	if v := strings.TrimSpace(getenv("LUCY_TEMPORAL_CONNECT_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("LUCY_TEMPORAL_CONNECT_TIMEOUT %q is not a duration (for example 30s or 2m)", v)
		}
		c.ConnectTimeout = d
	}
	c.SetupCreateNamespace = true
	if v := strings.ToLower(strings.TrimSpace(getenv("LUCY_SETUP_CREATE_NAMESPACE"))); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("LUCY_SETUP_CREATE_NAMESPACE %q is not true or false (false: `lucy setup` never creates the namespace, as on Temporal Cloud)", v)
		}
		c.SetupCreateNamespace = b
	}
	c.WorkerStopTimeout = DefaultWorkerStopTimeout
	if v := strings.TrimSpace(getenv("LUCY_WORKER_STOP_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxWorkerStopTimeout {
			return nil, fmt.Errorf("LUCY_WORKER_STOP_TIMEOUT %q is not a duration from 0s to %s (default %s)", v, MaxWorkerStopTimeout, DefaultWorkerStopTimeout)
		}
		c.WorkerStopTimeout = d
	}
	if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
		return nil, fmt.Errorf("LUCY_HTTP_ADDR %q is not [host]:port (for example %s)", c.HTTPAddr, defaultHTTPAddr(mode))
	}
	if c.PublicURL, err = publicURL(getenv("LUCY_PUBLIC_URL")); err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(c.WorkerHTTPAddr); err != nil {
		return nil, fmt.Errorf("LUCY_WORKER_HTTP_ADDR %q is not [host]:port (for example :9090)", c.WorkerHTTPAddr)
	}
	if !strings.HasSuffix(c.SlackAPIURL, "/") {
		c.SlackAPIURL += "/"
	}
	if u, err := url.Parse(c.SlackAPIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("SLACK_API_URL %q is not an http(s) URL (default %s)", c.SlackAPIURL, DefaultSlackAPIURL)
	}
	for _, a := range strings.Split(getenv("LUCY_ADMIN_USERS"), ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.AdminUsers = append(c.AdminUsers, a)
		}
	}
	if err := c.loadLogging(getenv); err != nil {
		return nil, err
	}
	if err := c.loadSlack(); err != nil {
		return nil, err
	}
	if err := c.loadApprovalKey(getenv); err != nil {
		return nil, err
	}
	if err := c.loadSecretsKey(getenv); err != nil {
		return nil, err
	}
	c.MaxToolCalls = DefaultMaxToolCalls
	c.UserEventsPerMinute = DefaultUserEventsPerMinute
	c.SlackArchiveDays = DefaultSlackArchiveDays
	c.ModelConcurrency = DefaultModelConcurrency
	c.ScriptTimeout, c.ScriptMemoryMB = DefaultScriptTimeout, DefaultScriptMemoryMB
	c.EmailPollInterval = DefaultEmailPollInterval
	if v := strings.TrimSpace(getenv("LUCY_EMAIL_POLL_INTERVAL")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Second || d > time.Hour {
			return nil, fmt.Errorf("LUCY_EMAIL_POLL_INTERVAL %q is not a duration from 10s to 1h (for example 1m)", v)
		}
		c.EmailPollInterval = d
	}
	if c.MailCAFile = strings.TrimSpace(getenv("LUCY_MAIL_CA_FILE")); c.MailCAFile != "" {
		if c.MailRootCAs, err = MailRootCAs(c.MailCAFile); err != nil {
			return nil, err
		}
	}
	if err := c.loadMailOAuth(getenv); err != nil {
		return nil, err
	}
	if v := strings.TrimSpace(getenv("LUCY_SCRIPT_TIMEOUT")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > MaxScriptTimeout {
			return nil, fmt.Errorf("LUCY_SCRIPT_TIMEOUT %q is not a duration from 1s to %s (for example 10s)", v, MaxScriptTimeout)
		}
		c.ScriptTimeout = d
	}
	if v := strings.TrimSpace(getenv("LUCY_SCRIPT_MEMORY_MB")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 64 || n > 16384 {
			return nil, fmt.Errorf("LUCY_SCRIPT_MEMORY_MB %q is not a number of megabytes from 64 to 16384 (default %d)", v, DefaultScriptMemoryMB)
		}
		c.ScriptMemoryMB = n
	}
	if v := strings.TrimSpace(getenv("LUCY_MAX_RUNS_PER_TEAM")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > MaxRunsPerTeamLimit {
			return nil, fmt.Errorf("LUCY_MAX_RUNS_PER_TEAM %q is not a number from 0 to %d (a workspace's agent runs at once; 0, the default, means no cap)", v, MaxRunsPerTeamLimit)
		}
		c.MaxRunsPerTeam = n
	}
	if v := strings.TrimSpace(getenv("LUCY_MAX_TOOL_CALLS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxToolCallsLimit {
			return nil, fmt.Errorf("LUCY_MAX_TOOL_CALLS %q is not a number from 1 to %d (tool calls run per model reply; default %d)", v, MaxToolCallsLimit, DefaultMaxToolCalls)
		}
		c.MaxToolCalls = n
	}
	c.MemoryTokens = DefaultMemoryTokens
	if v := strings.TrimSpace(getenv("LUCY_MEMORY_TOKENS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < MinMemoryTokens || n > MaxMemoryTokens {
			return nil, fmt.Errorf("LUCY_MEMORY_TOKENS %q is not a number of tokens from %d to %d (the budget of the team memory "+
				"block in each run's prompt; default %d)", v, MinMemoryTokens, MaxMemoryTokens, DefaultMemoryTokens)
		}
		c.MemoryTokens = n
	}
	c.EmbeddingModel = strings.TrimSpace(getenv("LUCY_MODEL_EMBEDDING"))
	c.OpenAPIMaxOperations = DefaultOpenAPIMaxOperations
	if v := strings.TrimSpace(getenv("LUCY_OPENAPI_MAX_OPERATIONS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxOpenAPIMaxOperations {
			return nil, fmt.Errorf("LUCY_OPENAPI_MAX_OPERATIONS %q is not a number from 1 to %d (operations of one OpenAPI "+
				"service that become tools; default %d)", v, MaxOpenAPIMaxOperations, DefaultOpenAPIMaxOperations)
		}
		c.OpenAPIMaxOperations = n
	}
	c.OpenAPIMaxDocumentMB = DefaultOpenAPIMaxDocumentMB
	if v := strings.TrimSpace(getenv("LUCY_OPENAPI_MAX_DOCUMENT_MB")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxOpenAPIMaxDocumentMB {
			return nil, fmt.Errorf("LUCY_OPENAPI_MAX_DOCUMENT_MB %q is not a number of MiB from 1 to %d (the largest OpenAPI "+
				"document a custom integration is read from; default %d)", v, MaxOpenAPIMaxDocumentMB, DefaultOpenAPIMaxDocumentMB)
		}
		c.OpenAPIMaxDocumentMB = n
	}
	if v := strings.TrimSpace(getenv("LUCY_MODEL_CONCURRENCY")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return nil, fmt.Errorf("LUCY_MODEL_CONCURRENCY %q is not a number from 1 to 1000 (model calls one worker makes at once to one model; default %d)", v, DefaultModelConcurrency)
		}
		c.ModelConcurrency = n
	}
	if v := strings.TrimSpace(getenv("LUCY_USER_EVENTS_PER_MINUTE")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 10000 {
			return nil, fmt.Errorf("LUCY_USER_EVENTS_PER_MINUTE %q is not a number from 0 (no limit) to 10000 (messages one person may send Lucy per minute; default %d)", v, DefaultUserEventsPerMinute)
		}
		c.UserEventsPerMinute = n
	}
	if v := strings.TrimSpace(getenv("LUCY_SLACK_ARCHIVE_DAYS")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 3650 {
			return nil, fmt.Errorf("LUCY_SLACK_ARCHIVE_DAYS %q is not a number from 0 (no archive) to 3650 (days the channels' messages are kept for search; default %d)", v, DefaultSlackArchiveDays)
		}
		c.SlackArchiveDays = n
	}
	if err := c.loadSpendLimits(getenv); err != nil {
		return nil, err
	}
	if err := c.loadScheduleLimits(getenv); err != nil {
		return nil, err
	}
	if err := c.loadSearch(getenv); err != nil {
		return nil, err
	}
	if c.PayloadKeys, err = codec.ParseKeys(getenv("LUCY_PAYLOAD_KEYS")); err != nil {
		return nil, err
	}
	if c.CodecAddr = strings.TrimSpace(getenv("LUCY_CODEC_ADDR")); c.CodecAddr != "" {
		if _, _, err := net.SplitHostPort(c.CodecAddr); err != nil {
			return nil, fmt.Errorf("LUCY_CODEC_ADDR %q is not host:port (for example 127.0.0.1:8234)", c.CodecAddr)
		}
		if len(c.PayloadKeys) == 0 {
			return nil, errors.New("LUCY_CODEC_ADDR is set but LUCY_PAYLOAD_KEYS is not: there is nothing to decode")
		}
	}
	if err := c.loadCodecLogin(getenv); err != nil {
		return nil, err
	}
	if err := c.loadWorkspaceStore(getenv); err != nil {
		return nil, err
	}
	if c.AllowedPrivateHosts, err = tools.ParseAllowedPrivateHosts(getenv("LUCY_ALLOWED_PRIVATE_HOSTS")); err != nil {
		return nil, fmt.Errorf("LUCY_ALLOWED_PRIVATE_HOSTS: %w", err)
	}
	c.Chromium = strings.TrimSpace(getenv("LUCY_CHROMIUM"))
	if err := c.loadLLM(getenv); err != nil {
		return nil, err
	}
	c.MCPConfig = env("LUCY_MCP_CONFIG", "")
	if strings.HasSuffix(c.MCPConfig, "/") || strings.ContainsRune(c.MCPConfig, 0) {
		return nil, fmt.Errorf("LUCY_MCP_CONFIG %q is not the path of a file: give the MCP servers file, e.g. /etc/lucy/mcp.json, or unset it for LUCY_DATA_DIR/mcp.json", c.MCPConfig)
	}
	c.ServiceCatalog = strings.TrimSpace(getenv("LUCY_SERVICE_CATALOG"))
	if strings.HasSuffix(c.ServiceCatalog, "/") || strings.ContainsRune(c.ServiceCatalog, 0) {
		return nil, fmt.Errorf("LUCY_SERVICE_CATALOG %q is not the path of a file: give the service catalogue file, e.g. /etc/lucy/services.yaml, or unset it for the built-in catalogue", c.ServiceCatalog)
	}
	return c, nil
}

// loadScheduleLimits reads the limits of recurring jobs and monitors.
func (c *Config) loadScheduleLimits(getenv func(string) string) error {
	l := ScheduleLimits{JobsPerTeam: DefaultMaxJobsPerTeam, JobsPerUser: DefaultMaxJobsPerUser, MonitorsPerTeam: DefaultMaxMonitorsPerTeam,
		MonitorsPerUser: DefaultMaxMonitorsPerUser, MinJobInterval: DefaultMinJobInterval, MinMonitorInterval: DefaultMinMonitorInterval}
	for _, n := range []struct {
		name, what string
		v          *int
	}{
		{"LUCY_MAX_JOBS_PER_TEAM", "recurring jobs one workspace may have", &l.JobsPerTeam},
		{"LUCY_MAX_JOBS_PER_USER", "recurring jobs one person may have", &l.JobsPerUser},
		{"LUCY_MAX_MONITORS_PER_TEAM", "monitors one workspace may have", &l.MonitorsPerTeam},
		{"LUCY_MAX_MONITORS_PER_USER", "monitors one person may have", &l.MonitorsPerUser},
	} {
		v := strings.TrimSpace(getenv(n.name))
		if v == "" {
			continue
		}
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 || k > MaxSchedulesLimit {
			return fmt.Errorf("%s %q is not a number from 1 to %d (%s; default %d)", n.name, v, MaxSchedulesLimit, n.what, *n.v)
		}
		*n.v = k
	}
	for _, d := range []struct {
		name, what string
		v          *time.Duration
	}{
		{"LUCY_MIN_JOB_INTERVAL", "the least time between two runs of a recurring job", &l.MinJobInterval},
		{"LUCY_MIN_MONITOR_INTERVAL", "the least time between two checks of a monitor", &l.MinMonitorInterval},
	} {
		v := strings.TrimSpace(getenv(d.name))
		if v == "" {
			continue
		}
		x, err := time.ParseDuration(v)
		if err != nil || x < time.Minute || x > MaxMinScheduleInterval || x%time.Minute != 0 {
			return fmt.Errorf("%s %q is not a whole number of minutes from 1m to %s, such as 15m or 1h (%s; default %s)",
				d.name, v, "24h", d.what, *d.v)
		}
		*d.v = x
	}
	if l.JobsPerUser > l.JobsPerTeam {
		return fmt.Errorf("LUCY_MAX_JOBS_PER_USER (%d) is above LUCY_MAX_JOBS_PER_TEAM (%d): one person cannot have more jobs than the workspace; lower the first or raise the second", l.JobsPerUser, l.JobsPerTeam)
	}
	if l.MonitorsPerUser > l.MonitorsPerTeam {
		return fmt.Errorf("LUCY_MAX_MONITORS_PER_USER (%d) is above LUCY_MAX_MONITORS_PER_TEAM (%d): one person cannot have more monitors than the workspace; lower the first or raise the second", l.MonitorsPerUser, l.MonitorsPerTeam)
	}
	c.Schedules = l
	return nil
}

// loadWorkspaceStore reads LUCY_WORKSPACE_STORE and the S3 settings it needs.
func (c *Config) loadWorkspaceStore(getenv func(string) string) error {
	store := strings.TrimSpace(getenv("LUCY_WORKSPACE_STORE"))
	c.S3Endpoint = strings.TrimSpace(getenv("LUCY_S3_ENDPOINT"))
	c.S3Region = strings.TrimSpace(getenv("LUCY_S3_REGION"))
	if store == "" || store == "local" {
		for _, k := range []string{"LUCY_S3_ENDPOINT", "LUCY_S3_REGION"} {
			if strings.TrimSpace(getenv(k)) != "" {
				return fmt.Errorf("%s is set but LUCY_WORKSPACE_STORE is not s3://bucket/prefix: set it to use the bucket, or unset %s", k, k)
			}
		}
		c.S3Endpoint, c.S3Region = "", ""
		return nil
	}
	rest, ok := strings.CutPrefix(store, "s3://")
	if !ok {
		return fmt.Errorf("LUCY_WORKSPACE_STORE %q is not \"local\" or s3://bucket/prefix (for example s3://acme-lucy/workspaces)", store)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if !validBucket(bucket) {
		return fmt.Errorf("LUCY_WORKSPACE_STORE %q: %q is not a bucket name (3 to 63 lowercase letters, digits, dots and hyphens)", store, bucket)
	}
	prefix = strings.Trim(prefix, "/")
	for _, seg := range strings.Split(prefix, "/") {
		if prefix != "" && (seg == "" || seg == "." || seg == "..") {
			return fmt.Errorf("LUCY_WORKSPACE_STORE %q: the prefix %q has an empty, \".\" or \"..\" segment", store, prefix)
		}
	}
	c.S3Bucket, c.S3Prefix = bucket, prefix
	if c.S3Endpoint != "" {
		u, err := url.Parse(c.S3Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("LUCY_S3_ENDPOINT %q is not an http(s) URL without a path (for example https://s3.eu-west-1.amazonaws.com or http://minio:9000)", c.S3Endpoint)
		}
	}
	c.S3AccessKey = strings.TrimSpace(getenv("AWS_ACCESS_KEY_ID"))
	c.S3SecretKey = strings.TrimSpace(getenv("AWS_SECRET_ACCESS_KEY"))
	c.S3SessionToken = strings.TrimSpace(getenv("AWS_SESSION_TOKEN"))
	if (c.S3AccessKey == "") != (c.S3SecretKey == "") {
		return errors.New("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together for LUCY_WORKSPACE_STORE (or neither, to use the machine's IAM role)")
	}
	if c.S3SessionToken != "" && c.S3AccessKey == "" {
		return errors.New("AWS_SESSION_TOKEN is set without AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY: a session token goes with temporary keys")
	}
	return nil
}

// validBucket applies S3's bucket naming rules (the ones every S3-compatible store accepts).
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 || strings.Contains(b, "..") {
		return false
	}
	for i, r := range b {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r == '-' || r == '.') && i > 0 && i < len(b)-1
		if !ok {
			return false
		}
	}
	return true
}

// WorkspaceStore names the workspace store for logs: "local" or "s3://bucket/prefix".
func (c *Config) WorkspaceStore() string {
	if c.S3Bucket == "" {
		return "local"
	}
	return "s3://" + c.S3Bucket + "/" + c.S3Prefix
}

func port(v, name string) (int, error) {
	p, err := strconv.Atoi(v)
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%s %q is not a port number (1-65535)", name, v)
	}
	return p, nil
}

func (c *Config) loadLogging(getenv func(string) string) error {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("LUCY_LOG_LEVEL %q is not one of debug, info, warn, error", c.LogLevel)
	}
	def := "json"
	if c.Mode == ModeDev || c.Mode == ModeChat {
		def = "console"
	}
	c.LogFormat = strings.ToLower(strings.TrimSpace(getenv("LUCY_LOG_FORMAT")))
	if c.LogFormat == "" {
		c.LogFormat = def
	}
	if c.LogFormat != "json" && c.LogFormat != "console" {
		return fmt.Errorf("LUCY_LOG_FORMAT %q is not json or console", c.LogFormat)
	}
	return nil
}

func (c *Config) loadSlack() error {
	if c.SlackUserToken != "" && !strings.HasPrefix(c.SlackUserToken, "xoxp-") {
		return errors.New("SLACK_USER_TOKEN must be a user token (xoxp-…): Slack's search refuses bot tokens")
	}
	if c.SlackBotToken != "" && !strings.HasPrefix(c.SlackBotToken, "xoxb-") {
		return errors.New("SLACK_BOT_TOKEN must be a bot token starting with xoxb- (Slack app > OAuth & Permissions > Bot User OAuth Token)")
	}
	if c.SlackAppToken != "" && !strings.HasPrefix(c.SlackAppToken, "xapp-") {
		return errors.New("SLACK_APP_TOKEN must be an app-level token starting with xapp- (Slack app > Basic Information > App-Level Tokens, scope connections:write)")
	}
	switch {
	case c.SlackAppToken != "" && c.SlackBotToken != "":
		c.Gateway = GatewaySocket
	case c.SlackSigningSecret != "" && c.SlackBotToken != "":
		c.Gateway = GatewayHTTP
	case c.SlackAppToken != "" || c.SlackSigningSecret != "":
		return errors.New("SLACK_BOT_TOKEN is missing: Socket Mode needs SLACK_APP_TOKEN and SLACK_BOT_TOKEN, the Events API needs SLACK_SIGNING_SECRET and SLACK_BOT_TOKEN")
	default:
		c.Gateway = GatewayTerminal
	}
	switch c.Mode {
	case ModeWorker:
		if c.SlackBotToken == "" {
			return errors.New("SLACK_BOT_TOKEN is required by `lucy worker` (it posts replies); for a local try-out without Slack use `lucy dev`")
		}
	case ModeGateway:
		if c.Gateway == GatewayTerminal {
			return errors.New("`lucy gateway` needs Slack credentials: SLACK_APP_TOKEN + SLACK_BOT_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET + SLACK_BOT_TOKEN (Events API); without Slack use `lucy chat`")
		}
	}
	return nil
}

// loadApprovalKey picks the approval key: LUCY_APPROVAL_KEY, else one derived from the bot token
// (after loadSlack, which checked the token).
func (c *Config) loadApprovalKey(getenv func(string) string) error {
	if v := strings.TrimSpace(getenv("LUCY_APPROVAL_KEY")); v != "" {
		k, err := signing.FromSecret(v)
		if err != nil {
			return fmt.Errorf("LUCY_APPROVAL_KEY is too short: %v (use a random string such as the output of `openssl rand -hex 32`, the same for the worker and the gateway; or unset it to derive the key from SLACK_BOT_TOKEN)", err)
		}
		c.ApprovalKey, c.ApprovalKeySource = k, "LUCY_APPROVAL_KEY"
		return nil
	}
	if c.SlackBotToken != "" {
		c.ApprovalKey, c.ApprovalKeySource = signing.FromBotToken(c.SlackBotToken), "SLACK_BOT_TOKEN"
	}
	return nil
}

// loadSecretsKey reads LUCY_SECRETS_KEY, which the worker (it opens stored keys) and the gateway
// (it stores what the Add key form submits) must share.
func (c *Config) loadSecretsKey(getenv func(string) string) error {
	v := strings.TrimSpace(getenv("LUCY_SECRETS_KEY"))
	if v == "" {
		if c.Mode == ModeWorker || c.Mode == ModeGateway {
			return fmt.Errorf("LUCY_SECRETS_KEY is required by `lucy %s`: it encrypts the keys people store for their tools; make one with `openssl rand -base64 32` and give the same to every worker and gateway", c.Mode)
		}
		return nil
	}
	k, err := secrets.ParseKey(v)
	if err != nil {
		return err
	}
	c.SecretsKey = k
	return nil
}

func (c *Config) loadLLM(getenv func(string) string) error {
	orKey := strings.TrimSpace(getenv("OPENROUTER_API_KEY"))
	oaKey := strings.TrimSpace(getenv("OPENAI_API_KEY"))
	base := strings.TrimSpace(getenv("OPENAI_BASE_URL"))
	switch {
	case orKey != "":
		c.Provider, c.LLMAPIKey, c.LLMBaseURL = "openrouter", orKey, OpenRouterBaseURL
	case base != "":
		c.Provider, c.LLMAPIKey, c.LLMBaseURL = "custom", oaKey, base
		if strings.TrimSuffix(base, "/") == OpenAIBaseURL {
			c.Provider = "openai"
		}
	case oaKey != "":
		c.Provider, c.LLMAPIKey, c.LLMBaseURL = "openai", oaKey, OpenAIBaseURL
	}
	// The gateway, the chat client and setup never call the model.
	if c.Mode == ModeGateway || c.Mode == ModeChat || c.Mode == ModeSetup || c.Mode == ModeSecrets {
		return nil
	}
	if c.Provider == "" {
		return errors.New("no LLM configured: set OPENAI_API_KEY (OpenAI), OPENROUTER_API_KEY (OpenRouter), or OPENAI_BASE_URL for any OpenAI-compatible endpoint such as Ollama (http://127.0.0.1:11434/v1)")
	}
	if u, err := url.Parse(c.LLMBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("OPENAI_BASE_URL %q is not an http(s) URL (for example http://127.0.0.1:11434/v1)", c.LLMBaseURL)
	}
	if c.Provider == "openai" && c.LLMAPIKey == "" {
		return errors.New("OPENAI_API_KEY is required for api.openai.com")
	}
	if v := strings.TrimSpace(getenv("LUCY_CONTEXT_WINDOW")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 {
			return fmt.Errorf("LUCY_CONTEXT_WINDOW %q is not a number of tokens (at least 1024)", v)
		}
		c.ContextWindow = n
	}
	defaults := defaultModels[c.Provider]
	for _, tier := range Tiers {
		m := strings.TrimSpace(getenv(tierVariable("LUCY_MODEL_", tier)))
		if m == "" {
			m = defaults[tier]
		}
		c.Models[tier] = m
	}
	c.Sampling = map[string]Sampling{}
	for _, tier := range Tiers {
		s := DefaultSampling(tier)
		name := tierVariable("LUCY_TEMPERATURE_", tier)
		if v := strings.TrimSpace(getenv(name)); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 2 {
				return fmt.Errorf("%s %q is not a temperature from 0 to 2 (default %.1f)", name, v, s.Temperature)
			}
			s.Temperature = f
		}
		name = tierVariable("LUCY_MAX_OUTPUT_TOKENS_", tier)
		if v := strings.TrimSpace(getenv(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 16 || n > 200000 {
				return fmt.Errorf("%s %q is not a number of tokens from 16 to 200000 (default %d)", name, v, s.MaxOutputTokens)
			}
			s.MaxOutputTokens = n
		}
		c.Sampling[tier] = s
	}
	if c.Provider == "custom" {
		if c.Models["default"] == "" {
			return errors.New("LUCY_MODEL_DEFAULT is required with a custom OPENAI_BASE_URL (the model name your endpoint serves, for example llama3.1)")
		}
		for _, tier := range Tiers {
			if c.Models[tier] == "" {
				c.Models[tier] = c.Models["default"]
			}
		}
	}
	return nil
}

// Embedded reports whether this process runs its own Temporal server.
func (c *Config) Embedded() bool { return c.Mode == ModeDev && c.TemporalAddress == "" }

// Redacted returns a short description of the configuration that is safe to log.
func (c *Config) Redacted() map[string]any {
	return map[string]any{
		"temporalAddress": c.TemporalAddress, "namespace": c.TemporalNamespace, "dataDir": c.DataDir,
		"temporalTLS": c.TemporalTLS(), "temporalProfile": c.TemporalProfile,
		"gateway": string(c.Gateway), "slackAPI": c.SlackAPIURL, "llmProvider": c.Provider,
		"llmBaseURL": c.LLMBaseURL, "models": c.Models, "httpAddr": c.HTTPAddr,
		"workerHttpAddr":  c.WorkerHTTPAddr,
		"approvalKeyFrom": c.ApprovalKeySource, "maxToolCalls": c.MaxToolCalls,
		"workspaceStore": c.WorkspaceStore(), "s3Endpoint": c.S3Endpoint,
		"allowedPrivateHosts": c.AllowedPrivateHosts.String(),
		"chromium":            c.Chromium,
		"mailCAFile":          c.MailCAFile,
		"publicUrl":           c.PublicURL,
	}
}

// publicURL checks LUCY_PUBLIC_URL: an absolute base URL, https, or http on a loopback host (a
// developer's browser and `lucy dev` on one machine). Plain http elsewhere would carry the sign-in
// code over the network in clear. A path is kept (a gateway behind a reverse proxy's prefix); a
// query, a fragment or user info make no sense in a base URL and are refused.
func publicURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return "", fmt.Errorf("LUCY_PUBLIC_URL %q is not an absolute URL: give the gateway's public base URL, e.g. https://lucy.example.com", raw)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("LUCY_PUBLIC_URL %q must be a base URL without user info, query or fragment, e.g. https://lucy.example.com", u.Redacted())
	}
	if u.Scheme == "http" && !loopbackHost(u.Hostname()) {
		return "", fmt.Errorf("LUCY_PUBLIC_URL %q is http on a host that is not loopback: the sign-in code would travel in clear; use https (http is accepted for localhost, 127.0.0.1 and [::1] only)", raw)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

func loopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// searchProviders are the values of LUCY_SEARCH_PROVIDER.
var searchProviders = []string{"openrouter", "perplexity", "brave", "tavily"}

func (c *Config) loadSearch(getenv func(string) string) error {
	c.SearchProvider = strings.ToLower(strings.TrimSpace(getenv("LUCY_SEARCH_PROVIDER")))
	c.SearchAPIKey = strings.TrimSpace(getenv("LUCY_SEARCH_API_KEY"))
	c.SearchModel = strings.TrimSpace(getenv("LUCY_SEARCH_MODEL"))
	c.SearchBaseURL = strings.TrimSpace(getenv("LUCY_SEARCH_BASE_URL"))
	orKey := strings.TrimSpace(getenv("OPENROUTER_API_KEY"))
	switch {
	case c.SearchProvider == "" && orKey != "":
		c.SearchProvider = "openrouter"
	case c.SearchProvider == "":
		if c.SearchAPIKey != "" {
			return errors.New("LUCY_SEARCH_API_KEY is set but LUCY_SEARCH_PROVIDER is not: set it to " + strings.Join(searchProviders, ", "))
		}
		return nil
	case !slices.Contains(searchProviders, c.SearchProvider):
		return fmt.Errorf("LUCY_SEARCH_PROVIDER %q is not one of %s", c.SearchProvider, strings.Join(searchProviders, ", "))
	}
	if c.SearchAPIKey == "" && c.SearchProvider == "openrouter" {
		c.SearchAPIKey = orKey
	}
	if c.SearchAPIKey == "" {
		return fmt.Errorf("LUCY_SEARCH_PROVIDER is %s but LUCY_SEARCH_API_KEY is not set", c.SearchProvider)
	}
	if c.SearchBaseURL != "" {
		if u, err := url.Parse(c.SearchBaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("LUCY_SEARCH_BASE_URL %q is not an http(s) URL", c.SearchBaseURL)
		}
	}
	return nil
}

// MailRootCAs returns the system's root CAs with the certificates of the PEM file added
// (LUCY_MAIL_CA_FILE). A file that cannot be read, or holds no certificate, is an error that says
// what to fix: a mail server's private certificate would otherwise fail each login with "certificate
// signed by unknown authority", long after start.
func MailRootCAs(file string) (*x509.CertPool, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("LUCY_MAIL_CA_FILE: %w; give the path of a PEM file of the mail servers' CA certificates, or unset it", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("LUCY_MAIL_CA_FILE: %s holds no PEM certificate (\"-----BEGIN CERTIFICATE-----\"); give the mail "+
			"servers' CA certificate in PEM form", file)
	}
	return pool, nil
}

// tenantRE is a Microsoft Entra tenant as the v2.0 endpoints take it: a directory ID (a GUID), a
// verified domain, or "organizations" / "common" / "consumers"
// (learn.microsoft.com/en-us/entra/identity-platform/v2-protocols, "Endpoints").
var tenantRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$`)

// loadMailOAuth reads the OAuth clients of mailbox sign-ins: each is an ID with its secret (both
// providers issue confidential web clients), and a Microsoft tenant needs a Microsoft client.
func (c *Config) loadMailOAuth(getenv func(string) string) error {
	c.GoogleClientID, c.GoogleClientSecret = strings.TrimSpace(getenv("LUCY_GOOGLE_CLIENT_ID")), strings.TrimSpace(getenv("LUCY_GOOGLE_CLIENT_SECRET"))
	c.MicrosoftClientID, c.MicrosoftClientSecret = strings.TrimSpace(getenv("LUCY_MICROSOFT_CLIENT_ID")), strings.TrimSpace(getenv("LUCY_MICROSOFT_CLIENT_SECRET"))
	c.MicrosoftTenant = strings.TrimSpace(getenv("LUCY_MICROSOFT_TENANT"))
	if (c.GoogleClientID == "") != (c.GoogleClientSecret == "") {
		return errors.New("LUCY_GOOGLE_CLIENT_ID and LUCY_GOOGLE_CLIENT_SECRET go together: set both (the OAuth client of a web application " +
			"registered in the Google Cloud console) or neither")
	}
	if (c.MicrosoftClientID == "") != (c.MicrosoftClientSecret == "") {
		return errors.New("LUCY_MICROSOFT_CLIENT_ID and LUCY_MICROSOFT_CLIENT_SECRET go together: set both (the application (client) ID " +
			"and a client secret of an app registered in Microsoft Entra) or neither")
	}
	if c.MicrosoftTenant != "" {
		if c.MicrosoftClientID == "" {
			return errors.New("LUCY_MICROSOFT_TENANT is set without LUCY_MICROSOFT_CLIENT_ID: set the client too, or unset the tenant")
		}
		if !tenantRE.MatchString(c.MicrosoftTenant) {
			return fmt.Errorf("LUCY_MICROSOFT_TENANT %q is not a tenant: give its directory ID (a GUID), a verified domain such as "+
				"contoso.onmicrosoft.com, or \"organizations\"", c.MicrosoftTenant)
		}
	}
	return nil
}

// SpendVariables are the spend budgets' variables, by budget.
var SpendVariables = map[spend.Budget]string{
	spend.TeamDaily: "LUCY_SPEND_TEAM_DAILY", spend.TeamMonthly: "LUCY_SPEND_TEAM_MONTHLY",
	spend.PersonDaily: "LUCY_SPEND_PERSON_DAILY", spend.PersonMonthly: "LUCY_SPEND_PERSON_MONTHLY",
}

// loadSpendLimits reads the default model budgets.
func (c *Config) loadSpendLimits(getenv func(string) string) error {
	c.SpendLimits = spend.Limits{}
	for _, b := range spend.Budgets {
		name := SpendVariables[b]
		l, err := spend.ParseLimit(getenv(name))
		if err != nil {
			return fmt.Errorf("%s: %v (0 or unset: no limit)", name, err)
		}
		if !l.None() {
			c.SpendLimits[b] = l
		}
	}
	return nil
}
