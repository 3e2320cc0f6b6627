package workflows

import (
	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/activities"
)

// Streamed answers (issue 24, changeStreamAnswer): the run's model calls show a text reply in the
// thread as the model writes it (activities/slackstream). The run cannot know which reply is the
// answer until the gates have passed, so every streamed reply is remembered, and delivery settles
// them: the stream of the reply that is the answer becomes the answer (DeliverAnswer rewrites it to
// the rendered answer and deletes the placeholder), every other stream is deleted. A run that
// stops before it answers deletes them with its "Stopped." note.

// streamedReply is a reply shown as a stream: its message and its text.
type streamedReply struct {
	ts, text string
}

// streamTarget is where this model call streams, or nil: only an agent run that answers a person
// in a thread streams (not a sub-agent, not a scheduled job, not a run whose answer is already in
// the thread), from the first call that reaches here after changeStreamAnswer, until Slack refuses
// a stream once.
func (r *run) streamTarget(ctx workflow.Context) *activities.StreamTarget {
	m := r.in.Message
	if r.sub != nil || r.in.Scheduled || !r.hardened || r.answered || r.placeholder == "" || m.Key().ThreadTS == "" {
		return nil
	}
	if r.stream == 0 {
		r.stream = -1
		if hardened(ctx, changeStreamAnswer) {
			r.stream = 1
		}
	}
	if r.stream < 0 {
		return nil
	}
	t := r.target()
	t.TS = r.timeline
	return &t
}

// target is the run's stream target: its thread, for its requester (and the requester's own team:
// Message.UserTeam), with the timeline's renewal (changeStreamLife) where the run has it.
func (r *run) target() activities.StreamTarget {
	m := r.in.Message
	t := activities.StreamTarget{Team: m.Team, Channel: m.Channel, ThreadTS: m.Key().ThreadTS, RunID: r.id, Recipient: r.in.Requester}
	if r.in.Requester == m.User {
		t.RecipientTeam = m.UserTeam
	}
	if r.renew > 0 {
		t.Renew, t.Opened = true, r.timelineOpened
	}
	return t
}

// noteStream remembers what a model call streamed, and turns streaming off for the run when Slack
// refused it (the post-and-update path from then on, decided once).
func (r *run) noteStream(reply activities.ModelReply) {
	if reply.StreamUnavailable && r.stream > 0 {
		r.stream = -1
		r.log.Info("agent.stream.unavailable", "run", r.id)
	}
	if reply.StreamTS != "" {
		r.streams = append(r.streams, streamedReply{ts: reply.StreamTS, text: reply.Content})
	}
}

// settleStreams picks the stream that shows answer (the latest with its exact text) and the streams
// to delete (all the others).
//
// With a timeline (timeline.go), the timeline is the answer's message whatever it shows (delivery
// rewrites it), and it is deleted with the others when the run stops before it answers.
func (r *run) settleStreams(answer string) (keep string, discard []string) {
	if r.timeline != "" && answer != "" {
		keep = r.timeline
	}
	for i := len(r.streams) - 1; i >= 0; i-- {
		s := r.streams[i]
		if r.timeline != "" && s.ts == r.timeline {
			continue
		}
		if keep == "" && answer != "" && s.text == answer {
			keep = s.ts
			continue
		}
		discard = append(discard, s.ts)
	}
	if r.timeline != "" && keep != r.timeline {
		discard = append(discard, r.timeline)
	}
	// Renewed-out timelines (changeStreamLife): their steps are in the answer (DeliverInput.Steps).
	discard = append(discard, r.oldTimelines...)
	return keep, discard
}
