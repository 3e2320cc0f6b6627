package audit

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

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

// Several workers record into one team's hour at once (two Logs over the store, as two workers
// are): every entry is kept, each once, even when one is recorded twice (a retried activity).
func TestConcurrentRecordsLoseNothing(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)
	for _, tc := range stores(t) {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			workers := []*Log{New(tc.st(), nil), New(tc.st(), nil)}
			const n = 16
			errs := make(chan error, 2*n)
			for i := range n {
				e := Entry{ID: fmt.Sprintf("run/%d", i), Time: at.Add(time.Duration(i) * time.Second), Team: "T1", Kind: KindPost,
					Summary: "post", Outcome: "ok"}
				go func() { errs <- workers[i%2].Record(ctx, e) }()
				go func() { errs <- workers[(i+1)%2].Record(ctx, e) }() // the same entry again, from the other
			}
			for range 2 * n {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			got, err := New(tc.st(), nil).List(ctx, "T1", at.Add(-time.Hour), at.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != n {
				t.Fatalf("%d entries kept, want %d", len(got), n)
			}
			for i, e := range got {
				if e.ID != fmt.Sprintf("run/%d", i) {
					t.Errorf("entry %d is %s: not in time order", i, e.ID)
				}
			}
		})
	}
}

// List reads the hours of the period and keeps the entries within it; an hour outside it is not
// read, a team's record is its own, and a team without one lists nothing.
func TestListPeriod(t *testing.T) {
	ctx := context.Background()
	l := New(workspace.NewLocalAt(t.TempDir()), nil)
	day := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i, h := range []int{1, 5, 5, 30} {
		team := "T1"
		if i == 2 {
			team = "T2"
		}
		if err := l.Record(ctx, Entry{ID: fmt.Sprint(i), Time: day.Add(time.Duration(h)*time.Hour + 10*time.Minute), Team: team, Kind: KindFile, Summary: "f", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.List(ctx, "T1", day.Add(5*time.Hour), day.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != "1" {
		t.Errorf("listed %+v, want only entry 1", got)
	}
	if got, err := l.List(ctx, "T3", day, day.Add(48*time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("a team without a record: %v %v", got, err)
	}
	if err := l.Record(ctx, Entry{ID: "x", Team: "../T1", Kind: KindFile}); err == nil {
		t.Error("an invalid team ID was accepted")
	}
}

func TestKindOf(t *testing.T) {
	for name, want := range map[string]string{
		"lucy_send_email": KindEmail, "lucy_post_message": KindPost, "lucy_write_file": KindFile,
		"lucy_connect_service": KindConnect, "mcp__github__create_issue": KindIntegration,
		"lucy_custom_petstore_addPet": KindIntegration, "lucy_run_script": KindOther, "lucy_create_cron": KindSchedule,
	} {
		if got := KindOf(name); got != want {
			t.Errorf("KindOf(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestThreadOf(t *testing.T) {
	if got := ThreadOf("lane:T1:C1:1764300000.000100:run:2:1764300100.000100"); got != "1764300000.000100" {
		t.Errorf("ThreadOf = %q", got)
	}
	if got := ThreadOf("cron:T1:daily"); got != "" {
		t.Errorf("ThreadOf(a job) = %q", got)
	}
}
