package workflows

import (
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// SubAgentInput starts a sub-agent. Spec is a copy of the registry row taken when the parent
// delegated, so the child replays from what it was started with.
type SubAgentInput struct {
	// Run is the parent run's input with the task as the message text: the thread, the requester,
	// the person's name and time zone, the approval TTL.
	Run    RunInput             `json:"run"`
	Parent string               `json:"parent"` // the parent run's workflow ID
	Spec   agent.SubAgentSpec   `json:"spec"`
	Task   agent.DelegationArgs `json:"task"`
	// Placeholder is the ts of the parent's "Thinking…" message, where progress shows ("" for none).
	Placeholder string `json:"placeholder,omitempty"`
	// Budget is the time the sub-agent may work, waits for a person excluded; zero means
	// agent.SubBudget. Tests shorten it.
	Budget time.Duration `json:"budget,omitempty"`
	// FetchesLeft is the sub-agent's share of the request's lucy_web_fetch calls (fetch_cap.go);
	// nil (a parent that predates the cap) means a cap of its own.
	FetchesLeft *int `json:"fetchesLeft,omitempty"`
}

// SubAgentResult is what a sub-agent gives its parent: the report the parent model reads, and the
// tokens it used, which roll up into the parent run.
type SubAgentResult struct {
	Report agent.Report     `json:"report"`
	Tier   string           `json:"tier"`
	Usage  map[string]Usage `json:"usage,omitempty"`
	// Fetches is how many lucy_web_fetch calls it made: they count toward its parent's cap.
	Fetches int `json:"fetches,omitempty"`
}

// SubAgent is a sub-agent as a workflow : the run's loop code with the
// registry's prompt, tier, tools, turn limit, payload cap and time budget. It does not talk to the
// person: no placeholder of its own, no answer in the thread, no questions (it reports open ones).
// Its progress shows in the parent's placeholder; a destructive tool asks for approval in the
// parent's thread, and the approval reaches it through the lane and the parent run.
func SubAgent(ctx workflow.Context, in SubAgentInput) (SubAgentResult, error) {
	budget := in.Budget
	if budget <= 0 {
		budget = agent.SubBudget
	}
	runIn := in.Run
	runIn.Message.Text = in.Task.Task
	runIn.AbsoluteMax = budget
	runIn.SoftLimit = budget - agent.SubSummaryBefore
	if runIn.SoftLimit < budget/2 {
		runIn.SoftLimit = budget * 3 / 4
	}
	runIn.PriorJournal = ""
	r := newRun(ctx, runIn)
	r.sub = &in
	if in.FetchesLeft != nil {
		r.fetches.limit = in.FetchesLeft
	}
	if err := r.setup(ctx); err != nil {
		countRun(ctx, "", err)
		return SubAgentResult{}, err
	}
	res, err := r.runSub(ctx)
	countRun(ctx, res.Report.Status, err)
	r.endAttrs(ctx, res.Report.Status, err)
	return res, err
}

func (r *run) runSub(ctx workflow.Context) (SubAgentResult, error) {
	r.log.Info("sub_agent.started", "run", r.id, "agent", r.sub.Spec.Name, "parent", r.sub.Parent)
	loopCtx, stopLoop := workflow.WithCancel(ctx)
	defer stopLoop()
	r.startLimits(ctx, stopLoop)

	var answer, status, reason string
	if err := r.prepareSub(loopCtx); err != nil {
		if ctx.Err() == nil && !r.timedOut {
			return SubAgentResult{}, err
		}
	} else {
		answer, status, reason = r.loopUntilAnswer(loopCtx)
	}
	if ctx.Err() != nil { // the parent was cancelled ("cancel that")
		if r.awaiting != "" {
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			r.notifyLane(dctx, "")
		}
		r.log.Info("sub_agent.cancelled", "run", r.id, "turn", r.turn)
		return SubAgentResult{}, temporal.NewCanceledError()
	}
	if r.timedOut {
		status, reason = RunPartial, "its time budget ran out"
		answer = agent.PartialResults(r.records, answer, "the sub-agent's time budget")
	}
	rep := agent.Report{Summary: answer, Confidence: "low"}
	if status == RunCompleted {
		rep = agent.ParseReport(answer)
	}
	rep.Agent, rep.Status, rep.Turns = r.sub.Spec.Name, status, r.turn
	if status != RunCompleted {
		rep.Note = reason
	}
	for _, rec := range r.records {
		outcome := "ok"
		if rec.IsError {
			outcome = "error"
		}
		rep.ToolCalls = append(rep.ToolCalls, rec.Name+" ("+outcome+")")
	}
	r.status.Phase = "done"
	r.log.Info("sub_agent.completed", "run", r.id, "status", status, "turns", r.turn, "tier", r.tier)
	return SubAgentResult{Report: rep, Tier: r.tier, Usage: r.status.Usage, Fetches: r.fetches.Used}, nil
}

// prepareSub records the sub-agent's tools (their flags, as the worker's catalogue has them), builds
// its light system prompt and hands it the task.
func (r *run) prepareSub(ctx workflow.Context) error {
	spec := r.sub.Spec
	names := append(append([]string{}, spec.Tools...), tools.GetRunJournal, tools.UpdateRunJournal, tools.AppendRunJournalEntry)
	if err := workflow.ExecuteActivity(quick(ctx, "route"), a.Route, activities.RouteInput{Text: r.sub.Task.Task, Tools: names}).Get(ctx, &r.route); err != nil {
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
	r.appendInline("user", agent.SubAgentTask(r.sub.Task))
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
	if !agent.ShouldPostSubProgress(r.turn) || r.sub.Placeholder == "" {
		return
	}
	m := r.in.Message
	err := workflow.ExecuteActivity(slackOptions(ctx, r.nextID("progress")), a.UpdateMessage, activities.UpdateInput{
		Team: m.Team, Channel: m.Channel, TS: r.sub.Placeholder, Text: agent.SubProgressMessage(r.sub.Spec, r.turn, r.sub.Task.Task),
	}).Get(ctx, nil)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("sub_agent.progress_failed", "run", r.id, "error", err)
	}
}

// delegation is one delegate_to_*_agent call of a batch and the child running it.
type delegation struct {
	i      int
	id     string
	spec   agent.SubAgentSpec
	future workflow.ChildWorkflowFuture
}

// delegate runs the batch's delegations as child workflows, in parallel, and answers each call with
// its sub-agent's report. It runs after the batch's other tools, so that while children run the
// run's only reader of approvals is the forwarder below: approvals for a child's destructive step
// come to the lane, which hands them to this run, which hands them to the child that asked.
func (r *run) delegate(ctx workflow.Context, calls []activities.ToolCall, idx []int, results []tmsg) {
	prev := r.status.Phase
	r.status.Phase = "delegating"
	defer func() { r.status.Phase = prev }()
	var started []delegation
	fetchShare := r.fetches.share(len(idx))
	for _, i := range idx {
		c := calls[i]
		spec, _ := agent.SubAgentForTool(c.Name)
		if err := tools.ValidateArgs(c.Name, c.Arguments); err != nil {
			results[i] = r.inlineResult(c, "Error: invalid arguments for "+c.Name+": "+err.Error(), true)
			continue
		}
		task, err := agent.ParseDelegation(c.Arguments)
		if err != nil {
			results[i] = r.inlineResult(c, "Error: invalid arguments for "+c.Name+": "+err.Error(), true)
			continue
		}
		r.subs++
		id := SubAgentID(r.id, r.subs)
		in := SubAgentInput{Run: r.in, Parent: r.id, Spec: spec, Task: task, Placeholder: r.placeholder, Budget: r.in.SubAgentBudget,
			FetchesLeft: fetchShare}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID: id,
			TaskQueue:  TaskQueue,
			// Where and for whom, as the run's own (search_attributes.go); the summary names the sub-agent.
			TypedSearchAttributes: runStartAttrs(r.in),
			Memo:                  map[string]any{"parent": r.id, "agent": spec.Name, "task": slackwire.Head(task.Task, 500)},
			StaticSummary:         slackwire.Head(spec.Name+": "+objective(task.Task), summaryLen),
			// "cancel that" cancels the child and waits until it has stopped (its side-effecting tool
			// finished or stopped, its approval prompt resolved) before the run says "Stopped.".
			WaitForCancellation: true,
			ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		})
		r.log.Info("agent.delegation.started", "run", r.id, "agent", spec.Name, "child", id)
		started = append(started, delegation{i: i, id: id, spec: spec, future: workflow.ExecuteChildWorkflow(cctx, SubAgentWorkflowName, in)})
	}
	if len(started) == 0 {
		return
	}
	fwdCtx, stopForwarding := workflow.WithCancel(ctx)
	workflow.Go(fwdCtx, func(gctx workflow.Context) { r.forwardToChildren(gctx) })
	for _, d := range started {
		c := calls[d.i]
		var res SubAgentResult
		err := d.future.Get(ctx, &res)
		switch {
		case ctx.Err() != nil:
			continue // cancelled: the child was asked to stop and has stopped
		case err != nil:
			r.log.Warn("agent.delegation.failed", "run", r.id, "child", d.id, "error", err)
			r.fetches.Used += *fetchShare // it may have spent its share; its result does not say
			results[d.i] = r.inlineResult(c, "Error: the "+d.spec.Human+" failed ("+slackwire.Head(failureText(err), 300)+
				"); nothing it found came back. Try again with a narrower task, or do it yourself with your tools.", true)
		default:
			r.mergeUsage(res.Usage)
			r.fetches.Used += res.Fetches
			rep := res.Report
			results[d.i] = r.inlineResult(c, rep.Render(), rep.Status == RunFailed)
			r.log.Info("agent.delegation.done", "run", r.id, "child", d.id, "status", rep.Status, "turns", rep.Turns)
		}
	}
	stopForwarding()
	if r.awaiting != "" { // a child stopped while its approval was pending: the lane must not route to it
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		r.notifyLane(dctx, "")
	}
}

