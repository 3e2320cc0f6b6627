package workflows

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/activity"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/spend"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/workspace"
)

// harness runs workflows in the SDK's test environment with every activity mocked: the model is a
// script, tools answer by name, Slack calls are recorded.
type harness struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment

	mu       sync.Mutex
	model    func(n int, in activities.CallModelInput) (activities.ModelReply, error)
	complete func(in activities.CompleteInput) (activities.Completion, error)
	tool     func(in activities.ExecuteToolInput) (activities.ToolResult, error)
	// toolActivity, when set, answers ExecuteTool instead of tool, with the activity's context: a
	// test passes it to the real activity (Activities.ExecuteTool over a real Runner).
	toolActivity func(ctx context.Context, in activities.ExecuteToolInput) (activities.ToolResult, error)
	route        activities.Route
	thread       activities.ThreadHistory
	admins       map[string]bool
	modelCalls   []activities.CallModelInput
	modelRuns    []string // the workflow ID of each model call
	// modelBy, when set, replaces model and also gets the calling workflow's ID (sub-agents).
	modelBy   func(wf string, n int, in activities.CallModelInput) (activities.ModelReply, error)
	completes []activities.CompleteInput
	// completeLocal: whether each of completes ran as a local activity.
	completeLocal []bool
	toolCalls     []activities.ExecuteToolInput
	// toolLocal: whether each of toolCalls ran as a local activity.
	toolLocal  []bool
	delivered  []string
	updates    []string
	posts      []activities.PostInput
	prompts    []activities.ApprovalPromptInput
	resolved   []activities.ResolveApprovalInput
	ephemerals []activities.EphemeralInput
	checks     []activities.CheckApprovalInput
	routes     []activities.RouteInput
	reactions  []activities.ReactInput
	modelDelay time.Duration
	toolDelay  time.Duration
	toolMock   *testsuite.MockCallWrapper
	modelMock  *testsuite.MockCallWrapper
	deliverErr error
	threadErr  error
	// toolFinishes makes a tool run its whole toolDelay even when cancelled (a side effect that
	// cannot be taken back once started).
	toolFinishes bool
	deliveries   []activities.DeliverInput
	// promptErr, when set, may fail BuildSystemPrompt.
	promptErr func(in activities.PromptInput) error
	// order records "tool-done:<name>" and "update:<text>" as they happen.
	order []string
	// notes are the memory step's inputs (NoteFromRun); noteErr, when set, fails it.
	notes   []steps.NoteFromRunInput
	noteErr error
	// statusWorks makes SetThreadStatus succeed (by default Slack answers missing_scope, as a workspace
	// without the status API does); statuses are what it was asked to show, in order ("" clears).
	statusWorks bool
	statuses    []string
	// promptThreads are where StartAssistantThread set prompts: "channel/thread_ts".
	promptThreads []string
	// statusSlack, when set, is also given every status (a test passes it on to a local Slack).
	statusSlack func(activities.ThreadStatusInput)
	// timelineWorks makes StreamSteps open the timeline (by default Slack will not open a stream);
	// timelines are its inputs, in order.
	timelineWorks bool
	timelines     []activities.TimelineInput
	// slackSteps and slackDeliver, when set, answer StreamSteps and DeliverAnswer instead of the
	// script (the real activities against a local workspace); placeholderTS is then the
	// placeholder OpenRun answers.
	slackSteps    func(ctx context.Context, in activities.TimelineInput) (activities.TimelineResult, error)
	slackDeliver  func(ctx context.Context, in activities.DeliverInput) (activities.PostResult, error)
	placeholderTS string
	// promptIns are BuildSystemPrompt's inputs, in order.
	promptIns []activities.PromptInput
	// kept are the 👎 reasons KeepFeedback was asked to keep.
	kept []steps.KeepFeedbackInput
	// ledger is the spend ledger CheckSpend and RecordSpend use (package spend's real activities over
	// a local state store in a temporary folder; no limits unless a test sets them).
	ledger *spend.Ledger
	// spendChecks and spendRecords count the spend steps' calls.
	spendChecks, spendRecords int
}

