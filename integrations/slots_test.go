package integrations

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// N+1 calls of a service with N slots: never more than N at once, all of them done, and another
// team's calls of a service of the same name do not share them.
func TestSlotsBoundConcurrency(t *testing.T) {
	var s Slots
	const n = 3
	var in, most atomic.Int32
	var wg sync.WaitGroup
	for range n + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			release, err := s.Acquire(context.Background(), "T1", "linear", n)
			if err != nil {
				t.Error(err)
				return
			}
			defer release()
			cur := in.Add(1)
			for m := most.Load(); cur > m && !most.CompareAndSwap(m, cur); m = most.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			in.Add(-1)
		}()
	}
	wg.Wait()
	if most.Load() != n {
		t.Fatalf("at most %d at once, want %d", most.Load(), n)
	}
	// Full for T1; T2's service of the same name has its own slots, and a cancelled wait holds none.
	var held []func()
	for range n {
		r, _ := s.Acquire(context.Background(), "T1", "linear", n)
		held = append(held, r)
	}
	if r, err := s.Acquire(context.Background(), "T2", "linear", n); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Acquire(ctx, "T1", "linear", n); err == nil {
		t.Fatal("a full service gave a slot")
	}
	for _, r := range held {
		r()
		r() // twice is harmless
	}
	if r, err := s.Acquire(context.Background(), "T1", "linear", n); err != nil {
		t.Fatal(err)
	} else {
		r()
	}
}
