package activities

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// waiters is how many calls wait for model's slots.
func (s *modelSlots) waiters(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	if f := s.models[model]; f != nil {
		for _, keys := range f.waiting {
			for _, q := range keys {
				n += len(q)
			}
		}
	}
	return n
}

// The calls waiting for a model's slot are served as Temporal serves a task queue: the lowest
// priority key first, then the workspaces (fairness keys) in turn, first come within one. A flood
// of one workspace's calls, already on this worker, does not hold another's behind all of it.
func TestModelSlotsServeWorkspacesInTurn(t *testing.T) {
	var s modelSlots
	hold, err := s.acquireAs(context.Background(), "m", 1, 3, "A")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	wait := func(priority int, key, name string) {
		before := s.waiters("m")
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := s.acquireAs(context.Background(), "m", 1, priority, key)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			release()
		}()
		for s.waiters("m") == before { // queued before the next one comes
			time.Sleep(time.Millisecond)
		}
	}
	for _, n := range []string{"a1", "a2", "a3", "a4"} {
		wait(3, "A", n) // workspace A's flood, first
	}
	wait(3, "B", "b1")
	wait(3, "B", "b2")
	wait(1, "A", "a-person") // a person's message, last to come
	// A call whose run is cancelled while it waits gives up, and takes no turn.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := s.acquireAs(ctx, "m", 1, 3, "C"); errc <- err }()
	for s.waiters("m") < 8 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled waiter: %v", err)
	}
	hold()
	wg.Wait()
	want := "a-person a1 b1 a2 b2 a3 a4"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("served %s, want %s", got, want)
	}
	if w := s.waiters("m"); w != 0 {
		t.Errorf("%d still waiting", w)
	}
	// And the slot is free again.
	r, err := s.acquireAs(context.Background(), "m", 1, 3, "B")
	if err != nil {
		t.Fatal(err)
	}
	r()
}
