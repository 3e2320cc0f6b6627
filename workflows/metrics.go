package workflows

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/metrics"
)

// Workflow code counts through the SDK's metrics handler (workflow.GetMetricsHandler), never through
// Prometheus collectors directly: the SDK drops what that handler records while the workflow
// replays, so a worker that rebuilds a lane or a run from history after a restart or a cache
// eviction does not count its turns, runs and approvals again. Recording a metric adds no event to
// history and changes no command, so histories recorded before these counters replay unchanged.

// count adds one to the counter name, tagged with the pairs of tags (key, value, key, value, …).
func count(h client.MetricsHandler, name string, tags ...string) {
	if h == nil {
		return
	}
	if len(tags) > 0 {
		m := make(map[string]string, len(tags)/2)
		for i := 0; i+1 < len(tags); i += 2 {
			m[tags[i]] = tags[i+1]
		}
		h = h.WithTags(m)
	}
	h.Counter(name).Inc(1)
}

// countRun counts a finished run (or sub-agent) by its outcome.
func countRun(ctx workflow.Context, status string, err error) {
	count(workflow.GetMetricsHandler(ctx), metrics.WorkflowRuns, "outcome", runOutcome(status, err))
}

// approvalOutcome is the decision tag of a decided approval: approved, denied, cancelled or
// expired (what awaitApproval returns when nobody answered in time).
func approvalOutcome(decision string) string {
	switch decision {
	case "approved", "denied", "cancelled":
		return decision
	}
	return "expired"
}
