package workflows

import (
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
	"github.com/lucy-agent/lucy/tools"
)

// The timeline (issue 24, changeTimeline): where the run streams, its tool steps show as task cards
// in a stream the run opens at its first tool step (the StreamSteps activity), and the answer is
// appended to that stream below them (CallModel, StreamTarget.TS); delivery stops the stream and
// turns it into the answer (settleStreams keeps it). Every update names its tasks by the tool
// call's ID, so a retried update changes a card in place and never shows a step twice. Where Slack
// will not open the stream, or an update fails, the run goes on without the timeline: its status
// line and placeholder, as before.

// showSteps shows a batch of tool calls in the timeline: in progress before they run (results nil),
// complete or error after.
func (r *run) showSteps(ctx workflow.Context, calls []activities.ToolCall, results []tmsg) {
	if r.timelineOff || ctx.Err() != nil || len(calls) == 0 {
		return
	}
	if r.timeline == "" && (results != nil || r.sub != nil) {
		return
	}
	t := r.streamTarget(ctx)
	if t == nil {
		if r.timeline == "" {
			r.timelineOff = true
		}
		return
	}
	if r.timeline == "" && !hardened(ctx, changeTimeline) {
		r.timelineOff = true
		return
	}
	if r.timeline == "" {
		r.renews(ctx)
		*t = r.target()
	}
	tasks := stepTasks(calls, results)
	r.noteSteps(tasks)
	res, ok := r.streamSteps(ctx, r.timelineInput(*t, tasks), false)
	if !ok || res.Unavailable {
		r.timelineOff = true
		return
	}
	r.tookTimeline(res)
}

// renews decides, once, whether the run renews its timeline and gathers its steps for delivery
// (changeStreamLife): read where the run first opens or adopts a timeline.
func (r *run) renews(ctx workflow.Context) bool {
	if r.renew == 0 {
		r.renew = -1
		if hardened(ctx, changeStreamLife) {
			r.renew = 1
		}
	}
	return r.renew > 0
}

// timelineInput is an update of the timeline with tasks.
func (r *run) timelineInput(t activities.StreamTarget, tasks []activities.StepTask) activities.TimelineInput {
	in := activities.TimelineInput{Target: t, TS: r.timeline, Tasks: tasks}
	if r.renew > 0 {
		in.Renew, in.Opened = true, r.timelineOpened
	}
	return in
}

// tookTimeline takes what an update of the timeline answered: a renewed timeline (the old one goes
// at delivery), a deferred update (the timeline stays as it was), the timeline's ts and start.
func (r *run) tookTimeline(res activities.TimelineResult) {
	if res.Renewed != "" && res.Renewed == r.timeline {
		r.oldTimelines = append(r.oldTimelines, res.Renewed)
		r.timeline, r.timelineOpened = "", time.Time{}
	}
	if res.TS != "" {
		if res.TS != r.timeline && !res.Opened.IsZero() {
			r.timelineOpened = res.Opened
		}
		r.timeline = res.TS
	}
}

// noteSteps keeps the run's task cards as they stand, by ID, in the order they first came: the
// answer shows them (DeliverInput.Steps, changeStreamLife).
func (r *run) noteSteps(tasks []activities.StepTask) {
	if r.renew <= 0 {
		return
	}
	for _, t := range tasks {
		if i := slices.IndexFunc(r.steps, func(s activities.StepTask) bool { return s.ID == t.ID }); i >= 0 {
			r.steps[i] = t
		} else {
			r.steps = append(r.steps, t)
		}
	}
}

// stepTasks are the cards of a batch of tool calls: in progress before they run (results nil),
// complete or error after.
func stepTasks(calls []activities.ToolCall, results []tmsg) []activities.StepTask {
	tasks := make([]activities.StepTask, len(calls))
	for i, c := range calls {
		st := "in_progress"
		if results != nil {
			st = "complete"
			if i < len(results) && results[i].isError {
				st = "error"
			}
		}
		tasks[i] = activities.StepTask{ID: c.ID, Title: stepStatus(calls[i : i+1]), Status: st}
	}
	return tasks
}

// leanTurn reports whether the run's turns are lean (changeLeanTurn), decided at its first tool
// batch.
func (r *run) leanTurn(ctx workflow.Context) bool {
	if r.lean == 0 {
		r.lean = -1
		if r.hardened && hardened(ctx, changeLeanTurn) {
			r.lean = 1
		}
	}
	return r.lean > 0
}