func newHarness(t *testing.T) *harness { t.Helper(); return newHarnessWith(t, nil) }

// newHarnessWith is newHarness with the suite's settings changed by configure first (nil: none).
func newHarnessWith(t *testing.T, configure func(*testsuite.WorkflowTestSuite)) *harness {
	t.Helper()
	var suite testsuite.WorkflowTestSuite
	suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if testing.Verbose() {
		suite.SetLogger(sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(testLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	}
	if configure != nil {
		configure(&suite)
	}
	h := &harness{t: t, env: suite.NewTestWorkflowEnvironment(), admins: map[string]bool{}}
	h.ledger = spend.New(workspace.NewLocalAt(t.TempDir()), nil)
	h.route = activities.Route{Intent: "chat", Tier: "default", Tools: []string{
		"lucy_web_fetch", "lucy_read_file", "lucy_write_file", "lucy_edit_file", "lucy_delete_file",
		"lucy_post_message", "lucy_list_files", "get_run_journal", "update_run_journal", "append_run_journal_entry", "ask_human",
	}}
	h.thread = activities.ThreadHistory{Messages: []activities.ThreadMessage{{Role: "user", User: "U1", Text: "hello", TS: "100.1"}}}
	h.model = func(n int, in activities.CallModelInput) (activities.ModelReply, error) {
		return activities.ModelReply{Content: "Done.", Model: "m-" + in.Tier}, nil
	}
	h.complete = func(in activities.CompleteInput) (activities.Completion, error) {
		if in.Prompt == "SUPERVISOR.md" {
			return activities.Completion{Text: "C", Model: "m-fast"}, nil
		}
		return activities.Completion{Text: "summary", Model: "m-fast"}, nil
	}
	h.tool = func(in activities.ExecuteToolInput) (activities.ToolResult, error) {
		return activities.ToolResult{Content: "ok from " + in.Name, Chars: 12}, nil
	}
	h.register()
	return h
}

func (h *harness) register() {
	env := h.env
	env.RegisterWorkflowWithOptions(AgentRun, workflow.RegisterOptions{Name: AgentRunWorkflowName})
	env.RegisterWorkflowWithOptions(SubAgent, workflow.RegisterOptions{Name: subagents.WorkflowName})
	env.RegisterWorkflowWithOptions(Lane, workflow.RegisterOptions{Name: LaneWorkflowName})
	acts := &activities.Activities{}
	reg := func(name string, fn any) { env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name}) }
	reg("CallModel", acts.CallModel)
	reg("Complete", acts.Complete)
	reg("BuildSystemPrompt", acts.BuildSystemPrompt)
	reg("Route", acts.Route)
	reg("IsAdmin", acts.IsAdmin)
	reg("CheckApproval", acts.CheckApproval)
	reg("ExecuteTool", acts.ExecuteTool)
	reg("LoadThread", acts.LoadThread)
	reg("OpenRun", acts.OpenRun)
	reg("ResolveContext", acts.ResolveContext)
	reg("PostPlaceholder", acts.PostPlaceholder)
	reg("PostMessage", acts.PostMessage)
	reg("DeliverAnswer", acts.DeliverAnswer)
	reg("UpdateMessage", acts.UpdateMessage)
	reg("React", acts.React)
	reg("PostEphemeral", acts.PostEphemeral)
	reg("PostApprovalPrompt", acts.PostApprovalPrompt)
	reg("ResolveApprovalPrompt", acts.ResolveApprovalPrompt)
	reg("SetThreadStatus", acts.SetThreadStatus)
	reg("StreamSteps", acts.StreamSteps)
	reg("StartAssistantThread", acts.StartAssistantThread)
	reg("SetThreadTitle", acts.SetThreadTitle)
	reg("RunCap", acts.RunCap) // 0: no cap, unless a test says otherwise (run_slots_test.go)
	// Memory's activities (package memory, which workflow code does not import) by their names.
	reg(steps.KeepFeedback, func(ctx context.Context, in steps.KeepFeedbackInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.kept = append(h.kept, in)
		return nil
	})
	// The spend steps (package spend, which workflow code does not import), the real ones.
	reg(steps.CheckSpend, func(ctx context.Context, in steps.CheckSpendInput) (steps.CheckSpendResult, error) {
		h.mu.Lock()
		h.spendChecks++
		l := h.ledger
		h.mu.Unlock()
		return (&spend.Activities{Ledger: l, Admins: []string{"UADMIN"}}).CheckSpend(ctx, in)
	})
	reg(steps.RecordSpend, func(ctx context.Context, in steps.RecordSpendInput) error {
		h.mu.Lock()
		h.spendRecords++
		l := h.ledger
		h.mu.Unlock()
		return (&spend.Activities{Ledger: l}).RecordSpend(ctx, in)
	})
	reg(steps.NoteFromRun, func(ctx context.Context, in steps.NoteFromRunInput) (steps.NoteFromRunResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.notes = append(h.notes, in)
		if h.noteErr != nil {
			return steps.NoteFromRunResult{}, h.noteErr
		}
		return steps.NoteFromRunResult{Noted: []string{"mem-0123456789"}, Model: "m-fast"}, nil
	})
	env.OnActivity("StartAssistantThread", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.AssistantThreadInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.order = append(h.order, "prompts")
		h.promptThreads = append(h.promptThreads, in.Channel+"/"+in.ThreadTS)
		return nil
	})
	env.OnActivity("SetThreadTitle", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.AssistantThreadInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.order = append(h.order, "title:"+in.Title)
		return nil
	})
	env.OnActivity("SetThreadStatus", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.ThreadStatusInput) (activities.ThreadStatusResult, error) {
		if h.statusSlack != nil {
			h.statusSlack(in)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		h.statuses = append(h.statuses, in.Status)
		h.order = append(h.order, "status:"+in.Status)
		if !h.statusWorks {
			return activities.ThreadStatusResult{Code: "missing_scope"}, nil
		}
		return activities.ThreadStatusResult{Supported: true}, nil
	})
	env.OnActivity("StreamSteps", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.TimelineInput) (activities.TimelineResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.timelines = append(h.timelines, in)
		if h.slackSteps != nil {
			return h.slackSteps(ctx, in)
		}
		if !h.timelineWorks {
			return activities.TimelineResult{Unavailable: true}, nil
		}
		h.order = append(h.order, fmt.Sprintf("timeline:%s:stop=%v", in.TS, in.Stop))
		if in.TS == "" {
			return activities.TimelineResult{TS: "400.1"}, nil
		}
		return activities.TimelineResult{TS: in.TS}, nil
	})
	h.modelMock = env.OnActivity("CallModel", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.CallModelInput) (activities.ModelReply, error) {
		h.mu.Lock()
		h.modelCalls = append(h.modelCalls, in)
		wf := activity.GetInfo(ctx).WorkflowExecution.ID
		h.modelRuns = append(h.modelRuns, wf)
		n := len(h.modelCalls)
		f, d, by := h.model, h.modelDelay, h.modelBy
		h.mu.Unlock()
		if d > 0 {
			time.Sleep(d)
		}
		if by != nil {
			return by(wf, n, in)
		}
		return f(n, in)
	})
	env.OnActivity("Complete", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.CompleteInput) (activities.Completion, error) {
		h.mu.Lock()
		h.completes = append(h.completes, in)
		h.completeLocal = append(h.completeLocal, activity.GetInfo(ctx).IsLocalActivity)
		f := h.complete
		h.mu.Unlock()
		return f(in)
	})
	h.toolMock = env.OnActivity("ExecuteTool", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.ExecuteToolInput) (activities.ToolResult, error) {
		h.mu.Lock()
		h.toolCalls = append(h.toolCalls, in)
		h.toolLocal = append(h.toolLocal, activity.GetInfo(ctx).IsLocalActivity)
		f, d := h.tool, h.toolDelay
		if real := h.toolActivity; real != nil {
			f = func(in activities.ExecuteToolInput) (activities.ToolResult, error) { return real(ctx, in) }
		}
		h.mu.Unlock()
		if d > 0 {
			h.mu.Lock()
			finishes := h.toolFinishes
			h.mu.Unlock()
			select {
			case <-time.After(d):
			case <-ctx.Done():
				if !finishes {
					return activities.ToolResult{}, ctx.Err()
				}
				time.Sleep(d)
			}
		}
		res, err := f(in)
		h.mu.Lock()
		h.order = append(h.order, "tool-done:"+in.Name)
		h.mu.Unlock()
		return res, err
	})
	env.OnActivity("Route", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.RouteInput) (activities.Route, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.routes = append(h.routes, in)
		if len(in.Tools) > 0 { // a sub-agent's tools: recorded as given
			return activities.Route{Tools: in.Tools}, nil
		}
		return h.route, nil
	})
	env.OnActivity("BuildSystemPrompt", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.PromptInput) (activities.SystemPrompt, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.promptIns = append(h.promptIns, in)
		if h.promptErr != nil {
			if err := h.promptErr(in); err != nil {
				return activities.SystemPrompt{}, err
			}
		}
		return activities.SystemPrompt{Text: "You are Lucy.", Hash: "h"}, nil
	})
	env.OnActivity("LoadThread", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.LoadThreadInput) (activities.ThreadHistory, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.thread, h.threadErr
	})
	// OpenRun is PostPlaceholder and LoadThread at once (a lean start): the same answers.
	env.OnActivity("OpenRun", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.OpenRunInput) (activities.OpenRunResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.order = append(h.order, "open")
		ph := "200.1"
		if h.placeholderTS != "" {
			ph = h.placeholderTS
		}
		if h.threadErr != nil {
			return activities.OpenRunResult{Placeholder: activities.PostResult{TS: ph}, ThreadError: h.threadErr.Error()}, nil
		}
		return activities.OpenRunResult{Placeholder: activities.PostResult{TS: ph}, Thread: h.thread}, nil
	})
	env.OnActivity("ResolveContext", mock.Anything, mock.Anything).Return(activities.ContextInfo{UserName: "ada", TZ: "Europe/Paris", ChannelName: "general"}, nil)
	env.OnActivity("IsAdmin", mock.Anything, mock.Anything).Return(func(ctx context.Context, user string) (bool, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		return h.admins[user], nil
	})
	// The real CheckApproval verifies the gateway's signature (activities tests); here a signature is
	// authentic when it is "signed", so that tests can send forged ones.
	env.OnActivity("CheckApproval", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.CheckApprovalInput) (activities.ApprovalCheck, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.checks = append(h.checks, in)
		if in.Sig != "signed" {
			return activities.ApprovalCheck{Reason: "unsigned"}, nil
		}
		return activities.ApprovalCheck{Authentic: true, Allowed: in.User == in.Requester || h.admins[in.User]}, nil
	})
	env.OnActivity("PostPlaceholder", mock.Anything, mock.Anything).Return(activities.PostResult{TS: "200.1"}, nil)
	env.OnActivity("PostMessage", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.PostInput) (activities.PostResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.posts = append(h.posts, in)
		return activities.PostResult{TS: fmt.Sprintf("300.%d", len(h.posts))}, nil
	})
	env.OnActivity("DeliverAnswer", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.DeliverInput) (activities.PostResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.deliverErr != nil {
			return activities.PostResult{}, h.deliverErr
		}
		h.delivered = append(h.delivered, in.Markdown)
		h.deliveries = append(h.deliveries, in)
		if h.slackDeliver != nil {
			return h.slackDeliver(ctx, in)
		}
		return activities.PostResult{TS: in.PlaceholderTS}, nil
	})
	env.OnActivity("UpdateMessage", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.UpdateInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.updates = append(h.updates, in.Text)
		h.order = append(h.order, "update:"+in.Text)
		return nil
	})
	env.OnActivity("React", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.ReactInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.reactions = append(h.reactions, in)
		return nil
	})
	env.OnActivity("PostEphemeral", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.EphemeralInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.ephemerals = append(h.ephemerals, in)
		return nil
	})
	env.OnActivity("PostApprovalPrompt", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.ApprovalPromptInput) (activities.PostResult, error) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.prompts = append(h.prompts, in)
		return activities.PostResult{TS: fmt.Sprintf("400.%d", len(h.prompts))}, nil
	})
	env.OnActivity("ResolveApprovalPrompt", mock.Anything, mock.Anything).Return(func(ctx context.Context, in activities.ResolveApprovalInput) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.resolved = append(h.resolved, in)
		return nil
	})
}

