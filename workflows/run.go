package workflows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/steps"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// a is the nil receiver workflows use to name activities.
var a *activities.Activities

// RunInput starts an agent run. Everything in it is plain, non-secret data.
type RunInput struct {
	Lane    LaneKey `json:"lane"`
	Number  int     `json:"number"`
	Message Message `json:"message"`
	// Folded are messages from the same person that arrived before the run started.
	Requester   string `json:"requester"`
	UserName    string `json:"userName,omitempty"`
	UserTZ      string `json:"userTz,omitempty"`
	TeamName    string `json:"teamName,omitempty"`
	ChannelName string `json:"channelName,omitempty"`
	// Limits, zero means the defaults of workflows/agent/limits.go; tests shorten them.
	SoftLimit   time.Duration `json:"softLimit,omitempty"`
	AbsoluteMax time.Duration `json:"absoluteMax,omitempty"`
	ApprovalTTL time.Duration `json:"approvalTtl,omitempty"`
	// PriorJournal is the run journal of the thread's previous run, rendered (the journal
	// carries over, so a follow-up knows what was found and decided).
	PriorJournal string `json:"priorJournal,omitempty"`
	// SubAgentBudget is the time budget of the sub-agents this run starts; zero means
	// subagents.DefaultBudget. Tests shorten it.
	SubAgentBudget time.Duration `json:"subAgentBudget,omitempty"`
	// Scheduled is a recurring job's firing: nobody watches the thread, so there is no "Thinking…"
	// message (the answer is posted when it is ready), and the message text is the instruction.
	Scheduled bool `json:"scheduled,omitempty"`
	// ThreadStatus is what the lane's own status line did before it started the run
	// (changeLaneStatus): StatusLineSet, the line says the run is thinking; StatusLineUnavailable,
	// Slack does not offer it here; "" (a lane that did not try), the run finds out itself.
	ThreadStatus string `json:"threadStatus,omitempty"`
	// KeepStatus: the run sends the status line it still shows again while a step runs longer than
	// Slack shows one (keepStatus, issue 39). Every lane sets it since; a run started before has it
	// false and replays without it. Decided here rather than by a change ID: the lane's input to
	// its child replays either way (the SDK matches a child's start on its type), and a version
	// marker would cost every run a marker and a TemporalChangeVersion upsert (changeBaseline).
	KeepStatus bool `json:"keepStatus,omitempty"`
}

// Run outcomes.
const (
	RunCompleted  = "completed"
	RunNeedsInput = "needs_input"
	RunPartial    = "partial"
	RunCancelled  = "cancelled"
	RunFailed     = "failed"
)

// RunResult is what a finished run reports to its lane.
type RunResult struct {
	Status string           `json:"status"`
	Turns  int              `json:"turns"`
	Tier   string           `json:"tier"`
	Reason string           `json:"reason,omitempty"`
	Usage  map[string]Usage `json:"usage,omitempty"`
	// Journal is the run journal, rendered and capped, for the thread's next run (hardened runs).
	Journal string `json:"journal,omitempty"`
	// Unread are messages folded into the run ("also …") after its last read of them: the lane runs
	// them next, so that nothing the person said is lost.
	Unread []Message `json:"unread,omitempty"`
}

// DefaultApprovalTTL is how long an approval prompt stays valid before it re-prompts.
const DefaultApprovalTTL = 15 * time.Minute

// HumanWaitLimit bounds how long a run waits on `resume` after a failure before giving up.
const HumanWaitLimit = 24 * time.Hour

// MaxCarriedJournal bounds the journal a run hands to the next run of its thread.
const MaxCarriedJournal = 6000

// QuestionTTL bounds how long a run waits for the answer to a question it asked (ask_human, the
// supervisor's ASK_USER, recovery stage R3): long enough to be answered the next working day.
const QuestionTTL = 24 * time.Hour