// beginSteps shows a batch of tool calls before it runs. The run's first step opens the timeline
// (showSteps). After that, a lean run (changeLeanTurn) shows "in progress" cards only for a batch
// with a tool that is not instant, and while the tools run: it returns that update for endSteps.
// A batch of instant tools (quick ones, the journal) is over within its workflow task, before a
// card could be seen; endSteps shows it once done.
func (r *run) beginSteps(ctx workflow.Context, calls []activities.ToolCall) workflow.Future {
	if !r.leanTurn(ctx) || r.timeline == "" {
		r.showSteps(ctx, calls, nil)
		return nil
	}
	if r.timelineOff || ctx.Err() != nil || len(calls) == 0 || r.instantBatch(ctx, calls) {
		return nil
	}
	t := r.streamTarget(ctx)
	if t == nil {
		return nil
	}
	r.timelineCalls++
	tasks := stepTasks(calls, nil)
	r.noteSteps(tasks)
	return workflow.ExecuteActivity(slackOptions(ctx, "timeline-"+strconv.Itoa(r.timelineCalls)), a.StreamSteps, r.timelineInput(*t, tasks))
}

// endSteps shows a batch's outcome. A lean run waits for the update beginSteps started and keeps
// the outcome's cards for the next model call to send (StreamTarget.Steps), or the timeline's stop:
// an activity of its own would cost a workflow task and a dispatch per turn.
func (r *run) endSteps(ctx workflow.Context, shown workflow.Future, calls []activities.ToolCall, results []tmsg) {
	if r.lean <= 0 {
		r.showSteps(ctx, calls, results)
		return
	}
	if shown != nil {
		var res activities.TimelineResult
		if err := shown.Get(ctx, &res); err != nil || res.Unavailable {
			if err != nil {
				r.log.Warn("agent.timeline.failed", "run", r.id, "error", err)
			}
			r.timelineOff = true
		} else if r.renew > 0 {
			r.tookTimeline(res)
		}
	}
	if len(calls) > 0 && ctx.Err() == nil {
		r.noteSteps(stepTasks(calls, results))
	}
	if r.timelineOff || r.timeline == "" || ctx.Err() != nil || len(calls) == 0 {
		return
	}
	r.pendingSteps = append(r.pendingSteps, stepTasks(calls, results)...)
}

// instantBatch: every call of the batch is over within the workflow task that got it (a quick tool,
// run as a local activity, or the run journal, run by the workflow).
func (r *run) instantBatch(ctx workflow.Context, calls []activities.ToolCall) bool {
	for _, c := range calls {
		spec, ok := r.spec(c.Name)
		switch {
		case !ok:
		case spec.Builtin && (isDelegation(c.Name) || c.Name == tools.AskHuman):
			return false
		case spec.Builtin:
		case !r.quickTool(ctx, spec, false, ""):
			return false
		}
	}
	return true
}

// stopTimeline ends the timeline's stream before delivery turns it into the answer; a timeline that
// cannot be stopped is deleted with the run's other streams.
func (r *run) stopTimeline(ctx workflow.Context) {
	if r.timeline == "" {
		return
	}
	t := r.target()
	pending := r.pendingSteps
	r.pendingSteps = nil
	if _, ok := r.streamSteps(ctx, activities.TimelineInput{Target: t, TS: r.timeline, Stop: true, Tasks: pending}, r.localFinish); !ok {
		ts := r.timeline
		r.streams = slices.DeleteFunc(r.streams, func(s streamedReply) bool { return s.ts == ts })
		r.streams = append(r.streams, streamedReply{ts: ts})
		r.timeline = ""
	}
	r.timelineOff = true
}

// streamSteps sends the timeline's cards (StreamSteps); local runs it as a local activity (the stop
// before delivery, changeLocalFinish).
func (r *run) streamSteps(ctx workflow.Context, in activities.TimelineInput, local bool) (activities.TimelineResult, bool) {
	r.timelineCalls++
	var res activities.TimelineResult
	err := localOr(local, localSlackOptions(ctx), slackOptions(ctx, "timeline-"+strconv.Itoa(r.timelineCalls)), a.StreamSteps, in).Get(ctx, &res)
	if err != nil {
		r.log.Warn("agent.timeline.failed", "run", r.id, "error", err)
		return res, false
	}
	return res, true
}
