package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/output"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/workflows"
)

// Feedback on answers: a click on an answer's 👍/👎 (output.FeedbackBlocks: Slack's feedback_buttons;
// older answers carry plain buttons, whose clicks are still taken) is handed to the lane that ran it
// (SignalFeedback), which records one vote per person per answer. A 👎 also opens the optional
// "What was wrong?" form, first: the click's trigger_id opens a modal only within 3 seconds
// ("Pass a valid trigger_id within 3 seconds of receiving it", Bolt's "Opening modals" guide), so
// the hand-off to Temporal, which can be slow, comes after. What the person writes there is handed
// to the lane the same way, as the vote's reason.

const (
	outcomeFeedback = "feedback" // a 👍/👎 or a 👎's reason handed to the lane

	// FeedbackReasonView is the callback ID of the "What was wrong?" form; its private metadata is
	// the button's output.FeedbackValue.
	FeedbackReasonView   = "lucy_feedback_reason"
	feedbackReasonBlock  = "reason"
	feedbackReasonAction = "reason"
	maxFeedbackReason    = 1000
)

func isFeedbackAction(id string) bool {
	return id == output.ActionFeedback || id == output.ActionFeedbackUp || id == output.ActionFeedbackDown
}

// feedbackVote is the vote a click gives: the native control's clicked button says it in its value
// (a block_actions action of type feedback_buttons carries the clicked button's value); a plain
// button of an older answer says it by its action ID. "" for a click that says neither.
func feedbackVote(a *slack.BlockAction, v output.FeedbackValue) string {
	switch {
	case a.ActionID == output.ActionFeedback && v.Vote == output.VoteUp:
		return workflows.FeedbackUp
	case a.ActionID == output.ActionFeedback && v.Vote == output.VoteDown:
		return workflows.FeedbackDown
	case a.ActionID == output.ActionFeedbackUp:
		return workflows.FeedbackUp
	case a.ActionID == output.ActionFeedbackDown:
		return workflows.FeedbackDown
	}
	return ""
}

// feedbackValue reads a feedback button's value (or the form's metadata): a lane ID and one of its runs.
func feedbackValue(raw string) (output.FeedbackValue, bool) {
	var v output.FeedbackValue
	if json.Unmarshal([]byte(raw), &v) != nil {
		return v, false
	}
	if _, err := workflows.ParseLaneID(v.Lane); err != nil || !strings.HasPrefix(v.Run, v.Lane+":run:") {
		return v, false
	}
	return v, true
}

func (g *Gateway) feedback(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) error {
	typ := string(cb.Type)
	log := g.log.With().Str("actionId", a.ActionID).Str("user", cb.User.ID).Logger()
	v, ok := feedbackValue(a.Value)
	value := feedbackVote(a, v)
	if !ok || value == "" {
		g.metrics.GatewayEvent(typ, outcomeMalformed)
		log.Warn().Str("value", a.Value).Msg("feedback button with a malformed value ignored")
		return nil
	}
	if key, _ := workflows.ParseLaneID(v.Lane); g.team != "" && key.Team != g.team {
		g.metrics.GatewayEvent(typ, outcomeOtherTeam)
		return nil
	}
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	if value == workflows.FeedbackDown {
		// The form first, while the trigger is fresh; the vote is handed off whether it opened or not.
		g.askWhatWasWrong(ctx, cb, a.Value)
	}
	return g.handFeedback(ctx, typ, v.Lane, workflows.Feedback{
		Run: v.Run, User: cb.User.ID, Value: value, Channel: channel, EventID: interactionID(cb, a),
	})
}

func (g *Gateway) handFeedback(ctx context.Context, typ, lane string, fb workflows.Feedback) error {
	start := g.now()
	err := g.h.Feedback(ctx, lane, fb)
	g.metrics.Handoff(g.now().Sub(start))
	if errors.Is(err, ErrLaneGone) {
		g.metrics.GatewayEvent(typ, outcomeLaneGone)
		g.log.Info().Str("lane", lane).Msg("feedback for a thread whose lane has ended ignored")
		return nil
	}
	if err != nil {
		g.metrics.GatewayEvent(typ, outcomeError)
		return fmt.Errorf("hand off feedback to %s: %w", lane, err)
	}
	g.metrics.GatewayEvent(typ, outcomeFeedback)
	g.log.Info().Str("lane", lane).Str("run", fb.Run).Str("value", fb.Value).Bool("reason", fb.Reason != "").Msg("feedback handed off")
	return nil
}

// askWhatWasWrong opens the optional "What was wrong?" form after a 👎, before the vote is handed
// off. It is a courtesy: failing to open it loses nothing (the vote is handed off next), so it never
// fails the click; if the hand-off fails after it opened, the reason the person sends hands the 👎
// off again, with its reason.
func (g *Gateway) askWhatWasWrong(ctx context.Context, cb slack.InteractionCallback, meta string) {
	if g.views == nil || cb.TriggerID == "" {
		return
	}
	input := slack.NewPlainTextInputBlockElement(plain("The facts, the tone, what it missed…"), feedbackReasonAction)
	input.Multiline, input.MaxLength = true, maxFeedbackReason
	reason := slack.NewInputBlock(feedbackReasonBlock, plain("What was wrong?"), nil, input)
	reason.Optional = true
	view := slack.ModalViewRequest{
		Type: slack.VTModal, Title: plain("Thanks for the feedback"), Close: plain("Skip"), Submit: plain("Send"),
		CallbackID: FeedbackReasonView, PrivateMetadata: meta,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			section("Optional: tell Lucy what was wrong, and she keeps it in mind for this channel."),
			reason,
		}},
	}
	if _, err := g.views.OpenViewContext(ctx, cb.TriggerID, view); err != nil {
		g.log.Warn().Err(err).Msg("could not open the \"What was wrong?\" form; the 👎 is recorded")
	}
}

// feedbackReason hands a submitted "What was wrong?" to the lane. An empty form just closes.
func (g *Gateway) feedbackReason(ctx context.Context, cb slack.InteractionCallback) (*slack.ViewSubmissionResponse, error) {
	typ := string(cb.Type)
	v, ok := feedbackValue(cb.View.PrivateMetadata)
	if !ok {
		g.metrics.GatewayEvent(typ, outcomeMalformed)
		return nil, nil
	}
	if key, _ := workflows.ParseLaneID(v.Lane); (g.team != "" && key.Team != g.team) || (cb.Team.ID != "" && cb.Team.ID != key.Team) {
		g.metrics.GatewayEvent(typ, outcomeOtherTeam)
		return nil, nil
	}
	// A key pasted into the reason is taken out here, before the reason enters Temporal: the lane
	// keeps it in its memo and the team's memory keeps it as a note that later prompts carry.
	reason, removed := secrets.RemovePasted(strings.TrimSpace(cb.View.State.Values[feedbackReasonBlock][feedbackReasonAction].Value))
	if removed {
		g.log.Warn().Str("lane", v.Lane).Str("user", cb.User.ID).Msg("a key pasted into a feedback reason was removed before the hand-off")
	}
	if reason == "" {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
		return nil, nil
	}
	err := g.handFeedback(ctx, typ, v.Lane, workflows.Feedback{
		Run: v.Run, User: cb.User.ID, Value: workflows.FeedbackDown, Reason: reason, EventID: "view:" + cb.View.ID,
	})
	return nil, err
}
