package gateway

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// floodGuard limits how many messages one person hands to Lucy per minute: each would start or
// feed a run and its model calls, so a script posting as someone (or a stuck integration) must not
// be able to spend the workspace's budget. It is per gateway replica: with n replicas behind a load
// balancer a person gets up to n times the limit, which still bounds a flood. Memory is bounded by
// forgetting people idle for floodForget.
type floodGuard struct {
	perMinute int
	mu        sync.Mutex
	people    map[string]*floodBucket
	swept     time.Time
}

type floodBucket struct {
	lim    *rate.Limiter
	seen   time.Time
	lastTS string    // the message last let through: its app_mention/message twin is not charged again
	logged time.Time // the last "flooding" log line, so a flood does not flood the log too
}

// floodForget is how long a person's bucket is kept after their last message: longer than a full
// refill, so forgetting never grants more than the limit.
const floodForget = 2 * time.Minute

func newFloodGuard(perMinute int) *floodGuard {
	return &floodGuard{perMinute: perMinute, people: map[string]*floodBucket{}}
}

// allow reports whether the message (channel+ts) from person may go on, and whether this drop
// should be logged (once per person per minute).
func (f *floodGuard) allow(person, message string, now time.Time) (ok, log bool) {
	if f == nil || f.perMinute <= 0 {
		return true, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if now.Sub(f.swept) > floodForget {
		for k, b := range f.people {
			if now.Sub(b.seen) > floodForget {
				delete(f.people, k)
			}
		}
		f.swept = now
	}
	b := f.people[person]
	if b == nil {
		b = &floodBucket{lim: rate.NewLimiter(rate.Every(time.Minute/time.Duration(f.perMinute)), f.perMinute)}
		f.people[person] = b
	}
	b.seen = now
	if message == b.lastTS {
		return true, false
	}
	if b.lim.AllowN(now, 1) {
		b.lastTS = message
		return true, false
	}
	if now.Sub(b.logged) >= time.Minute {
		b.logged = now
		return false, true
	}
	return false, false
}
