package tools

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/workspace"
)

// Invocation is one tool call as the activity receives it: the model's call plus where it happens.
type Invocation struct {
	Name      string // tool name
	Arguments string // the model's JSON arguments
	Team      string // Slack team (workspace) ID: selects the Slack client and the file workspace
	Channel   string // channel of the conversation (where generated files are shared)
	ThreadTS  string // root ts of the conversation's thread
	User      string // the person Lucy is working for
	RunID     string // agent run workflow ID
	CallID    string // the model's tool call ID, unique within the run
	// Approved is set when a person approved this exact call after the tool asked for it
	// (Output.NeedsApproval): the tool then does what it held back, such as replacing a file with
	// different content.
	Approved bool
	// Guard, with Approved, is the NeedsApproval.Guard of the request the person approved. The tool
	// then checks that the file is still what the person saw and asks again if it changed in between
	// (another run wrote it), so that an approval never applies to content nobody was shown. Empty
	// means no check.
	Guard string
	// AllowedMentions are the special mentions (<!channel>, <!here>, a user group) the requester's
	// own message asked for (output.RequestedMentions). A tool that posts to Slack neutralizes every
	// other one: the text it posts may come from a page the model read.
	AllowedMentions []string
	// Seen reports whether the run has seen a URL (SeenQuery): in the person's messages, the
	// thread, the results of tools that bring in outside text (LinkSource), or as a fetch a person
	// approved in this request. lucy_web_fetch asks it only for a URL that carries data
	// (URLCarriesData), and fetches without approval what the run has seen. Nil means nothing
	// counts as seen. An error is the system's (history unreadable), not the model's.
	Seen func(ctx context.Context, q SeenQuery) (bool, error)
}

// Output is a tool's result for the model. IsError is set when the call was valid but failed in a way the
// model should see and work around (a 404 page, a missing file, Slack's not_in_channel).
//
// NeedsApproval is set when the call was valid but would destroy something a person has not agreed to
// lose (replace a file with different content, empty it): nothing was done, Content says so, and the
// call is to be made again with Invocation.Approved (and Guard) once a person approves.
type Output struct {
	Content       string        `json:"content"`
	IsError       bool          `json:"isError,omitempty"`
	Artifacts     []string      `json:"artifacts,omitempty"` // workspace files the call wrote (or found holding what it would write)
	NeedsApproval *ApprovalNeed `json:"needsApproval,omitempty"`
}

// SlackAPI is the part of *slack.Client the tools use (a consumer-side interface; tests use a real
// client against localslack).
type SlackAPI interface {
	GetConversationHistoryContext(ctx context.Context, params *slack.GetConversationHistoryParameters) (*slack.GetConversationHistoryResponse, error)
	GetConversationsContext(ctx context.Context, params *slack.GetConversationsParameters) ([]slack.Channel, string, error)
	GetConversationRepliesContext(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error)
	PostMessageContext(ctx context.Context, channelID string, options ...slack.MsgOption) (string, string, error)
	GetPermalinkContext(ctx context.Context, params *slack.PermalinkParameters) (string, error)
	// GetUserInfoContext and GetConversationInfoContext serve the scheduling tools: the requester's
	// time zone, and whether Lucy can post where a job or monitor reports.
	GetUserInfoContext(ctx context.Context, user string, options ...slack.GetUserInfoOption) (*slack.User, error)
	GetConversationInfoContext(ctx context.Context, input *slack.GetConversationInfoInput) (*slack.Channel, error)
	// GetConversationsForUserContext (users.conversations) tells which conversations the requester is
	// in: the access rule (access.go).
	GetConversationsForUserContext(ctx context.Context, params *slack.GetConversationsForUserParameters) ([]slack.Channel, string, error)
	// UploadFileContext is slack-go's files v2 upload (files.getUploadURLExternal, the upload itself,
	// files.completeUploadExternal); slack-go v0.35 renamed UploadFileV2Context to it.
	UploadFileContext(ctx context.Context, params slack.UploadFileParameters) (*slack.FileSummary, error)
	// AuthTestContext names the bot's user, the author of the files it shared (findSharedFile).
	AuthTestContext(ctx context.Context) (*slack.AuthTestResponse, error)
}

var _ SlackAPI = (*slack.Client)(nil)

// Deps are the clients and settings the tools need; the worker builds them, tests pass fakes.
type Deps struct {
	// Slack returns the client for a team; nil (or a nil result) means Slack is not available.
	Slack func(team string) SlackAPI
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
	Search SearchConfig
	// SlackUser returns a client with a user token (xoxp-, SLACK_USER_TOKEN) for a team, which
	// search.messages needs; nil (or a nil result) means only the bot token exists.
	SlackUser func(team string) SlackSearchAPI
	// Admins are the Slack user IDs that may manage anyone's jobs and monitors (LUCY_ADMIN_USERS).
	Admins []string
	// ScheduleLimits bound the jobs and monitors of a workspace and a person, and how often they
	// fire (LUCY_MAX_JOBS_PER_*, LUCY_MAX_MONITORS_PER_*, LUCY_MIN_*_INTERVAL); zero fields mean
	// DefaultScheduleLimits.
	ScheduleLimits ScheduleLimits
}

