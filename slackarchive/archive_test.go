package slackarchive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

// stores are the state stores the tests run against: a local folder and an S3 bucket in process.
// Each call of st is another process's view of the same storage (a gateway replica, a worker).
func stores(t *testing.T) []struct {
	name string
	st   func() workspace.Store
} {
	dir := t.TempDir()
	endpoint := s3test.Server(t)
	return []struct {
		name string
		st   func() workspace.Store
	}{
		{"local", func() workspace.Store { return workspace.NewLocalAt(dir) }},
		{"s3", func() workspace.Store { return s3test.Store(t, endpoint, "lucy.state") }},
	}
}

var now = time.Unix(1_800_000_000, 0)

func clock() time.Time { return now }

// ts is a Slack timestamp minutes before now.
func ts(minutesAgo int) string { return fmt.Sprintf("%d.000100", now.Unix()-int64(minutesAgo*60)) }

func everyone(string) bool { return true }

// stored reports whether the store holds the message ts of channel (in its hour's bucket).
func stored(t *testing.T, st workspace.Store, channel, ts string) bool {
	t.Helper()
	data, _, err := st.Read(context.Background(), "T1", bucketOf(channel, ts))
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	var b bucket
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatal(err)
	}
	_, ok := b.Messages[ts]
	return ok
}

// texts searches a fresh worker's archive (no cached index) and returns the texts found.
func texts(t *testing.T, st workspace.Store, q string, may func(string) bool) []string {
	t.Helper()
	got, _, err := New(st, 90*24*time.Hour, clock).Search(context.Background(), "T1", q, may, 20)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range got {
		out = append(out, m.Channel+":"+m.Text)
	}
	return out
}

func TestArchiveAppliesEventsInAnyOrder(t *testing.T) {
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gw1 := New(tc.st(), 90*24*time.Hour, clock) // two gateway replicas
			gw2 := New(tc.st(), 90*24*time.Hour, clock)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(gw1.Add(ctx, "T1", Message{Channel: "C1", TS: ts(30), User: "U1", Text: "The invoice number is 4711"}))
			must(gw1.Add(ctx, "T1", Message{Channel: "G1", TS: ts(29), User: "U2", Text: "secret invoice plans"}))
			if got := texts(t, tc.st(), "INVOICE", everyone); len(got) != 2 || got[0] != "G1:secret invoice plans" {
				t.Fatalf("newest first, case-insensitive: %q", got)
			}
			// The requester may read C1 only: G1's message is not returned.
			if got := texts(t, tc.st(), "invoice", func(ch string) bool { return ch == "C1" }); len(got) != 1 || got[0] != "C1:The invoice number is 4711" {
				t.Fatalf("filtered by access: %q", got)
			}

			// An edit on one replica, then the original redelivered to the other: the edit stays.
			must(gw2.Edit(ctx, "T1", Message{Channel: "C1", TS: ts(30), User: "U1", Text: "The order number is 4712", Edited: ts(10)}))
			must(gw1.Add(ctx, "T1", Message{Channel: "C1", TS: ts(30), User: "U1", Text: "The invoice number is 4711"}))
			// An older edit delivered late does not replace the newer one.
			must(gw1.Edit(ctx, "T1", Message{Channel: "C1", TS: ts(30), User: "U1", Text: "The stale number is 4700", Edited: ts(20)}))
			if got := texts(t, tc.st(), "4711", everyone); len(got) != 0 {
				t.Fatalf("the old text of an edited message was found: %q", got)
			}
			if got := texts(t, tc.st(), "stale", everyone); len(got) != 0 {
				t.Fatalf("an older edit replaced a newer one: %q", got)
			}
			if got := texts(t, tc.st(), "order 4712", everyone); len(got) != 1 {
				t.Fatalf("the edited message is not found by its new text: %q", got)
			}

			// A deletion, then late deliveries of the message and an edit: it stays deleted.
			must(gw2.Add(ctx, "T1", Message{Channel: "C1", TS: ts(5), User: "U3", Text: "password hint banana"}))
			must(gw1.Delete(ctx, "T1", "C1", ts(5)))
			must(gw2.Add(ctx, "T1", Message{Channel: "C1", TS: ts(5), User: "U3", Text: "password hint banana"}))
			must(gw2.Edit(ctx, "T1", Message{Channel: "C1", TS: ts(5), User: "U3", Text: "banana again", Edited: ts(1)}))
			if got := texts(t, tc.st(), "banana", everyone); len(got) != 0 {
				t.Fatalf("a deleted message was found: %q", got)
			}
			// A deletion seen before its message keeps it out too.
			must(gw1.Delete(ctx, "T1", "C1", ts(4)))
			must(gw2.Add(ctx, "T1", Message{Channel: "C1", TS: ts(4), User: "U3", Text: "kiwi"}))
			if got := texts(t, tc.st(), "kiwi", everyone); len(got) != 0 {
				t.Fatalf("a message deleted before it arrived was found: %q", got)
			}
		})
	}
}

