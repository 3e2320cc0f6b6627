// Package worker wires the real clients into the activities and registers every workflow and
// activity with explicit, stable names, so that a Go rename can never break a running workflow.
package worker

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/codec"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/integrations"
	"github.com/lucy-agent/lucy/integrations/catalog"
	"github.com/lucy-agent/lucy/integrations/email"
	"github.com/lucy-agent/lucy/integrations/email/listener"
	"github.com/lucy-agent/lucy/integrations/mcp"
	"github.com/lucy-agent/lucy/integrations/mcp/oauth"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/memory/runstep"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/onboarding"
	"github.com/lucy-agent/lucy/prompts"
	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/schedules"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/slackarchive"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/browser"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/tools/web"
	"github.com/lucy-agent/lucy/workflows"
	"github.com/lucy-agent/lucy/workspace"
)

// LocalTeam is the team ID of the terminal conversation's local workspace (`lucy dev`, `lucy chat`).
const LocalTeam = "TLOCAL"

// Deps are the outside connections of a worker.
type Deps struct {
	Config *config.Config
	Client client.Client
	Log    zerolog.Logger
	// LocalSlackURL is the API base URL of the local workspace ("http://127.0.0.1:41234/api/"),
	// empty when this process serves none.
	LocalSlackURL string
	// LocalSlackToken is the local workspace's bot token, random at each start of `lucy dev`.
	LocalSlackToken string
	// Model overrides the Chat Completions client (tests); nil builds one from Config.
	Model activities.ChatModel
	// HTTP is used by tools (web fetch); nil means a default client.
	HTTP *http.Client
	// AllowPrivateNetworks lets web tools reach loopback/private addresses (tests only).
	AllowPrivateNetworks bool
	// DataConverter must be the one Client was dialled with (DataConverter() in production): the
	// activities read payloads back from history with it. nil means the SDK's default, as for a
	// client dialled without one.
	DataConverter converter.DataConverter
	// Metrics is the process's registry, which the activities count into (nil: not counted).
	Metrics *metrics.Metrics
	// Workspace is the store of the teams' files; nil builds it from Config (WorkspaceStore).
	Workspace workspace.Store
	// State is Lucy's own store (stored credentials, connected integrations); nil builds it from
	// Config (StateStore).
	State workspace.Store
	// Listers are the integration kinds' lists that lucy_list_integrations shows.
	Listers []integrations.Lister
	// MCPServers are the operator's MCP servers, for every team (MCPServers reads them from
	// LUCY_MCP_CONFIG); nil means none.
	MCPServers []mcp.Server
	// Services is the service catalogue (ServiceCatalog reads LUCY_SERVICE_CATALOG); nil means the
	// built-in one.
	Services *catalog.Catalog
	// Memory is the teams' notes; nil builds it over State (Memory).
	Memory *memory.Store
}

// MCPServers reads the operator's MCP servers file: LUCY_MCP_CONFIG, which must exist and be valid,
// or LUCY_DATA_DIR/mcp.json, which may be missing (no servers). Its error stops the worker at start,
// naming the file and what to fix.
func MCPServers(cfg *config.Config) ([]mcp.Server, error) {
	if cfg.MCPConfig != "" {
		return mcp.LoadFile(cfg.MCPConfig, true)
	}
	return mcp.LoadFile(filepath.Join(cfg.DataDir, "mcp.json"), false)
}

// ServiceCatalog is the service catalogue in force: the built-in one, with the operator's file
// (LUCY_SERVICE_CATALOG) applied when set. Its error stops the worker at start, naming the file and
// the entry to fix.
func ServiceCatalog(cfg *config.Config) (*catalog.Catalog, error) {
	return catalog.Load(cfg.ServiceCatalog)
}

// StateDir is the folder of Lucy's own state in LUCY_DATA_DIR, beside the workspaces.
const StateDir = "state"

// StatePrefix is where Lucy's own state lives in the workspaces' bucket: a name no team ID can take
// (team IDs have no '.'), so no team's files can reach it.
const StatePrefix = "lucy.state"

