package slackstream

// The rate budget of Slack's stream methods (issue 39). chat.startStream and chat.stopStream are
// Tier 2 ("20+ per minute"), chat.appendStream Tier 4 ("100+ per minute"), and "rate limits are
// applied per API method, per app, per workspace" (https://docs.slack.dev/reference/methods/
// chat.startStream, .../chat.appendStream, .../chat.stopStream, rate_limits;
// https://docs.slack.dev/apis/web-api/rate-limits). Every run of a workspace shares them, and a
// deployment runs several worker processes.
//
// Why a per-process budget and Slack's own 429s, not a budget shared by the workers:
//   - Temporal's server-side rate limits (a task queue's activities per second) count activities of
//     a whole task queue, not Slack calls per workspace: a model call makes tens of appends, and one
//     workspace's runs would throttle every other workspace's;
//   - a shared counter (a database, Redis) is a new moving part on every append's path, for a limit
//     only Slack knows exactly: its counter is the one all processes already share;
//   - so each process paces itself below the tier (it never exceeds it on its own), and a
//     `ratelimited` answer from Slack, which is what several processes together hitting the tier
//     look like, pauses that method for that workspace in this process for the Retry-After Slack
//     gave (slack-go's *slack.RateLimitedError). An activity that must make the call (a stop before
//     delivery) fails with NextRetryDelay = Retry-After, so Temporal retries it durably, holding no
//     worker slot; a call that may be skipped (an append of preview text, a card) is skipped or
//     deferred: the text stays pending and goes with a later append, or delivery puts it in.
//
// The cadence of appends also widens with the streams this process has open in a workspace
// (appendInterval): two concurrent replies at one append a second each would already spend 120 of
// Tier 4's 100 a minute.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"golang.org/x/time/rate"
)

// Per-process budgets, under the tiers over any sliding minute: a bucket allows its burst plus its
// rate a minute, so Tier 2's 20 a minute is 15 a minute with a burst of 5, Tier 4's 100 is 80 with a
// burst of 20.
var streamRates = map[string]struct {
	every time.Duration
	burst int
}{
	"chat.startStream":  {4 * time.Second, 5},
	"chat.stopStream":   {4 * time.Second, 5},
	"chat.appendStream": {750 * time.Millisecond, 20},
}

// streamBudgets is a process's budget of stream calls, by workspace. The zero value is ready.
type streamBudgets struct {
	mu    sync.Mutex
	teams map[string]*teamStreams
	now   func() time.Time // tests; time.Now by default
}

type teamStreams struct {
	limiters map[string]*rate.Limiter
	paused   map[string]time.Time // method → until (a 429's Retry-After)
	open     int                  // streams of this process in the workspace, open now
}

func (b *streamBudgets) clock() time.Time {
	if b.now != nil {
		return b.now()
	}
	return time.Now()
}

func (b *streamBudgets) team(team string) *teamStreams {
	if b.teams == nil {
		b.teams = map[string]*teamStreams{}
	}
	t := b.teams[team]
	if t == nil {
		t = &teamStreams{limiters: map[string]*rate.Limiter{}, paused: map[string]time.Time{}}
		b.teams[team] = t
	}
	return t
}

func (t *teamStreams) limiter(method string) *rate.Limiter {
	l := t.limiters[method]
	if l == nil {
		r := streamRates[method]
		l = rate.NewLimiter(rate.Every(r.every), r.burst)
		t.limiters[method] = l
	}
	return l
}

// try takes a call of method for team now if the budget has one (no wait).
func (b *streamBudgets) try(team, method string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.team(team)
	now := b.clock()
	if now.Before(t.paused[method]) {
		return false
	}
	return t.limiter(method).AllowN(now, 1)
}

// wait takes a call of method for team, waiting up to most for it; ok is false when the budget has
// none within most (the reservation is given back), or ctx ends first.
func (b *streamBudgets) wait(ctx context.Context, team, method string, most time.Duration) bool {
	b.mu.Lock()
	t := b.team(team)
	now := b.clock()
	delay := time.Duration(0)
	if until := t.paused[method]; now.Before(until) {
		delay = until.Sub(now)
	}
	if delay > most {
		b.mu.Unlock()
		return false
	}
	r := t.limiter(method).ReserveN(now.Add(delay), 1)
	if !r.OK() {
		b.mu.Unlock()
		return false
	}
	delay += r.DelayFrom(now.Add(delay))
	if delay > most {
		r.CancelAt(now)
		b.mu.Unlock()
		return false
	}
	b.mu.Unlock()
	if delay <= 0 {
		return true
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// limited notes a call's answer: a 429 pauses the method for the workspace for its Retry-After. It
// reports whether err was one, and how long Slack asked to wait.
func (b *streamBudgets) limited(team, method string, err error) (time.Duration, bool) {
	var rl *slack.RateLimitedError
	if !errors.As(err, &rl) {
		return 0, false
	}
	wait := max(rl.RetryAfter, time.Second)
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.team(team)
	if until := b.clock().Add(wait); until.After(t.paused[method]) {
		t.paused[method] = until
	}
	return wait, true
}

// opened and closed count the streams this process has open in a workspace (appendInterval).
func (b *streamBudgets) opened(team string) {
	b.mu.Lock()
	b.team(team).open++
	b.mu.Unlock()
}

func (b *streamBudgets) closed(team string) {
	b.mu.Lock()
	if t := b.team(team); t.open > 0 {
		t.open--
	}
	b.mu.Unlock()
}

// appendInterval is the least time between two appends of one stream: streamInterval alone, or the
// Tier-4 budget shared by the workspace's open streams of this process, whichever is longer.
func (b *streamBudgets) appendInterval(team string) time.Duration {
	return max(streamInterval, time.Duration(b.open(team))*streamRates["chat.appendStream"].every)
}

// open is how many streams this process has open in the workspace.
func (b *streamBudgets) open(team string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.team(team).open
}