func TestLeavingHidesAndPurgesAChannel(t *testing.T) {
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gw := New(tc.st(), 90*24*time.Hour, clock)
			worker := New(tc.st(), 90*24*time.Hour, clock)
			for _, m := range []Message{
				{Channel: "C1", TS: ts(50), Text: "roadmap draft"},
				{Channel: "C2", TS: ts(49), Text: "roadmap final"},
			} {
				if err := gw.Add(ctx, "T1", m); err != nil {
					t.Fatal(err)
				}
			}
			if got, _, _ := worker.Search(ctx, "T1", "roadmap", everyone, 10); len(got) != 2 {
				t.Fatalf("before leaving: %v", got)
			}
			if err := gw.Left(ctx, "T1", "C1", ts(40)); err != nil {
				t.Fatal(err)
			}
			// A late delivery of a message from before she left is hidden as well.
			if err := gw.Add(ctx, "T1", Message{Channel: "C1", TS: ts(45), Text: "roadmap late"}); err != nil {
				t.Fatal(err)
			}
			now = now.Add(RefreshInterval) // the worker's index refreshes
			defer func() { now = now.Add(-RefreshInterval) }()
			got, _, err := worker.Search(ctx, "T1", "roadmap", everyone, 10)
			if err != nil || len(got) != 1 || got[0].Channel != "C2" {
				t.Fatalf("after leaving C1: %v, %v", got, err)
			}
			if stored(t, tc.st(), "C1", ts(50)) || stored(t, tc.st(), "C1", ts(45)) {
				t.Fatal("the left channel's messages are still stored")
			}
			// Rejoined: what is said after she left is archived and found again.
			if err := gw.Add(ctx, "T1", Message{Channel: "C1", TS: ts(-1), Text: "roadmap v2"}); err != nil {
				t.Fatal(err)
			}
			if got := texts(t, tc.st(), "roadmap", everyone); len(got) != 2 || got[0] != "C1:roadmap v2" {
				t.Fatalf("after rejoining: %q", got)
			}
		})
	}
}

func TestRetention(t *testing.T) {
	ctx := context.Background()
	st := workspace.NewLocalAt(t.TempDir())
	a := New(st, 24*time.Hour, clock)
	if err := a.Add(ctx, "T1", Message{Channel: "C1", TS: ts(25 * 60), Text: "too old"}); err != nil {
		t.Fatal(err)
	}
	if stored(t, st, "C1", ts(25*60)) {
		t.Fatal("a message older than the retention was archived")
	}
	if err := a.Add(ctx, "T1", Message{Channel: "C1", TS: ts(23 * 60), Text: "almost old"}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := a.Search(ctx, "T1", "old", everyone, 10); len(got) != 1 {
		t.Fatalf("within retention: %v", got)
	}
	later := New(st, 24*time.Hour, func() time.Time { return now.Add(2 * time.Hour) })
	if got, _, _ := later.Search(ctx, "T1", "old", everyone, 10); len(got) != 0 {
		t.Fatalf("an expired message was found: %v", got)
	}
	// Its hour's bucket goes once every message it may hold has expired.
	if !stored(t, st, "C1", ts(23*60)) {
		t.Fatal("a bucket was deleted before its whole hour expired")
	}
	if _, _, err := New(st, 24*time.Hour, func() time.Time { return now.Add(3 * time.Hour) }).Search(ctx, "T1", "old", everyone, 10); err != nil {
		t.Fatal(err)
	}
	if stored(t, st, "C1", ts(23*60)) {
		t.Fatal("an expired message was not deleted")
	}
}

func TestPathsAreOnlySlackIDs(t *testing.T) {
	ctx := context.Background()
	st := workspace.NewLocalAt(t.TempDir())
	a := New(st, 24*time.Hour, clock)
	for _, m := range []Message{{Channel: "../x", TS: ts(1)}, {Channel: "C1", TS: "../../1.2"}, {Channel: "c1", TS: ts(1)}} {
		if err := a.Add(ctx, "T1", m); err != nil {
			t.Fatal(err)
		}
	}
	if infos, _ := st.List(ctx, "T1", "."); len(infos) != 0 {
		t.Fatalf("objects written from invalid IDs: %v", infos)
	}
}

// Two gateway replicas adding messages of one channel and hour at once lose none of them: each
// change of the bucket is a conditional write, retried on a conflict.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			replicas := []*Archive{New(tc.st(), 90*24*time.Hour, clock), New(tc.st(), 90*24*time.Hour, clock)}
			base := now.Truncate(time.Hour).Add(-time.Hour).Unix()
			const n = 16
			errs := make(chan error, n)
			for i := range n {
				go func() {
					errs <- replicas[i%2].Add(ctx, "T1", Message{Channel: "C1", TS: fmt.Sprintf("%d.%06d", base+int64(i), i), Text: fmt.Sprintf("note %d", i)})
				}()
			}
			for range n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			if got := texts(t, tc.st(), "note", everyone); len(got) != n {
				t.Fatalf("%d of %d messages kept: %q", len(got), n, got)
			}
		})
	}
}
