package integrations

import (
	"context"
	"sync"
)

// Slots bounds how many calls of one team's service run at once in this worker process: a
// service's maxConcurrent (the MCP server's or the OpenAPI service's record; 0 = no limit). It is
// per worker, not per cluster: two workers may each run a service's maxConcurrent calls. A service
// whose rate limit is tight also answers 429 with Retry-After, which the run waits out durably.
type Slots struct {
	mu    sync.Mutex
	slots map[slotKey]chan struct{}
}

type slotKey struct {
	team, service string
	n             int // a limit changed since gets slots of its own
}

// Acquire waits for one of the n slots of team's service, or for ctx to end (its error, nothing
// held). The release func gives the slot back; call it once. n <= 0 holds nothing.
func (s *Slots) Acquire(ctx context.Context, team, service string, n int) (release func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	k := slotKey{team, service, n}
	s.mu.Lock()
	if s.slots == nil {
		s.slots = map[slotKey]chan struct{}{}
	}
	ch, ok := s.slots[k]
	if !ok {
		ch = make(chan struct{}, n)
		s.slots[k] = ch
	}
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-ch }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