// StateStore returns Lucy's own durable store, shared by every worker, the gateway and `lucy
// secrets`: LUCY_DATA_DIR/state, or with LUCY_WORKSPACE_STORE=s3://bucket/prefix the same bucket
// under prefix/lucy.state/. The file tools never see it: they get the workspaces' store only.
func StateStore(cfg *config.Config) (workspace.Store, error) {
	if cfg.S3Bucket == "" {
		return workspace.NewLocalAt(filepath.Join(cfg.DataDir, StateDir)), nil
	}
	prefix := StatePrefix
	if cfg.S3Prefix != "" {
		prefix = cfg.S3Prefix + "/" + StatePrefix
	}
	s, err := workspace.NewS3(workspace.S3Config{
		Bucket: cfg.S3Bucket, Prefix: prefix, Endpoint: cfg.S3Endpoint, Region: cfg.S3Region,
		AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey, SessionToken: cfg.S3SessionToken,
	})
	if err != nil {
		return nil, fmt.Errorf("LUCY_WORKSPACE_STORE (Lucy's state): %w", err)
	}
	return s, nil
}

// Credentials returns the teams' stored keys in Lucy's state store, sealed with LUCY_SECRETS_KEY.
func Credentials(cfg *config.Config, state workspace.Store) (*secrets.Store, error) {
	if state == nil {
		var err error
		if state, err = StateStore(cfg); err != nil {
			return nil, err
		}
	}
	return secrets.New(state, cfg.SecretsKey)
}

// SlackArchive returns the archive of the channels' messages in Lucy's state store, kept for
// LUCY_SLACK_ARCHIVE_DAYS; nil when that is 0. The gateway writes it, the workers' Slack search
// reads it (package slackarchive).
func SlackArchive(cfg *config.Config, state workspace.Store) (*slackarchive.Archive, error) {
	if cfg.SlackArchiveDays <= 0 {
		return nil, nil
	}
	if state == nil {
		var err error
		if state, err = StateStore(cfg); err != nil {
			return nil, err
		}
	}
	return slackarchive.New(state, time.Duration(cfg.SlackArchiveDays)*24*time.Hour, nil), nil
}

// WorkspaceStore returns the store of the teams' files that cfg names (LUCY_WORKSPACE_STORE): the
// local folder under LUCY_DATA_DIR, or the S3 bucket.
func WorkspaceStore(cfg *config.Config) (workspace.Store, error) {
	if cfg.S3Bucket == "" {
		return workspace.NewLocal(cfg.DataDir), nil
	}
	s, err := workspace.NewS3(workspace.S3Config{
		Bucket: cfg.S3Bucket, Prefix: cfg.S3Prefix, Endpoint: cfg.S3Endpoint, Region: cfg.S3Region,
		AccessKey: cfg.S3AccessKey, SecretKey: cfg.S3SecretKey, SessionToken: cfg.S3SessionToken,
	})
	if err != nil {
		return nil, fmt.Errorf("LUCY_WORKSPACE_STORE: %w", err)
	}
	return s, nil
}

// CheckWorkspaceStore makes one request to a shared store, so that a wrong bucket, endpoint or key
// stops the worker at start rather than at a person's first file. The local folder needs none.
func CheckWorkspaceStore(ctx context.Context, store workspace.Store) error {
	s3, ok := store.(*workspace.S3)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s3.Check(ctx); err != nil {
		return fmt.Errorf("LUCY_WORKSPACE_STORE: %w (check the bucket, LUCY_S3_ENDPOINT, LUCY_S3_REGION and the AWS_* keys)", err)
	}
	return nil
}

// DataConverter returns the data converter of Lucy's Temporal clients; every process dials with
// it and the worker's activities decode history with it, so they always agree: the SDK's default
// (JSON), encrypted by package codec when LUCY_PAYLOAD_KEYS is set. (config.Load has checked the
// keys, so this cannot fail on them.)
func DataConverter(cfg *config.Config) converter.DataConverter {
	dc, err := codec.DataConverter(cfg.PayloadKeys)
	if err != nil {
		panic(err) // unreachable: config.Load parsed the keys
	}
	return dc
}

