package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/lucy-agent/lucy/ops"
)

const (
	// maxBodyBytes caps what is read from Slack before the signature is checked. Events and
	// interactivity payloads are a few KiB; a message with many blocks stays far below this.
	maxBodyBytes = 4 << 20
	// ackBudget bounds one hand-off. Slack counts an answer slower than 3 s as a failure and retries
	// anyway, so waiting longer only holds a connection open; a hand-off cut short that did reach
	// Temporal is deduplicated by the lane when the retry arrives.
	ackBudget = 2500 * time.Millisecond
)

// HTTPHandler serves the HTTP Events API and the operational endpoints:
//
//	POST /slack/events         Events API (url_verification, event_callback)
//	POST /slack/interactivity  interactivity payloads (approval buttons)
//	GET  /healthz              200 while the process is up
//	GET  /readyz               200 when Temporal answers, 503 otherwise
//	GET  /metrics              Prometheus text format
//	GET  /mcp/oauth/callback   the browser's return from an MCP server's sign-in (with OAuthCallback)
//	GET  /mcp/oauth/start      a Sign in button's link, sent on to the provider (with OAuthCallback)
//
// Every Slack request is verified with the signing secret on its raw body before anything in it is
// parsed. An event is answered 200 only after it was handed to its lane; a failed hand-off is
// answered 500, so that Slack retries it.
func (g *Gateway) HTTPHandler(signingSecret string) http.Handler {
	if signingSecret == "" {
		g.log.Error().Msg("SLACK_SIGNING_SECRET is not set: every Slack request will be refused")
	}
	mux := http.NewServeMux()
	g.registerOps(mux)
	mux.Handle("POST /slack/events", g.verified(signingSecret, "events", g.serveEvents))
	mux.Handle("POST /slack/interactivity", g.verified(signingSecret, "interactivity", g.serveInteractivity))
	return mux
}

// OpsHandler serves /healthz, /readyz and /metrics, for Socket Mode deployments, which need no
// public Slack endpoint, and the sign-in callback of MCP servers, for those that have a public URL
// all the same (LUCY_PUBLIC_URL).
func (g *Gateway) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	g.registerOps(mux)
	return mux
}

func (g *Gateway) registerOps(mux *http.ServeMux) {
	ops.Register(mux, g.readiness, g.metrics, g.log)
	if g.oauth != nil {
		// Not behind Slack's signature: the provider sends the person's browser here. What makes
		// a request count is its state, single use and unguessable, which the handler checks.
		mux.Handle("GET "+OAuthCallbackPath, g.oauth)
		// The Sign in button's link: the handler sends the browser on to the provider once the
		// click of the person the link was made for reached the gateway (docs/security.md rule 16).
		mux.Handle("GET "+OAuthStartPath, g.oauth)
	}
}

// OAuthCallbackPath is where the browser comes back from an MCP server's sign-in (the
// integrations/mcp/oauth package's CallbackPath, which the worker puts in the redirect URI).
const OAuthCallbackPath = "/mcp/oauth/callback"

// OAuthStartPath is the link of a Sign in button (integrations/mcp/oauth's StartPath).
const OAuthStartPath = "/mcp/oauth/start"

// readiness is ready when Temporal answers and, in `lucy dev`, the worker beside the gateway polls.
func (g *Gateway) readiness(ctx context.Context) error {
	if err := g.h.Ready(ctx); err != nil {
		return fmt.Errorf("temporal unreachable: %w", err)
	}
	if g.ready != nil {
		return g.ready(ctx)
	}
	return nil
}

