package activities

import (
	"context"
	"slices"
	"sync"

	"go.temporal.io/sdk/activity"
)

// modelSlots bounds the calls this worker makes at once to each model (LUCY_MODEL_CONCURRENCY).
// A call waits for a slot while its activity heartbeats, so a cancelled run stops waiting at once
// and a long wait never times the attempt out before its StartToClose timeout.
//
// The calls that wait are served as Temporal's task queue serves tasks (docs/operating.md, "Fairness
// across teams"): the lowest priority key first (a person's message before a scheduled job), and
// among equal priorities the fairness keys (workspaces) in turn, first come within one key. A plain
// channel would serve them first come: the activities of a workspace's flood, already past the task
// queue and on this worker, would then hold another workspace's call behind all of theirs. The keys
// are the activity's own (activity.GetInfo: inherited from its run, workflows/priority.go).
type modelSlots struct {
	mu     sync.Mutex
	models map[string]*fairSlots
}

// fairSlots is one model's slots: how many are in use, and the calls that wait, by priority key,
// then fairness key.
type fairSlots struct {
	n, used int
	// waiting[priority][key] are the waiting calls of key at priority, first come first.
	waiting map[int]map[string][]chan struct{}
	// turn[priority] is the order the keys at priority take turns in: the key served last goes to
	// the back.
	turn map[int][]string
}

func (s *modelSlots) acquire(ctx context.Context, model string, n int) (release func(), err error) {
	if n <= 0 {
		return func() {}, nil
	}
	priority, key := 0, ""
	if activity.IsActivity(ctx) {
		p := activity.GetInfo(ctx).Priority
		priority, key = p.PriorityKey, p.FairnessKey
	}
	return s.acquireAs(ctx, model, n, priority, key)
}

// acquireAs is acquire for a call of priority and fairness key.
func (s *modelSlots) acquireAs(ctx context.Context, model string, n, priority int, key string) (release func(), err error) {
	if priority == 0 {
		priority = 3 // Temporal's default: the middle of five levels
	}
	s.mu.Lock()
	if s.models == nil {
		s.models = map[string]*fairSlots{}
	}
	f := s.models[model]
	if f == nil {
		f = &fairSlots{waiting: map[int]map[string][]chan struct{}{}, turn: map[int][]string{}}
		s.models[model] = f
	}
	f.n = n
	rel := func() { s.release(f) }
	if f.used < f.n && len(f.turn) == 0 {
		f.used++
		s.mu.Unlock()
		return rel, nil
	}
	ch := make(chan struct{})
	if f.waiting[priority] == nil {
		f.waiting[priority] = map[string][]chan struct{}{}
	}
	if len(f.waiting[priority][key]) == 0 {
		f.turn[priority] = append(f.turn[priority], key)
	}
	f.waiting[priority][key] = append(f.waiting[priority][key], ch)
	s.mu.Unlock()
	select {
	case <-ch:
		return rel, nil
	case <-ctx.Done():
		s.mu.Lock()
		q := f.waiting[priority][key]
		if i := slices.Index(q, ch); i >= 0 {
			f.drop(priority, key, i)
			s.mu.Unlock()
			return nil, ctx.Err()
		}
		s.mu.Unlock()
		// Granted as the context ended: the slot is this call's, and goes on to the next.
		s.release(f)
		return nil, ctx.Err()
	}
}

// drop removes the i-th waiting call of key at priority.
func (f *fairSlots) drop(priority int, key string, i int) {
	q := slices.Delete(f.waiting[priority][key], i, i+1)
	if len(q) > 0 {
		f.waiting[priority][key] = q
		return
	}
	delete(f.waiting[priority], key)
	f.turn[priority] = slices.DeleteFunc(f.turn[priority], func(k string) bool { return k == key })
	if len(f.turn[priority]) == 0 {
		delete(f.turn, priority)
		delete(f.waiting, priority)
	}
}

// release hands the slot to the next waiting call (lowest priority key, then the key whose turn
// it is), or frees it.
func (s *modelSlots) release(f *fairSlots) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(f.turn) == 0 || f.used > f.n { // nobody waits, or the bound was lowered meanwhile
		f.used--
		return
	}
	priority := -1
	for p := range f.turn {
		if priority < 0 || p < priority {
			priority = p
		}
	}
	key := f.turn[priority][0]
	q := f.waiting[priority][key]
	ch := q[0]
	if len(q) > 1 {
		// Its next call waits for its next turn, behind the other keys'.
		f.waiting[priority][key] = q[1:]
		f.turn[priority] = append(slices.Clone(f.turn[priority][1:]), key)
	} else {
		f.drop(priority, key, 0)
	}
	close(ch)
}
