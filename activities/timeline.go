package activities

// The timeline (issue 24): a run's tool steps shown as task cards (task_update chunks) in a streamed
// message that the run opens at its first tool step; the answer's text is then appended to the same
// stream by CallModel (StreamTarget.TS), and delivery stops it and turns it into the answer. Every
// call sends every task as it stands, by the task's id: Slack updates a task card in place, so a
// retried call (or the same state sent twice) shows nothing twice.

import (
	"context"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
)

// TimelineKey is the metadata key of a stopped timeline before delivery re-keys it.
const timelineKey = "timeline"

// StepTask is one task card of the timeline: a tool call (its ID), the step's words and its state
// (pending, in_progress, complete, error).
type StepTask struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// TimelineInput opens the timeline (TS "") or updates it with Tasks; Stop ends the stream (tasks
// first), with the run's metadata.
type TimelineInput struct {
	Target StreamTarget
	TS     string     `json:",omitempty"`
	Tasks  []StepTask `json:",omitempty"`
	Stop   bool       `json:",omitempty"`
}

// TimelineResult is the timeline's message, or Unavailable when Slack would not open a stream (the
// run then keeps its status line and placeholder, as without a timeline).
type TimelineResult struct {
	TS          string `json:"ts,omitempty"`
	Unavailable bool   `json:"unavailable,omitempty"`
}

func taskChunks(tasks []StepTask) []slack.StreamChunk {
	out := make([]slack.StreamChunk, 0, len(tasks))
	for _, t := range tasks {
		c := slack.NewTaskUpdateChunk(t.ID, t.Title)
		c.Status = slack.TaskCardStatus(t.Status)
		out = append(out, c)
	}
	return out
}

// StreamSteps opens, updates or stops the run's timeline. Opening is idempotent: the ts is in the
// heartbeat detail as soon as chat.startStream answers, so a retried attempt updates that stream;
// a stream an attempt left without a heartbeat naming it (orphanStreams) is deleted first.
func (a *Activities) StreamSteps(ctx context.Context, in TimelineInput) (TimelineResult, error) {
	if a.Slack == nil {
		return TimelineResult{Unavailable: true}, nil
	}
	api, ok := a.Slack(in.Target.Team).(SlackStreamAPI)
	if !ok || in.Target.ThreadTS == "" {
		return TimelineResult{Unavailable: true}, nil
	}
	t := in.Target
	if in.TS == "" {
		if a.answered(ctx, &t) { // a reset run whose answer is in the thread: no second stream
			return TimelineResult{Unavailable: true}, nil
		}
		if prev := previousStreams(ctx); len(prev.TSs) > 0 {
			in.TS = prev.TSs[0]
		} else if err := deleteStreams(ctx, api, t.Channel, a.orphanStreams(ctx, &t)); err != nil {
			return TimelineResult{}, slackError("chat.delete", err)
		}
	}
	if in.TS == "" {
		opts := []slack.MsgOption{slack.MsgOptionTS(t.ThreadTS), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline)}
		if len(in.Tasks) > 0 {
			opts = append(opts, slack.MsgOptionChunks(taskChunks(in.Tasks)...))
		}
		if t.Recipient != "" {
			opts = append(opts, slack.MsgOptionRecipientUserID(t.Recipient), slack.MsgOptionRecipientTeamID(t.Team))
		}
		_, ts, err := api.StartStreamContext(ctx, t.Channel, opts...)
		if err != nil && slackErrorCode(err) != "" { // Slack said no (not_allowed, an old workspace…)
			return TimelineResult{Unavailable: true}, nil
		}
		if err != nil { // no answer: the stream may exist; a retry deletes it (orphanStreams) first
			return TimelineResult{}, slackError("chat.startStream", err)
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, StreamBeat{Channel: t.Channel, TSs: []string{ts}})
		}
		in.TS = ts
		if !in.Stop {
			return TimelineResult{TS: ts}, nil
		}
		in.Tasks = nil // sent with the start
	}
	if in.Stop {
		opts := []slack.MsgOption{slack.MsgOptionMetadata(postMetadata(t.RunID, timelineKey))}
		if len(in.Tasks) > 0 {
			opts = append(opts, slack.MsgOptionChunks(taskChunks(in.Tasks)...))
		}
		if _, _, err := api.StopStreamContext(ctx, t.Channel, in.TS, opts...); err != nil && slackErrorCode(err) != "message_not_in_streaming_state" {
			return TimelineResult{}, slackError("chat.stopStream", err)
		}
		return TimelineResult{TS: in.TS}, nil
	}
	if len(in.Tasks) == 0 {
		return TimelineResult{TS: in.TS}, nil
	}
	if _, _, err := api.AppendStreamContext(ctx, t.Channel, in.TS, slack.MsgOptionChunks(taskChunks(in.Tasks)...)); err != nil {
		if code := slackErrorCode(err); code == "message_not_in_streaming_state" || code == "message_not_found" {
			return TimelineResult{}, temporal.NewNonRetryableApplicationError("the timeline is gone: "+code, ErrSlackPermanent, err)
		}
		return TimelineResult{}, slackError("chat.appendStream", err)
	}
	return TimelineResult{TS: in.TS}, nil
}
