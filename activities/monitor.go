package activities

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/tools"
)

// MonitorInput is a monitor and a state: the last one (CheckMonitor) or the new one to keep
// (SaveMonitorState).
type MonitorInput struct {
	Spec tools.MonitorSpec  `json:"spec"`
	Last tools.MonitorState `json:"last"`
}

// CheckMonitor runs a monitor's check (an HTTP request, no model) and compares it with the last state.
func (a *Activities) CheckMonitor(ctx context.Context, in MonitorInput) (tools.MonitorResult, error) {
	if a.Schedules == nil {
		return tools.MonitorResult{}, temporal.NewNonRetryableApplicationError("no tools configured", ErrConfig, nil)
	}
	// A monitor posts as its creator: one who may no longer use its channel (left it, or lost the
	// right) loses the monitor's access to it, checked at every firing. A check that cannot be made
	// fails the activity (retried by its policy): no alert goes out on a guess.
	denied, err := a.Schedules.ScheduleAccess(ctx, in.Spec.Team, in.Spec.Creator, in.Spec.Channel)
	if err != nil {
		return tools.MonitorResult{}, fmt.Errorf("check %s's access to %s: %w", in.Spec.Creator, in.Spec.Channel, err)
	}
	if denied != "" {
		return tools.MonitorWithoutAccess(in.Spec, in.Last, denied, time.Now()), nil
	}
	return a.Schedules.CheckMonitor(ctx, in.Spec, in.Last), nil
}

// SaveMonitorState keeps the state in the monitor's schedule for its next firing.
func (a *Activities) SaveMonitorState(ctx context.Context, in MonitorInput) error {
	if a.Schedules == nil {
		return temporal.NewNonRetryableApplicationError("no tools configured", ErrConfig, nil)
	}
	return a.Schedules.SaveMonitorState(ctx, in.Spec, in.Last)
}
