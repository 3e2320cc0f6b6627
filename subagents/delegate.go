package subagents

import (
	"encoding/json"
	"errors"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// The run's signals the relay uses (workflows.SignalRunEvent and SignalApproval, fixed names; a test
// in workflows checks they agree): a child tells its parent, as a run tells its lane, that it waits
// for an approval, and receives the approval as a run does.
const (
	SignalRunEvent = "run_event"
	SignalApproval = "approval"
)

// Parent is the run that delegates, as its children start from it.
type Parent[R any] struct {
	ID  string // its workflow ID: its children are ID(ID, n)
	Run R      // its input: each child starts from it
	// Placeholder is the ts of its "Thinking…" message, where the children's progress shows.
	Placeholder string
	// Budget is each child's time budget (zero: DefaultBudget).
	Budget    time.Duration
	TaskQueue string
	// Attrs are the search attributes the run started with: a child is where and for whom its run is.
	Attrs temporal.SearchAttributes
}

// Host is what the delegation step needs of the run that delegates. Package workflows implements it.
type Host interface {
	// NextChild numbers the run's next sub-agent: 1, 2, … for the life of the run.
	NextChild() int
	// Validate checks a call's arguments against its tool's schema in the catalogue.
	Validate(tool, args string) error
	// Summary is a child's one line in the Web UI, written as the run's own summaries are.
	Summary(agent, task string) string
	// FetchShare is what each of n children started together may fetch of the request's
	// lucy_web_fetch calls; Fetched counts what a child spent.
	FetchShare(n int) *int
	Fetched(n int)
	// Usage is the run's token usage per model; the children's is added to it.
	Usage() map[string]agent.Usage
	// Phase is the run's phase as its status query shows it.
	Phase() string
	SetPhase(phase string)
	// Awaiting is the approval the run told its lane it waits on ("" for none); NotifyLane tells the
	// lane it waits on fingerprint ("" for nothing) and remembers it.
	Awaiting() string
	NotifyLane(ctx workflow.Context, fingerprint string)
	// Approvals is the run's approval signal channel.
	Approvals() workflow.ReceiveChannel
}

// Call is one delegate_to_*_agent call of a batch.
type Call struct {
	Tool, Arguments string
}

// child is one delegation of a batch and the child workflow running it.
type child struct {
	i      int
	id     string
	spec   Spec
	future workflow.ChildWorkflowFuture
}

// Delegate runs a batch's delegations as child workflows, in parallel, and answers each call (answer,
// by its index in calls) with its sub-agent's report, or with an error the model reads; a call
// cancelled with the run gets no answer. The run calls it after the batch's other tools, so that while
// children run the run's only reader of approvals is the relay below: approvals for a child's
// destructive step come to the lane, which hands them to the run, which hands them to the child that
// asked.
func Delegate[R any](ctx workflow.Context, p Parent[R], h Host, calls []Call, answer func(i int, text string, isErr bool)) {
	log := workflow.GetLogger(ctx)
	prev := h.Phase()
	h.SetPhase("delegating")
	defer func() { h.SetPhase(prev) }()
	var started []child
	fetchShare := h.FetchShare(len(calls))
	for i, c := range calls {
		spec, _ := ForTool(c.Tool)
		if err := h.Validate(c.Tool, c.Arguments); err != nil {
			answer(i, "Error: invalid arguments for "+c.Tool+": "+err.Error(), true)
			continue
		}
		task, err := ParseDelegation(c.Arguments)
		if err != nil {
			answer(i, "Error: invalid arguments for "+c.Tool+": "+err.Error(), true)
			continue
		}
		id := ID(p.ID, h.NextChild())
		in := Input[R]{Run: p.Run, Parent: p.ID, Spec: spec, Task: task, Placeholder: p.Placeholder, Budget: p.Budget,
			FetchesLeft: fetchShare}
		cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
			WorkflowID:            id,
			TaskQueue:             p.TaskQueue,
			TypedSearchAttributes: p.Attrs,
			Memo:                  map[string]any{"parent": p.ID, "agent": spec.Name, "task": slackwire.Head(task.Task, 500)},
			StaticSummary:         h.Summary(spec.Name, task.Task),
			// "cancel that" cancels the child and waits until it has stopped (its side-effecting tool
			// finished or stopped, its approval prompt resolved) before the run says "Stopped.".
			WaitForCancellation: true,
			ParentClosePolicy:   enumspb.PARENT_CLOSE_POLICY_REQUEST_CANCEL,
		})
		log.Info("agent.delegation.started", "run", p.ID, "agent", spec.Name, "child", id)
		started = append(started, child{i: i, id: id, spec: spec, future: workflow.ExecuteChildWorkflow(cctx, WorkflowName, in)})
	}
	if len(started) == 0 {
		return
	}
	fwdCtx, stopForwarding := workflow.WithCancel(ctx)
	workflow.Go(fwdCtx, func(gctx workflow.Context) { relay(gctx, p.ID, h) })
	for _, d := range started {
		var res Result
		err := d.future.Get(ctx, &res)
		switch {
		case ctx.Err() != nil:
			continue // cancelled: the child was asked to stop and has stopped
		case err != nil:
			log.Warn("agent.delegation.failed", "run", p.ID, "child", d.id, "error", err)
			h.Fetched(*fetchShare) // it may have spent its share; its result does not say
			answer(d.i, "Error: the "+d.spec.Human+" failed ("+slackwire.Head(failureText(err), 300)+
				"); nothing it found came back. Try again with a narrower task, or do it yourself with your tools.", true)
		default:
			MergeUsage(h.Usage(), res.Usage)
			h.Fetched(res.Fetches)
			rep := res.Report
			answer(d.i, rep.Render(), rep.Status == StatusFailed)
			log.Info("agent.delegation.done", "run", p.ID, "child", d.id, "status", rep.Status, "turns", rep.Turns)
		}
	}
	stopForwarding()
	if h.Awaiting() != "" { // a child stopped while its approval was pending: the lane must not route to it
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		h.NotifyLane(dctx, "")
	}
}

