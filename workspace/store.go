// Package workspace stores the teams' workspace files, the files Lucy's file tools read and write.
//
// Two stores implement Store:
//
//   - Local (the default, and what `lucy dev` uses): a folder per team on this machine's disk,
//     DataDir/workspaces/<team>/, opened with os.Root so that neither ".." nor a symbolic link leads
//     outside it, with an in-process lock that makes conditional writes atomic. Two workers on two
//     machines each see their own disk: use it with one worker, or with workers that share one
//     volume and one process.
//   - S3 (LUCY_WORKSPACE_STORE=s3://bucket/prefix): an S3-compatible object store (AWS S3, MinIO,
//     Cloudflare R2, …), object keys prefix/<team>/<path>, shared by every worker. Conditional
//     writes are the store's own (If-None-Match: *, If-Match: <etag>), so two workers that write the
//     same file at once cannot lose one another's change.
//
// Paths are cleaned and checked by the caller (tools.cleanPath: relative, forward slashes, no ".."),
// and checked again here: a store never reads or writes outside the team's space, whatever it is
// given.
package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Info describes a file or a folder of a workspace.
type Info struct {
	Path    string // relative to the team's workspace, forward slashes
	Size    int64
	ModTime time.Time
	Dir     bool
	// ETag identifies this version of the file for a conditional write (Cond.IfMatch); empty for
	// folders. It is opaque: compare it, never parse it.
	ETag string
}

// Cond makes a write conditional on what the file is when the write happens.
type Cond struct {
	// IfNoneMatch: write only if there is no such file (create only).
	IfNoneMatch bool
	// IfMatch, when set, writes only if the file exists with this ETag (overwrite only if
	// unchanged since it was read).
	IfMatch string
}

// ErrPrecondition is the error of a conditional write whose condition no longer holds: another
// writer created or changed the file since it was read. Read it again and decide again.
var ErrPrecondition = errors.New("the file was created or changed by another writer meanwhile")

// ErrInvalidPath is what every store's error for a path it refuses (absolute, unclean, with "..",
// a backslash or a NUL) matches with errors.Is: the caller's mistake, never the store's failure.
var ErrInvalidPath = errors.New("not a valid workspace path")

// invalidPath keeps a refused path's message as it is and makes it match ErrInvalidPath.
type invalidPath struct{ err error }

func (e invalidPath) Error() string   { return e.err.Error() }
func (e invalidPath) Unwrap() []error { return []error{e.err, ErrInvalidPath} }

// Store is where the workspace files of every team live. Errors wrap fs.ErrNotExist for a missing
// file, fs.ErrPermission for a refusal, syscall.EISDIR / ENOTDIR where a folder and a file meet,
// and ErrPrecondition for a conditional write that lost a race. Implementations are safe for
// concurrent use.
type Store interface {
	// Stat describes a file or a folder ("." is the workspace itself, always a folder).
	Stat(ctx context.Context, team, rel string) (Info, error)
	// Read returns a file's content and its Info (with the ETag of what was read).
	Read(ctx context.Context, team, rel string) ([]byte, Info, error)
	// Write replaces (or creates) a file atomically: a reader sees the old content or the new,
	// never a mix. Parent folders are created as needed.
	Write(ctx context.Context, team, rel string, data []byte, c Cond) (Info, error)
	// Delete removes a file (not a folder).
	Delete(ctx context.Context, team, rel string) error
	// List returns the files (not folders) under dir ("." for all), at any depth, sorted by path.
	List(ctx context.Context, team, dir string) ([]Info, error)
	// String names the store for logs ("local /data/workspaces", "s3://bucket/prefix").
	String() string
}

// Dirs is implemented by a store whose files are a folder on this machine: the sandboxed script
// works on that folder directly. Other stores are staged into a temporary folder (Stage).
type Dirs interface {
	// Dir returns the team's folder, creating it on first use.
	Dir(team string) (string, error)
	// Lock takes the team's write lock (the one conditional writes hold) and returns its release:
	// a program writing in Dir holds it.
	Lock(team string) func()
}

// ValidTeam reports whether a team ID is safe as a folder name and a key segment.
func ValidTeam(team string) bool {
	if team == "" || len(team) > 64 {
		return false
	}
	for _, c := range team {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// checkRel checks again what the caller should already have checked, so that a store cannot be led
// outside the team's space by a caller's mistake: a relative, clean path without "..". allowRoot
// accepts ".".
func checkRel(team, rel string, allowRoot bool) error {
	if !ValidTeam(team) {
		return fmt.Errorf("workspace: invalid team ID %q", team)
	}
	switch {
	case rel == "." && allowRoot:
		return nil
	case rel == "" || rel == ".":
		return invalidPath{fmt.Errorf("workspace: %q is not a file path", rel)}
	case strings.HasPrefix(rel, "/") || strings.Contains(rel, `\`) || strings.ContainsRune(rel, 0):
		return invalidPath{fmt.Errorf("workspace: %q is not a relative path with forward slashes", rel)}
	case path.Clean(rel) != rel:
		return invalidPath{fmt.Errorf("workspace: %q is not a clean path", rel)}
	}
	for _, seg := range strings.Split(rel, "/") {
		if seg == ".." {
			return invalidPath{&fs.PathError{Op: "open", Path: rel, Err: errors.New("path escapes from parent")}}
		}
	}
	return nil
}
