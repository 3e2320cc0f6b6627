package workflows

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/workflows/agent"
)

// approve posts the approval prompt for a destructive call and waits — durably, across worker
// restarts and deploys — for the requester (or an admin) to approve or deny it, by button or by a
// "yes, do it" in the thread. An expired proposal re-prompts once, then counts as not approved.
func (r *run) approve(ctx workflow.Context, c activities.ToolCall, summary, details string) (bool, string) {
	ttl := r.in.ApprovalTTL
	if ttl <= 0 {
		ttl = DefaultApprovalTTL
	}
	m := r.in.Message
	prev := r.status.Phase
	r.status.Phase = "awaiting_approval"
	r.pause(ctx)
	defer func() { r.status.Phase = prev; r.unpause(ctx) }()
	r.showStatus(ctx, agent.StatusApproval, false)
	showsAll := hardened(ctx, changeApprovalShowsAll)
	for attempt := 1; attempt <= 2; attempt++ {
		now := workflow.Now(ctx)
		fp := fingerprint(c.Name, c.Arguments, r.in.Requester, now)
		if showsAll {
			fp = fingerprintShown(c.Name, c.Arguments, summary, details, r.in.Requester, now)
		}
		expires := now.Add(ttl)
		var res activities.PostResult
		err := workflow.ExecuteActivity(slackOptions(ctx, "approval-"+fp), a.PostApprovalPrompt, activities.ApprovalPromptInput{
			Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, LaneID: LaneID(r.in.Lane),
			Fingerprint: fp, Requester: r.in.Requester, Approvers: r.approvers(), Summary: summary, Details: details, ExpiresAt: expires,
		}).Get(ctx, &res)
		if err != nil {
			if ctx.Err() != nil {
				return false, ""
			}
			var appErr *temporal.ApplicationError
			if errors.As(err, &appErr) && appErr.Type() == activities.ErrApprovalTooLong {
				return false, "Not done: " + appErr.Message() + ", and nothing is done without the person seeing all of it " +
					"first. Do it in smaller parts."
			}
			r.log.Error("agent.approval.prompt_failed", "run", r.id, "error", err)
			return false, "I couldn't ask for approval, so I did not do this. Tell the person it needs their approval."
		}
		r.notifyLane(ctx, fp)
		r.log.Info("agent.approval.requested", "run", r.id, "tool", c.Name, "fingerprint", fp)
		count(r.metrics, metrics.WorkflowApprovals, "decision", "requested")
		decision, by := r.awaitApproval(ctx, fp, expires, res.TS)
		dctx, _ := workflow.NewDisconnectedContext(ctx)
		r.notifyLane(dctx, "")
		outcome := ""
		switch {
		case ctx.Err() != nil:
			decision, outcome = "cancelled", "Cancelled"
		case decision == "approved":
			outcome = "Approved by <@" + by + ">"
		case decision == "denied":
			outcome = "Denied by <@" + by + ">"
		default:
			outcome = "Expired — ask me again if you still want this"
		}
		if err := workflow.ExecuteActivity(slackOptions(dctx, "approval-done-"+fp), a.ResolveApprovalPrompt, activities.ResolveApprovalInput{
			Team: m.Team, Channel: m.Channel, TS: res.TS, Summary: summary, Outcome: outcome,
			// For the audit record only: an activity's input is not compared on replay, so
			// recorded histories replay as before.
			RunID: r.id, ThreadTS: m.Key().ThreadTS, Requester: r.in.Requester, Tool: c.Name, Decision: decision, By: by,
		}).Get(dctx, nil); err != nil {
			r.log.Warn("agent.approval.resolve_failed", "run", r.id, "error", err)
		}
		r.log.Info("agent.approval.decided", "run", r.id, "tool", c.Name, "decision", decision, "by", by)
		count(r.metrics, metrics.WorkflowApprovals, "decision", approvalOutcome(decision))
		switch decision {
		case "cancelled":
			return false, ""
		case "approved":
			return true, ""
		case "denied":
			return false, "The person declined this action, so it was NOT performed. Don't retry it; continue without it or ask what they'd prefer."
		}
	}
	return false, "Nobody approved this action in time, so it was NOT performed. Tell the person it still needs their approval."
}