func runInput(text string) RunInput {
	key := LaneKey{Team: "T1", Channel: "C1", ThreadTS: "100.1"}
	return RunInput{Lane: key, Number: 1, Requester: "U1", Message: Message{
		Team: "T1", Channel: "C1", TS: "100.1", ThreadTS: "100.1", User: "U1", Text: text, Kind: "app_mention",
	}}
}

// runAgent executes an agent run to completion and returns its result.
func (h *harness) runAgent(in RunInput) (RunResult, error) {
	h.t.Helper()
	h.env.ExecuteWorkflow(AgentRunWorkflowName, in)
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("workflow did not complete")
	}
	var res RunResult
	err := h.env.GetWorkflowError()
	if err == nil {
		if err := h.env.GetWorkflowResult(&res); err != nil {
			h.t.Fatal(err)
		}
	}
	return res, err
}

func (h *harness) answer() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.delivered) == 0 {
		return ""
	}
	return h.delivered[len(h.delivered)-1]
}

// inlineTexts returns every inline text the model was sent in call i (0-based), with its role.
func (h *harness) inlineTexts(i int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, e := range h.modelCalls[i].Transcript.Entries {
		if e.Text != "" {
			out = append(out, e.Role+": "+e.Text)
		}
	}
	for _, e := range h.modelCalls[i].System {
		if e.Text != "" {
			out = append(out, e.Role+": "+e.Text)
		}
	}
	return out
}