// Activities are every activity struct the worker registers: the core ones (embedded, so their
// fields read as before) and each domain's.
type Activities struct {
	*activities.Activities
	// Memory notes what the people said after a run and keeps a 👎's reason (NoteFromRun,
	// KeepFeedback), and writes the prompt's memory block (wired into the core's Sections).
	Memory *runstep.Activities
	// Schedules answer the firings of recurring jobs and monitors.
	Schedules *schedules.Activities
	// Email answers the new-mail listener's firings.
	Email *listener.Activities
	// Spend checks a new run's budgets and records a run's usage (CheckSpend, RecordSpend).
	Spend *spend.Activities
	// MCP is the MCP client the tools use (not registered: no activity of its own); Close it when
	// the worker stops, which ends the MCP servers it started.
	MCP *mcp.Source
}

// NewActivities builds the activities with real clients.
func NewActivities(d Deps) *Activities {
	cfg := d.Config
	slackFor := SlackClients(cfg, d.LocalSlackURL, d.LocalSlackToken)
	model := d.Model
	if model == nil {
		model = NewChatModel(cfg)
	}
	// A nil HTTP client lets the tools build their own, which also refuses private addresses at
	// connect time (DNS rebinding).
	httpClient := d.HTTP
	store := d.Workspace
	if store == nil {
		var err error
		if store, err = WorkspaceStore(cfg); err != nil {
			panic(err) // unreachable: config.Load validated the settings NewS3 parses
		}
	}
	state := d.State
	if state == nil {
		var err error
		if state, err = StateStore(cfg); err != nil {
			panic(err) // unreachable: config.Load validated the settings NewS3 parses
		}
	}
	creds, err := Credentials(cfg, state)
	if err != nil {
		panic(err) // unreachable: a key of the right size always makes a cipher
	}
	// The OAuth sign-in to MCP servers: pending sign-ins in the state store, tokens in the
	// credential store, the callback on LUCY_PUBLIC_URL (without one, a 401 says what works instead).
	mcpOAuth, err := oauth.New(state, creds, cfg.SecretsKey, cfg.PublicURL)
	if err != nil {
		panic(err) // unreachable: the stores are set and a key of the right size always makes a cipher
	}
	// lucy_browse's named sessions, sealed like the credentials in the state store.
	browserSessions, err := browser.NewSessions(state, cfg.SecretsKey)
	if err != nil {
		panic(err) // unreachable: a key of the right size always makes a cipher
	}
	notes := d.Memory
	if notes == nil {
		if notes, err = Memory(cfg, state, d.Log); err != nil {
			panic(err) // an in-memory SQLite database that does not open: the binary is broken
		}
	}
	// Spend: each team's ledger in the state store, held to the operator's default budgets and the
	// team's overrides (package spend).
	ledger := spend.New(state, cfg.SpendLimits)
	slackTools := func(team string) tools.SlackAPI { return slackFor(team) }
	var scheduleClient client.ScheduleClient
	var mailListeners email.ListenerSchedules
	if d.Client != nil {
		scheduleClient = d.Client.ScheduleClient()
		mailListeners = &listener.Schedules{API: scheduleClient, Every: cfg.EmailPollInterval}
	}
	deps := toolset.Deps{
		Schedules: scheduleClient,
		Search: web.SearchConfig{Provider: cfg.SearchProvider, APIKey: cfg.SearchAPIKey, Model: cfg.SearchModel,
			BaseURL: cfg.SearchBaseURL},
		SlackUser:            slackUser(cfg),
		ScriptLimits:         scriptLimits(cfg),
		DataConverter:        d.DataConverter,
		Admins:               cfg.AdminUsers,
		ScheduleLimits:       scheduleLimits(cfg),
		Slack:                slackTools,
		State:                state,
		Credentials:          creds,
		Keys:                 integrations.NewSlackKeys(slackTools),
		Listers:              d.Listers,
		HTTP:                 httpClient,
		DataDir:              cfg.DataDir,
		Workspace:            store,
		Log:                  d.Log,
		AllowPrivateNetworks: d.AllowPrivateNetworks,
		PrivateHosts:         cfg.AllowedPrivateHosts,
		Chromium:             cfg.Chromium,
		BrowserSessions:      browserSessions,
		OpenAPIMaxOperations: cfg.OpenAPIMaxOperations,
		MCPServers:           d.MCPServers,
		Services:             d.Services,
		MCPOAuth:             mcpOAuth,
		Memory:               notes,
		Spend:                ledger,
		EmailListeners:       mailListeners,
		MailRootCAs:          cfg.MailRootCAs,
		MailProviders:        mailProviders(cfg),

		// The largest OpenAPI document a resolve reads (LUCY_OPENAPI_MAX_DOCUMENT_MB).
		OpenAPIMaxDocumentBytes: int64(cfg.OpenAPIMaxDocumentMB) << 20,
	}
	// The Slack search reads the archive the gateway writes (LUCY_SLACK_ARCHIVE_DAYS; a nil archive
	// stays a nil interface).
	if archive, _ := SlackArchive(cfg, state); archive != nil {
		deps.SlackArchive = archive
	}
	if d.Client != nil {
		deps.Visibility = d.Client // lucy_activity's runs
	}
	set := toolset.New(deps)
	core := &activities.Activities{
		Model:            model,
		Models:           cfg.Models,
		Sampling:         sampling(cfg),
		Slack:            func(team string) activities.SlackAPI { return slackFor(team) },
		History:          &activities.CachedHistory{Client: d.Client, Namespace: cfg.TemporalNamespace, Metrics: d.Metrics},
		Temporal:         d.Client,
		Prompts:          subagents.PromptFS(prompts.FS), // the sub-agents keep their task prompts
		Tools:            set.Runner,
		Admins:           cfg.AdminUsers,
		ApprovalKey:      cfg.ApprovalKey,
		MaxToolCalls:     cfg.MaxToolCalls,
		MaxRunsPerTeam:   cfg.MaxRunsPerTeam,
		ModelConcurrency: cfg.ModelConcurrency,
		ContextWindow:    cfg.ContextWindow,
		DataDir:          cfg.DataDir,
		Log:              d.Log,
		DataConverter:    d.DataConverter,
		Metrics:          d.Metrics,
		Skills:           set.Skills,
		// Every side effect and approval, in the state store (lucy_activity, lucy audit export).
		Audit: audit.New(state, nil),
	}
	mem := &runstep.Activities{Store: notes, Core: core, Tokens: cfg.MemoryTokens, Log: d.Log}
	// The capabilities' parts of the system prompt, in the prompt's order.
	core.Sections = []steps.PromptSection{
		integrations.Section{Listers: set.Integrations, Log: d.Log},
		mem,
		set.Skills,
		// First contacts: markers in Lucy's state store, the team's workspace scaffolded; a person
		// with a completed run from before the markers is not introduced again.
		onboarding.Section{Onboarder: onboarding.New(state, store, nil).MetBefore(metBefore(d.Client, cfg.TemporalNamespace)), Log: d.Log},
	}
	// A new assistant thread's suggestions: the team's skills, then its recurring jobs.
	core.Suggesters = []steps.Suggester{set.Skills, schedules.JobPrompts{Temporal: d.Client}}
	return &Activities{Activities: core, Memory: mem, Schedules: &schedules.Activities{Manager: set.Schedules, Temporal: d.Client},
		Email: &listener.Activities{Email: set.Email}, MCP: set.MCP, Spend: &spend.Activities{Ledger: ledger, Admins: cfg.AdminUsers}}
}

