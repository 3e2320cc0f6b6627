package gateway

import (
	"context"
	"fmt"
	"strings"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"github.com/slack-go/slack/socketmode"
)

// RunSocketMode receives events and interactions over a Socket Mode WebSocket until ctx ends, then
// returns nil. api must be built with slack.OptionAppLevelToken (xapp-). The client reconnects by
// itself; RunSocketMode returns an error only when it cannot (for example an invalid app token).
//
// Each envelope is acknowledged only after it was handed to its lane. A failed hand-off is not
// acknowledged, and Slack redelivers it. With several replicas connected, Slack gives each envelope
// to one connection; the handler runs every envelope in its own goroutine, so envelopes are not
// ordered, which the lane's deduplication and queue make harmless.
func (g *Gateway) RunSocketMode(ctx context.Context, api *slack.Client) error {
	sm := socketmode.New(api, socketmode.OptionLog(slackLogger{g.log}))
	h := socketmode.NewSocketmodeHandler(sm)
	h.Handle(socketmode.EventTypeEventsAPI, g.onEventsAPI(ctx))
	h.Handle(socketmode.EventTypeInteractive, g.onInteractive(ctx))
	h.Handle(socketmode.EventTypeConnecting, g.onConnecting)
	h.Handle(socketmode.EventTypeConnected, g.onConnected)
	h.Handle(socketmode.EventTypeHello, g.onHello)
	h.Handle(socketmode.EventTypeConnectionError, g.onConnectionError)
	h.Handle(socketmode.EventTypeInvalidAuth, g.onInvalidAuth)
	h.Handle(socketmode.EventTypeIncomingError, g.onIncomingError)
	h.Handle(socketmode.EventTypeErrorBadMessage, g.onBadMessage)
	h.Handle(socketmode.EventTypeErrorWriteFailed, g.onWriteFailed)
	h.HandleDefault(g.onOther(ctx))

	err := h.RunEventLoopContext(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("socket mode: %w", err)
}

// ack acknowledges an envelope with no payload: Slack drops acks of 20 KB or more, and an event ack
// needs nothing but the envelope ID.
func (g *Gateway) ack(ctx context.Context, c *socketmode.Client, req *socketmode.Request, log zerolog.Logger) {
	if err := c.AckCtx(ctx, req.EnvelopeID, nil); err != nil {
		log.Warn().Err(err).Msg("ack not sent; Slack will redeliver and the lane will deduplicate")
	}
}

func (g *Gateway) onEventsAPI(ctx context.Context) socketmode.SocketmodeHandlerFunc {
	return func(evt *socketmode.Event, c *socketmode.Client) {
		if evt.Request == nil {
			return
		}
		log := g.log.With().Str("envelopeId", evt.Request.EnvelopeID).Logger()
		ev, ok := evt.Data.(slackevents.EventsAPIEvent)
		if !ok {
			g.metrics.GatewayEvent("unknown", outcomeMalformed)
			log.Warn().Msg("events_api envelope without an event acknowledged and ignored")
			g.ack(ctx, c, evt.Request, log)
			return
		}
		cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
		if !ok {
			g.metrics.GatewayEvent(ev.Type, outcomeIgnored)
			log.Warn().Str("type", ev.Type).Msg("events_api envelope ignored")
			g.ack(ctx, c, evt.Request, log)
			return
		}
		log = log.With().Str("eventId", cb.EventID).Str("type", ev.InnerEvent.Type).Logger()
		if evt.Request.RetryAttempt > 0 {
			log.Info().Int("retryNum", evt.Request.RetryAttempt).Str("retryReason", evt.Request.RetryReason).Msg("slack retry received")
		}
		hctx, cancel := context.WithTimeout(ctx, ackBudget)
		defer cancel()
		if err := g.HandleEvent(hctx, cb.EventID, ev.TeamID, ev.InnerEvent); err != nil {
			log.Error().Err(err).Msg("hand-off failed; envelope not acknowledged, Slack will redeliver")
			return
		}
		g.ack(ctx, c, evt.Request, log)
	}
}

func (g *Gateway) onInteractive(ctx context.Context) socketmode.SocketmodeHandlerFunc {
	return func(evt *socketmode.Event, c *socketmode.Client) {
		if evt.Request == nil {
			return
		}
		log := g.log.With().Str("envelopeId", evt.Request.EnvelopeID).Logger()
		cb, ok := evt.Data.(slack.InteractionCallback)
		if !ok {
			g.metrics.GatewayEvent("interactivity", outcomeMalformed)
			log.Warn().Msg("interactive envelope without a payload acknowledged and ignored")
			g.ack(ctx, c, evt.Request, log)
			return
		}
		hctx, cancel := context.WithTimeout(ctx, ackBudget)
		defer cancel()
		if cb.Type == slack.InteractionTypeViewSubmission {
			resp, err := g.HandleViewSubmission(hctx, cb)
			if err != nil {
				log.Error().Err(err).Msg("form submission failed; envelope not acknowledged")
				return
			}
			// The form's errors travel in the ack's payload; an empty ack closes the form.
			var payload any
			if resp != nil {
				payload = resp
			}
			if err := c.AckCtx(ctx, evt.Request.EnvelopeID, payload); err != nil {
				log.Warn().Err(err).Msg("ack not sent")
			}
			return
		}
		if err := g.HandleInteraction(hctx, cb); err != nil {
			log.Error().Err(err).Msg("interaction hand-off failed; envelope not acknowledged")
			return
		}
		g.ack(ctx, c, evt.Request, log)
	}
}

// onOther acknowledges envelopes Lucy has no use for (slash commands she does not define), so that
// Slack does not show the person an error, and ignores the client's own events.
func (g *Gateway) onOther(ctx context.Context) socketmode.SocketmodeHandlerFunc {
	return func(evt *socketmode.Event, c *socketmode.Client) {
		log := g.log.With().Str("type", string(evt.Type)).Logger()
		log.Debug().Msg("socket mode event ignored")
		if evt.Request != nil && evt.Request.EnvelopeID != "" {
			g.metrics.GatewayEvent(string(evt.Type), outcomeIgnored)
			g.ack(ctx, c, evt.Request, log)
		}
	}
}

func (g *Gateway) onConnecting(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Debug()
	if c, ok := evt.Data.(*slack.ConnectingEvent); ok {
		e = e.Int("attempt", c.Attempt).Int("connection", c.ConnectionCount)
	}
	e.Msg("socket mode connecting")
}

func (g *Gateway) onConnected(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Info()
	if c, ok := evt.Data.(*socketmode.ConnectedEvent); ok {
		e = e.Int("connection", c.ConnectionCount)
	}
	e.Msg("socket mode connected")
}

func (g *Gateway) onHello(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Debug()
	if evt.Request != nil {
		e = e.Int("connections", evt.Request.NumConnections).Str("host", evt.Request.DebugInfo.Host)
	}
	e.Msg("socket mode hello")
}

func (g *Gateway) onConnectionError(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Warn()
	if c, ok := evt.Data.(*slack.ConnectionErrorEvent); ok {
		e = e.Err(c.ErrorObj).Int("attempt", c.Attempt).Dur("backoff", c.Backoff)
	}
	e.Msg("socket mode connection failed; retrying")
}

func (g *Gateway) onInvalidAuth(*socketmode.Event, *socketmode.Client) {
	g.log.Error().Msg("socket mode: Slack refused the app-level token (SLACK_APP_TOKEN, xapp-)")
}

func (g *Gateway) onIncomingError(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Warn()
	if c, ok := evt.Data.(*slack.IncomingEventError); ok {
		e = e.Err(c.ErrorObj)
	}
	e.Msg("socket mode read failed")
}

func (g *Gateway) onBadMessage(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Warn()
	if c, ok := evt.Data.(*socketmode.ErrorBadMessage); ok {
		e = e.Err(c.Cause)
	}
	// Unacknowledged: Slack redelivers it, and a slack-go upgrade may then understand it.
	e.Msg("socket mode message not understood")
}

func (g *Gateway) onWriteFailed(evt *socketmode.Event, _ *socketmode.Client) {
	e := g.log.Warn()
	if c, ok := evt.Data.(*socketmode.ErrorWriteFailed); ok {
		e = e.Err(c.Cause)
		if c.Response != nil {
			e = e.Str("envelopeId", c.Response.EnvelopeID)
		}
	}
	e.Msg("socket mode ack not written; Slack will redeliver")
}

// slackLogger routes slack-go's own log lines to zerolog at debug level.
type slackLogger struct{ l zerolog.Logger }

func (s slackLogger) Output(_ int, msg string) error {
	s.l.Debug().Str("component", "socketmode").Msg(strings.TrimSpace(msg))
	return nil
}
