package script

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// runNative runs a Python or bash script (package sandbox's bubblewrap) on a copy of the team's
// workspace, always: unlike goja's `files` object, the interpreter can open, replace or delete any
// file it is given, so it is given a copy. The files it created are then saved create-only, as a
// JavaScript script's are: a person's existing file is replaced only through lucy_write_file, and a
// file another run created meanwhile under the same name is kept.
func (s *Sandbox) runNative(ctx context.Context, st workspace.Store, cmd sandbox.Command, team, lang, code string, limits sandbox.Limits) (sandbox.Result, error) {
	dir, err := os.MkdirTemp("", "lucy-script-")
	if err != nil {
		return sandbox.Result{}, err
	}
	defer os.RemoveAll(dir)
	if _, err := workspace.Stage(ctx, st, team, dir, maxStagedBytes); err != nil {
		return sandbox.Result{}, fmt.Errorf("%s: copy the workspace for the script: %w", tools.RunScript, err)
	}
	before, err := snapshot(dir)
	if err != nil {
		return sandbox.Result{}, err
	}
	if os.Geteuid() == 0 {
		// A root Lucy runs the script as nobody (package sandbox), who must be able to write there.
		if err := chownTree(dir, sandbox.NobodyID); err != nil {
			return sandbox.Result{}, err
		}
	}
	res, err := sandbox.Run(ctx, cmd, sandbox.Request{Code: code, Language: lang, Dir: dir, Limits: limits})
	if err != nil {
		return res, err
	}
	after, err := snapshot(dir)
	if err != nil {
		return res, err
	}
	var created, changed []string
	for rel, f := range after {
		if b, ok := before[rel]; !ok {
			created = append(created, rel)
		} else if b != f {
			changed = append(changed, rel)
		}
	}
	slices.Sort(created)
	slices.Sort(changed)
	var notes []string
	if limit := limits.MaxFilesWritten; limit > 0 && len(created) > limit {
		notes = append(notes, fmt.Sprintf("Only the first %d new files are saved (the limit); not saved: %s.", limit, strings.Join(created[limit:], ", ")))
		created = created[:limit]
	}
	if len(changed) > 0 {
		notes = append(notes, "Changes to existing files are not saved (write a new file, or use lucy_write_file): "+strings.Join(changed, ", ")+".")
	}
	saved, saveNotes, err := saveNew(ctx, st, team, dir, created)
	if err != nil {
		return res, err
	}
	res.Written = append(res.Written, saved...)
	notes = append(notes, saveNotes...)
	if len(notes) > 0 {
		res.Error = strings.TrimSpace(res.Error + " " + strings.Join(notes, " "))
	}
	return res, nil
}

// fileState is what tells a changed file from an unchanged one.
type fileState struct {
	size int64
	mod  time.Time
}

// snapshot lists the regular files under dir (a symbolic link the script made is not a file it
// wrote, and is never followed) with their sizes and times.
func snapshot(dir string) (map[string]fileState, error) {
	files := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // a folder the script made unreadable: its files are not saved
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)] = fileState{info.Size(), info.ModTime()}
		return nil
	})
	return files, err
}

// chownTree gives dir and everything under it to uid (and the same group).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}