// AgentRun is the agent loop as a workflow: route, build the prompt, load the thread, maybe plan,
// then alternate model calls and tool calls under the supervisor until there is an answer.
func AgentRun(ctx workflow.Context, in RunInput) (RunResult, error) {
	r := newRun(ctx, in)
	if err := r.setup(ctx); err != nil {
		countRun(ctx, "", err)
		return RunResult{}, err
	}
	if res, refused := r.overBudget(ctx); refused {
		r.clearStatus(ctx)
		countRun(ctx, res.Status, nil)
		r.endAttrs(ctx, res.Status, nil)
		return res, nil
	}
	res, err := r.run(ctx)
	r.recordSpend(ctx)
	r.clearStatus(ctx)
	countRun(ctx, res.Status, err)
	r.endAttrs(ctx, res.Status, err)
	return res, err
}

// run is the state of one agent run. It lives in workflow memory and is rebuilt by replay. What
// belongs to one concern is a part that owns its data, in that concern's file: the transcript
// (transcript.go), the time limits (time_limits.go), the guards that watch the loop (guards.go),
// the tool batch and what the tools did (tool_batch.go), the waits for a person (waits.go).
type run struct {
	in     RunInput
	id     string
	log    logger
	status RunStatus // the status query's answer, with the tokens used per model
	// metrics counts what the run does (turns, escalations, loops, compactions, approvals); the
	// SDK silences it during replay (see metrics.go).
	metrics client.MetricsHandler

	// hardened: this execution runs with changeRunHardening (versions.go).
	hardened bool
	// searchAttrs: this execution upserts its search attributes (changeSearchAttributes).
	searchAttrs bool
	// modelAnswered: the loop ended with the model's answer, not with a cancel or a limit
	// (answerOutranksCancel).
	modelAnswered bool

	route activities.Route
	tier  string
	tools []string // offered to the model; guards withdraw a tool at its cap

	// placeholder is the ts of the "Thinking…" message that becomes the answer ("" for none).
	placeholder string
	// answered: the placeholder is the run's answer already (a reset run): nothing is streamed.
	answered bool
	// stream: 0 not decided yet, 1 the model calls stream their text, -1 they do not
	// (changeStreamAnswer, or chat.startStream failed once). streams are the streamed replies, in
	// order: delivery keeps the one that is the answer and deletes the others.
	stream  int
	streams []streamedReply
	// timeline is the run's steps as task cards in a stream opened at its first tool step
	// (changeTimeline, timeline.go): its ts ("" for none), and timelineOff once the run shows no
	// timeline (not versioned in, no stream, or Slack failed it).
	timeline      string
	timelineOff   bool
	timelineCalls int
	// renew: 0 not decided yet, 1 the run renews its timeline and gathers its steps for delivery
	// (changeStreamLife), -1 it does not. timelineOpened is when the timeline started (Slack's stream
	// life counts from it); oldTimelines are the timelines renewed out (stopped), deleted at
	// delivery; steps are every task card of the run as it stands, in order.
	renew          int
	timelineOpened time.Time
	oldTimelines   []string
	steps          []activities.StepTask
	// pendingSteps are task cards not yet sent (changeLeanTurn): the outcome of the last batch,
	// which the next model call (StreamTarget.Steps) or the timeline's stop sends.
	pendingSteps []activities.StepTask
	// localCalls are the tool calls (by activity ID) run as local activities (quickTool).
	localCalls map[string]bool
	// lean: 0 not decided yet, 1 the run's turns are lean (changeLeanTurn), -1 they are not.
	lean int
	// spend: this run checks its budgets and records its usage (changeSpendLimits, spend.go).
	spend bool
	// localFinish: the timeline's stop, the delivery and the memory step are local activities
	// (changeLocalFinish), read at each delivery (the first records the decision).
	localFinish bool

	// The loop (loop.go): its turn, the model's last reply, what it must do next, the journal
	// and the plan it keeps, the supervisor's last check, the gates' retries (gates.go).
	turn       int
	model      string
	window     int
	lastText   string // the text of the model's latest reply (the supervisor's ResponseChars)
	forceTool  string
	journal    agent.Journal
	plan       *agent.Plan
	lastCheck  time.Time
	retryDepth int

	// sub is set when this is a sub-agent (SubAgent), nil for an agent run.
	sub *SubAgentInput
	// subs counts the sub-agents this run started (their IDs: subagents.ID).
	subs int
	// said are the people's own messages in this run (the request, what they folded in, their
	// answers), for the step that notes what they said (memory.go).
	said []steps.Said

	transcript
	clock
	guards
	toolBatch
	waits
	statusLine
	rateLimits
}

