package workspace_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"

	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

const team = "T1"

// stores are the implementations every contract test runs against.
func stores(t *testing.T) map[string]workspace.Store {
	return map[string]workspace.Store{
		"local": workspace.NewLocal(t.TempDir()),
		"s3":    s3test.Store(t, s3test.Server(t), "lucy"),
	}
}

func paths(infos []workspace.Info) []string {
	var out []string
	for _, in := range infos {
		out = append(out, in.Path)
	}
	return out
}

func TestStoreContract(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			if _, _, err := s.Read(ctx, team, "a.txt"); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("read of a missing file: %v", err)
			}
			w, err := s.Write(ctx, team, "a.txt", []byte("one"), workspace.Cond{IfNoneMatch: true})
			if err != nil || w.ETag == "" || w.Size != 3 {
				t.Fatalf("create: %+v, %v", w, err)
			}
			if _, err := s.Write(ctx, team, "a.txt", []byte("two"), workspace.Cond{IfNoneMatch: true}); !errors.Is(err, workspace.ErrPrecondition) {
				t.Fatalf("second create: %v, want ErrPrecondition", err)
			}
			data, r, err := s.Read(ctx, team, "a.txt")
			if err != nil || string(data) != "one" || r.ETag != w.ETag {
				t.Fatalf("read: %q %+v %v (written ETag %s)", data, r, err, w.ETag)
			}
			w2, err := s.Write(ctx, team, "a.txt", []byte("two"), workspace.Cond{IfMatch: r.ETag})
			if err != nil || w2.ETag == r.ETag {
				t.Fatalf("overwrite if unchanged: %+v %v", w2, err)
			}
			if _, err := s.Write(ctx, team, "a.txt", []byte("three"), workspace.Cond{IfMatch: r.ETag}); !errors.Is(err, workspace.ErrPrecondition) {
				t.Fatalf("overwrite with a stale ETag: %v, want ErrPrecondition", err)
			}
			if _, err := s.Write(ctx, team, "none.txt", []byte("x"), workspace.Cond{IfMatch: r.ETag}); !errors.Is(err, workspace.ErrPrecondition) {
				t.Fatalf("overwrite of a missing file: %v, want ErrPrecondition", err)
			}

			for _, p := range []string{"reports/q3/summary.md", "reports/q2.md", "a.zip"} {
				if _, err := s.Write(ctx, team, p, []byte(p), workspace.Cond{}); err != nil {
					t.Fatal(err)
				}
			}
			all, err := s.List(ctx, team, ".")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := paths(all), []string{"a.txt", "a.zip", "reports/q2.md", "reports/q3/summary.md"}; !slices.Equal(got, want) {
				t.Errorf("list: %v, want %v", got, want)
			}
			sub, err := s.List(ctx, team, "reports/q3")
			if err != nil || !slices.Equal(paths(sub), []string{"reports/q3/summary.md"}) {
				t.Errorf("list reports/q3: %v %v", paths(sub), err)
			}
			if in, err := s.Stat(ctx, team, "reports"); err != nil || !in.Dir {
				t.Errorf("stat of a folder: %+v %v", in, err)
			}
			if in, err := s.Stat(ctx, team, "reports/q2.md"); err != nil || in.Dir || in.Size != int64(len("reports/q2.md")) {
				t.Errorf("stat of a file: %+v %v", in, err)
			}
			if _, err := s.Stat(ctx, team, "nothing"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stat of nothing: %v", err)
			}
			if _, _, err := s.Read(ctx, team, "reports"); !errors.Is(err, syscall.EISDIR) {
				t.Errorf("read of a folder: %v, want EISDIR", err)
			}
			if _, err := s.Write(ctx, team, "reports", []byte("x"), workspace.Cond{}); !errors.Is(err, syscall.EISDIR) {
				t.Errorf("write over a folder: %v, want EISDIR", err)
			}
			if _, err := s.Write(ctx, team, "a.txt/inner", []byte("x"), workspace.Cond{}); !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("write inside a file: %v, want ENOTDIR", err)
			}
			if err := s.Delete(ctx, team, "reports"); !errors.Is(err, syscall.EISDIR) {
				t.Errorf("delete of a folder: %v, want EISDIR", err)
			}
			if err := s.Delete(ctx, team, "reports/q2.md"); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(ctx, team, "reports/q2.md"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("second delete: %v", err)
			}
			// Other teams see nothing of it.
			if other, err := s.List(ctx, "T2", "."); err != nil || len(other) != 0 {
				t.Errorf("another team's listing: %v %v", paths(other), err)
			}
			// Paths that leave the workspace are refused, whatever the caller checked.
			for _, bad := range []string{"../T2/x", "/etc/passwd", "a/../../x", `a\b`} {
				if _, err := s.Write(ctx, team, bad, []byte("x"), workspace.Cond{}); err == nil {
					t.Errorf("write %q: no error", bad)
				}
				if _, _, err := s.Read(ctx, team, bad); err == nil {
					t.Errorf("read %q: no error", bad)
				}
			}
			if _, err := s.List(ctx, "../x", "."); err == nil {
				t.Errorf("list of team ../x: no error")
			}

			dir := t.TempDir()
			staged, err := workspace.Stage(ctx, s, team, dir, 1<<20)
			if err != nil || len(staged) != 3 {
				t.Fatalf("stage: %v %v", staged, err)
			}
			if b, err := os.ReadFile(filepath.Join(dir, "reports", "q3", "summary.md")); err != nil || string(b) != "reports/q3/summary.md" {
				t.Errorf("staged file: %q %v", b, err)
			}
			if _, err := workspace.Stage(ctx, s, team, t.TempDir(), 4); err == nil {
				t.Errorf("stage over the limit: no error")
			}
		})
	}
}

