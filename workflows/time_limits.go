package workflows

import (
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/lucy-agent/lucy/workflows/agent"
)

// clock is the run's time: when it started, the soft limit and the safety net, and the time spent
// waiting for a person, which the limits do not count.
type clock struct {
	start     time.Time
	paused    time.Duration // waited for a person so far
	pausedAt  time.Time     // when the current wait began (zero while none)
	softFired bool          // the soft limit passed: one last turn to summarize
	timedOut  bool          // the safety net stopped the loop
}

// startLimits arms the soft limit (one final summary turn) and the absolute safety net as timers.
// Time spent waiting for a person (approvals, resume) does not count: a paused run is not a runaway.
func (r *run) startLimits(ctx workflow.Context, stopLoop workflow.CancelFunc) {
	soft, hard := r.in.SoftLimit, r.in.AbsoluteMax
	if soft <= 0 {
		soft = agent.SoftLimit
	}
	if hard <= 0 {
		hard = agent.AbsoluteMax
	}
	r.limitTimer(ctx, soft, func() {
		r.softFired = true
		r.log.Info("agent.exhaustion.soft_limit", "run", r.id, "turn", r.turn)
	})
	r.limitTimer(ctx, hard, func() {
		r.timedOut = true
		r.log.Warn("agent.exhaustion.absolute", "run", r.id, "turn", r.turn)
		stopLoop()
	})
}

func (r *run) limitTimer(ctx workflow.Context, limit time.Duration, fire func()) {
	workflow.Go(ctx, func(gctx workflow.Context) {
		for {
			d := r.start.Add(limit + r.paused).Sub(workflow.Now(gctx))
			if d <= 0 && r.pausedAt.IsZero() {
				fire()
				return
			}
			if d <= 0 && r.hardened {
				// Paused: a run waiting for a person is not a runaway. Wait for the pause to end
				// (no timer: a day-long wait would otherwise wake the workflow every minute), then
				// compute the deadline again with the paused time added.
				if workflow.Await(gctx, func() bool { return r.pausedAt.IsZero() }) != nil {
					return
				}
				continue
			}
			if d <= 0 { // paused right now: look again later (runs that predate changeRunHardening)
				d = time.Minute
			}
			if workflow.Sleep(gctx, d) != nil {
				return
			}
		}
	})
}

// pause and resume bracket waits for a person.
func (c *clock) pause(ctx workflow.Context) { c.pausedAt = workflow.Now(ctx) }

func (c *clock) unpause(ctx workflow.Context) {
	if !c.pausedAt.IsZero() {
		c.paused += workflow.Now(ctx).Sub(c.pausedAt)
		c.pausedAt = time.Time{}
	}
}