// Registry runs tools. It is safe for concurrent use.
type Registry struct {
	deps  Deps
	http  *http.Client
	now   func() time.Time
	log   zerolog.Logger
	store workspace.Store // Deps.Workspace, or the local folder; nil without either
	// files (team -> *sync.Mutex) serializes the writes within one workspace on this worker, so
	// that its own parallel edits of a file queue up instead of racing; writers on other workers
	// are kept apart by the store's conditional writes.
	files sync.Map
	// searchHTTP reaches the operator's search provider (not a URL the model chose, so no private
	// address checks).
	searchHTTP *http.Client

	fetchTimeout time.Duration // 20 s; tests shorten it
	// members caches each requester's conversations for the access rule (access.go).
	members membershipCache
	// searchOwners caches the user ID behind each team's SLACK_USER_TOKEN (slack_search.go).
	searchOwners sync.Map
}

// NewRegistry returns a Registry over d.
func NewRegistry(d Deps) *Registry {
	r := &Registry{
		deps:         d,
		now:          time.Now,
		log:          d.Log.With().Str("component", "tools").Logger(),
		fetchTimeout: 20 * time.Second,
	}
	r.store = d.Workspace
	if r.store == nil && d.DataDir != "" {
		r.store = workspace.NewLocal(d.DataDir)
	}
	r.http = r.newFetchClient(d.HTTP)
	r.searchHTTP = &http.Client{Timeout: time.Minute}
	return r
}

// Schemas describes the named tools to the LLM, in the given order; unknown names are skipped.
func (r *Registry) Schemas(names []string) []Schema {
	out := make([]Schema, 0, len(names))
	for _, name := range names {
		e, ok := find(name)
		if !ok {
			continue
		}
		out = append(out, Schema{Name: e.spec.Name, Description: e.spec.Description, Parameters: e.parameters()})
	}
	return out
}

// Run executes one tool call. It returns an *ArgError for arguments no retry can fix, a *TransientError
// for failures worth retrying, an Output with IsError for failures the model should see, and a plain
// error for the rest (a cancelled context, a misconfigured worker). Content is capped at MaxOutputChars.
func (r *Registry) Run(ctx context.Context, inv Invocation) (Output, error) {
	e, ok := find(inv.Name)
	if !ok {
		return Output{}, unknownTool(inv.Name)
	}
	if e.spec.Builtin {
		return Output{}, fmt.Errorf("run %s: %w", inv.Name, ErrBuiltin)
	}
	start := time.Now()
	out, err := r.dispatch(ctx, e, inv)
	if err == nil {
		out.Content = capOutput(out.Content)
	}
	// The caller logs and reports errors; this line only records the outcome and timing.
	r.log.Debug().Str("tool", inv.Name).Str("team", inv.Team).Str("run", inv.RunID).Str("call", inv.CallID).
		Str("outcome", outcome(out, err)).Dur("took", time.Since(start)).Msg("tool call")
	return out, err
}

// dispatch runs a non-builtin tool: assemble makes sure each of them has a run.
func (r *Registry) dispatch(ctx context.Context, e entry, inv Invocation) (Output, error) {
	return e.run(r, ctx, e, inv)
}

func outcome(out Output, err error) string {
	var argErr *ArgError
	var transient *TransientError
	switch {
	case errors.As(err, &argErr):
		return "badArguments"
	case errors.As(err, &transient):
		return "transient"
	case err != nil:
		return "error"
	case out.IsError:
		return "toolError"
	case out.NeedsApproval != nil:
		return "needsApproval"
	}
	return "ok"
}

// capOutput keeps a result under MaxOutputChars, cutting on a rune boundary and saying so.
func capOutput(s string) string {
	if utf8.RuneCountInString(s) <= MaxOutputChars {
		return s
	}
	const room = 64 // for the note
	kept := 0
	for i := range s {
		if kept == MaxOutputChars-room {
			return s[:i] + fmt.Sprintf("\n\n[Output truncated at %d characters.]", kept)
		}
		kept++
	}
	return s
}

// window returns at most size bytes of s from offset, both ends moved back to rune boundaries, with the
// offset it really starts at and the offset to continue from (0 when the rest fits).
func window(s string, offset, size int) (part string, start, next int) {
	for offset > 0 && offset < len(s) && !utf8.RuneStart(s[offset]) {
		offset--
	}
	rest := s[offset:]
	if len(rest) <= size {
		return rest, offset, 0
	}
	end := size
	for end > 0 && !utf8.RuneStart(rest[end]) {
		end--
	}
	return rest[:end], offset, offset + end
}