// logger is the subset of the SDK's replay-safe logger we use.
type logger interface {
	Debug(string, ...any)
	Info(string, ...any)
	Warn(string, ...any)
	Error(string, ...any)
}

func newRun(ctx workflow.Context, in RunInput) *run {
	id := workflow.GetInfo(ctx).WorkflowExecution.ID
	r := &run{
		in: in, id: id, tier: "default",
		clock:     clock{start: workflow.Now(ctx)},
		guards:    guards{caps: agent.ToolCaps{Counts: map[string]int{}}, withdrawn: map[string]bool{}},
		toolBatch: toolBatch{toolFailures: map[string]int{}},
	}
	r.log = workflow.GetLogger(ctx)
	r.metrics = workflow.GetMetricsHandler(ctx)
	r.status = RunStatus{Run: id, Objective: objective(in.Message.Text), Phase: "preparing", StartedAt: r.start.UTC().Format(time.RFC3339), Usage: map[string]Usage{}}
	r.lastCheck = r.start
	return r
}

func (r *run) setup(ctx workflow.Context) error {
	r.hardened = hardened(ctx, changeRunHardening)
	r.searchAttrs = hardened(ctx, changeSearchAttributes)
	if r.sub == nil { // a sub-agent's steps show in its parent's status
		r.statusOn = hardened(ctx, changeThreadStatus)
		r.statusFromLane(ctx)
		r.keepStatus(ctx)
	}
	r.loop.PerBatch = r.hardened
	r.approvalCh = workflow.GetSignalChannel(ctx, SignalApproval)
	r.resumeCh = workflow.GetSignalChannel(ctx, SignalResume)
	r.foldCh = workflow.GetSignalChannel(ctx, SignalMessage)
	return workflow.SetQueryHandler(ctx, QueryStatus, r.statusNow)
}

func (r *run) run(ctx workflow.Context) (RunResult, error) {
	r.log.Info("agent_run.started", "run", r.id, "lane", LaneID(r.in.Lane))
	// The loop runs under its own cancellable context so the absolute safety net can stop it
	// exactly like a person's "cancel that".
	loopCtx, stopLoop := workflow.WithCancel(ctx)
	defer stopLoop()
	r.startLimits(ctx, stopLoop)

	answer, status, reason, err := r.execute(loopCtx)
	if err != nil {
		if r.hardened {
			r.failedBeforeAnswer(ctx, err)
		}
		return RunResult{}, err
	}
	if ctx.Err() != nil && !r.answerOutranksCancel(ctx) { // cancelled by the lane: "cancel that"
		return r.cancelled(ctx)
	}
	if r.timedOut {
		status, reason = RunPartial, "the 4-hour safety limit"
		answer = agent.PartialResults(r.records, answer, reason)
	}
	r.status.Phase = "finishing"
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	err = r.deliver(dctx, answer)
	for err != nil && r.sub == nil {
		// Slack refused the answer for a reason someone fixes outside Lucy (a revoked token, Lucy
		// removed from the channel): keep the answer and wait for `resume` rather than lose the work.
		code, fixable := activities.SlackNeedsOperator(err)
		if !fixable || !hardened(ctx, changeSlackRefusalParks) {
			break
		}
		r.log.Error("agent_run.answer_refused_by_slack", "run", r.id, "code", code, "error", err)
		if r.waitForHuman(ctx, "I finished, but Slack refused my answer ("+slackwire.Head(failureText(err), 300)+"), so I am keeping it "+
			"until that is fixed.") != ResumeRetry {
			break
		}
		err = r.deliver(dctx, answer)
	}
	if err != nil && ctx.Err() != nil { // "cancel that" while the answer waited
		return r.cancelled(ctx)
	}
	if err != nil {
		r.status.Phase = "done"
		r.log.Error("agent_run.failed", "run", r.id, "error", err)
		return RunResult{Status: RunFailed, Turns: r.turn, Tier: r.tier, Reason: err.Error(), Usage: r.status.Usage}, err
	}
	r.status.Phase = "done"
	r.log.Info("agent_run.completed", "run", r.id, "status", status, "turns", r.turn, "tier", r.tier,
		"elapsed", workflow.Now(ctx).Sub(r.start).String())
	r.noteFromRun(ctx, status)
	res := RunResult{Status: status, Turns: r.turn, Tier: r.tier, Reason: reason, Usage: r.status.Usage, Unread: r.unreadFolds()}
	if r.hardened && !r.journal.IsEmpty() {
		res.Journal = slackwire.Head(r.journal.Render(), MaxCarriedJournal)
	}
	return res, nil
}

