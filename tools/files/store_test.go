package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

// workspaceStores are the stores the file tool tests run against: the local folder and an S3 bucket
// served in process (gofakes3).
func workspaceStores(t *testing.T) []struct {
	name  string
	store func() workspace.Store
} {
	return []struct {
		name  string
		store func() workspace.Store
	}{
		{"local", func() workspace.Store { return workspace.NewLocal(t.TempDir()) }},
		{"s3", func() workspace.Store { return s3test.Store(t, s3test.Server(t), "lucy") }},
	}
}

// The file tools behave the same on both stores.
func TestFileToolsOnEachStore(t *testing.T) {
	for _, tc := range workspaceStores(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, Deps{Workspace: tc.store()})
			wantOK(t, mustRun(t, r, ListFiles, `{}`), "The workspace has no files.")
			out := mustRun(t, r, WriteFile, `{"path": "reports/q3.md", "content": "# Q3\n\nRevenue: 10\n"}`)
			wantOK(t, out, "Wrote 18 bytes to reports/q3.md (created it).")
			if !slices.Equal(out.Artifacts, []string{"reports/q3.md"}) {
				t.Errorf("artifacts = %v", out.Artifacts)
			}
			wantOK(t, mustRun(t, r, WriteFile, `{"path": "./notes.txt", "content": ""}`), "notes.txt (created it)")
			wantOK(t, mustRun(t, r, WriteFile, `{"path": "notes.txt", "content": "hello"}`), "(filled the empty file)")
			wantOK(t, mustRun(t, r, WriteFile, `{"path": "notes.txt", "content": "hello"}`), "already holds exactly this content")
			if got := mustRun(t, r, ReadFile, `{"path": "reports/q3.md"}`).Content; got != "# Q3\n\nRevenue: 10\n" {
				t.Errorf("read = %q", got)
			}
			wantOK(t, mustRun(t, r, ListFiles, `{}`), "The workspace has 2 file(s)", "notes.txt  (5 bytes", "reports/q3.md  (18 bytes")
			wantOK(t, mustRun(t, r, ListFiles, `{"path": "reports"}`), "reports/ has 1 file(s)")
			wantToolError(t, mustRun(t, r, ListFiles, `{"path": "nope"}`), "nope does not exist")
			wantToolError(t, mustRun(t, r, ListFiles, `{"path": "notes.txt"}`), "is a file, not a folder")

			wantOK(t, mustRun(t, r, EditFile, `{"path": "reports/q3.md", "old": "Revenue: 10", "new": "Revenue: 12\nCosts: 4"}`),
				"Edited reports/q3.md: replaced 1 line(s) at line 3 with 2 line(s)")
			wantToolError(t, mustRun(t, r, EditFile, `{"path": "reports/q3.md", "old": "Revenue: 10", "new": "x"}`), "does not occur")
			wantToolError(t, mustRun(t, r, ReadFile, `{"path": "missing.txt"}`), "missing.txt does not exist")
			wantToolError(t, mustRun(t, r, ReadFile, `{"path": "reports"}`), "reports is a folder")
			wantToolError(t, mustRun(t, r, WriteFile, `{"path": "reports", "content": "x"}`), "reports is a folder")
			wantToolError(t, mustRun(t, r, WriteFile, `{"path": "notes.txt/inner.txt", "content": "x"}`), "not a folder")
			wantToolError(t, mustRun(t, r, ReadFile, `{"path": "img.bin"}`), "does not exist")

			// Replacing content waits for approval, and the approval holds for what the person saw.
			held := wantHeld(t, mustRun(t, r, WriteFile, `{"path": "notes.txt", "content": "bye"}`), "overwriting notes.txt")
			wantOK(t, runAs(t, r, WriteFile, `{"path": "notes.txt", "content": "bye"}`, true, held.Guard), "as approved")
			if got := mustRun(t, r, ReadFile, `{"path": "notes.txt"}`).Content; got != "bye" {
				t.Errorf("after approved overwrite = %q", got)
			}
			wantHeld(t, runAs(t, r, WriteFile, `{"path": "notes.txt", "content": "again"}`, true, held.Guard), "changed after the person approved")

			// Paths that leave the workspace are refused before the store sees them.
			for _, bad := range []string{"../x.txt", "/etc/passwd", "a/../../x"} {
				_, err := run(t, r, ReadFile, jsonArgs(t, map[string]string{"path": bad}))
				wantArgError(t, err, ReadFile)
			}

			wantToolError(t, mustRun(t, r, DeleteFile, `{"path": "reports"}`), "only files can be deleted")
			wantOK(t, mustRun(t, r, DeleteFile, `{"path": "notes.txt"}`), "Deleted notes.txt (3 bytes).")
			wantToolError(t, mustRun(t, r, DeleteFile, `{"path": "notes.txt"}`), "notes.txt does not exist")

			// A generated file, without Slack: saved in the workspace all the same.
			wantOK(t, mustRun(t, r, GenerateCSV, `{"filename": "out/t", "rows": [["a","b"],["1","2"]]}`), "Created out/t.csv")
			if got := mustRun(t, r, ReadFile, `{"path": "out/t.csv"}`).Content; got != "a,b\r\n1,2\r\n" {
				t.Errorf("csv = %q", got)
			}

			// A script reads the workspace and creates files in it, whichever the store; it may not
			// replace a file it did not create.
			out = mustRun(t, r, RunScript, `{"code":"const n = files.read('out/t.csv').split('\\r\\n').length; files.write('count.txt', String(n)); files.list('out')"}`)
			wantOK(t, out, "Files written: count.txt")
			if got := mustRun(t, r, ReadFile, `{"path": "count.txt"}`).Content; got != "3" {
				t.Errorf("count.txt = %q (script output %s)", got, out.Content)
			}
			out = mustRun(t, r, RunScript, `{"code":"files.write('count.txt', 'gone')"}`)
			if !out.IsError || !strings.Contains(out.Content, "already exists") {
				t.Errorf("script overwrite: %+v", out)
			}
		})
	}
}

