package schedules

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/lucy-agent/lucy/activities"
)

// Activities answer the firings of recurring jobs and monitors. The worker registers the struct, so
// each exported method is an activity named after it (JobTiming, CheckScheduleAccess, CheckMonitor,
// SaveMonitorState): those names are in recorded histories and never change, and this type has no
// other exported methods. The job slots' ClosedWorkflows is the run's activities' (package activities,
// which a workspace's run slots use too), registered under the same name.
type Activities struct {
	// Manager checks access, runs monitors' checks and keeps their state; nil: this worker cannot.
	Manager *Manager
	// Temporal is the worker's client, for what workflow code cannot ask itself (is a workflow
	// still running?).
	Temporal client.Client
}

// JobTimingInput asks when a recurring job fires next.
type JobTimingInput struct {
	Cron string    `json:"cron"`
	TZ   string    `json:"tz"`
	From time.Time `json:"from"`
}

// JobTiming is when the job fires next (zero when its spec is not a cron expression Lucy reads,
// such as a calendar spec an operator wrote by hand).
type JobTiming struct {
	Next time.Time `json:"next"`
}

// JobTiming computes a job's next firing. A firing of a schedule asks the server, whose rules and
// current spec are the ones that count (NextMatchingTime); the expression is read locally only
// when there is no schedule to ask (a job workflow started by hand, a schedule deleted since, a
// worker without a Temporal client). A server that cannot answer fails the activity, retried by its
// policy; the firing then goes on with its default wait.
func (a *Activities) JobTiming(ctx context.Context, in JobTimingInput) (JobTiming, error) {
	if a.Temporal != nil {
		info := activity.GetInfo(ctx)
		if id := ScheduleOfFiring(info.WorkflowExecution.ID); id != "" {
			next, err := NextMatchingTime(ctx, a.Temporal.WorkflowService(), info.Namespace, id, in.From)
			var nf *serviceerror.NotFound
			switch {
			case err == nil:
				return JobTiming{Next: next}, nil
			case !errors.As(err, &nf):
				return JobTiming{}, fmt.Errorf("ask Temporal when schedule %s fires next: %w", id, err)
			}
		}
	}
	return JobTiming{Next: NextFiring(in.Cron, in.TZ, in.From)}, nil
}

// ScheduleAccessInput asks whether a job's or monitor's creator may still use its channel.
type ScheduleAccessInput struct {
	Team    string `json:"team"`
	Channel string `json:"channel"`
	Creator string `json:"creator"`
}

// ScheduleAccess is the verdict: Denied says why the creator may no longer use the channel ("" when
// they may).
type ScheduleAccess struct {
	Denied string `json:"denied,omitempty"`
}

// CheckScheduleAccess applies the access rule (Manager.ScheduleAccess) at a firing: a job runs
// as its creator, so a creator who left the job's channel (or lost the right to it) loses the job's
// access to it too. A check that cannot be made fails the activity (retried by its policy): the
// firing must not go ahead on a guess.
func (a *Activities) CheckScheduleAccess(ctx context.Context, in ScheduleAccessInput) (ScheduleAccess, error) {
	if a.Manager == nil {
		return ScheduleAccess{}, temporal.NewNonRetryableApplicationError("no tools configured", activities.ErrConfig, nil)
	}
	denied, err := a.Manager.ScheduleAccess(ctx, in.Team, in.Creator, in.Channel)
	if err != nil {
		return ScheduleAccess{}, fmt.Errorf("check %s's access to %s: %w", in.Creator, in.Channel, err)
	}
	return ScheduleAccess{Denied: denied}, nil
}

// MonitorInput is a monitor and a state: the last one (CheckMonitor) or the new one to keep
// (SaveMonitorState).
type MonitorInput struct {
	Spec MonitorSpec  `json:"spec"`
	Last MonitorState `json:"last"`
}

// CheckMonitor runs a monitor's check (an HTTP request, no model) and compares it with the last state.
func (a *Activities) CheckMonitor(ctx context.Context, in MonitorInput) (MonitorResult, error) {
	if a.Manager == nil {
		return MonitorResult{}, temporal.NewNonRetryableApplicationError("no tools configured", activities.ErrConfig, nil)
	}
	// A monitor posts as its creator: one who may no longer use its channel (left it, or lost the
	// right) loses the monitor's access to it, checked at every firing. A check that cannot be made
	// fails the activity (retried by its policy): no alert goes out on a guess.
	denied, err := a.Manager.ScheduleAccess(ctx, in.Spec.Team, in.Spec.Creator, in.Spec.Channel)
	if err != nil {
		return MonitorResult{}, fmt.Errorf("check %s's access to %s: %w", in.Spec.Creator, in.Spec.Channel, err)
	}
	if denied != "" {
		return MonitorWithoutAccess(in.Spec, in.Last, denied, time.Now()), nil
	}
	return a.Manager.CheckMonitor(ctx, in.Spec, in.Last), nil
}

// SaveMonitorState keeps the state in the monitor's schedule for its next firing.
func (a *Activities) SaveMonitorState(ctx context.Context, in MonitorInput) error {
	if a.Manager == nil {
		return temporal.NewNonRetryableApplicationError("no tools configured", activities.ErrConfig, nil)
	}
	return a.Manager.SaveMonitorState(ctx, in.Spec, in.Last)
}
