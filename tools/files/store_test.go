package files

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

// Parallel edits on one worker all land, whichever the store.
func TestConcurrentEditsOnEachStore(t *testing.T) {
	for _, tc := range tooltest.WorkspaceStores(t) {
		t.Run(tc.Name, func(t *testing.T) {
			r := newTestFiles(t, tc.Store())
			var content strings.Builder
			for i := range 10 {
				fmt.Fprintf(&content, "item %02d: todo\n", i)
			}
			mustRun(t, r, tools.WriteFile, fmt.Sprintf(`{"path": "list.txt", "content": %q}`, content.String()))
			var wg sync.WaitGroup
			for i := range 10 {
				wg.Go(func() {
					wantOK(t, mustRun(t, r, tools.EditFile, fmt.Sprintf(`{"path": "list.txt", "old": "item %02d: todo", "new": "item %02d: done"}`, i, i)))
				})
			}
			wg.Wait()
			if got := mustRun(t, r, tools.ReadFile, `{"path": "list.txt"}`).Content; strings.Contains(got, "todo") {
				t.Errorf("parallel edits lost an update:\n%s", got)
			}
		})
	}
}

// Two workers (two registries, each with its own in-process lock and its own client) on one bucket:
// what one writes the other reads, and of two approved overwrites of the same version racing each
// other exactly one lands; the other asks for approval again, showing the file as it now is.
func TestTwoWorkersShareOneBucket(t *testing.T) {
	endpoint := s3test.Server(t)
	w1 := newTestFiles(t, s3test.Store(t, endpoint, "prod"))
	w2 := newTestFiles(t, s3test.Store(t, endpoint, "prod"))

	wantOK(t, mustRun(t, w1, tools.WriteFile, `{"path": "plan.md", "content": "v1"}`), "created it")
	if got := mustRun(t, w2, tools.ReadFile, `{"path": "plan.md"}`).Content; got != "v1" {
		t.Fatalf("worker 2 reads %q, want what worker 1 wrote", got)
	}
	wantOK(t, mustRun(t, w2, tools.EditFile, `{"path": "plan.md", "old": "v1", "new": "v2"}`))
	if got := mustRun(t, w1, tools.ReadFile, `{"path": "plan.md"}`).Content; got != "v2" {
		t.Fatalf("worker 1 reads %q after worker 2's edit", got)
	}
	wantOK(t, mustRun(t, w2, tools.ListFiles, `{}`), "plan.md")

	// Both runs were approved to replace "v2" (the same Guard); they write at the same time.
	held := wantHeld(t, mustRun(t, w1, tools.WriteFile, `{"path": "plan.md", "content": "from w1"}`))
	for round := range 10 {
		seed := fmt.Sprintf("base %d", round)
		base := runAs(t, w1, tools.WriteFile, jsonArgs(t, map[string]string{"path": "plan.md", "content": seed}), true, "")
		wantOK(t, base)
		held = wantHeld(t, mustRun(t, w1, tools.WriteFile, `{"path": "plan.md", "content": "x"}`))
		outs := make([]tools.Output, 2)
		var wg sync.WaitGroup
		for i, w := range []*tools.Runner{w1, w2} {
			wg.Go(func() {
				outs[i] = runAs(t, w, tools.WriteFile, jsonArgs(t, map[string]string{"path": "plan.md", "content": fmt.Sprintf("from w%d", i+1)}), true, held.Guard)
			})
		}
		wg.Wait()
		won := 0
		for _, o := range outs {
			switch {
			case o.NeedsApproval != nil:
				wantContains(t, o.Content, "changed after the person approved")
			case !o.IsError && strings.Contains(o.Content, "as approved"):
				won++
			default:
				t.Errorf("round %d: unexpected result %+v", round, o)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d approved overwrites landed, want exactly 1: %+v", round, won, outs)
		}
		got := mustRun(t, w2, tools.ReadFile, `{"path": "plan.md"}`).Content
		if got != "from w1" && got != "from w2" {
			t.Fatalf("round %d: the file holds %q", round, got)
		}
	}
}

// Another worker that changes the file between this one's check and its write is not overwritten:
// the write is conditional on what the check saw.
func TestWriteIsConditionalOnWhatWasChecked(t *testing.T) {
	ctx := context.Background()
	for _, tc := range tooltest.WorkspaceStores(t) {
		t.Run(tc.Name, func(t *testing.T) {
			st := tc.Store()
			if _, err := st.Write(ctx, testTeam, "f.txt", []byte("old"), workspace.Cond{}); err != nil {
				t.Fatal(err)
			}
			racer := &racingStore{Store: st, before: func() {
				if _, err := st.Write(ctx, testTeam, "f.txt", []byte("theirs"), workspace.Cond{}); err != nil {
					t.Error(err)
				}
			}}
			r := newTestFiles(t, racer)
			held := wantHeld(t, mustRun(t, r, tools.WriteFile, `{"path": "f.txt", "content": "mine"}`))
			racer.armed = true
			out := runAs(t, r, tools.WriteFile, `{"path": "f.txt", "content": "mine"}`, true, held.Guard)
			wantHeld(t, out, "changed after the person approved")
			if data, _, _ := st.Read(ctx, testTeam, "f.txt"); string(data) != "theirs" {
				t.Errorf("the other worker's change was lost: %q", data)
			}
		})
	}
}

// racingStore lets another writer in just before the first write after it is armed.
type racingStore struct {
	workspace.Store
	armed  bool
	before func()
}

func (s *racingStore) Write(ctx context.Context, team, rel string, data []byte, c workspace.Cond) (workspace.Info, error) {
	if s.armed {
		s.armed = false
		s.before()
	}
	return s.Store.Write(ctx, team, rel, data, c)
}
