package slackarchive

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/workspace"
)

// BenchmarkSearch measures one search over 10,000 archived messages in a local state store: the
// worker's index warm (the common case, within RefreshInterval), after a refresh that lists the
// store and finds nothing new, and cold (a worker's first search reads every message).
func BenchmarkSearch(b *testing.B) {
	ctx := context.Background()
	st := workspace.NewLocalAt(b.TempDir())
	a := New(st, 90*24*time.Hour, clock)
	for i := range 10_000 {
		m := Message{Channel: fmt.Sprintf("C%d", i%20), TS: fmt.Sprintf("%d.%06d", now.Unix()-int64(i*60), i), User: "U1",
			Text: fmt.Sprintf("message %d about the quarterly budget and item %d", i, i*7)}
		if err := a.Add(ctx, "T1", m); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := a.Search(ctx, "T1", "budget", everyone, 20); err != nil {
		b.Fatal(err)
	}
	b.Run("warm", func(b *testing.B) {
		for b.Loop() {
			if _, total, err := a.Search(ctx, "T1", "budget item 7000", everyone, 20); err != nil || total == 0 {
				b.Fatal(total, err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			if _, total, err := New(st, 90*24*time.Hour, clock).Search(ctx, "T1", "budget item 7000", everyone, 20); err != nil || total == 0 {
				b.Fatal(total, err)
			}
		}
	})
	b.Run("refresh", func(b *testing.B) {
		for b.Loop() {
			a.team("T1").synced = time.Time{}
			if _, total, err := a.Search(ctx, "T1", "budget item 7000", everyone, 20); err != nil || total == 0 {
				b.Fatal(total, err)
			}
		}
	})
}