// slackUser is the user-token client of the installed workspace (SLACK_USER_TOKEN), for Slack's
// search; nil without one.
func slackUser(cfg *config.Config) func(team string) tools.SlackSearchAPI {
	if cfg.SlackUserToken == "" {
		return nil
	}
	c := slack.New(cfg.SlackUserToken, slack.OptionAPIURL(cfg.SlackAPIURL))
	return func(team string) tools.SlackSearchAPI {
		if team == LocalTeam {
			return nil // the terminal's local workspace has no user token
		}
		return c
	}
}

// sampling is the configuration's per-tier generation settings for the model activity.
func sampling(cfg *config.Config) map[string]activities.Sampling {
	out := map[string]activities.Sampling{}
	for tier, s := range cfg.Sampling {
		out[tier] = activities.Sampling{Temperature: s.Temperature, MaxOutputTokens: s.MaxOutputTokens}
	}
	return out
}

// scriptLimits are lucy_run_script's limits from the configuration: CPU time as long as the
// timeout allows (a script that waits uses none), the rest the sandbox's defaults.
func scriptLimits(cfg *config.Config) sandbox.Limits {
	l := sandbox.DefaultLimits
	if cfg.ScriptTimeout > 0 {
		l.Wall, l.CPU = cfg.ScriptTimeout, cfg.ScriptTimeout
	}
	if cfg.ScriptMemoryMB > 0 {
		l.MemoryBytes = int64(cfg.ScriptMemoryMB) << 20
	}
	return l
}

