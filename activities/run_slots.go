package activities

import (
	"context"
	"errors"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
)

// RunCap is LUCY_MAX_RUNS_PER_TEAM as this worker has it (0: no cap). A lane asks before each run
// (a local activity, so its answer is in history and a changed setting cannot change a replay).
func (a *Activities) RunCap(context.Context) (int, error) { return a.MaxRunsPerTeam, nil }

// ClosedWorkflows returns which of the given workflow IDs are no longer running: closed, or unknown.
// Slots use it to take back what a holder never returned: a lane holding a workspace's run slot, or
// a firing holding a job slot, gives its slot back when it ends in workflow code that a worker crash
// only delays; only one an operator terminated (or reset past its request) never does.
func (a *Activities) ClosedWorkflows(ctx context.Context, ids []string) ([]string, error) {
	var closed []string
	for _, id := range ids {
		d, err := a.Temporal.DescribeWorkflowExecution(ctx, id, "")
		var nf *serviceerror.NotFound
		switch {
		case err == nil && d.GetWorkflowExecutionInfo().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
		case err == nil, errors.As(err, &nf):
			closed = append(closed, id)
		default:
			return nil, err
		}
	}
	return closed, nil
}
