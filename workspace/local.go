package workspace

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
)

// TmpPrefix starts the names of in-progress atomic writes of the local store; listings hide them and
// tools refuse paths that use it.
const TmpPrefix = ".lucy-tmp-"

// ErrNotRegular is the error of a read or write of something that is neither a file nor a folder (a
// FIFO, a device), which only the local store can meet.
var ErrNotRegular = errors.New("not a regular file")

// Local is the store on this machine's disk: DataDir/workspaces/<team>/.
type Local struct {
	base  string   // DataDir/workspaces
	locks sync.Map // team -> *sync.Mutex: makes a conditional write's check and rename one step
}

// NewLocal returns the local store under dataDir (files in dataDir/workspaces/<team>/).
func NewLocal(dataDir string) *Local {
	return NewLocalAt(filepath.Join(dataDir, "workspaces"))
}

// NewLocalAt returns a local store whose teams' folders are base/<team>/. Lucy's own state (stored
// credentials, a team's integrations) lives in such a store beside the workspaces, out of reach of
// the file tools, which only ever see the workspaces' store.
func NewLocalAt(base string) *Local {
	return &Local{base: base}
}

func (l *Local) String() string { return "local " + l.base }

// Dir implements Dirs.
func (l *Local) Dir(team string) (string, error) {
	if !ValidTeam(team) {
		return "", fmt.Errorf("workspace: invalid team ID %q", team)
	}
	dir := filepath.Join(l.base, team)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return dir, nil
}

// root opens the team's folder; every access goes through it, so that neither ".." nor a symbolic
// link can lead outside. The caller closes it.
func (l *Local) root(team, rel string, allowRoot bool) (*os.Root, error) {
	if err := checkRel(team, rel, allowRoot); err != nil {
		return nil, err
	}
	dir, err := l.Dir(team)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return root, nil
}

// Lock implements Dirs.
func (l *Local) Lock(team string) func() { return l.lock(team) }

// lockName is the team folder's lock file: it starts with TmpPrefix, so listings hide it and the
// file tools refuse its path.
const lockName = TmpPrefix + "lock"

// lock takes the team's write lock: a mutex of this store value, then a flock on the team folder's
// lock file, so that a conditional write's check and rename are one step for every process and
// every store value over the folder. Without the flock (a folder that cannot hold the file, a
// system without flock) the mutex alone still serializes this store value's writers.
func (l *Local) lock(team string) func() {
	m, _ := l.locks.LoadOrStore(team, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	dir, err := l.Dir(team)
	if err != nil {
		return mu.Unlock
	}
	release, err := lockFile(filepath.Join(dir, lockName))
	if err != nil {
		return mu.Unlock
	}
	return func() {
		release()
		mu.Unlock()
	}
}

func localInfo(rel string, fi fs.FileInfo) Info {
	return Info{Path: rel, Size: fi.Size(), ModTime: fi.ModTime(), Dir: fi.IsDir()}
}

// localETag is the ETag of the local store: the content's SHA-256, so that it changes exactly when
// the content does (a modification time can repeat within its granularity).
func localETag(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (l *Local) Stat(_ context.Context, team, rel string) (Info, error) {
	root, err := l.root(team, rel, true)
	if err != nil {
		return Info{}, err
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return Info{}, err
	}
	return localInfo(rel, fi), nil
}

func (l *Local) Read(_ context.Context, team, rel string) ([]byte, Info, error) {
	root, err := l.root(team, rel, false)
	if err != nil {
		return nil, Info{}, err
	}
	defer root.Close()
	return readLocal(root, rel)
}

func readLocal(root *os.Root, rel string) ([]byte, Info, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, Info{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, Info{}, err
	}
	switch {
	case fi.IsDir():
		return nil, localInfo(rel, fi), &fs.PathError{Op: "read", Path: rel, Err: syscall.EISDIR}
	case !fi.Mode().IsRegular(): // a FIFO would block the read below
		return nil, localInfo(rel, fi), &fs.PathError{Op: "read", Path: rel, Err: ErrNotRegular}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, Info{}, err
	}
	info := localInfo(rel, fi)
	info.Size, info.ETag = int64(len(data)), localETag(data)
	return data, info, nil
}

func (l *Local) Write(_ context.Context, team, rel string, data []byte, c Cond) (Info, error) {
	root, err := l.root(team, rel, false)
	if err != nil {
		return Info{}, err
	}
	defer root.Close()
	defer l.lock(team)()
	if c.IfNoneMatch || c.IfMatch != "" {
		_, cur, err := readLocal(root, rel)
		exists := err == nil
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return Info{}, err
		case c.IfNoneMatch && exists, c.IfMatch != "" && (!exists || cur.ETag != c.IfMatch):
			return Info{}, fmt.Errorf("write %s: %w", rel, ErrPrecondition)
		}
	}
	if err := writeAtomic(root, rel, data); err != nil {
		return Info{}, err
	}
	fi, err := root.Stat(rel)
	if err != nil {
		return Info{}, err
	}
	info := localInfo(rel, fi)
	info.ETag = localETag(data)
	return info, nil
}

// writeAtomic replaces rel with data through a temporary file and a rename, so that a reader (or a
// crash) never sees half a file. It creates the parent folders.
func writeAtomic(root *os.Root, rel string, data []byte) error {
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o750); errors.Is(err, fs.ErrExist) { // a part of dir is a file
			return &fs.PathError{Op: "write", Path: rel, Err: syscall.ENOTDIR}
		} else if err != nil {
			return err
		}
	}
	tmp := path.Join(path.Dir(rel), TmpPrefix+rand.Text()[:12])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if fi, serr := root.Lstat(rel); serr == nil && fi.IsDir() {
			err = &fs.PathError{Op: "write", Path: rel, Err: syscall.EISDIR} // rename would say EEXIST or ENOTEMPTY
		}
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

func (l *Local) Delete(_ context.Context, team, rel string) error {
	root, err := l.root(team, rel, false)
	if err != nil {
		return err
	}
	defer root.Close()
	defer l.lock(team)()
	fi, err := root.Lstat(rel) // a symbolic link is removed itself, never what it points to
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return &fs.PathError{Op: "delete", Path: rel, Err: syscall.EISDIR}
	}
	return root.Remove(rel)
}

func (l *Local) List(_ context.Context, team, dir string) ([]Info, error) {
	root, err := l.root(team, dir, true)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var out []Info
	err = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), TmpPrefix) || d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed while we walked
		}
		out = append(out, localInfo(p, fi))
		return nil
	})
	// Sorted by the whole path, as an object store lists keys ("a.txt" before "a/b"; a walk visits
	// the folder "a" first).
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Path, b.Path) })
	return out, err
}