// scheduleLimits are the tools' limits on recurring jobs and monitors, from the configuration.
func scheduleLimits(cfg *config.Config) schedules.ScheduleLimits {
	l := cfg.Schedules
	return schedules.ScheduleLimits{JobsPerTeam: l.JobsPerTeam, JobsPerUser: l.JobsPerUser, MonitorsPerTeam: l.MonitorsPerTeam,
		MonitorsPerUser: l.MonitorsPerUser, MinJobInterval: l.MinJobInterval, MinMonitorInterval: l.MinMonitorInterval}
}

// NewChatModel builds the Chat Completions client. Temporal owns retries, so the client makes none
// (openai-go retries twice by default, which would multiply with the activity's policy).
func NewChatModel(cfg *config.Config) activities.ChatModel {
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithBaseURL(cfg.LLMBaseURL)}
	// Always set the key explicitly: NewClient would otherwise read OPENAI_API_KEY on its own, which
	// is wrong for OpenRouter.
	opts = append(opts, option.WithAPIKey(cfg.LLMAPIKey))
	if cfg.Provider == "openrouter" {
		opts = append(opts, option.WithHeader("X-Title", "Lucy"))
	}
	c := openai.NewClient(opts...)
	return &c.Chat.Completions
}

// SlackClients returns a Slack client per team: the local workspace (localURL with localToken) for
// LocalTeam, the bot token against SLACK_API_URL for every other team.
func SlackClients(cfg *config.Config, localURL, localToken string) func(team string) *slack.Client {
	var remote, local *slack.Client
	if cfg.SlackBotToken != "" {
		remote = slack.New(cfg.SlackBotToken, slack.OptionAPIURL(cfg.SlackAPIURL))
	}
	if localURL != "" {
		if !strings.HasSuffix(localURL, "/") {
			localURL += "/"
		}
		local = slack.New(localToken, slack.OptionAPIURL(localURL))
	}
	return func(team string) *slack.Client {
		if team == LocalTeam && local != nil {
			return local
		}
		if remote != nil {
			return remote
		}
		if local != nil {
			return local
		}
		// No Slack at all: calls fail with invalid_auth, classified as permanent.
		return slack.New("xoxb-missing", slack.OptionAPIURL(cfg.SlackAPIURL))
	}
}

