package workflows

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/subagents"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// The run's sub-agent mode. The sub-agent workflow, its registry and the delegation step live in
// package subagents; what stays here is the run's own code a sub-agent runs (the loop, with the
// places that branch on r.sub) and the run's side of a delegation (subagents.Run and Host).

// SubAgentInput and SubAgentResult are the sub-agent workflow's input and result, with the run's
// input as the one it starts from.
type (
	SubAgentInput  = subagents.Input[RunInput]
	SubAgentResult = subagents.Result
)

// SubAgent is the sub-agent workflow, registered as subagents.WorkflowName: the run's loop code in
// sub-agent mode with the registry's prompt, tier, tools, turn limit, payload cap and time budget
// (subagents.Execute).
func SubAgent(ctx workflow.Context, in SubAgentInput) (SubAgentResult, error) {
	return subagents.Execute(ctx, in, startSub)
}

// startSub builds the run a sub-agent is: its parent's input with the task as the message, the
// budget's limits and no journal carried from an earlier run.
func startSub(ctx workflow.Context, in SubAgentInput, l subagents.Limits) subagents.Run {
	runIn := in.Run
	runIn.Message.Text = in.Task.Task
	runIn.AbsoluteMax = l.Absolute
	runIn.SoftLimit = l.Soft
	runIn.PriorJournal = ""
	r := newRun(ctx, runIn)
	r.sub = &in
	if in.FetchesLeft != nil {
		r.fetches.limit = in.FetchesLeft
	}
	return subRun{r}
}

// subRun is the run as subagents.Execute drives it.
type subRun struct{ r *run }

func (s subRun) Setup(ctx workflow.Context) error { return s.r.setup(ctx) }

func (s subRun) Count(ctx workflow.Context, status string, err error) { countRun(ctx, status, err) }

func (s subRun) End(ctx workflow.Context, status string, err error) { s.r.endAttrs(ctx, status, err) }

func (s subRun) Work(ctx workflow.Context) (subagents.Outcome, error) {
	r := s.r
	loopCtx, stopLoop := workflow.WithCancel(ctx)
	defer stopLoop()
	r.startLimits(ctx, stopLoop)

	var out subagents.Outcome
	if err := r.prepareSub(loopCtx); err != nil {
		if ctx.Err() == nil && !r.timedOut {
			return out, err
		}
	} else {
		out.Answer, out.Status, out.Reason = r.loopUntilAnswer(loopCtx)
	}
	if ctx.Err() != nil { // the parent was cancelled ("cancel that")
		if r.awaiting != "" {
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			r.notifyLane(dctx, "")
		}
		r.log.Info("sub_agent.cancelled", "run", r.id, "turn", r.turn)
		return subagents.Outcome{}, temporal.NewCanceledError()
	}
	out.TimedOut, out.Turns, out.Records = r.timedOut, r.turn, r.records
	out.Tier, out.Usage, out.Fetches = r.tier, r.status.Usage, r.fetches.total()
	r.status.Phase = "done"
	return out, nil
}

// prepareSub records the sub-agent's tools (their flags, as the worker's catalogue has them), builds
// its light system prompt and hands it the task.
func (r *run) prepareSub(ctx workflow.Context) error {
	spec := r.sub.Spec
	names := append(append([]string{}, spec.Tools...), tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry)
	if err := workflow.ExecuteActivity(quick(ctx, "route"), a.Route, activities.RouteInput{Text: r.sub.Task.Task, Tools: names, Team: r.in.Message.Team, User: r.in.Requester,
		Mail: r.in.Message.Origin == OriginMail}).Get(ctx, &r.route); err != nil {
		return fmt.Errorf("record tools: %w", err)
	}
	r.route.Intent = "delegated"
	r.tier = spec.Tier
	r.status.Tier = r.tier
	r.tools = r.route.Tools

	m := r.in.Message
	var sp activities.SystemPrompt
	if err := workflow.ExecuteActivity(quick(ctx, "prompt"), a.BuildSystemPrompt, activities.PromptInput{
		Team: m.Team, SubAgentPrompt: spec.Prompt, TeamName: r.in.TeamName, ChannelName: r.in.ChannelName, IsDM: m.IsDM,
		UserName: r.in.UserName, UserTZ: r.in.UserTZ, Now: workflow.Now(ctx).UTC().Format(time.RFC3339), Surface: "slack",
	}).Get(ctx, &sp); err != nil {
		return fmt.Errorf("build system prompt: %w", err)
	}
	r.msgs = append(r.msgs, tmsg{wire: activities.Entry{Role: "system", Ref: "prompt"}, text: sp.Text, role: "system"})
	r.appendInline("user", subagents.TaskMessage(r.sub.Task))
	return nil
}

