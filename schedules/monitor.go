package schedules

import (
	"fmt"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/workflows"
)

// Monitor is one firing of a heartbeat monitor (heartbeat.go): check the condition (an
// activity, no model), post an alert only when the state changed since the last firing, and leave
// the new state in the schedule for the next one. The last state comes in as the second argument:
// the schedule's action holds it, and SaveMonitorState rewrites it.
func Monitor(ctx workflow.Context, spec MonitorSpec, last MonitorState) error {
	log := workflow.GetLogger(ctx)
	if spec.Team == "" || spec.Channel == "" || spec.Check.URL == "" {
		return temporal.NewNonRetryableApplicationError("the monitor's input lacks team, channel or check.url", "BadMonitor", nil)
	}
	// Firings of one monitor in the same second (a trigger beside the schedule) share a workflow
	// ID; the first run ID of the execution tells them apart and stays the same across a Reset.
	info := workflow.GetInfo(ctx)
	id := info.WorkflowExecution.ID + "/" + info.FirstRunID
	var res MonitorResult
	if err := workflow.ExecuteActivity(workflows.QuickOptions(ctx, "check"), acts.CheckMonitor, MonitorInput{Spec: spec, Last: last}).Get(ctx, &res); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	log.Info("monitor.checked", "monitor", id, "status", res.State.Status, "changed", res.Alert != "")
	if res.Alert != "" {
		// Posted before the state is saved: if the post fails, the next firing sees the old state
		// and alerts again, so a change is never silently lost.
		if err := workflow.ExecuteActivity(workflows.SlackOptions(ctx, "alert"), core.PostMessage, activities.PostInput{
			Team: spec.Team, Channel: spec.Channel, ThreadTS: spec.ThreadTS, RunID: id, Key: "alert", Text: res.Alert,
		}).Get(ctx, nil); err != nil {
			return fmt.Errorf("post the alert: %w", err)
		}
	}
	if err := workflow.ExecuteActivity(workflows.QuickOptions(ctx, "save"), acts.SaveMonitorState, MonitorInput{Spec: spec, Last: res.State}).Get(ctx, nil); err != nil {
		return fmt.Errorf("save the state: %w", err)
	}
	return nil
}
