package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// waits are what a run needs to wait for a person: the signals that answer it (approvals, resume,
// messages the lane routes here: folds and answers to questions) and what the lane was told.
type waits struct {
	approvalCh workflow.ReceiveChannel
	resumeCh   workflow.ReceiveChannel
	foldCh     workflow.ReceiveChannel
	// awaiting is the fingerprint of the approval the lane was told this run waits on ("" for none).
	awaiting string
	// unanswered is why a question the run asked got no answer ("" while none went unanswered).
	unanswered string
}

// waitForHuman parks the run until someone sends `resume` (from the Web UI or the thread) with
// retry, skip or abort. It posts why it waits.
func (r *run) waitForHuman(ctx workflow.Context, why string) string {
	r.status.Phase = "waiting_for_human"
	r.pause(ctx)
	defer r.unpause(ctx)
	if r.hardened {
		// A resume belongs to the wait it answers: one sent while nothing waited (a double click in
		// the Web UI, a signal aimed at an earlier wait) must not retry a step nobody meant to retry.
		for {
			var stale Resume
			if !r.resumeCh.ReceiveAsync(&stale) {
				break
			}
			r.log.Warn("agent_run.stale_resume_ignored", "run", r.id, "action", stale.Action, "user", stale.User)
		}
	}
	m := r.in.Message
	inThread := r.sub == nil && hardened(ctx, changeResumeInThread)
	how := "An operator can resume me from the Temporal Web UI (signal `resume` with `{\"action\":\"retry\"}`, `\"skip\"` or `\"abort\"`)."
	if inThread {
		how = "Reply *retry* here when it may work again (or *skip* this step, or *abort*); an operator can also resume me " +
			"from the Temporal Web UI (signal `resume` with `{\"action\":\"retry\"}`)."
		r.tellLaneWaiting(ctx, true)
		defer func() {
			dctx, _ := workflow.NewDisconnectedContext(ctx)
			r.tellLaneWaiting(dctx, false)
		}()
	}
	_, err := r.post(ctx, a.PostMessage, activities.PostInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Key: r.nextID("waiting"),
		Text: why + "\n\n" + how,
	})
	if err != nil {
		r.log.Warn("agent_run.wait_notice_failed", "run", r.id, "error", err)
	}
	r.log.Warn("agent_run.waiting_for_human", "run", r.id, "why", why)
	action := ResumeAbort
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(r.resumeCh, func(c workflow.ReceiveChannel, _ bool) {
		var rs Resume
		c.Receive(ctx, &rs)
		switch rs.Action {
		case ResumeRetry, ResumeSkip, ResumeAbort:
			action = rs.Action
		default:
			r.log.Warn("agent_run.bad_resume", "action", rs.Action)
			action = ResumeAbort
		}
	})
	timer := workflow.NewTimer(ctx, HumanWaitLimit)
	sel.AddFuture(timer, func(workflow.Future) {})
	sel.Select(ctx)
	r.status.Phase = "thinking"
	return action
}

// ask puts a question to the person and waits for the answer, durably: across worker restarts and
// deploys, for up to QuestionTTL. The "Thinking…" placeholder becomes the question (so it reads in
// order in the thread and stays in its history), the lane routes the requester's next message in the
// thread here, and a new placeholder follows the answer for the rest of the work. ok is false when
// no answer came: why says so (no reply in time, or the person moved on to a new request, which the
// lane runs next). Time spent waiting does not count against the run's time limits.
func (r *run) ask(ctx workflow.Context, question string) (answer string, ok bool, why string) {
	r.absorbFolded(ctx) // what was folded before the question is context, not its answer
	m := r.in.Message
	prev := r.status.Phase
	r.status.Phase = "waiting_for_answer"
	r.pause(ctx)
	defer func() { r.status.Phase = prev; r.unpause(ctx) }()
	r.showStatus(ctx, agent.StatusAnswer, false)
	id := r.nextID("question")
	// The lane learns first: a reply typed the moment the question shows must already go to the run.
	r.tellLaneAwaitingAnswer(ctx, true)
	var res activities.PostResult
	if err := workflow.ExecuteActivity(slackOptions(ctx, id), a.DeliverAnswer, activities.DeliverInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, PlaceholderTS: r.placeholder,
		Markdown: question, KeyPrefix: id, AllowedMentions: r.allowedMentions(),
	}).Get(ctx, &res); err != nil {
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		r.tellLaneAwaitingAnswer(dctx, false)
		if ctx.Err() == nil {
			r.log.Error("agent.question.post_failed", "run", r.id, "error", err)
		}
		return "", false, "I could not post my question"
	}
	r.placeholder = ""
	r.log.Info("agent.question.asked", "run", r.id, "question", slackwire.Head(question, 120))
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	var reply Message
	got := false
	sel := workflow.NewSelector(ctx)
	sel.AddReceive(r.foldCh, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, &reply); got = true })
	sel.AddFuture(workflow.NewTimer(timerCtx, QuestionTTL), func(workflow.Future) {})
	sel.Select(ctx)
	cancelTimer()
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	if !got {
		r.tellLaneAwaitingAnswer(dctx, false)
	}
	switch {
	case ctx.Err() != nil:
		return "", false, ""
	case !got:
		return "", false, "no answer to my question"
	case reply.Control == "new_request":
		r.log.Info("agent.question.new_request", "run", r.id, "ts", reply.TS)
		return "", false, "you moved on to a new request, which I'll take up next"
	}
	r.log.Info("agent.question.answered", "run", r.id, "ts", reply.TS)
	ph, err := r.post(ctx, a.PostPlaceholder, activities.PostInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Key: "placeholder-" + id, Text: "_Thinking…_",
	})
	if err != nil {
		r.log.Warn("agent.question.placeholder_failed", "run", r.id, "error", err)
	}
	r.placeholder = ph.TS
	r.heard(reply.User, reply.Text)
	return reply.Text, true, ""
}

// tellLaneWaiting tells the lane whether this run waits for `resume`, so that the requester's
// "retry" in the thread reaches it.
func (r *run) tellLaneWaiting(ctx workflow.Context, waiting bool) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", SignalRunEvent, RunEvent{
		Run: r.id, Requester: r.in.Requester, WaitingForHuman: waiting,
	}).Get(ctx, nil)
	if err != nil {
		r.log.Warn("agent_run.notify_lane_failed", "run", r.id, "error", err)
	}
}

// tellLaneAwaitingAnswer tells the lane whether this run waits for its requester's answer.
func (r *run) tellLaneAwaitingAnswer(ctx workflow.Context, waiting bool) {
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", SignalRunEvent, RunEvent{
		Run: r.id, Requester: r.in.Requester, AwaitingAnswer: waiting,
	}).Get(ctx, nil)
	if err != nil {
		r.log.Warn("agent_run.notify_lane_failed", "run", r.id, "error", err)
	}
}

// notifyLane tells the lane whether this run waits on an approval, so a "yes, do it" in the thread
// reaches it.
func (r *run) notifyLane(ctx workflow.Context, fingerprint string) {
	r.awaiting = fingerprint
	parent := workflow.GetInfo(ctx).ParentWorkflowExecution
	if parent == nil {
		return
	}
	err := workflow.SignalExternalWorkflow(ctx, parent.ID, "", SignalRunEvent, RunEvent{
		Run: r.id, AwaitingApproval: fingerprint, Requester: r.in.Requester,
	}).Get(ctx, nil)
	if err != nil {
		r.log.Warn("agent_run.notify_lane_failed", "run", r.id, "error", err)
	}
}