func (h *harness) sawInline(i int, substr string) bool {
	for _, s := range h.inlineTexts(i) {
		if strings.Contains(s, substr) {
			return true
		}
	}
	return false
}

func (h *harness) tiers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, len(h.modelCalls))
	for i, c := range h.modelCalls {
		out[i] = c.Tier
	}
	return out
}

func toolCall(id, name string, args any) activities.ToolCall {
	b, _ := json.Marshal(args)
	return activities.ToolCall{ID: id, Name: name, Arguments: string(b)}
}

func calls(cs ...activities.ToolCall) activities.ModelReply {
	return activities.ModelReply{ToolCalls: cs, Model: "m"}
}

func text(s string) activities.ModelReply { return activities.ModelReply{Content: s, Model: "m"} }

var laneKey = LaneKey{Team: "T1", Channel: "C1", ThreadTS: "100.1"}

func msg(ts, user, text string) Message {
	return Message{EventID: "Ev" + ts, Team: "T1", Channel: "C1", TS: ts, ThreadTS: "100.1", User: user, Text: text, Kind: "message", Sig: "signed"}
}

// runLane starts a lane, schedules the given callbacks (at workflow-clock delays), and runs until the
// lane is idle long enough to close.
func (h *harness) runLane(first Message, steps ...step) {
	h.t.Helper()
	for _, s := range steps {
		s := s
		h.env.RegisterDelayedCallback(func() { s.do(h) }, s.at)
	}
	h.env.RegisterDelayedCallback(func() { h.env.SignalWorkflow(SignalMessage, first) }, 0)
	h.env.ExecuteWorkflow(LaneWorkflowName, LaneInput{Key: laneKey})
	if !h.env.IsWorkflowCompleted() {
		h.t.Fatal("lane did not complete")
	}
	if err := h.env.GetWorkflowError(); err != nil {
		h.t.Fatalf("lane failed: %v", err)
	}
}

type step struct {
	at time.Duration
	do func(h *harness)
}

func signalAt(at time.Duration, name string, arg any) step {
	return step{at: at, do: func(h *harness) { h.env.SignalWorkflow(name, arg) }}
}

type testLogWriter struct{ t *testing.T }

func (w testLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
