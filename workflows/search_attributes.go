package workflows

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
)

// Search attributes, memos and summaries (issue 12) make the Web UI's list readable and
// filterable: `WorkflowType='agent_run' AND LucyOutcome='failed' AND LucyChannel='C123'`.
//
// What is known when a workflow starts goes into its start (the lane gives each run its
// workspace, channel and requester, a memo and a one-line summary): that costs no command.
// What a workflow learns later (a run's intent and tier once routed, its outcome at the end) is
// upserted, which is a command, so it is behind changeSearchAttributes (versions.go).
//
// Attributes hold IDs and labels only: they are indexed and shown in clear, and payload
// encryption does not cover them. The words of a request go into the memo and the summary, which
// the data converter encodes like any payload.

// summaryLen bounds a static summary: one line in the Web UI's list.
const summaryLen = 80

// upsertAttrs sets search attributes, logging (not failing on) an error: the SDK refuses only
// malformed updates, which are a bug to see in the logs, not a reason to stop a person's run.
func upsertAttrs(ctx workflow.Context, log logger, updates ...temporal.SearchAttributeUpdate) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		log.Warn("search_attributes.upsert_failed", "error", err)
	}
}

// setIf adds the update that sets key to v, unless v is empty (an empty keyword filters nothing).
func setIf(u []temporal.SearchAttributeUpdate, key temporal.SearchAttributeKeyKeyword, v string) []temporal.SearchAttributeUpdate {
	if v == "" {
		return u
	}
	return append(u, key.ValueSet(v))
}

// runStartAttrs are the attributes a run or a sub-agent starts with.
func runStartAttrs(in RunInput) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(setIf(setIf(setIf(nil,
		searchattr.Workspace, in.Lane.Team),
		searchattr.Channel, in.Lane.Channel),
		searchattr.User, in.Requester)...)
}

// runMemo is what the Web UI shows of a run beside its attributes: what was asked, by whom, where.
func runMemo(in RunInput) map[string]any {
	m := map[string]any{"objective": objective(in.Message.Text), "lane": LaneID(in.Lane), "requester": in.Requester}
	if in.UserName != "" {
		m["requesterName"] = in.UserName
	}
	if in.ChannelName != "" {
		m["channel"] = in.ChannelName
	}
	if in.Scheduled {
		m["job"] = in.Message.Job
	}
	return m
}

// runSummary is the run's one line in the Web UI: who asked what ("Ada: what is 2+2?").
func runSummary(in RunInput) string {
	who := in.UserName
	if who == "" {
		who = in.Requester
	}
	if in.Scheduled {
		who = "job"
	}
	s := objective(in.Message.Text)
	if who != "" {
		s = who + ": " + s
	}
	return slackwire.Head(s, summaryLen)
}

// runOutcome is how a run or a sub-agent ended, as the metrics and LucyOutcome name it.
func runOutcome(status string, err error) string {
	switch {
	case err != nil && temporal.IsCanceledError(err):
		return RunCancelled
	case err != nil:
		return RunFailed
	case status == "":
		return RunCompleted
	}
	return status
}

// routedAttrs upserts a run's intent and tier once it is routed.
func (r *run) routedAttrs(ctx workflow.Context) {
	if !r.searchAttrs {
		return
	}
	if u := setIf(setIf(nil, searchattr.Intent, r.route.Intent), searchattr.Tier, r.tier); len(u) > 0 {
		upsertAttrs(ctx, r.log, u...)
	}
}

// endAttrs upserts how the run ended and the tier it ended on (gates and escalations move it).
// It runs on a cancelled run too: an upsert is a command, not something the workflow waits on.
func (r *run) endAttrs(ctx workflow.Context, status string, err error) {
	if !r.searchAttrs {
		return
	}
	upsertAttrs(ctx, r.log, setIf([]temporal.SearchAttributeUpdate{searchattr.Outcome.ValueSet(runOutcome(status, err))}, searchattr.Tier, r.tier)...)
}
