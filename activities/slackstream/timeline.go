package slackstream

// The timeline (issue 24): a run's tool steps shown as task cards (task_update chunks) in a streamed
// message that the run opens at its first tool step; the answer's text is then appended to the same
// stream by CallModel (Target.TS), and delivery stops it and turns it into the answer. Every
// call sends every task as it stands, by the task's id: Slack updates a task card in place, so a
// retried call (or the same state sent twice) shows nothing twice.

import (
	"context"
	"time"

	"github.com/slack-go/slack"
	"go.temporal.io/sdk/activity"
)

// TimelineKey is the metadata key of a stopped timeline before delivery re-keys it.
const TimelineKey = "timeline"

// StepTask is one task card of the timeline: a tool call (its ID), the step's words and its state
// (pending, in_progress, complete, error).
type StepTask struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

// TimelineInput opens the timeline (TS "") or updates it with Tasks; Stop ends the stream (tasks
// first), with the run's metadata. Renew and Opened: the run renews its timeline (Target.Renew):
// an update to a timeline opened RenewAge ago or more, or one Slack already closed, stops it
// and opens a fresh one with the tasks.
type TimelineInput struct {
	Target Target
	TS     string     `json:",omitempty"`
	Tasks  []StepTask `json:",omitempty"`
	Stop   bool       `json:",omitempty"`
	Renew  bool       `json:",omitempty"`
	Opened time.Time  `json:",omitzero"`
}

// TimelineResult is the timeline's message, or Unavailable when Slack would not open a stream (the
// run then keeps its status line and placeholder, as without a timeline). Deferred: the stream
// budget (or Slack's ratelimited) left this update out; the run goes on with the timeline as it was
// and the next update (or delivery, DeliverInput.Steps) shows the cards. Renewed is the timeline the
// call stopped and replaced by TS; Opened is when TS started.
type TimelineResult struct {
	TS          string    `json:"ts,omitempty"`
	Unavailable bool      `json:"unavailable,omitempty"`
	Deferred    bool      `json:"deferred,omitempty"`
	Renewed     string    `json:"renewed,omitempty"`
	Opened      time.Time `json:"opened,omitzero"`
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

// Steps opens, updates or stops the run's timeline (the StreamSteps activity). Opening is
// idempotent: the ts is in the heartbeat detail as soon as chat.startStream answers, so a retried
// attempt updates that stream; a stream an attempt left without a heartbeat naming it
// (orphanStreams) is deleted first. A failure the activity must report is an *Error.
func (s *Streamer) Steps(ctx context.Context, in TimelineInput) (TimelineResult, error) {
	api, ok := s.api(in.Target.Team)
	if !ok || in.Target.ThreadTS == "" {
		return TimelineResult{Unavailable: true}, nil
	}
	t := in.Target
	var resumed time.Time
	if in.TS == "" {
		if s.answered(ctx, &t) { // a reset run whose answer is in the thread: no second stream
			return TimelineResult{Unavailable: true}, nil
		}
		if prev := previousStreams(ctx); len(prev.TSs) > 0 {
			// An earlier attempt opened it: that one goes on, its life counted from now (a little
			// late, by the retry's delay).
			in.TS, resumed = prev.TSs[0], s.clock()
		} else if err := deleteStreams(ctx, api, t.Channel, s.orphanStreams(ctx, &t)); err != nil {
			return TimelineResult{}, &Error{Op: "chat.delete", Err: err}
		}
	}
	if in.TS == "" {
		ts, ok, err := s.startTimeline(ctx, api, &t, in.Tasks, 5*time.Second)
		switch {
		case !ok && err == nil: // the Tier-2 budget or a 429: the next step tries again
			return TimelineResult{Deferred: true}, nil
		case err != nil && ErrorCode(err) != "":
			// Slack said no (channel_type_not_supported, an old workspace, a policy: ref:chat.startStream).
			return TimelineResult{Unavailable: true}, nil
		case err != nil: // no answer: the stream may exist; a retry deletes it (orphanStreams) first
			return TimelineResult{}, &Error{Op: "chat.startStream", Err: err}
		}
		if activity.IsActivity(ctx) {
			activity.RecordHeartbeat(ctx, Beat{Channel: t.Channel, TSs: []string{ts}})
		}
		opened := s.clock()
		if !in.Stop {
			return TimelineResult{TS: ts, Opened: opened}, nil
		}
		in.TS, in.Tasks = ts, nil // sent with the start
	}
	if in.Stop {
		opts := []slack.MsgOption{slack.MsgOptionMetadata(s.Posts.Metadata(t.RunID, TimelineKey))}
		if len(in.Tasks) > 0 {
			opts = append(opts, slack.MsgOptionChunks(taskChunks(in.Tasks)...))
		}
		// A timeline Slack already closed answers message_not_in_streaming_state: stopped all the
		// same, and delivery's chat.update finishes it. A 429 is retried after its Retry-After.
		if err := s.Stop(ctx, api, t.Team, t.Channel, in.TS, opts...); err != nil {
			return TimelineResult{}, err
		}
		return TimelineResult{TS: in.TS}, nil
	}
	if len(in.Tasks) == 0 {
		return TimelineResult{TS: in.TS, Opened: resumed}, nil
	}
	if in.Renew && s.aged(in.Opened) {
		return s.renewSteps(ctx, api, &t, in)
	}
	if !s.budget.wait(ctx, t.Team, "chat.appendStream", 2*time.Second) {
		return TimelineResult{TS: in.TS, Deferred: true, Opened: resumed}, nil
	}
	_, _, err := api.AppendStreamContext(ctx, t.Channel, in.TS, slack.MsgOptionChunks(taskChunks(in.Tasks)...))
	if _, limited := s.budget.limited(t.Team, "chat.appendStream", err); limited {
		return TimelineResult{TS: in.TS, Deferred: true, Opened: resumed}, nil
	}
	if err != nil {
		switch code := ErrorCode(err); code {
		case "stopped_by_user":
			// The person stopped it (ref:chat.appendStream): no more cards, the message stays, and
			// delivery writes the answer into it.
			return TimelineResult{TS: in.TS, Unavailable: true}, nil
		case "message_not_in_streaming_state", "message_not_found":
			// Slack closed the timeline (its life ended), or it is gone.
			if in.Renew {
				return s.renewSteps(ctx, api, &t, in)
			}
			return TimelineResult{}, &Error{Op: "chat.appendStream", Err: err, Gone: true}
		}
		return TimelineResult{}, &Error{Op: "chat.appendStream", Err: err}
	}
	return TimelineResult{TS: in.TS, Opened: resumed}, nil
}

// renewSteps replaces the timeline in.TS by a fresh one that shows in.Tasks. When none can start
// now, the result has no TS: the run opens one at its next step.
func (s *Streamer) renewSteps(ctx context.Context, api API, t *Target, in TimelineInput) (TimelineResult, error) {
	if prev := previousStreams(ctx); len(prev.TSs) > 0 && prev.TSs[0] != in.TS {
		// An earlier attempt renewed it already (its heartbeat names the new one): that one goes on.
		return TimelineResult{TS: prev.TSs[0], Renewed: in.TS, Opened: s.clock()}, nil
	}
	cp := *t
	cp.TS = in.TS
	ts, opened, ok := s.renewTimeline(ctx, api, &cp, in.Tasks, nil)
	if !ok {
		return TimelineResult{Renewed: in.TS, Deferred: true}, nil
	}
	return TimelineResult{TS: ts, Renewed: in.TS, Opened: opened}, nil
}