// awaitApproval waits for a valid answer to fp until it expires. Answers from people who may not
// approve, or for other proposals, get a private note and change nothing.
func (r *run) awaitApproval(ctx workflow.Context, fp string, expires time.Time, promptTS string) (decision, by string) {
	timerCtx, cancelTimer := workflow.WithCancel(ctx)
	defer cancelTimer()
	timer := workflow.NewTimer(timerCtx, expires.Sub(workflow.Now(ctx)))
	for {
		expired := false
		var ap Approval
		sel := workflow.NewSelector(ctx)
		sel.AddReceive(r.approvalCh, func(ch workflow.ReceiveChannel, _ bool) { ch.Receive(ctx, &ap) })
		sel.AddFuture(timer, func(workflow.Future) { expired = true })
		sel.Select(ctx)
		if ctx.Err() != nil {
			return "", ""
		}
		if expired {
			return "expired", ""
		}
		if r.hardened {
			chk := r.checkApproval(ctx, ap, promptTS)
			switch {
			case ctx.Err() != nil:
				return "", ""
			case !chk.Authentic:
				// Not from the gateway (a signal sent by hand, or forged): nobody in Slack did this,
				// so nobody is told; the log says it happened.
				r.log.Warn("agent.approval.unsigned", "run", r.id, "user", ap.User, "source", ap.Source, "reason", chk.Reason)
				count(r.metrics, metrics.WorkflowApprovals, "decision", "unsigned")
			case ap.Fingerprint != fp:
				r.refuse(ctx, ap, "That approval request is no longer active (it expired or was replaced). Use the latest one in the thread.")
			case !chk.Allowed && r.approvers() != "":
				r.refuse(ctx, ap, "New mail started this request: only someone in this channel, or an admin, can approve it.")
			case !chk.Allowed:
				r.refuse(ctx, ap, fmt.Sprintf("Only <@%s> (who asked) or an admin can approve this.", r.in.Requester))
			case ap.Approved:
				return "approved", ap.User
			default:
				return "denied", ap.User
			}
			continue
		}
		switch {
		case ap.Fingerprint != fp:
			r.refuse(ctx, ap, "That approval request is no longer active (it expired or was replaced). Use the latest one in the thread.")
		case !r.mayApprove(ctx, ap.User):
			r.refuse(ctx, ap, fmt.Sprintf("Only <@%s> (who asked) or an admin can approve this.", r.in.Requester))
		case ap.Approved:
			return "approved", ap.User
		default:
			return "denied", ap.User
		}
	}
}

// checkApproval asks the worker whether an approval is authentic (signed by the gateway with the
// shared key) and whether its user may approve (the requester, or an admin in LUCY_ADMIN_USERS as
// the worker knows it now, so a changed list applies to runs already waiting). If the check itself
// fails, the approval is not accepted.
func (r *run) checkApproval(ctx workflow.Context, ap Approval, promptTS string) activities.ApprovalCheck {
	var chk activities.ApprovalCheck
	err := workflow.ExecuteActivity(quick(ctx, r.nextID("approver")), a.CheckApproval, activities.CheckApprovalInput{
		Lane: LaneID(r.in.Lane), Team: r.in.Lane.Team, Requester: r.in.Requester, Fingerprint: ap.Fingerprint,
		Approved: ap.Approved, User: ap.User, Channel: ap.Channel, Source: ap.Source, Sig: ap.Sig,
		MessageTS: ap.MessageTS, Text: ap.Text, PromptTS: promptTS, ThreadTS: r.in.Lane.ThreadTS,
		Approvers: r.approvers(), RunChannel: r.in.Lane.Channel,
	}).Get(ctx, &chk)
	if err != nil {
		r.log.Warn("agent.approval.check_failed", "run", r.id, "error", err)
		return activities.ApprovalCheck{Reason: "the check failed"}
	}
	return chk
}

// approvers says who decides this run's approvals (activities.CheckApprovalInput.Approvers): the
// people of its channel for a run new mail started, whose requester (the mailbox's connecter) asked
// for nothing; "" for the requester or an admin. Only activity inputs and the refusal's words depend
// on it: a recorded history replays the same commands.
func (r *run) approvers() string {
	if r.in.Message.Origin == OriginMail {
		return activities.ApproversChannel
	}
	return ""
}

// mayApprove is the check of runs that predate changeRunHardening: the requester, or an admin.
func (r *run) mayApprove(ctx workflow.Context, user string) bool {
	if user == "" {
		return false
	}
	if user == r.in.Requester {
		return true
	}
	var ok bool
	if err := workflow.ExecuteActivity(quick(ctx, r.nextID("approver")), a.IsAdmin, user).Get(ctx, &ok); err != nil {
		r.log.Warn("agent.approval.admin_check_failed", "run", r.id, "error", err)
		return false
	}
	return ok
}

func (r *run) refuse(ctx workflow.Context, ap Approval, text string) {
	r.log.Info("agent.approval.refused", "run", r.id, "user", ap.User)
	count(r.metrics, metrics.WorkflowApprovals, "decision", "refused")
	if ap.User == "" {
		return
	}
	m := r.in.Message
	err := workflow.ExecuteActivity(slackOptions(ctx, r.nextID("refuse")), a.PostEphemeral, activities.EphemeralInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, User: ap.User, Text: text,
	}).Get(ctx, nil)
	if err != nil && ctx.Err() == nil {
		r.log.Warn("agent.approval.refusal_failed", "run", r.id, "error", err)
	}
}

// fingerprint identifies one proposal : tool, normalized arguments, actor and time.
func fingerprint(tool, args, actor string, at time.Time) string {
	h := sha256.Sum256([]byte(tool + "\x00" + strings.Join(strings.Fields(args), " ") + "\x00" + actor + "\x00" + strconv.FormatInt(at.UnixNano(), 10)))
	return hex.EncodeToString(h[:8])
}

// fingerprintShown identifies one proposal by everything its prompt shows and does: the tool, its
// arguments as the model wrote them, the summary and details shown, the actor and the time. Each
// field goes in with its length, so that no two different proposals hash the same bytes; 128 bits,
// because the gateway's signature over it is what approves the action.
func fingerprintShown(tool, args, summary, details, actor string, at time.Time) string {
	h := sha256.New()
	for _, f := range []string{tool, args, summary, details, actor, strconv.FormatInt(at.UnixNano(), 10)} {
		h.Write([]byte(strconv.Itoa(len(f)) + ":" + f))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
