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

// RunsClosed returns which of the given workflow IDs (lanes holding or waiting for a workspace's
// run slot) are no longer running: closed, or unknown. A lane gives its slot back when its run
// ends, whatever way it ends, in workflow code that a worker crash only delays; only a lane that an
// operator terminated (or reset past its request) never does, and the slots reclaim what this finds.
func (a *Activities) RunsClosed(ctx context.Context, ids []string) ([]string, error) {
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