// answerOutranksCancel reports whether an answer the loop finished is delivered although "cancel
// that" came in meanwhile (changeLocalFinish). The answer is delivered by a local activity in the
// workflow task that received it, and a cancel that arrives while that task runs makes the server
// refuse the task's completion: the next task sees the answer and the cancel together, after the
// refused one had already put the answer in the thread. Taking the cancelled path there would turn
// a delivered answer into "Stopped." (or delete its streamed message), so the answer wins, in that
// task and in any other where both arrive together, and delivering again finds what is there.
// Only the model's own answer outranks it: where the cancel came first, it is what ended the loop
// (at a safe boundary, or a wait it cut short) and the run says "Stopped.".
func (r *run) answerOutranksCancel(ctx workflow.Context) bool {
	return r.modelAnswered && hardened(ctx, changeLocalFinish)
}

// execute prepares and runs the loop, then the gates; it returns the answer to deliver.
func (r *run) execute(ctx workflow.Context) (answer, status, reason string, err error) {
	if err := r.prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return "", RunCancelled, "", nil
		}
		return "", "", "", err
	}
	if r.hardened {
		answer, status, reason = r.loopUntilAnswer(ctx)
		if ctx.Err() != nil || status != RunCompleted {
			return answer, status, reason, nil
		}
		answer = r.gated(ctx, answer)
		return answer, status, reason, nil
	}
	for {
		answer, status, reason = r.loopUntilAnswer(ctx)
		if ctx.Err() != nil || status != RunCompleted || r.retryDepth >= 1 {
			return answer, status, reason, nil
		}
		// Quality and verification gates: zero-cost heuristics; one retry with a stronger model.
		issues := r.gateIssues(answer)
		if len(issues) == 0 {
			return answer, status, reason, nil
		}
		r.retryDepth++
		prev := r.tier
		r.tier = agent.Escalate(r.tier, agent.EscalationTarget(r.tier, agent.TriggerQualityGate))
		r.log.Info("agent.gate.retry", "run", r.id, "issues", strings.Join(issues, "; "), "from", prev, "to", r.tier)
		// The model sees its own answer (by reference) before the note about what it lacks.
		r.msgs = append(r.msgs, tmsg{wire: activities.Entry{Role: "assistant", Ref: r.lastReply}, role: "assistant", text: answer})
		r.appendInline("user", runtimeNote("Your previous answer may be incomplete: "+strings.Join(issues, "; ")+
			". Improve it: finish the missing parts (use tools if needed) and answer again in full."))
		r.turn = 0
	}
}

