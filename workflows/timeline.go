package workflows

import (
	"slices"
	"strconv"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
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
	res, ok := r.streamSteps(ctx, activities.TimelineInput{Target: *t, TS: r.timeline, Tasks: tasks})
	if !ok || res.Unavailable {
		r.timelineOff = true
		return
	}
	r.timeline = res.TS
}

// stopTimeline ends the timeline's stream before delivery turns it into the answer; a timeline that
// cannot be stopped is deleted with the run's other streams.
func (r *run) stopTimeline(ctx workflow.Context) {
	if r.timeline == "" {
		return
	}
	m := r.in.Message
	t := activities.StreamTarget{Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Recipient: r.in.Requester}
	if _, ok := r.streamSteps(ctx, activities.TimelineInput{Target: t, TS: r.timeline, Stop: true}); !ok {
		ts := r.timeline
		r.streams = slices.DeleteFunc(r.streams, func(s streamedReply) bool { return s.ts == ts })
		r.streams = append(r.streams, streamedReply{ts: ts})
		r.timeline = ""
	}
	r.timelineOff = true
}

func (r *run) streamSteps(ctx workflow.Context, in activities.TimelineInput) (activities.TimelineResult, bool) {
	r.timelineCalls++
	var res activities.TimelineResult
	err := workflow.ExecuteActivity(slackOptions(ctx, "timeline-"+strconv.Itoa(r.timelineCalls)), a.StreamSteps, in).Get(ctx, &res)
	if err != nil {
		r.log.Warn("agent.timeline.failed", "run", r.id, "error", err)
		return res, false
	}
	return res, true
}