// Parallel edits on one worker all land, whichever the store.
func TestConcurrentEditsOnEachStore(t *testing.T) {
	for _, tc := range workspaceStores(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestRegistry(t, Deps{Workspace: tc.store()})
			var content strings.Builder
			for i := range 10 {
				fmt.Fprintf(&content, "item %02d: todo\n", i)
			}
			mustRun(t, r, WriteFile, fmt.Sprintf(`{"path": "list.txt", "content": %q}`, content.String()))
			var wg sync.WaitGroup
			for i := range 10 {
				wg.Go(func() {
					wantOK(t, mustRun(t, r, EditFile, fmt.Sprintf(`{"path": "list.txt", "old": "item %02d: todo", "new": "item %02d: done"}`, i, i)))
				})
			}
			wg.Wait()
			if got := mustRun(t, r, ReadFile, `{"path": "list.txt"}`).Content; strings.Contains(got, "todo") {
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
	w1 := newTestRegistry(t, Deps{Workspace: s3test.Store(t, endpoint, "prod")})
	w2 := newTestRegistry(t, Deps{Workspace: s3test.Store(t, endpoint, "prod")})

	wantOK(t, mustRun(t, w1, WriteFile, `{"path": "plan.md", "content": "v1"}`), "created it")
	if got := mustRun(t, w2, ReadFile, `{"path": "plan.md"}`).Content; got != "v1" {
		t.Fatalf("worker 2 reads %q, want what worker 1 wrote", got)
	}
	wantOK(t, mustRun(t, w2, EditFile, `{"path": "plan.md", "old": "v1", "new": "v2"}`))
	if got := mustRun(t, w1, ReadFile, `{"path": "plan.md"}`).Content; got != "v2" {
		t.Fatalf("worker 1 reads %q after worker 2's edit", got)
	}
	wantOK(t, mustRun(t, w2, ListFiles, `{}`), "plan.md")

	// Both runs were approved to replace "v2" (the same Guard); they write at the same time.
	held := wantHeld(t, mustRun(t, w1, WriteFile, `{"path": "plan.md", "content": "from w1"}`))
	for round := range 10 {
		seed := fmt.Sprintf("base %d", round)
		base := runAs(t, w1, WriteFile, jsonArgs(t, map[string]string{"path": "plan.md", "content": seed}), true, "")
		wantOK(t, base)
		held = wantHeld(t, mustRun(t, w1, WriteFile, `{"path": "plan.md", "content": "x"}`))
		outs := make([]Output, 2)
		var wg sync.WaitGroup
		for i, w := range []*Registry{w1, w2} {
			wg.Go(func() {
				outs[i] = runAs(t, w, WriteFile, jsonArgs(t, map[string]string{"path": "plan.md", "content": fmt.Sprintf("from w%d", i+1)}), true, held.Guard)
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
		got := mustRun(t, w2, ReadFile, `{"path": "plan.md"}`).Content
		if got != "from w1" && got != "from w2" {
			t.Fatalf("round %d: the file holds %q", round, got)
		}
	}
}

// Another worker that changes the file between this one's check and its write is not overwritten:
// the write is conditional on what the check saw.
func TestWriteIsConditionalOnWhatWasChecked(t *testing.T) {
	ctx := context.Background()
	for _, tc := range workspaceStores(t) {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.store()
			if _, err := st.Write(ctx, testTeam, "f.txt", []byte("old"), workspace.Cond{}); err != nil {
				t.Fatal(err)
			}
			racer := &racingStore{Store: st, before: func() {
				if _, err := st.Write(ctx, testTeam, "f.txt", []byte("theirs"), workspace.Cond{}); err != nil {
					t.Error(err)
				}
			}}
			r := newTestRegistry(t, Deps{Workspace: racer})
			held := wantHeld(t, mustRun(t, r, WriteFile, `{"path": "f.txt", "content": "mine"}`))
			racer.armed = true
			out := runAs(t, r, WriteFile, `{"path": "f.txt", "content": "mine"}`, true, held.Guard)
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