// prepare runs the steps before the loop, each an activity: placeholder, route, system prompt,
// thread history, and the supervisor's plan for complex tasks.
func (r *run) prepare(ctx workflow.Context) error {
	m := r.in.Message
	fast := r.hardened && hardened(ctx, changeFastStart)
	var th activities.ThreadHistory
	threadIn := activities.LoadThreadInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, UpTo: m.TS, Limit: agent.MaxContextMessages,
	}
	placeholderIn := activities.PostInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Key: "placeholder", Text: "_Thinking…_",
	}
	threadFuture := func() workflow.Future {
		return workflow.ExecuteActivity(quick(ctx, "thread"), a.LoadThread, threadIn)
	}
	var thread workflow.Future
	// A lean start (changeLeanStart) posts the placeholder and reads the thread in one activity:
	// as two, the one done first woke the workflow for nothing.
	leanStart := fast && hardened(ctx, changeLeanStart)
	threadRef := "thread"
	// threadInline: the thread came from a local activity (changeLocalOpen), whose result has no
	// activity ID to refer to: the first model call carries its messages inline, once.
	threadInline := false
	if leanStart && !r.in.Scheduled {
		var open activities.OpenRunResult
		openIn := activities.OpenRunInput{Placeholder: placeholderIn, Thread: threadIn}
		localOpen := hardened(ctx, changeLocalOpen)
		if err := localOr(localOpen, localSlackOptions(ctx), slackOptions(ctx, "open"), a.OpenRun, openIn).Get(ctx, &open); err != nil {
			return fmt.Errorf("post placeholder and load thread: %w", err)
		}
		r.placeholder, r.answered = open.Placeholder.TS, open.Placeholder.Answered
		if open.ThreadError == "" {
			th, threadRef, threadInline = open.Thread, "open", localOpen
		} else { // read again, alone, with LoadThread's retries; its failure is reported in the placeholder
			r.log.Warn("agent.open.thread_unread", "run", r.id, "error", open.ThreadError)
		}
	} else if fast { // the thread loads while the placeholder is posted
		thread = threadFuture()
	}
	if !r.in.Scheduled && !leanStart {
		ph, err := r.post(ctx, a.PostPlaceholder, placeholderIn)
		if err != nil {
			return fmt.Errorf("post placeholder: %w", err)
		}
		r.placeholder = ph.TS
		r.answered = ph.Answered
	}

	// A hardened run reads the thread first, so that routing knows how deep the thread is: a short
	// "and for Q4?" deep in a thread is a follow-up, not a new lookup.
	loadThread := func() error {
		if threadRef == "open" {
			return nil // read with the placeholder
		}
		if thread == nil {
			thread = threadFuture()
		}
		return thread.Get(ctx, &th)
	}
	depth := 0
	if r.hardened {
		if err := loadThread(); err != nil {
			return fmt.Errorf("load thread: %w", err)
		}
		for _, tm := range th.Messages {
			if tm.TS != m.TS {
				depth++
			}
		}
	}
	// Mail is an input field: histories recorded before it replay either way (the route is recorded).
	routeIn := activities.RouteInput{Text: m.Text, ThreadDepth: depth, Team: m.Team, User: r.in.Requester, Mail: m.Origin == OriginMail}
	if err := localOr(fast, local(ctx), quick(ctx, "route"), a.Route, routeIn).Get(ctx, &r.route); err != nil {
		return fmt.Errorf("route: %w", err)
	}
	r.tier = r.route.Tier
	if r.tier == "" {
		r.tier = "default"
	}
	r.status.Tier = r.tier
	r.log.Info("agent.routed", "run", r.id, "intent", r.route.Intent, "tier", r.tier)
	r.routedAttrs(ctx)

	var sp activities.SystemPrompt
	surface := "slack"
	if m.Kind == "terminal" {
		surface = "terminal"
	}
	promptIn := activities.PromptInput{
		Team: m.Team, Modules: r.route.Modules, TeamName: r.in.TeamName, ChannelName: r.in.ChannelName, IsDM: m.IsDM,
		UserName: r.in.UserName, UserTZ: r.in.UserTZ, Now: workflow.Now(ctx).UTC().Format(time.RFC3339), Surface: surface,
		Scheduled: r.in.Scheduled, Channel: m.Channel, User: r.in.Requester, Message: activities.MemoryMessage(m.Text),
		// Plain data for the activity (the memory block's notes, who is first met, which matched
		// skills to load): no new command, so histories recorded before these fields replay unchanged.
		Skills: r.route.Skills, ViewingChannel: m.ContextChannel,
	}
	// A lean start (changeLeanStart) builds the prompt in the workflow task that routed the request,
	// and the first model call carries it inline (a local activity's result has no activity ID to
	// refer to); later calls name that call as their Base.
	if err := localOr(leanStart, local(ctx), quick(ctx, "prompt"), a.BuildSystemPrompt, promptIn).Get(ctx, &sp); err != nil {
		return fmt.Errorf("build system prompt: %w", err)
	}
	system := activities.Entry{Role: "system", Ref: "prompt"}
	if leanStart {
		system = activities.Entry{Role: "system", Text: sp.Text}
	}
	r.msgs = append(r.msgs, tmsg{wire: system, text: sp.Text, role: "system", once: leanStart})
	if r.hardened && strings.TrimSpace(r.in.PriorJournal) != "" {
		r.appendInline("system", "<previous_run_journal>\nWhat the previous request in this thread found and decided:\n"+
			r.in.PriorJournal+"\n</previous_run_journal>")
	}

	if !r.hardened {
		if err := loadThread(); err != nil {
			return fmt.Errorf("load thread: %w", err)
		}
	}
	sawCurrent := false
	for i, tm := range th.Messages {
		if tm.TS == m.TS {
			sawCurrent = true
		}
		wire := activities.Entry{Role: tm.Role, Ref: threadRef, Index: i}
		if threadInline {
			wire = activities.Entry{Role: tm.Role, Text: tm.Text}
		}
		r.msgs = append(r.msgs, tmsg{wire: wire, text: tm.Text, role: tm.Role, once: threadInline})
	}
	if (!sawCurrent || r.in.Scheduled) && strings.TrimSpace(m.Text) != "" {
		r.appendInline("user", m.Text)
	}
	r.tools = r.route.Tools

	if agent.NeedsPlan(r.route.Intent, m.Text) {
		r.makePlan(ctx, "plan", "")
	}
	return nil
}

