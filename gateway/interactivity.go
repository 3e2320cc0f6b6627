package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/slack-go/slack"

	"github.com/lucy-agent/lucy/slackwire"
	"github.com/lucy-agent/lucy/workflows"
)

// Action IDs of the approval buttons that runs post (Block Kit), and the value they carry.
const (
	ActionApprove = "lucy_approve"
	ActionDeny    = "lucy_deny"
)

// ApprovalValue is the JSON value of an approval button: which lane to signal and which proposal the
// click answers.
type ApprovalValue struct {
	Lane        string `json:"lane"` // lane workflow ID, lane:{team}:{channel}:{thread_ts}
	Fingerprint string `json:"fp"`
}

// HandleInteraction hands an interactivity payload (a button click) to its lane, or answers a click
// on Add key with its form (keys.go; the form's submission is HandleViewSubmission's). Clicks on
// anything else are ignored. Like HandleEvent it returns an error only when the
// hand-off failed and Slack should deliver the payload again; a malformed value or a lane that has
// ended is logged and acknowledged, since no retry can fix either.
func (g *Gateway) HandleInteraction(ctx context.Context, cb slack.InteractionCallback) error {
	typ := string(cb.Type)
	if typ == "" {
		typ = "unknown"
	}
	if cb.Type != slack.InteractionTypeBlockActions {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
		return nil
	}
	if g.team != "" && cb.Team.ID != "" && cb.Team.ID != g.team {
		g.metrics.GatewayEvent(typ, outcomeOtherTeam)
		g.log.Warn().Str("workspace", cb.Team.ID).Str("installed", g.team).Msg("click from another workspace ignored")
		return nil
	}
	handled := false
	for _, a := range cb.ActionCallback.BlockActions {
		if a != nil && a.ActionID == slackwire.AddKeyAction {
			handled = true
			if err := g.openKeyForm(ctx, cb, a); err != nil {
				g.metrics.GatewayEvent(typ, outcomeError)
				return err
			}
			continue
		}
		if a != nil && a.ActionID == slackwire.SignInAction {
			handled = true
			g.signInOpened(ctx, cb, a)
			continue
		}
		if a != nil && isFeedbackAction(a.ActionID) {
			handled = true
			if err := g.feedback(ctx, cb, a); err != nil {
				return err
			}
			continue
		}
		if a == nil || (a.ActionID != ActionApprove && a.ActionID != ActionDeny) {
			continue
		}
		handled = true
		if err := g.approval(ctx, cb, a); err != nil {
			g.metrics.GatewayEvent(typ, outcomeError)
			return err
		}
	}
	if !handled {
		g.metrics.GatewayEvent(typ, outcomeIgnored)
	}
	return nil
}

func (g *Gateway) approval(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) error {
	typ := string(cb.Type)
	log := g.log.With().Str("actionId", a.ActionID).Str("user", cb.User.ID).Logger()
	var v ApprovalValue
	if err := json.Unmarshal([]byte(a.Value), &v); err != nil || v.Fingerprint == "" {
		g.metrics.GatewayEvent(typ, outcomeMalformed)
		log.Warn().Err(err).Str("value", a.Value).Msg("approval button with a malformed value ignored")
		return nil
	}
	if _, err := workflows.ParseLaneID(v.Lane); err != nil {
		g.metrics.GatewayEvent(typ, outcomeMalformed)
		log.Warn().Err(err).Msg("approval button with a malformed lane ignored")
		return nil
	}
	channel := cb.Channel.ID
	if channel == "" {
		channel = cb.Container.ChannelID
	}
	ap := workflows.Approval{
		Fingerprint: v.Fingerprint, Approved: a.ActionID == ActionApprove, User: cb.User.ID, Channel: channel,
		Source: "button", EventID: interactionID(cb, a),
	}
	start := g.now()
	err := g.h.Approval(ctx, v.Lane, ap)
	g.metrics.Handoff(g.now().Sub(start))
	if errors.Is(err, ErrLaneGone) {
		g.metrics.GatewayEvent(typ, outcomeLaneGone)
		log.Info().Str("lane", v.Lane).Msg("approval click for a lane that has ended ignored")
		return nil
	}
	if err != nil {
		return fmt.Errorf("hand off approval to %s: %w", v.Lane, err)
	}
	g.metrics.GatewayEvent(typ, outcomeApproval)
	log.Info().Str("lane", v.Lane).Bool("approved", ap.Approved).Msg("approval handed off")
	return nil
}

// interactionID identifies one click, so that a redelivered payload can be recognized by the lane.
func interactionID(cb slack.InteractionCallback, a *slack.BlockAction) string {
	if cb.TriggerID != "" {
		return "trigger:" + cb.TriggerID
	}
	if a.ActionTs != "" {
		return "action:" + cb.User.ID + ":" + a.ActionTs
	}
	return ""
}
