package script

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

// failingStore is a local store whose writes of one name fail as a store that is down would.
type failingStore struct {
	workspace.Store
	fail string
}

var errStoreDown = errors.New("store unavailable")

func (s failingStore) Write(ctx context.Context, team, rel string, data []byte, c workspace.Cond) (workspace.Info, error) {
	if rel == s.fail {
		return workspace.Info{}, errStoreDown
	}
	return s.Store.Write(ctx, team, rel, data, c)
}

// Every language's new files are saved by saveNew: a name taken meanwhile and a name the workspace
// refuses are the script's result's notes and the rest is saved; a store that fails is an error, so
// that the call is retried instead of reporting files that were never kept.
func TestSaveNewTellsTheScriptsMistakesFromTheStores(t *testing.T) {
	ctx := context.Background()
	st := workspace.NewLocal(t.TempDir())
	dir := t.TempDir()
	for _, name := range []string{"ok.txt", "taken.txt", `back\slash.txt`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.Write(ctx, tooltest.Team, "taken.txt", []byte("another run's"), workspace.Cond{}); err != nil {
		t.Fatal(err)
	}
	saved, notes, err := saveNew(ctx, st, tooltest.Team, dir, []string{`back\slash.txt`, "ok.txt", "taken.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(saved) != 1 || saved[0] != "ok.txt" {
		t.Errorf("saved %v, want [ok.txt]", saved)
	}
	text := strings.Join(notes, " ")
	for _, want := range []string{`back\slash.txt was not saved`, "another run created files with the same names while the script ran: taken.txt."} {
		if !strings.Contains(text, want) {
			t.Errorf("notes %q lack %q", text, want)
		}
	}
	if b, _, err := st.Read(ctx, tooltest.Team, "taken.txt"); err != nil || string(b) != "another run's" {
		t.Errorf("taken.txt = %q, %v: another run's file must be kept", b, err)
	}

	if err := os.WriteFile(filepath.Join(dir, "new.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := saveNew(ctx, failingStore{st, "new.txt"}, tooltest.Team, dir, []string{"new.txt"}); !errors.Is(err, errStoreDown) {
		t.Errorf("a failing store: err %v, want it returned", err)
	}
}