// makePlan asks the fast tier for a plan and injects it; a failed plan is not fatal (a plan is
// only an aid).
func (r *run) makePlan(ctx workflow.Context, id, context string) {
	var c activities.Completion
	inline := agent.PlanPrompt(r.in.Message.Text, r.tools, r.route.Intent)
	if context != "" {
		inline += "\n\n" + context
	}
	err := workflow.ExecuteActivity(llmOptions(ctx, r.nextID(id), time.Minute), a.Complete, activities.CompleteInput{
		Tier: "fast", Prompt: "PLANNER.md", Inline: inline,
	}).Get(ctx, &c)
	if err != nil {
		r.log.Warn("agent.plan.failed", "run", r.id, "error", err)
		return
	}
	r.addUsage(c.Model, c.Usage)
	p, ok := agent.ParsePlan(c.Text)
	if !ok {
		r.log.Warn("agent.plan.unparsable", "run", r.id)
		return
	}
	r.plan = &p
	r.appendInline("system", p.Render())
}

// deliver turns the placeholder into the answer (idempotent: the placeholder is updated, further
// parts carry metadata so a retried activity finds them).
func (r *run) deliver(ctx workflow.Context, answer string) error {
	if strings.TrimSpace(answer) == "" {
		answer = agent.PartialResults(r.records, "", "")
	}
	m := r.in.Message
	var res activities.PostResult
	r.localFinish = hardened(ctx, changeLocalFinish)
	r.stopTimeline(ctx)
	streamTS, discard := r.settleStreams(answer)
	in := activities.DeliverInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, PlaceholderTS: r.placeholder, Markdown: answer,
		AllowedMentions: r.allowedMentions(), StreamTS: streamTS, Discard: discard, Lane: r.feedbackLane(),
	}
	if r.renew > 0 && (streamTS != "" && streamTS == r.timeline || len(r.oldTimelines) > 0) {
		in.Steps = r.steps // the answer shows the steps its timeline showed (changeStreamLife)
	}
	err := localOr(r.localFinish, localSlackOptions(ctx), slackOptions(ctx, "deliver"), a.DeliverAnswer, in).Get(ctx, &res)
	if err == nil && streamTS != "" {
		r.placeholder = streamTS // the placeholder is gone: the streamed message is the answer
	}
	var appErr *temporal.ApplicationError
	if _, fixable := activities.SlackNeedsOperator(err); err != nil && fixable && r.sub == nil && hardened(ctx, changeSlackRefusalParks) {
		return err // not "ask me for a shorter version": the run keeps the answer and waits for the fix (run)
	}
	if err != nil && errors.As(err, &appErr) && appErr.Type() == activities.ErrSlackPermanent && r.placeholder != "" {
		// Slack refused the answer itself (too long, invalid blocks…): tell the person in the
		// placeholder rather than leave it "Thinking…" forever. The run still fails, visibly.
		note := "I finished, but Slack would not accept my answer (" + slackwire.Head(appErr.Message(), 160) + "). Ask me for a shorter version."
		if uerr := workflow.ExecuteActivity(slackOptions(ctx, "deliver-failed"), a.UpdateMessage, activities.UpdateInput{
			Team: m.Team, Channel: m.Channel, TS: r.placeholder, Text: note,
		}).Get(ctx, nil); uerr != nil {
			r.log.Warn("agent_run.deliver_notice_failed", "run", r.id, "error", uerr)
		}
	}
	return err
}

