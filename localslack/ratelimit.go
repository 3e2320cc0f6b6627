package localslack

import (
	"math"
	"net/http"
	"time"
)

// Slack's rate tiers for the methods whose limits Lucy has to live with: "Rate limits are applied per
// API method, per app, per workspace"; a call over the limit answers HTTP 429 with a Retry-After
// header (seconds) and {"ok":false,"error":"ratelimited"}
// (https://docs.slack.dev/apis/web-api/rate-limits). One Server is one workspace with one app, so a
// window per method is per app per workspace: every worker of a deployment shares it, as on Slack.
//
// The tiers say "20+ per minute" (Tier 2) and "100+ per minute" (Tier 4), with bursts tolerated;
// the server takes the floor over a sliding minute, the strictest reading, so that a client that
// passes here passes on Slack.
var slackTiers = map[string]int{
	// ref:chat.startStream and ref:chat.stopStream: rate_limits t2.
	"chat.startStream": 20,
	"chat.stopStream":  20,
	// ref:chat.appendStream: rate_limits t4.
	"chat.appendStream": 100,
}

// rateLimitedLocked counts a call of method in its window and answers a 429 when it is over the
// method's limit. Callers hold s.mu.
func (s *Server) rateLimitedLocked(method string) (Failure, bool) {
	if s.opts.NoRateLimits {
		return Failure{}, false
	}
	limit, ok := slackTiers[method]
	if o, set := s.opts.RateLimits[method]; set {
		limit, ok = o, true
	}
	if !ok || limit <= 0 {
		return Failure{}, false
	}
	if s.rates == nil {
		s.rates = map[string][]time.Time{}
	}
	now := s.now()
	window := s.rates[method]
	for len(window) > 0 && now.Sub(window[0]) >= time.Minute {
		window = window[1:]
	}
	if len(window) >= limit {
		s.rates[method] = window
		wait := time.Minute - now.Sub(window[0])
		return Failure{Status: http.StatusTooManyRequests, RetryAfter: max(1, int(math.Ceil(wait.Seconds()))), SlackError: "ratelimited"}, true
	}
	s.rates[method] = append(window, now)
	return Failure{}, false
}
