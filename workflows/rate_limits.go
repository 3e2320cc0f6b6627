package workflows

import (
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/tools"
)

// The caps on waiting for a service that asked to be called again later (changeRateLimits). A wait
// beyond them is reported to the model with its length, not waited: a run holds a person's request,
// and a service that asks for more than a few minutes is better worked around or tried later.
const (
	// maxRetryAfter is the longest Retry-After one wait honours.
	maxRetryAfter = 3 * time.Minute
	// maxRetryAfterPerRun is how long a run waits for services in all.
	maxRetryAfterPerRun = 10 * time.Minute
	// maxRetryAfterRepeats is how often one call is repeated after waits: a service that keeps
	// asking is reported after that.
	maxRetryAfterRepeats = 2
)

// rateLimits is what the run waited for services that asked it to (changeRateLimits).
type rateLimits struct {
	// retryAfterWaited is the run's waits so far, against maxRetryAfterPerRun.
	retryAfterWaited time.Duration
}

// retryAfter handles a tool result whose service asked to be called again later (res.RetryAfter):
// a call safe to repeat (the route recorded the tool as idempotent, or its request is a safe HTTP
// method) is waited out on a workflow timer, a durable wait that "cancel that" ends at once, then
// made again as it was made (approved, guard) under a new activity ID; anything else comes back
// with Content saying how long the service asked to wait and why the call was not repeated. It
// returns the call's final result and activity ID, whether that result is the report (Content
// rewritten: the model must read it inline, not the activity's), and the timer's error when the run
// was cancelled during the wait. A run recorded before changeRateLimits returns res as it is.
func (r *run) retryAfter(ctx workflow.Context, id string, spec activities.ToolFlags, c activities.ToolCall,
	approved bool, guard string, res activities.ToolResult) (_ activities.ToolResult, _ string, reported bool, _ error) {
	if res.RetryAfter == nil || !hardened(ctx, changeRateLimits) {
		return res, id, false, nil
	}
	for repeats := 0; res.RetryAfter != nil; repeats++ {
		ra := *res.RetryAfter
		wait := ra.Wait
		asked := ra.Service + " answered " + ra.Status + " and asked to wait " + tools.WaitText(wait) + " before calling again"
		var why string
		switch {
		case !spec.Idempotent && !ra.Safe:
			why = "this call was not repeated because it may have taken effect. Check whether it did before trying again, " +
				"and tell the person the service is rate limiting."
		case wait > maxRetryAfter:
			why = "that is longer than Lucy waits within a request (" + tools.WaitText(maxRetryAfter) + "), so the call was not " +
				"repeated. Tell the person, or try later."
		case r.retryAfterWaited+wait > maxRetryAfterPerRun:
			why = "this request has already waited " + tools.WaitText(r.retryAfterWaited) + " for services, so the call was not " +
				"repeated. Tell the person, or try later."
		case repeats >= maxRetryAfterRepeats:
			why = "the call was already repeated " + strconv.Itoa(repeats) + " times after waiting and the service still asks to wait, " +
				"so it was not repeated again. Tell the person, or try later."
		}
		if why != "" {
			res.Content = "Error: " + asked + "; " + why
			res.IsError = true
			return res, id, true, nil
		}
		r.log.Info("agent.tool.retry_after", "run", r.id, "tool", c.Name, "wait", wait, "status", ra.Status)
		r.showStatus(ctx, "waiting "+tools.WaitText(wait)+" for "+ra.Service+" (rate limited)", false)
		if err := workflow.NewTimer(ctx, wait).Get(ctx, nil); err != nil {
			return res, id, false, err // cancelled: the timer went with the run's context
		}
		r.retryAfterWaited += wait
		r.showStatus(ctx, stepStatus([]activities.ToolCall{c}), false) // the call again, as the batch said
		id = r.nextID("tool")
		res = activities.ToolResult{}
		if err := r.executeTool(ctx, id, spec, c, approved, guard).Get(ctx, &res); err != nil {
			return res, id, false, err
		}
	}
	return res, id, false, nil
}
