package workflows

import (
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/metrics"
	"github.com/lucy-agent/lucy/searchattr"
	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/steps"
)

// Feedback on answers. Every final answer ends with 👍/👎 buttons (output.FeedbackBlocks) naming its
// lane and run. A click reaches the gateway (Slack-signed interactivity), which signals the lane
// (SignalFeedback): the run has usually closed by then, and a closed workflow takes neither a signal
// nor an upsert, while the lane lives on. The lane records one vote per person per answer (a second
// click, or a redelivered one, changes nothing), counts it (lucy_feedback_total{value}), sets its
// LucyFeedback search attribute (down as soon as any answer of the thread got a 👎, so that the Web
// UI filters the threads people disliked) and its memo's "feedback" (each vote: run, person, value,
// reason). A 👎 opens an optional "What was wrong?" form; its answer arrives as a second Feedback
// with the Reason, recorded once, and is kept in the team's memory (KeepFeedback).

// Feedback values.
const (
	FeedbackUp   = "up"
	FeedbackDown = "down"
)

// Feedback is a person's vote on an answer, or the reason they gave for a 👎 (Reason set).
type Feedback struct {
	Run     string `json:"run"`  // the run whose answer it is (a run of this lane)
	User    string `json:"user"` // who clicked
	Value   string `json:"value"`
	Reason  string `json:"reason,omitempty"`
	Channel string `json:"channel,omitempty"`
	EventID string `json:"eventId,omitempty"`
}

// FeedbackRecord is one recorded vote, in the lane's state and memo.
type FeedbackRecord struct {
	Run    string `json:"run"`
	User   string `json:"user"`
	Value  string `json:"value"`
	Reason string `json:"reason,omitempty"`
}

// Bounds on what a lane keeps of feedback.
const (
	maxFeedbackRecords = 100
	maxFeedbackReason  = 1000
	// MemoFeedback is the lane memo's key for its feedback records.
	MemoFeedback = "feedback"
)

// feedbackLane is the lane ID the answer's feedback buttons name ("" for a sub-agent: its result
// is not an answer a person sees).
func (r *run) feedbackLane() string {
	if r.sub != nil || r.in.Lane.Team == "" {
		return ""
	}
	return LaneID(r.in.Lane)
}

func (l *lane) onFeedback(ctx workflow.Context, fb Feedback) {
	if fb.User == "" || (fb.Value != FeedbackUp && fb.Value != FeedbackDown) || !strings.HasPrefix(fb.Run, l.id+":run:") {
		l.log.Warn("lane.feedback.malformed", "lane", l.id, "run", fb.Run, "value", fb.Value)
		return
	}
	// Read where the first feedback arrives: a history recorded before never got one.
	if !hardened(ctx, changeFeedback) {
		return
	}
	i := -1
	for j, rec := range l.st.Feedback {
		if rec.Run == fb.Run && rec.User == fb.User {
			i = j
		}
	}
	reason := strings.TrimSpace(slackwire.Head(fb.Reason, maxFeedbackReason))
	switch {
	case reason == "" && i < 0: // a vote
		l.st.Feedback = append(l.st.Feedback, FeedbackRecord{Run: fb.Run, User: fb.User, Value: fb.Value})
		if len(l.st.Feedback) > maxFeedbackRecords {
			l.st.Feedback = l.st.Feedback[len(l.st.Feedback)-maxFeedbackRecords:]
		}
		count(workflow.GetMetricsHandler(ctx), metrics.WorkflowFeedback, "value", fb.Value)
		l.log.Info("lane.feedback.recorded", "lane", l.id, "run", fb.Run, "user", fb.User, "value", fb.Value)
	case reason != "" && i >= 0 && l.st.Feedback[i].Value == FeedbackDown && l.st.Feedback[i].Reason == "": // why a 👎
		l.st.Feedback[i].Reason = reason
		l.keepFeedback(ctx, fb, reason)
	default: // a second click, a redelivery, a reason without a 👎 or a second reason
		count(workflow.GetMetricsHandler(ctx), metrics.WorkflowDedupeHits, "kind", "feedback")
		return
	}
	l.publishFeedback(ctx)
}

// publishFeedback sets the lane's LucyFeedback attribute and its memo from the recorded votes.
func (l *lane) publishFeedback(ctx workflow.Context) {
	value := ""
	for _, rec := range l.st.Feedback {
		if rec.Value == FeedbackDown {
			value = FeedbackDown
			break
		}
		value = FeedbackUp
	}
	if value != "" {
		upsertAttrs(ctx, l.log, searchattr.Feedback.ValueSet(value))
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{MemoFeedback: l.st.Feedback}); err != nil {
		l.log.Warn("lane.feedback.memo_failed", "lane", l.id, "error", err)
	}
}

// keepFeedback keeps a 👎's reason in the team's memory, about the channel, from the person: memory's
// activity, called by its registered name (steps.KeepFeedback).
func (l *lane) keepFeedback(ctx workflow.Context, fb Feedback, reason string) {
	err := workflow.ExecuteActivity(slackOptions(ctx, "feedback-"+fb.User+"-"+fb.Run), steps.KeepFeedback, steps.KeepFeedbackInput{
		Team: l.key.Team, Channel: l.key.Channel, ThreadTS: l.key.ThreadTS, User: fb.User, Run: fb.Run, Reason: reason,
	}).Get(ctx, nil)
	if err != nil {
		l.log.Warn("lane.feedback.memory_failed", "lane", l.id, "error", err)
	}
}
