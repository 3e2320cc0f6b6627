package activities

import (
	"context"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
)

// localRule says whether mayRepeat counts a local activity as one that may repeat.
type localRule bool

const (
	// countLocal: a local activity always may repeat. It starts again from attempt 1 when its
	// workflow task is retried (a signal or a cancel that arrives while the task runs makes the
	// server refuse the task's completion; a worker dies mid-task), and nothing recorded that it ran.
	countLocal localRule = true
	// ignoreLocal: a local activity that runs again is the same run doing the same thing (DeliverAnswer:
	// the same stream, which an earlier execution's answer can only be); only a retry or a reset counts.
	ignoreLocal localRule = false
)

// mayRepeat is the one reset detection of the activities: it reports whether this attempt may repeat
// what an earlier execution of the same step did in Slack (posted, streamed, appended): a later
// attempt of the activity, any attempt of a run an operator Reset from the Web UI (a reset re-runs
// the activities after the reset point as attempt 1, under a new run ID), or, by local, a local
// activity. Every step that may repeat asks it before it looks for what an earlier execution left
// (posts by their metadata, streams), and streams nothing into a timeline when it says yes. Only
// then is the thread read: reading it for every post cost a conversations.replies call (Slack's
// Tier 3 limit) per post of every run. The local steps that post look where it costs no call
// (OpenRun reads the thread anyway) or only for what is rare (an answer's second part, a scheduled
// run's answer without a placeholder).
func (a *Activities) mayRepeat(ctx context.Context, local localRule) bool {
	if !activity.IsActivity(ctx) {
		return false
	}
	info := activity.GetInfo(ctx)
	if local == countLocal && info.IsLocalActivity {
		return true
	}
	if info.Attempt > 1 {
		return true
	}
	return a.resetRun(ctx, info.Namespace, info.WorkflowExecution.ID, info.WorkflowExecution.RunID)
}

// resetRun reports whether the run is the result of a Reset (mayRepeat): its first event names
// another original run. The answer never changes for a run, so each worker asks once per run (a
// bounded memo). When it cannot tell (no client, Temporal unreachable) it says yes: a lookup too
// many is cheap, a post too many is not.
func (a *Activities) resetRun(ctx context.Context, namespace, workflowID, runID string) bool {
	if v, ok := a.resetRuns.Load(runID); ok {
		return v.(bool)
	}
	if a.Temporal == nil {
		return true
	}
	resp, err := a.Temporal.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace: namespace, Execution: &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID}, MaximumPageSize: 1,
	})
	if err != nil || len(resp.GetHistory().GetEvents()) == 0 {
		return true
	}
	started := resp.GetHistory().GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	reset := started == nil || (started.GetOriginalExecutionRunId() != "" && started.GetOriginalExecutionRunId() != runID)
	if a.resetRunsSize.Add(1) > maxResetMemo { // bound the memo: forget everything now and then
		a.resetRuns.Clear()
		a.resetRunsSize.Store(1)
	}
	a.resetRuns.Store(runID, reset)
	return reset
}

// maxResetMemo bounds resetRun's memo (run IDs are 36 bytes: about a megabyte).
const maxResetMemo = 20000
