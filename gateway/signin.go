package gateway

import (
	"context"

	"github.com/slack-go/slack"
)

// signInOpened records who clicked a Sign in button (slackwire.SignInAction): its value is the
// sign-in link's state, and the click, signed by Slack, names the user. The callback of the sign-in
// then stores tokens only for a link its own person opened (docs/security.md, rule 16). A click
// Lucy cannot record (an expired or used link) is only logged: Slack needs its acknowledgement
// whatever happened, and the callback refuses such a link anyway.
func (g *Gateway) signInOpened(ctx context.Context, cb slack.InteractionCallback, a *slack.BlockAction) {
	log := g.log.With().Str("actionId", a.ActionID).Str("user", cb.User.ID).Logger()
	if g.signIns == nil {
		log.Warn().Msg("a Sign in button was clicked, but this gateway does not serve sign-ins (no callback)")
		return
	}
	if err := g.signIns(ctx, a.Value, cb.User.ID); err != nil {
		log.Info().Str("reason", err.Error()).Msg("a Sign in button's click was not recorded")
		return
	}
	log.Info().Msg("a Sign in button's click was recorded")
}