// forwardToChildren relays, while children run, what concerns their approvals: a child's RunEvent
// (it waits for an approval, or no longer does) goes to the lane as this run's, so that the lane
// routes the button and a "yes, do it" here; an approval goes on to the child that waits for it.
// The child checks it like any approval (the gateway's signature, requester or admin).
func (r *run) forwardToChildren(ctx workflow.Context) {
	events := workflow.GetSignalChannel(ctx, SignalRunEvent)
	waiting := map[string]string{} // fingerprint -> child workflow ID
	for {
		done := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { done = true })
		sel.AddReceive(events, func(ch workflow.ReceiveChannel, _ bool) {
			var ev RunEvent
			ch.Receive(ctx, &ev)
			if ev.AwaitingApproval != "" {
				waiting[ev.AwaitingApproval] = ev.Run
				r.status.Phase = "awaiting_approval"
			} else {
				r.status.Phase = "delegating"
			}
			r.notifyLane(ctx, ev.AwaitingApproval)
		})
		sel.AddReceive(r.approvalCh, func(ch workflow.ReceiveChannel, _ bool) {
			var ap Approval
			ch.Receive(ctx, &ap)
			child, ok := waiting[ap.Fingerprint]
			if !ok {
				r.log.Warn("agent.delegation.approval_unmatched", "run", r.id, "user", ap.User)
				return
			}
			if err := workflow.SignalExternalWorkflow(ctx, child, "", SignalApproval, ap).Get(ctx, nil); err != nil && ctx.Err() == nil {
				r.log.Warn("agent.delegation.approval_forward_failed", "run", r.id, "child", child, "error", err)
			}
		})
		sel.Select(ctx)
		if done {
			return
		}
	}
}

// mergeUsage adds a child's token usage to the run's, in a fixed order.
func (r *run) mergeUsage(u map[string]Usage) {
	for _, model := range workflow.DeterministicKeys(u) {
		cur := r.status.Usage[model]
		cur.PromptTokens += u[model].PromptTokens
		cur.CompletionTokens += u[model].CompletionTokens
		cur.Calls += u[model].Calls
		r.status.Usage[model] = cur
	}
}
