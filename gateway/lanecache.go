package gateway

import (
	"sync"
	"time"

	"github.com/lucy-agent/lucy/workflows"
)

// laneCache remembers which threads have a lane, so that a reply in a busy channel's thread does not
// cost a DescribeWorkflowExecution every time: most replies are in threads Lucy is not part of, and
// each would otherwise be one more call on the Temporal frontend per Slack message.
//
// A lane that exists keeps existing (a closed one is restarted by the next message), so a "yes" is
// kept for laneYesTTL. A "no" turns into a "yes" the moment someone mentions Lucy in the thread;
// this gateway learns that at once (remember), but another replica keeps its "no" for up to
// laneNoTTL, the longest a reply without a mention can be missed right after the first mention when
// several replicas share the events.
type laneCache struct {
	mu      sync.Mutex
	entries map[workflows.LaneKey]laneEntry
}

type laneEntry struct {
	exists bool
	until  time.Time
}

const (
	laneYesTTL = 10 * time.Minute
	laneNoTTL  = 5 * time.Second
	// laneCacheMax bounds the entries (about 100 bytes each); past it, expired ones are swept, and
	// if none are, everything is forgotten (only costs a few lookups).
	laneCacheMax = 50000
)

func newLaneCache() *laneCache { return &laneCache{entries: map[workflows.LaneKey]laneEntry{}} }

// get returns what is known of key's lane at now (ok false: ask Temporal).
func (c *laneCache) get(key workflows.LaneKey, now time.Time) (exists, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, found := c.entries[key]
	if !found || now.After(e.until) {
		return false, false
	}
	return e.exists, true
}

// remember records what Temporal said (or that this gateway just handed the lane a message).
func (c *laneCache) remember(key workflows.LaneKey, exists bool, now time.Time) {
	ttl := laneNoTTL
	if exists {
		ttl = laneYesTTL
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= laneCacheMax {
		for k, e := range c.entries {
			if now.After(e.until) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= laneCacheMax {
			clear(c.entries)
		}
	}
	c.entries[key] = laneEntry{exists: exists, until: now.Add(ttl)}
}