// cancelled cleans up on a disconnected context: the placeholder says it stopped (no
// apology), the lane's reaction marks the cancel message. Completed tool results stay in history.
func (r *run) cancelled(ctx workflow.Context) (RunResult, error) {
	r.status.Phase = "done"
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if r.placeholder != "" {
		m := r.in.Message
		text := "_Stopped._"
		if n := len(r.finishedWhileStopping); n > 0 {
			// A side-effecting step was already under way and finished: the person must know it
			// happened, since "Stopped." alone reads as "nothing was done".
			done := make([]string, n)
			for i, t := range r.finishedWhileStopping {
				done[i] = agent.HumanToolName(t)
			}
			text = "_Stopped._ A step already under way had finished before I could stop it: " + strings.Join(done, ", ") + "."
		}
		_, discard := r.settleStreams("")
		err := workflow.ExecuteActivity(slackOptions(dctx, "cancelled"), a.UpdateMessage, activities.UpdateInput{
			Team: m.Team, Channel: m.Channel, TS: r.placeholder, Text: text, Discard: discard,
		}).Get(dctx, nil)
		if err != nil {
			r.log.Warn("agent_run.cancel_cleanup_failed", "run", r.id, "error", err)
		}
	}
	if r.awaiting != "" {
		r.notifyLane(dctx, "")
	}
	r.log.Info("agent_run.cancelled", "run", r.id, "turn", r.turn)
	return RunResult{}, temporal.NewCanceledError(RunResult{Status: RunCancelled, Turns: r.turn, Tier: r.tier, Usage: r.status.Usage})
}

// unreadFolds returns the folded messages that arrived after the loop last read them (hardened
// runs). Temporal does not let a workflow complete while a signal it has not seen is pending, so
// nothing can slip between this read and the end of the run.
func (r *run) unreadFolds() []Message {
	if !r.hardened {
		return nil
	}
	var out []Message
	for {
		var m Message
		if !r.foldCh.ReceiveAsync(&m) {
			return out
		}
		r.log.Info("agent.message.unread_fold", "run", r.id, "ts", m.TS)
		out = append(out, m)
	}
}

// failedBeforeAnswer runs when the run fails outside the loop (routing, prompt assembly, loading the
// thread): the placeholder must not say "Thinking…" forever, so it becomes a short note, on a
// disconnected context. The run still fails, visibly, for an operator to Reset.
func (r *run) failedBeforeAnswer(ctx workflow.Context, err error) {
	if r.placeholder == "" {
		return
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	m := r.in.Message
	note := "Sorry, something went wrong before I could start on this (" + slackwire.Head(failureText(err), 200) +
		"). Please try again in a moment; if it keeps happening, tell whoever runs me."
	if uerr := workflow.ExecuteActivity(slackOptions(dctx, "failed"), a.UpdateMessage, activities.UpdateInput{
		Team: m.Team, Channel: m.Channel, TS: r.placeholder, Text: note,
	}).Get(dctx, nil); uerr != nil {
		r.log.Warn("agent_run.failure_note_failed", "run", r.id, "error", uerr)
	}
}

// failureText is the message of err without Temporal's wrapping ("activity error (type: …)").
func failureText(err error) string {
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) {
		return appErr.Message()
	}
	return err.Error()
}

func (r *run) post(ctx workflow.Context, act any, in activities.PostInput) (activities.PostResult, error) {
	var res activities.PostResult
	err := workflow.ExecuteActivity(slackOptions(ctx, in.Key), act, in).Get(ctx, &res)
	return res, err
}

func objective(text string) string {
	return slackwire.HeadEllipsis(strings.Join(strings.Fields(slackwire.StripMentions(text)), " "), 120)
}

func runtimeNote(s string) string { return "[Lucy runtime] " + s }

// isCanceled reports whether err is a cancellation.
func isCanceled(err error) bool {
	var ce *temporal.CanceledError
	return errors.As(err, &ce)
}