// childEvent is the part of a child's run_event (workflows.RunEvent) the relay reads.
type childEvent struct {
	Run              string `json:"run"`
	AwaitingApproval string `json:"awaitingApproval,omitempty"`
}

// approvalRoute is the part of an approval (workflows.Approval) the relay routes by.
type approvalRoute struct {
	Fingerprint string `json:"fingerprint"`
	User        string `json:"user"`
}

// relay relays, while children run, what concerns their approvals: a child's run event (it waits for
// an approval, or no longer does) goes to the lane as this run's, so that the lane routes the button
// and a "yes, do it" here; an approval goes on to the child that waits for it, as it came (every
// field, signature included): the child checks it like any approval (the gateway's signature,
// requester or admin).
func relay(ctx workflow.Context, run string, h Host) {
	log := workflow.GetLogger(ctx)
	events := workflow.GetSignalChannel(ctx, SignalRunEvent)
	waiting := map[string]string{} // fingerprint -> child workflow ID
	for {
		done := false
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(ctx.Done(), func(workflow.ReceiveChannel, bool) { done = true })
		sel.AddReceive(events, func(ch workflow.ReceiveChannel, _ bool) {
			var ev childEvent
			ch.Receive(ctx, &ev)
			if ev.AwaitingApproval != "" {
				waiting[ev.AwaitingApproval] = ev.Run
				h.SetPhase("awaiting_approval")
			} else {
				h.SetPhase("delegating")
			}
			h.NotifyLane(ctx, ev.AwaitingApproval)
		})
		sel.AddReceive(h.Approvals(), func(ch workflow.ReceiveChannel, _ bool) {
			var raw json.RawMessage
			ch.Receive(ctx, &raw)
			var ap approvalRoute
			_ = json.Unmarshal(raw, &ap) // a payload that is not an approval routes nowhere
			child, ok := waiting[ap.Fingerprint]
			if !ok {
				log.Warn("agent.delegation.approval_unmatched", "run", run, "user", ap.User)
				return
			}
			if err := workflow.SignalExternalWorkflow(ctx, child, "", SignalApproval, raw).Get(ctx, nil); err != nil && ctx.Err() == nil {
				log.Warn("agent.delegation.approval_forward_failed", "run", run, "child", child, "error", err)
			}
		})
		sel.Select(ctx)
		if done {
			return
		}
	}
}

// MergeUsage adds a child's token usage to the run's (into), in a fixed order.
func MergeUsage(into, u map[string]agent.Usage) {
	for _, model := range workflow.DeterministicKeys(u) {
		cur := into[model]
		cur.PromptTokens += u[model].PromptTokens
		cur.CompletionTokens += u[model].CompletionTokens
		cur.Calls += u[model].Calls
		into[model] = cur
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