// offered reports whether a sub-agent was given a tool. The builtins' flags are recorded for every
// run, but a sub-agent never asks the person (ask_human) and never delegates further.
func (r *run) offered(name string) bool {
	if r.sub == nil {
		return true
	}
	for _, t := range r.tools {
		if t == name {
			return true
		}
	}
	return false
}

// maxTurns is the turn limit of the loop: MaxToolTurns (50), or the sub-agent's own.
func (r *run) maxTurns() int {
	if r.sub != nil && r.sub.Spec.MaxTurns > 0 {
		return r.sub.Spec.MaxTurns
	}
	return agent.MaxToolTurns
}

// subProgress shows a sub-agent's progress in its parent's placeholder every few turns.
func (r *run) subProgress(ctx workflow.Context) {
	if !subagents.ShouldPostProgress(r.turn) || r.sub.Placeholder == "" {
		return
	}
	m := r.in.Message
	err := workflow.ExecuteActivity(slackOptions(ctx, r.nextID("progress")), a.UpdateMessage, activities.UpdateInput{
		Team: m.Team, Channel: m.Channel, TS: r.sub.Placeholder, Text: subagents.ProgressMessage(r.sub.Spec, r.turn, r.sub.Task.Task),
	}).Get(ctx, nil)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("sub_agent.progress_failed", "run", r.id, "error", err)
	}
}

// delegate runs the batch's delegations (the calls at idx) as sub-agents (subagents.Delegate) and
// answers each call with its report.
func (r *run) delegate(ctx workflow.Context, calls []activities.ToolCall, idx []int, results []tmsg) {
	dc := make([]subagents.Call, len(idx))
	for k, i := range idx {
		dc[k] = subagents.Call{Tool: calls[i].Name, Arguments: calls[i].Arguments}
	}
	// A child starts with its run's search attributes: where and for whom (search_attributes.go).
	p := subagents.Parent[RunInput]{ID: r.id, Run: r.in, Placeholder: r.placeholder, Budget: r.in.SubAgentBudget,
		TaskQueue: TaskQueue, Attrs: runStartAttrs(r.in)}
	subagents.Delegate(ctx, p, delegator{r}, dc, func(k int, text string, isErr bool) {
		results[idx[k]] = r.inlineResult(calls[idx[k]], text, isErr)
	})
}

// delegator is the run as subagents.Delegate uses it.
type delegator struct{ r *run }

func (d delegator) NextChild() int {
	d.r.subs++
	return d.r.subs
}

// Validate checks a delegation's arguments against its declaration: the delegate_to_* builtins are
// declared by package subagents, which this package imports, so the core's validation sees them in
// every binary that links a run (no tool domain needed).
func (d delegator) Validate(tool, args string) error { return tools.ValidateArgs(tool, args) }
func (d delegator) Summary(name, task string) string {
	// One line in the Web UI, cut as the run's own (search_attributes.go), naming the sub-agent.
	return slackwire.Head(name+": "+objective(task), summaryLen)
}
func (d delegator) FetchShare(n int) *int   { return d.r.fetches.share(n) }
func (d delegator) Fetched(n int)           { d.r.fetches.Used += n }
func (d delegator) Usage() map[string]Usage { return d.r.status.Usage }
func (d delegator) Phase() string           { return d.r.status.Phase }
func (d delegator) SetPhase(phase string)   { d.r.status.Phase = phase }
func (d delegator) Awaiting() string        { return d.r.awaiting }
func (d delegator) NotifyLane(ctx workflow.Context, fingerprint string) {
	d.r.notifyLane(ctx, fingerprint)
}
func (d delegator) Approvals() workflow.ReceiveChannel { return d.r.approvalCh }
