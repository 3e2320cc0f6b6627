package activities

import (
	"context"

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
	if a.Tools == nil {
		return tools.MonitorResult{}, temporal.NewNonRetryableApplicationError("no tools configured", ErrConfig, nil)
	}
	return a.Tools.CheckMonitor(ctx, in.Spec, in.Last), nil
}

// SaveMonitorState keeps the state in the monitor's schedule for its next firing.
func (a *Activities) SaveMonitorState(ctx context.Context, in MonitorInput) error {
	if a.Tools == nil {
		return temporal.NewNonRetryableApplicationError("no tools configured", ErrConfig, nil)
	}
	return a.Tools.SaveMonitorState(ctx, in.Spec, in.Last)
}