// verified checks Slack's signature and timestamp on the raw body (capped) before next sees
// anything. The headers come first: a request without a well-formed X-Slack-Signature ("v0=" and
// 64 hex digits) and a fresh X-Slack-Request-Timestamp is refused before a byte of its body is read,
// so that an unsigned sender cannot make the gateway buffer up to maxBodyBytes for nothing.
func (g *Gateway) verified(secret, endpoint string, next func(http.ResponseWriter, *http.Request, []byte)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refuse := func(err error) {
			g.metrics.GatewayEvent(endpoint, outcomeUnauthorized)
			g.log.Warn().Err(err).Str("endpoint", endpoint).Str("remote", r.RemoteAddr).Msg("slack request refused")
			// Do not keep the connection: the unread body would otherwise be drained first.
			w.Header().Set("Connection", "close")
			http.Error(w, "invalid signature", http.StatusUnauthorized)
		}
		// Headers only: presence, form of the signature, timestamp parsed and within 5 minutes.
		sv, err := slack.NewSecretsVerifier(r.Header, secret)
		if errors.Is(err, slack.ErrInvalidConfiguration) {
			// Our mistake, not the caller's: 500 makes Slack retry once the secret is configured.
			http.Error(w, "signing secret not configured", http.StatusInternalServerError)
			return
		}
		if err != nil {
			refuse(err)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read request body", http.StatusBadRequest)
			return
		}
		_, _ = sv.Write(body)
		if err := sv.Ensure(); err != nil {
			refuse(err)
			return
		}
		next(w, r, body)
	})
}

func (g *Gateway) serveEvents(w http.ResponseWriter, r *http.Request, body []byte) {
	var outer struct {
		Type      string `json:"type"`
		Challenge string `json:"challenge"`
	}
	if err := json.Unmarshal(body, &outer); err != nil {
		g.metrics.GatewayEvent("unknown", outcomeMalformed)
		http.Error(w, "malformed event", http.StatusBadRequest)
		return
	}
	switch outer.Type {
	case slackevents.URLVerification:
		g.metrics.GatewayEvent(outer.Type, "challenge")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, outer.Challenge)
		return
	case slackevents.CallbackEvent:
	default:
		// app_rate_limited and anything new: nothing to hand off, nothing to retry.
		g.metrics.GatewayEvent(outer.Type, outcomeIgnored)
		g.log.Warn().Str("type", outer.Type).Msg("events API envelope ignored")
		w.WriteHeader(http.StatusOK)
		return
	}

	ev, err := slackevents.ParseEvent(json.RawMessage(body), slackevents.OptionNoVerifyToken())
	cb, ok := ev.Data.(*slackevents.EventsAPICallbackEvent)
	if err != nil || !ok {
		// An inner event type slack-go does not know, or one that does not decode: a retry would
		// not decode either.
		g.metrics.GatewayEvent("unknown", outcomeMalformed)
		g.log.Warn().Err(err).Msg("event callback ignored: cannot decode inner event")
		w.WriteHeader(http.StatusOK)
		return
	}
	log := g.log.With().Str("eventId", cb.EventID).Str("type", ev.InnerEvent.Type).Logger()
	if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
		log.Info().Str("retryNum", n).Str("retryReason", r.Header.Get("X-Slack-Retry-Reason")).Msg("slack retry received")
	}
	ctx, cancel := context.WithTimeout(r.Context(), ackBudget)
	defer cancel()
	if err := g.HandleEvent(ctx, cb.EventID, ev.TeamID, ev.InnerEvent); err != nil {
		log.Error().Err(err).Msg("hand-off failed; answering 500 so that Slack retries")
		http.Error(w, "hand-off failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (g *Gateway) serveInteractivity(w http.ResponseWriter, r *http.Request, body []byte) {
	form, err := url.ParseQuery(string(body))
	var cb slack.InteractionCallback
	if err == nil {
		err = json.Unmarshal([]byte(form.Get("payload")), &cb)
	}
	if err != nil {
		g.metrics.GatewayEvent("interactivity", outcomeMalformed)
		g.log.Warn().Err(err).Msg("interactivity payload refused: cannot decode")
		http.Error(w, "malformed payload", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), ackBudget)
	defer cancel()
	if cb.Type == slack.InteractionTypeViewSubmission {
		resp, err := g.HandleViewSubmission(ctx, cb)
		if err != nil {
			g.log.Error().Err(err).Msg("form submission failed; answering 500")
			http.Error(w, "submission failed", http.StatusInternalServerError)
			return
		}
		if resp != nil {
			// The form's errors (response_action "errors"): Slack shows them in the open form.
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_ = json.NewEncoder(w).Encode(resp)
			return
		}
		w.WriteHeader(http.StatusOK) // an empty 200 closes the form
		return
	}
	if err := g.HandleInteraction(ctx, cb); err != nil {
		// Slack does not retry interactions; the 500 shows the person that the click failed, and
		// they can click again.
		g.log.Error().Err(err).Msg("interaction hand-off failed; answering 500")
		http.Error(w, "hand-off failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusOK)
}
