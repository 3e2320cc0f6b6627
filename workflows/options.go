package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Activity options live here so every policy is bounded and visible in one place (docs/architecture.md rule 3:
// no activity may retry forever).

// quick is for short, idempotent activities (routing, prompt assembly, Slack reads).
func quick(ctx workflow.Context, id string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
		},
	})
}

// local is for short, idempotent steps that run inside the workflow task (local activities): no task
// queue round trip and no workflow task of their own. Only steps that take well under a second (a
// classification, a couple of Slack reads) belong here: a local activity holds its workflow task.
func local(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5,
		},
	})
}

// checkpointOptions is for the supervisor's checkpoint, a model call run as a local activity
// (changeLocalCheckpoint). A local activity holds its workflow task open, and its retries run inside
// the task: a signal such as "cancel that" is taken in when the check returns or at the task's next
// heartbeat, 8 s in (TestCancelDuringCheckpoint). So the whole check, retries included, is bounded to
// the minute the activity had, and a check that fails is skipped (the checkpoint is advisory).
func checkpointOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		ScheduleToCloseTimeout: time.Minute,
		StartToCloseTimeout:    time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 3,
		},
	})
}

// llmHeartbeat is the heartbeat timeout of model calls: activities heartbeat every second, the SDK
// throttles to 80% of this, so a cancelled run reaches an in-flight call in about 4 seconds.
const llmHeartbeat = 5 * time.Second

// llmOptions is for model calls: heartbeating, bounded retries with backoff; 400s and other
// permanent errors are non-retryable and come back at once.
func llmOptions(ctx workflow.Context, id string, timeout time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    llmHeartbeat,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 4,
		},
	})
}

// slackOptions is for Slack writes. They are idempotent (placeholder + update, metadata checks), so
// retrying is safe; 429s carry their Retry-After as the next retry delay.
func slackOptions(ctx workflow.Context, id string) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID: id, StartToCloseTimeout: slackAttempt, RetryPolicy: slackRetry(),
	})
}

// slackAttempt and slackRetry bound a Slack write, as an activity (slackOptions) or a local activity
// (localSlackOptions).
const slackAttempt = 30 * time.Second

func slackRetry() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 6}
}

// localSlackOptions is slackOptions for a Slack write run as a local activity (changeLocalOpen,
// changeLocalFinish): the same bound per attempt and the same retries. A retry whose backoff is longer
// than the workflow task's timeout waits on a timer (a workflow task of its own), and a local activity
// still running when the task's timeout nears makes the SDK heartbeat the task, so a slow or
// rate-limited Slack costs tasks, never the run.
func localSlackOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: slackAttempt, RetryPolicy: slackRetry(),
	})
}

// localOr runs act with in as a local activity with lctx's options when local is set (a versioned
// change moved it into the workflow task that needs it), and as an activity with actx's otherwise.
func localOr(local bool, lctx, actx workflow.Context, act, in any) workflow.Future {
	if local {
		return workflow.ExecuteLocalActivity(lctx, act, in)
	}
	return workflow.ExecuteActivity(actx, act, in)
}

// toolOptions: idempotent tools retry 0.5 s → 2 s → 8 s, three attempts; side-effecting
// tools are attempted once and their error goes to the model. waitCancel makes a cancellation wait
// until the activity has stopped (it heartbeats, so it learns of it within seconds).
func toolOptions(ctx workflow.Context, id string, idempotent, long, waitCancel bool) workflow.Context {
	timeout := 2 * time.Minute
	if long {
		timeout = 30 * time.Minute
	}
	rp := &temporal.RetryPolicy{MaximumAttempts: 1}
	if idempotent {
		rp = &temporal.RetryPolicy{InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 4, MaximumInterval: 8 * time.Second, MaximumAttempts: 3}
	}
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID:          id,
		StartToCloseTimeout: timeout,
		HeartbeatTimeout:    10 * time.Second,
		RetryPolicy:         rp,
		WaitForCancellation: waitCancel,
	})
}

// quickToolOptions is for quick tools run as local activities (changeLeanTurn): they answer in
// milliseconds, so a few seconds bound an attempt, and the retries of an idempotent tool's activity.
// A local activity still running when the workflow task's timeout nears makes the SDK heartbeat the
// task, so even a slow disk never fails the task.
func quickToolOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 5 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval: 500 * time.Millisecond, BackoffCoefficient: 4, MaximumInterval: 8 * time.Second, MaximumAttempts: 3,
		},
	})
}

// QuickOptions and SlackOptions are quick and slackOptions for the workflows of package schedules
// (a recurring job's firing, a monitor's), so that every policy stays in this file.
func QuickOptions(ctx workflow.Context, id string) workflow.Context { return quick(ctx, id) }

// SlackOptions: see QuickOptions.
func SlackOptions(ctx workflow.Context, id string) workflow.Context { return slackOptions(ctx, id) }

// memoryOptions is for the step after a run that notes what the people said (NoteFromRun): one model
// call on the fast tier, a few writes and one idempotent post. It is an aid: two attempts at most,
// then the run ends without it (a failure is logged, never the run's).
func memoryOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		ActivityID: "memory", StartToCloseTimeout: time.Minute, HeartbeatTimeout: llmHeartbeat, RetryPolicy: memoryRetry(),
	})
}

// memoryRetry: two attempts at most, as an activity (memoryOptions) or a local activity
// (localMemoryOptions).
func memoryRetry() *temporal.RetryPolicy {
	return &temporal.RetryPolicy{InitialInterval: 2 * time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Second, MaximumAttempts: 2}
}

// localMemoryOptions is memoryOptions for the memory step run as a local activity
// (changeLocalFinish): the same minute an attempt and two attempts. A local activity cannot
// heartbeat and needs none here: it is one model call after the answer, bounded by that minute.
func localMemoryOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: memoryRetry()})
}
