package schedules

import (
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
)

// Activity method values for workflow code: the registered name of an activity is its method's
// name, so ExecuteActivity(ctx, acts.CheckMonitor, …) schedules "CheckMonitor". The pointers are
// nil: only the method's name is used.
var (
	acts *Activities
	core *activities.Activities
)

// changeJobAccess (issue 19), in a job's firing: the firing first checks that the job's creator may
// still use its channel (CheckScheduleAccess: a member, or an admin, or the creator's own DM) and is
// skipped with a note when not. Read at the start of the firing. The string is recorded in
// histories: it never changes (docs/architecture.md rule 6; workflows/versions.go lists the others).
const changeJobAccess = "job-access"

// hardened reports whether this execution runs with changeID's new behaviour (as workflows'
// hardened does): true past the change, false replaying a history recorded before it.
func hardened(ctx workflow.Context, changeID string) bool {
	return workflow.GetVersion(ctx, changeID, workflow.DefaultVersion, 1) >= 1
}

// upsertAttrs sets search attributes, logging (not failing on) an error: the SDK refuses only
// malformed updates, a bug to see in the logs rather than a reason to stop a firing.
func upsertAttrs(ctx workflow.Context, updates ...temporal.SearchAttributeUpdate) {
	if err := workflow.UpsertTypedSearchAttributes(ctx, updates...); err != nil {
		workflow.GetLogger(ctx).Warn("search_attributes.upsert_failed", "error", err)
	}
}
