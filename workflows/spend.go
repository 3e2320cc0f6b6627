package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/steps"
)

// Spend limits in the agent run (changeSpendLimits). Before anything else, a new run asks whether
// its team and its requester still have room in their model budgets (CheckSpend, package spend's
// activity, called by its registered name); a run refused says why in the thread and ends without a
// model call. When the run ends, however it ends, it records what it used, per model (its own calls
// and its sub-agents', which roll up into its usage), against its requester and team (RecordSpend),
// once per run. A run already going is never stopped by a budget: the check is at the start only.

// RunRefused is the outcome of a run refused before it started (a used-up budget).
const RunRefused = "refused"

// overBudget runs the spend check (changeSpendLimits, read at the start of the run) and, when the
// run is refused, posts why in the thread. A check that fails (the state store unreachable after
// its retries) lets the run go: a budget is a brake on spend, and refusing everyone because the
// ledger is unreadable would stop the service for a bookkeeping fault; the failure is logged as an
// error for the operator.
func (r *run) overBudget(ctx workflow.Context) (RunResult, bool) {
	r.spend = r.sub == nil && hardened(ctx, changeSpendLimits)
	if !r.spend {
		return RunResult{}, false
	}
	in := steps.CheckSpendInput{Team: r.in.Message.Team, Person: r.in.Requester, Now: workflow.Now(ctx).UTC().Format(time.RFC3339)}
	var res steps.CheckSpendResult
	if err := workflow.ExecuteLocalActivity(local(ctx), steps.CheckSpend, in).Get(ctx, &res); err != nil {
		r.log.Error("agent.spend.check_failed", "run", r.id, "error", err)
		return RunResult{}, false
	}
	if !res.Refused {
		return RunResult{}, false
	}
	r.log.Info("agent.spend.refused", "run", r.id, "budget", res.Budget)
	r.status.Phase = "done"
	m := r.in.Message
	if _, err := r.post(ctx, a.PostMessage, activities.PostInput{
		Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Key: "spend-refused", Text: res.Message,
	}); err != nil {
		r.log.Error("agent.spend.refusal_undelivered", "run", r.id, "error", err)
	}
	// Messages folded into the run meanwhile go back to the lane, which runs (and so answers) them next.
	return RunResult{Status: RunRefused, Reason: res.Message, Tier: r.tier, Usage: r.status.Usage, Unread: r.unreadFolds()}, true
}

// recordSpend records the run's usage once it has ended (on a disconnected context: a cancelled
// run's tokens were spent too). Its failure after the retries is logged with the figures, which an
// operator can add by hand; it never fails the run.
func (r *run) recordSpend(ctx workflow.Context) {
	if !r.spend || len(r.status.Usage) == 0 {
		return
	}
	usage := map[string]steps.SpendUsage{}
	for _, model := range workflow.DeterministicKeys(r.status.Usage) {
		u := r.status.Usage[model]
		usage[model] = steps.SpendUsage{Prompt: u.PromptTokens, Completion: u.CompletionTokens, Calls: u.Calls}
	}
	in := steps.RecordSpendInput{
		Team: r.in.Message.Team, Person: r.in.Requester, RunID: r.id, Day: workflow.Now(ctx).UTC().Format("2006-01-02"), Usage: usage,
	}
	dctx, cancel := workflow.NewDisconnectedContext(ctx)
	defer cancel()
	if err := workflow.ExecuteLocalActivity(local(dctx), steps.RecordSpend, in).Get(dctx, nil); err != nil {
		r.log.Error("agent.spend.record_failed", "run", r.id, "day", in.Day, "usage", usage, "error", err)
	}
}