// Many writers racing to replace the same version of a file: exactly one wins, whichever store.
func TestStoreConditionalRace(t *testing.T) {
	ctx := context.Background()
	for name, s := range stores(t) {
		t.Run(name, func(t *testing.T) {
			base, err := s.Write(ctx, team, "race.txt", []byte("base"), workspace.Cond{})
			if err != nil {
				t.Fatal(err)
			}
			const n = 8
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					_, errs[i] = s.Write(ctx, team, "race.txt", []byte{byte('a' + i)}, workspace.Cond{IfMatch: base.ETag})
				})
			}
			wg.Wait()
			won := 0
			for _, err := range errs {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, workspace.ErrPrecondition):
					t.Errorf("unexpected error: %v", err)
				}
			}
			if won != 1 {
				t.Errorf("%d writers won, want exactly 1", won)
			}
		})
	}
}

// Two local stores over one folder (two processes over one LUCY_DATA_DIR: a worker and `lucy
// secrets`, or two workers of one machine) race to create and to replace one file: the folder's
// lock makes each conditional write one step, so exactly one create wins and no replacement is
// lost.
func TestLocalConditionalWritesAcrossStoreValues(t *testing.T) {
	dir := t.TempDir()
	a, b := workspace.NewLocalAt(dir), workspace.NewLocalAt(dir)
	ctx := context.Background()
	var created, lost int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			_, err := s.Write(ctx, team, "once.txt", []byte{byte(i)}, workspace.Cond{IfNoneMatch: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case errors.Is(err, workspace.ErrPrecondition):
				lost++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if created != 1 || lost != 39 {
		t.Fatalf("%d creates won and %d lost, want 1 and 39", created, lost)
	}
	// A counter incremented by read and conditional replace from both stores: no increment lost.
	if _, err := a.Write(ctx, team, "n.txt", []byte{0}, workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			for {
				data, info, err := s.Read(ctx, team, "n.txt")
				if err != nil {
					t.Error(err)
					return
				}
				_, err = s.Write(ctx, team, "n.txt", []byte{data[0] + 1}, workspace.Cond{IfMatch: info.ETag})
				if errors.Is(err, workspace.ErrPrecondition) {
					continue
				}
				if err != nil {
					t.Error(err)
				}
				return
			}
		}()
	}
	wg.Wait()
	data, _, err := b.Read(ctx, team, "n.txt")
	if err != nil || data[0] != 20 {
		t.Fatalf("counter %v %v, want 20", data, err)
	}
	files, err := a.List(ctx, team, ".")
	if err != nil || len(files) != 2 {
		t.Fatalf("listing %v %v: the lock file must stay hidden", files, err)
	}
}