// Register registers every workflow and activity under its fixed name.
func Register(r sdkworker.Registry, acts *Activities) {
	r.RegisterWorkflowWithOptions(workflows.Lane, workflow.RegisterOptions{Name: workflows.LaneWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.AgentRun, workflow.RegisterOptions{Name: workflows.AgentRunWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.RunSlots, workflow.RegisterOptions{Name: workflows.RunSlotsWorkflowName})
	r.RegisterWorkflowWithOptions(workflows.SubAgent, workflow.RegisterOptions{Name: subagents.WorkflowName})
	r.RegisterWorkflowWithOptions(schedules.ScheduledJob, workflow.RegisterOptions{Name: schedules.ScheduledJobWorkflow})
	r.RegisterWorkflowWithOptions(schedules.JobSlots, workflow.RegisterOptions{Name: schedules.JobSlotsWorkflow})
	r.RegisterWorkflowWithOptions(schedules.Monitor, workflow.RegisterOptions{Name: schedules.MonitorWorkflow})
	r.RegisterWorkflowWithOptions(listener.EmailListener, workflow.RegisterOptions{Name: listener.ListenerWorkflow})
	r.RegisterWorkflowWithOptions(listener.EmailMessage, workflow.RegisterOptions{Name: listener.MessageWorkflow})
	for name, fn := range map[string]any{
		"CallModel":             acts.CallModel,
		"Complete":              acts.Complete,
		"BuildSystemPrompt":     acts.BuildSystemPrompt,
		"Route":                 acts.Route,
		"IsAdmin":               acts.IsAdmin,
		"CheckApproval":         acts.CheckApproval,
		"ExecuteTool":           acts.ExecuteTool,
		"LoadThread":            acts.LoadThread,
		"OpenRun":               acts.OpenRun,
		"ResolveContext":        acts.ResolveContext,
		"PostPlaceholder":       acts.PostPlaceholder,
		"PostMessage":           acts.PostMessage,
		"DeliverAnswer":         acts.DeliverAnswer,
		"UpdateMessage":         acts.UpdateMessage,
		"React":                 acts.React,
		"PostEphemeral":         acts.PostEphemeral,
		"PostApprovalPrompt":    acts.PostApprovalPrompt,
		"ResolveApprovalPrompt": acts.ResolveApprovalPrompt,
		steps.NoteFromRun:       acts.Memory.NoteFromRun,
		"SetThreadStatus":       acts.SetThreadStatus,
		"StreamSteps":           acts.StreamSteps,
		steps.KeepFeedback:      acts.Memory.KeepFeedback,
		steps.CheckSpend:        acts.Spend.CheckSpend,
		steps.RecordSpend:       acts.Spend.RecordSpend,
		"StartAssistantThread":  acts.StartAssistantThread,
		"SetThreadTitle":        acts.SetThreadTitle,
		"RunCap":                acts.RunCap,
		"ClosedWorkflows":       acts.ClosedWorkflows,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	// A struct registers each exported method under its own name, unprefixed: JobTiming,
	// CheckScheduleAccess, CheckMonitor, SaveMonitorState.
	r.RegisterActivity(acts.Schedules)
	// FetchNewMail, AdvanceMailCursor, MarkMailHandled.
	r.RegisterActivity(acts.Email)
}

// New creates a worker on the `lucy` task queue with everything registered, sized by s.
func New(c client.Client, acts *Activities, s Sizing) sdkworker.Worker {
	w := sdkworker.New(c, workflows.TaskQueue, Options(s))
	Register(w, acts)
	return w
}

// Sizing is what a worker is sized for.
type Sizing struct {
	// StopTimeout is how long Stop lets in-flight activities finish (LUCY_WORKER_STOP_TIMEOUT for
	// `lucy worker`, 0 for `lucy dev` and tests, where Ctrl-C should not wait for a model call and
	// Temporal retries the activities on the next start): a cancelled side-effecting tool is not
	// retried blindly (the run waits for a human) and a cancelled model call is paid for twice, so a
	// rolling deploy should let them finish; the pod's grace period must be longer
	// (deploy/k8s/worker.yaml).
	StopTimeout time.Duration
	// EmbeddedServer is set when the worker polls a server whose storage is one SQLite connection
	// (`lucy dev`'s, package devserver, and the tests' temporaltest): see Options.
	EmbeddedServer bool
}

// Options are the worker's settings for s.
//
// The sizes, measured with the e2e benchmarks (docs/benchmarks.md):
//   - 8 activity pollers instead of the SDK's 2: with 2 pollers of each kind, a task often waited
//     for a poller while the other was in a long poll, and 300 conversations at once were answered
//     at 11 a second instead of 14 with 8 of each (measured on temporaltest's server);
//   - 8 workflow task pollers against a cluster, 2 against an embedded server. Each workflow task a
//     worker takes is a few transactions on the server's database, and an embedded server has a
//     single SQLite connection that the gateway's hand-offs wait for too: with 8, a backlog of
//     conversations kept so many transactions queued that acknowledging Slack took 115 ms at the
//     99th percentile at 100 events a second (BenchmarkAckLatency); with 2, 45 ms, for about a tenth
//     fewer conversations answered a second while the backlog lasts. A cluster's database has a
//     pool of connections, and there the extra pollers keep workflow tasks from waiting;
//   - at most MaxActivities activities at once instead of 1,000: Lucy's activities are mostly waits
//     on a model or a web page, so many fit, but not so many that a burst of runs makes one worker
//     open a thousand provider connections; model calls are bounded further per model
//     (LUCY_MODEL_CONCURRENCY, activities.Activities.ModelConcurrency), and what does not fit waits
//     in Temporal's task queue for this or another worker.
func Options(s Sizing) sdkworker.Options {
	// The SDK keeps the workflows it has run in a cache shared by the process's workers (10,000 by
	// default). A lane waits up to 7 days between messages, so a busy worker's cache fills with idle
	// lanes: measured, about 270 KB each for the worker and the embedded server together
	// (BenchmarkIdleLanesAndActiveRuns). StickyCacheSize bounds the worker's share; a lane that
	// was evicted is replayed from its (short) history when its next message comes, in milliseconds.
	sdkworker.SetStickyWorkflowCacheSize(StickyCacheSize)
	workflowPollers := 8
	if s.EmbeddedServer {
		workflowPollers = 2
	}
	return sdkworker.Options{
		WorkerStopTimeout: s.StopTimeout,
		// Separate pollers for the task queue and for this worker's sticky queue (the SDK's
		// autoscaling behaviour), up to workflowPollers each. With the default, mixed pollers, a
		// poller always prefers the sticky queue while it has a backlog: under a steady load of
		// runs it always has, and a new thread's first workflow task, which is on the task queue,
		// waited until the sticky tasks timed out (5 s; measured with BenchmarkFirstSignOfLife at
		// 20 conversations a second: first sign of life p99 5.1 s, 119 ms with these pollers).
		WorkflowTaskPollerBehavior: sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{
			InitialNumberOfPollers: workflowPollers, MinimumNumberOfPollers: 1, MaximumNumberOfPollers: workflowPollers,
		}),
		MaxConcurrentActivityTaskPollers:   8,
		MaxConcurrentActivityExecutionSize: MaxActivities,
		// The SDK sends an activity's heartbeats at most every 80 % of its HeartbeatTimeout (8 s for a
		// tool call), and an activity hears of its cancellation only in a heartbeat's answer: "cancel
		// that" reached an MCP server 7 s late. Allowed every second, a long tool call beats that
		// often and hears of it within a second; the other activities pace their own beats as the
		// throttle did (activities.beatEvery), so they cost the server no more writes.
		MaxHeartbeatThrottleInterval: activities.HeartbeatEvery,
	}
}

// StickyCacheSize is how many workflows (lanes, runs) a worker process keeps in memory between their
// workflow tasks.
const StickyCacheSize = 2000

// MaxActivities is how many activities one worker runs at once.
const MaxActivities = 256

// metBefore asks Temporal's visibility whether a person has a completed agent run in the team: Lucy
// worked for them before onboarding's markers existed. Nil without a client (tests of activities).
func metBefore(c client.Client, namespace string) func(ctx context.Context, team, user string) (bool, error) {
	if c == nil {
		return nil
	}
	return func(ctx context.Context, team, user string) (bool, error) {
		// team and user are a Slack team ID and user ID, checked by onboarding (no quotes in them).
		query := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Completed' AND %s = '%s' AND %s = '%s'",
			workflows.AgentRunWorkflowName, searchattr.Workspace.GetName(), team, searchattr.User.GetName(), user)
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: namespace, Query: query})
		if err != nil {
			return false, err
		}
		return resp.GetCount() > 0, nil
	}
}

// mailProviders are the OAuth mail providers whose client the operator set: their mailboxes sign
// in (lucy_connect_email "auth") with the MCP sign-in's flow and callback.
func mailProviders(cfg *config.Config) map[string]email.Provider {
	out := map[string]email.Provider{}
	if cfg.GoogleClientID != "" {
		out[email.AuthGoogle] = email.GoogleProvider(cfg.GoogleClientID, cfg.GoogleClientSecret)
	}
	if cfg.MicrosoftClientID != "" {
		out[email.AuthMicrosoft] = email.MicrosoftProvider(cfg.MicrosoftClientID, cfg.MicrosoftClientSecret, cfg.MicrosoftTenant)
	}
	return out
}
