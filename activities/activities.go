// Package activities holds every piece of I/O Lucy's workflows do: LLM calls, Slack Web API calls,
// tool execution and prompt assembly. Workflows refer to them through a nil *Activities
// (`var a *activities.Activities; workflow.ExecuteActivity(ctx, a.CallModel, in)`), and the worker
// registers them under explicit, stable names (worker/).
//
// # Rules
//
//   - Inputs and results are plain structs named here (the streams' are slackstream's, aliased in
//     stream.go): no slack.* or openai.* types and no secrets cross into workflow history.
//   - Temporal owns retries. Errors that retrying cannot fix are returned as non-retryable
//     application errors (see errors.go); everything else is retried by the caller's bounded policy.
//   - Long calls heartbeat, so that a cancelled run reaches them within seconds.
//   - Message bodies that are already in history are referred to, not re-sent (see transcript.go).
package activities

import (
	"time"

	"context"
	"io/fs"
	"sync"
	"sync/atomic"

	"go.temporal.io/sdk/client"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/activities/slackstream"
	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/signing"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/slackaccess"
)

// ChatModel is the part of openai-go's *openai.ChatCompletionService the activities use.
type ChatModel interface {
	New(ctx context.Context, body openai.ChatCompletionNewParams, opts ...option.RequestOption) (*openai.ChatCompletion, error)
}

// SlackAPI is the part of *slack.Client the activities and tools use.
type SlackAPI interface {
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	UpdateMessageContext(ctx context.Context, channelID, timestamp string, options ...slack.MsgOption) (string, string, string, error)
	PostEphemeralContext(ctx context.Context, channelID, userID string, options ...slack.MsgOption) (string, error)
	AddReactionContext(ctx context.Context, name string, item slack.ItemRef) error
	RemoveReactionContext(ctx context.Context, name string, item slack.ItemRef) error
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	GetConversationInfoContext(ctx context.Context, input *slack.GetConversationInfoInput) (*slack.Channel, error)
	GetConversationsContext(ctx context.Context, params *slack.GetConversationsParameters) ([]slack.Channel, string, error)
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

// SlackClients returns the Slack client for a workspace (team ID). In `lucy dev` the local terminal
// workspace has its own in-process Slack API; every other team uses SLACK_BOT_TOKEN.
type SlackClients func(team string) SlackAPI

// Activities is the receiver of every activity. Its fields are injected by the worker; tests inject fakes.
type Activities struct {
	Model  ChatModel         // Chat Completions, built with zero retries
	Models map[string]string // tier -> model name
	// Sampling is each tier's temperature and output cap; a tier missing here sends neither.
	Sampling map[string]Sampling
	Slack    SlackClients
	History  HistoryReader // resolves transcript references against workflow history
	// Temporal is the worker's client, for what workflow code cannot ask itself (is a workflow
	// still running?).
	Temporal client.Client
	Prompts  fs.FS         // prompts/ (embedded markdown)
	Tools    *tools.Runner // tool schemas and implementations, compiled-in and from run-time sources
	Admins   []string      // LUCY_ADMIN_USERS
	// ApprovalKey verifies the gateway's signatures on approvals (CheckApproval): LUCY_APPROVAL_KEY,
	// or derived from SLACK_BOT_TOKEN. The zero key verifies nothing, so every approval is refused.
	ApprovalKey signing.Key
	// MaxToolCalls is how many tool calls of one model reply the workflow runs (LUCY_MAX_TOOL_CALLS),
	// recorded in Route so that a changed setting cannot change what a running workflow replays.
	MaxToolCalls int
	// MaxRunsPerTeam is LUCY_MAX_RUNS_PER_TEAM, read by the lanes through RunCap (0: no cap).
	MaxRunsPerTeam int
	// ModelConcurrency bounds concurrent calls to one model from this worker (0: no bound).
	ModelConcurrency int
	modelSlots       modelSlots
	// streams streams into Slack for this process, with its budget of Slack's stream calls
	// (slackstream; made at first use: streamer).
	streams     *slackstream.Streamer
	streamsOnce sync.Once
	// Now is the clock of the streams' age (slackstream.RenewAge); nil is time.Now. Tests move it.
	Now func() time.Time
	// ContextWindow overrides the model's context window in tokens (LUCY_CONTEXT_WINDOW); 0 = known per model.
	ContextWindow int
	// DataDir holds the tools' workspace files (DataDir/workspaces/<team>/) and, out of the tools'
	// reach, the teams' knowledge notes (DataDir/knowledge/<team>/, see KnowledgeDir).
	DataDir string
	Log     zerolog.Logger
	// DataConverter must be the data converter of the worker's Temporal client. The activities use
	// it to decode the payloads they read back from history (transcript references, tool arguments
	// by reference) and to measure results against Temporal's payload limit; with a codec on the
	// client (encryption, compression), history cannot be read with any other converter. nil means
	// the SDK's default, as for a client dialled without one.
	DataConverter converter.DataConverter
	// Metrics counts tool calls, model calls, tokens and estimated cost (nil: not counted). Activities
	// never replay, so they count directly; workflow code counts through its SDK metrics handler.
	Metrics *metrics.Metrics
	// Sections are the capabilities' parts of the system prompt, in the order the worker wires them
	// (integrations, memory, skills, onboarding): BuildSystemPrompt writes them after the workspace's
	// knowledge and before the context. None means no such blocks.
	Sections []steps.PromptSection
	// Skills names the skills a request clearly asks for (Route); nil means none.
	Skills steps.SkillMatcher
	// Suggesters give a new assistant thread's suggested prompts (skills, recurring jobs), in order.
	Suggesters []steps.Suggester
	// Audit is the record of side effects and approvals (package audit, in the state store):
	// ExecuteTool adds every call of a tool that is not read-only, ResolveApprovalPrompt every
	// approval's decision. nil records nothing.
	Audit *audit.Log

	// approverAccess is the access rule for who may approve in a run started by mail, built once.
	approverAccess     *slackaccess.Access
	approverAccessOnce sync.Once
	legacyKnowledge    sync.Map // team -> true once its old knowledge folder was checked (warnLegacyKnowledge)
	resetRuns          sync.Map // run ID -> whether it is a reset run (resetRun, mayRepeat)
	resetRunsSize      atomic.Int64
}

// dataConverter returns DataConverter or, when unset, the SDK's default.
func (a *Activities) dataConverter() converter.DataConverter {
	if a.DataConverter != nil {
		return a.DataConverter
	}
	return converter.GetDefaultDataConverter()
}
