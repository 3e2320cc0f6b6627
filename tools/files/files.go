// Package files holds the workspace file tools (list, read, write, edit, delete) and what every tool
// that writes a team's files shares: the path rules, the rules of replacing a file (overwrite.go), the
// per-team write lock, and the saving and sharing of generated files in the conversation (share.go).
// It is its own package so that these rules live in one place: the documents and the script domains
// reach a team's files only through a *Workspace.
//
// Workspace files. Every team has its own space in the workspace store (package workspace): a folder
// DataDir/workspaces/<team>/ by default, or keys <prefix>/<team>/ of an S3-compatible bucket shared
// by every worker. The lexical checks in CleanPath give the model a precise message; the store checks
// again and confines every access to the team's space (os.Root on disk).
//
// Writes that replace what a file holds are conditional on the version that was read (If-Match), and
// creations on there being no file yet (If-None-Match), so that two runs (on one worker or on two)
// writing the same file at once never lose a change silently: the one that loses reads the file
// again and decides again, and an approval given for the old content is asked for again.
//
// Nothing in the workspace reaches the system prompt: a team's knowledge notes live outside it (see
// package activities), so that a page the model read cannot make it plant instructions for every
// later run.
package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// Workspace is the teams' files: the store, the write lock of each team on this worker, and the Slack
// clients that generated files are shared with. One value serves the file, document and script tools
// of a worker, so that their writes to a workspace queue behind one lock.
type Workspace struct {
	store workspace.Store // nil: no workspace configured, and the tools say so
	slack func(team string) Slack
	// locks (team -> *sync.Mutex) serializes the writes within one workspace on this worker, so
	// that its own parallel edits of a file queue up instead of racing; writers on other workers
	// are kept apart by the store's conditional writes.
	locks sync.Map
}

// New returns the workspace over store (nil when none is configured: every file tool then fails with
// a system error). slack returns the client of a team for sharing generated files; nil, or a nil
// result, means Slack is not connected and the files are only saved.
func New(store workspace.Store, slack func(team string) Slack) *Workspace {
	return &Workspace{store: store, slack: slack}
}

// maxListedFiles bounds a listing's lines; the rest are counted.
const maxListedFiles = 500

const tmpPrefix = workspace.TmpPrefix // in-progress atomic writes of the local store; hidden from listings

// maxWriteAttempts bounds how often a write re-reads a file that another writer changed in between
// before it gives up and tells the model.
const maxWriteAttempts = 3

// CleanPath validates a model-given workspace path and returns it cleaned, with forward slashes.
// allowRoot accepts "" and "." as the workspace itself (for listings). Its errors are *tools.ArgError.
func CleanPath(tool, p string, allowRoot bool) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" || p == "." || p == "./" {
		if allowRoot {
			return ".", nil
		}
		return "", tools.ArgErrorf(tool, "give the path of a file relative to the workspace, e.g. \"reports/q3.md\"")
	}
	switch {
	case len(p) > tools.MaxPathLen:
		return "", tools.ArgErrorf(tool, "the path is too long (%d bytes; the limit is %d)", len(p), tools.MaxPathLen)
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		return "", tools.ArgErrorf(tool, "the path contains invalid characters")
	case strings.Contains(p, `\`):
		return "", tools.ArgErrorf(tool, "use forward slashes in paths, e.g. \"reports/q3.md\" (got %q)", p)
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || (len(p) >= 2 && p[1] == ':'):
		return "", tools.ArgErrorf(tool, "%q is an absolute path; paths are relative to the team's workspace, e.g. \"reports/q3.md\"", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", tools.ArgErrorf(tool, "%q uses \"..\"; paths must stay inside the team's workspace", p)
		}
		if strings.HasPrefix(seg, tmpPrefix) {
			return "", tools.ArgErrorf(tool, "names starting with %q are reserved", tmpPrefix)
		}
	}
	p = path.Clean(p)
	if p == "." && !allowRoot {
		return "", tools.ArgErrorf(tool, "give the path of a file, not the workspace itself")
	}
	return p, nil
}

// Store returns the store of the teams' files, after checking the team ID. Its errors are the
// worker's (no store configured) or the system's (an invalid team ID), never the model's.
func (w *Workspace) Store(team string) (workspace.Store, error) {
	if w.store == nil {
		return nil, errors.New("workspace: tools.Deps.DataDir (or Deps.Workspace) is not set")
	}
	if !workspace.ValidTeam(team) {
		return nil, fmt.Errorf("workspace: invalid team ID %q", team)
	}
	return w.store, nil
}

// Lock serializes the writes to one team's workspace on this worker (see Workspace.locks); it
// returns the unlock.
func (w *Workspace) Lock(team string) func() {
	m, _ := w.locks.LoadOrStore(team, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// fileFailed turns a file system error on rel into what the model should see.
func fileFailed(tool, rel string, err error) (tools.Output, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tools.ToolError("%s does not exist in the workspace. Use lucy_list_files to see what is there.", rel), nil
	case strings.Contains(err.Error(), "path escapes from parent"): // os.Root's refusal (unexported error)
		return tools.Output{}, tools.ArgErrorf(tool, "%q leads outside the team's workspace", rel)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist): // ErrExist: MkdirAll met a file
		return tools.ToolError("a part of %s is a file, not a folder.", rel), nil
	case errors.Is(err, syscall.EISDIR):
		return tools.ToolError("%s is a folder, not a file.", rel), nil
	case errors.Is(err, workspace.ErrNotRegular):
		return tools.ToolError("%s is not a regular file; choose another name.", rel), nil
	case errors.Is(err, workspace.ErrPrecondition):
		return tools.ToolError("%s was changed by another run again and again while this one wrote it; read it again "+
			"and retry.", rel), nil
	case errors.Is(err, fs.ErrPermission):
		return tools.ToolError("permission denied for %s.", rel), nil
	case errors.Is(err, syscall.ENOSPC):
		return tools.ToolError("the disk is full; %s was not written.", rel), nil
	}
	return tools.Output{}, fmt.Errorf("%s %s: %w", tool, rel, err)
}

// readText reads a workspace text file of at most MaxFileBytes, with the ETag of what it read.
func readText(ctx context.Context, st workspace.Store, team, tool, rel string) (string, string, *tools.Output, error) {
	data, info, err := st.Read(ctx, team, rel)
	if errors.Is(err, syscall.EISDIR) {
		out := tools.ToolError("%s is a folder; use lucy_list_files to see its files.", rel)
		return "", "", &out, nil
	}
	if err != nil {
		out, err := fileFailed(tool, rel, err)
		return "", "", &out, err
	}
	if info.Size > tools.MaxFileBytes {
		out := tools.ToolError("%s is %s, more than the 1 MB limit for text files.", rel, HumanBytes(info.Size))
		return "", "", &out, nil
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		out := tools.ToolError("%s is a binary file (%s); only text files can be read or edited.", rel, HumanBytes(int64(len(data))))
		return "", "", &out, nil
	}
	return string(data), info.ETag, nil, nil
}

// Pathed is the arguments of a tool that works on one workspace path (or file name).
type Pathed interface{ FilePath() string }

func (a *listFilesArgs) FilePath() string  { return a.Path }
func (a *readFileArgs) FilePath() string   { return a.Path }
func (a *writeFileArgs) FilePath() string  { return a.Path }
func (a *editFileArgs) FilePath() string   { return a.Path }
func (a *deleteFileArgs) FilePath() string { return a.Path }

// DecodePath decodes a file tool's arguments into args and returns its path, cleaned and checked to
// stay inside the workspace.
func DecodePath(inv tools.Invocation, tool string, allowRoot bool, args Pathed) (string, error) {
	if err := tools.DecodeArgs(inv, args); err != nil {
		return "", err
	}
	return CleanPath(tool, args.FilePath(), allowRoot)
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name:        tools.ListFiles,
		Description: "List the files in the team's workspace (or in one folder of it), with their sizes.",
		Idempotent:  true,
		Quick:       true,
		Human:       "looking through the files",
	},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.StrProp("path", "A folder relative to the workspace root; omit for the whole workspace.", 0, tools.MaxPathLen),
		}
	},
}, (*Workspace).listFiles)

type listFilesArgs struct {
	Path string `json:"path"`
}

func (w *Workspace) listFiles(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args listFilesArgs
	dir, err := DecodePath(inv, tools.ListFiles, true, &args)
	if err != nil {
		return tools.Output{}, err
	}
	st, err := w.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	if info, err := st.Stat(ctx, inv.Team, dir); err != nil {
		return fileFailed(tools.ListFiles, dir, err)
	} else if !info.Dir {
		return tools.ToolError("%s is a file, not a folder; use lucy_read_file to read it.", dir), nil
	}
	files, err := st.List(ctx, inv.Team, dir)
	if err != nil {
		return fileFailed(tools.ListFiles, dir, err)
	}
	var lines []string
	var total int64
	for i, f := range files {
		total += f.Size
		if i < maxListedFiles {
			lines = append(lines, fmt.Sprintf("%s  (%s, modified %s)", f.Path, HumanBytes(f.Size),
				f.ModTime.UTC().Format("2006-01-02 15:04 UTC")))
		}
	}
	count := len(files)
	where := "The workspace"
	if dir != "." {
		where = dir + "/"
	}
	if count == 0 {
		return tools.Output{Content: where + " has no files."}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s has %d file(s), %s in all:\n", where, count, HumanBytes(total))
	b.WriteString(strings.Join(lines, "\n"))
	if count > maxListedFiles {
		fmt.Fprintf(&b, "\n... and %d more (list a folder to see them).", count-maxListedFiles)
	}
	return tools.Output{Content: b.String()}, nil
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.ReadFile,
		Description: "Read a text file from the team's workspace. Long files come in parts of about 14,000 bytes: " +
			"call again with the offset the result gives to read on.",
		Idempotent: true,
		Quick:      true,
		Human:      "reading a file",
	},
	Required: []string{"path"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.PathProp("The file to read."),
			tools.IntProp("offset", "Byte offset to start reading at (default 0).", 0, tools.MaxFileBytes),
		}
	},
}, (*Workspace).readFile)

type readFileArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
}

func (w *Workspace) readFile(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args readFileArgs
	rel, err := DecodePath(inv, tools.ReadFile, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	st, err := w.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	text, _, failed, err := readText(ctx, st, inv.Team, tools.ReadFile, rel)
	if failed != nil || err != nil {
		return *failed, err
	}
	if text == "" {
		return tools.Output{Content: rel + " is empty (0 bytes)."}, nil
	}
	if args.Offset >= len(text) {
		return tools.ToolError("offset %d is past the end of %s (%d bytes).", args.Offset, rel, len(text)), nil
	}
	part, start, next := tools.Window(text, args.Offset, tools.ReadWindowBytes)
	if next == 0 && start == 0 {
		return tools.Output{Content: part}, nil
	}
	msg := fmt.Sprintf("%s\n\n[Showing bytes %d to %d of %d of %s.", part, start, start+len(part), len(text), rel)
	if next > 0 {
		msg += fmt.Sprintf(" Call lucy_read_file again with offset=%d to read on.", next)
	}
	return tools.Output{Content: msg + "]"}, nil
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.WriteFile,
		Description: "Write a text file in the team's workspace, creating folders as needed. Replacing an existing " +
			"file with different content waits for a person's approval. At most 1 MB.",
		Human: "writing a file",
	},
	Required: []string{"path", "content"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.PathProp("The file to write."),
			tools.StrProp("content", "The whole content of the file.", 0, tools.MaxFileBytes),
		}
	},
}, (*Workspace).writeFile)

type writeFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (w *Workspace) writeFile(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args writeFileArgs
	rel, err := DecodePath(inv, tools.WriteFile, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	if len(args.Content) > tools.MaxFileBytes {
		return tools.Output{}, tools.ArgErrorf(tools.WriteFile, "content is %s; the limit is 1 MB per file", HumanBytes(int64(len(args.Content))))
	}
	st, err := w.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	defer w.Lock(inv.Team)()
	data := []byte(args.Content)
	what, hold, err := replaceFile(ctx, st, tools.WriteFile, rel, data, inv)
	if err != nil {
		return tools.Output{}, err
	}
	if hold != nil {
		return *hold, nil
	}
	if what == "" {
		return tools.Output{
			Content:   fmt.Sprintf("%s already holds exactly this content (%s); nothing was changed.", rel, HumanBytes(int64(len(data)))),
			Artifacts: []string{rel},
		}, nil
	}
	return tools.Output{
		Content:   fmt.Sprintf("Wrote %s to %s (%s).", HumanBytes(int64(len(data))), rel, what),
		Artifacts: []string{rel},
	}, nil
}

// replaceFile writes data to rel (replacing the whole file) when checkReplace lets it, conditionally
// on the file still being what checkReplace saw; when another writer got there first, it looks again
// (at most maxWriteAttempts times). It returns what the write did for the result ("created it",
// "replaced the previous 2.1 KB"), "" when rel already holds data (nothing written), or hold: the
// result to return instead (approval needed, or a failure the model should see).
func replaceFile(ctx context.Context, st workspace.Store, tool, rel string, data []byte, inv tools.Invocation) (what string, hold *tools.Output, err error) {
	for attempt := 1; ; attempt++ {
		what, hold, cond, err := checkReplace(ctx, st, tool, rel, data, inv)
		if err != nil || hold != nil || what == "" {
			return what, hold, err
		}
		_, err = st.Write(ctx, inv.Team, rel, data, cond)
		if errors.Is(err, workspace.ErrPrecondition) && attempt < maxWriteAttempts {
			continue
		}
		if err != nil {
			out, err := fileFailed(tool, rel, err)
			return "", &out, err
		}
		return what, nil, nil
	}
}

// checkReplace decides whether writing data to rel (replacing the whole file) may go ahead. It
// returns what the write does for the result ("created it", "replaced the previous 2.1 KB"), "" when
// rel already holds data (nothing to write), or hold: the result to return instead, for a call that
// must wait for approval or cannot write there at all. cond makes the write conditional on what was
// seen: no file yet, or this version of it.
func checkReplace(ctx context.Context, st workspace.Store, tool, rel string, data []byte, inv tools.Invocation) (what string, hold *tools.Output, cond workspace.Cond, err error) {
	cur, exists, out, err := readCurrent(ctx, st, inv.Team, tool, rel)
	switch {
	case out != nil || err != nil:
		return "", out, cond, err
	case !exists:
		return "created it", nil, workspace.Cond{IfNoneMatch: true}, nil
	case cur.data != nil && bytes.Equal(cur.data, data):
		return "", nil, cond, nil
	case cur.size == 0:
		return "filled the empty file", nil, workspace.Cond{IfMatch: cur.etag}, nil
	case mayProceed(inv, cur.hash):
		return fmt.Sprintf("replaced the previous %s, as approved", HumanBytes(cur.size)), nil, workspace.Cond{IfMatch: cur.etag}, nil
	}
	o := holdForApproval(inv, rel,
		fmt.Sprintf("overwriting %s (%s) with different content (%s)", rel, HumanBytes(cur.size), HumanBytes(int64(len(data)))),
		overwriteSummary(rel, cur.size, len(data)), changeDetails(cur, data), cur.hash)
	return "", &o, cond, nil
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name: tools.EditFile,
		Description: "Edit a text file in the team's workspace by replacing one exact piece of text. `old` must occur " +
			"exactly once in the file, character for character (whitespace and line breaks included): include enough " +
			"surrounding lines to make it unique. Read the file first if you are not sure of its content. An edit that " +
			"empties the file or replaces most of it waits for a person's approval.",
		Human: "editing a file",
	},
	Required: []string{"path", "old", "new"},
	Props: func() []tools.Prop {
		return []tools.Prop{
			tools.PathProp("The file to edit."),
			tools.StrProp("old", "The exact text to replace; it must occur exactly once.", 1, tools.MaxFileBytes),
			tools.StrProp("new", "The replacement text (may be empty to delete `old`).", 0, tools.MaxFileBytes),
		}
	},
}, (*Workspace).editFile)

type editFileArgs struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

func (w *Workspace) editFile(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args editFileArgs
	rel, err := DecodePath(inv, tools.EditFile, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	if args.Old == args.New {
		return tools.Output{}, tools.ArgErrorf(tools.EditFile, "\"old\" and \"new\" are the same, so nothing would change")
	}
	st, err := w.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	defer w.Lock(inv.Team)()
	// The edit is made on what was read and written only if the file is still that: another
	// worker's change in between makes it read and match again.
	for attempt := 1; ; attempt++ {
		out, err := editOnce(ctx, st, rel, args, inv)
		if errors.Is(err, workspace.ErrPrecondition) {
			if attempt < maxWriteAttempts {
				continue
			}
			return fileFailed(tools.EditFile, rel, err)
		}
		return out, err
	}
}

// editOnce makes the edit on the file as it is now. A lost race is returned as an error wrapping
// workspace.ErrPrecondition, for the caller to try again.
func editOnce(ctx context.Context, st workspace.Store, rel string, args editFileArgs, inv tools.Invocation) (tools.Output, error) {
	text, etag, failed, err := readText(ctx, st, inv.Team, tools.EditFile, rel)
	if failed != nil || err != nil {
		return *failed, err
	}
	switch n := strings.Count(text, args.Old); {
	case n == 0:
		hint := "Read the file with lucy_read_file and copy the exact text, whitespace and line breaks included."
		if strings.Contains(tools.CollapseSpace(text), strings.TrimSpace(tools.CollapseSpace(args.Old))) {
			hint = "It would match if whitespace were ignored: copy the exact spaces, tabs and line breaks from lucy_read_file."
		}
		return tools.ToolError("the text in \"old\" does not occur in %s. %s", rel, hint), nil
	case n > 1:
		return tools.ToolError("the text in \"old\" occurs %d times in %s; include more of the surrounding lines so that it "+
			"matches exactly once.", n, rel), nil
	}
	updated := strings.Replace(text, args.Old, args.New, 1)
	if len(updated) > tools.MaxFileBytes {
		return tools.ToolError("the edit would make %s %s, more than the 1 MB limit.", rel, HumanBytes(int64(len(updated)))), nil
	}
	if editRemovesMost(text, args.Old, updated) {
		if guard := tools.TextHash(text); !mayProceed(inv, guard) {
			size := HumanBytes(int64(len(text)))
			what := fmt.Sprintf("an edit that removes most of %s (%s)", rel, size)
			summary := fmt.Sprintf("I'd like to edit `%s` (%s), replacing %s of it with %s.", tools.MrkdwnEscape(rel), size,
				HumanBytes(int64(len(args.Old))), HumanBytes(int64(len(args.New))))
			if strings.TrimSpace(updated) == "" {
				what = fmt.Sprintf("an edit that empties %s (%s)", rel, size)
				summary = fmt.Sprintf("I'd like to empty `%s` (%s) with an edit.", tools.MrkdwnEscape(rel), size)
			}
			before := current{size: int64(len(text)), data: []byte(text), hash: guard}
			return holdForApproval(inv, rel, what, summary, changeDetails(before, []byte(updated)), guard), nil
		}
	}
	if _, err := st.Write(ctx, inv.Team, rel, []byte(updated), workspace.Cond{IfMatch: etag}); err != nil {
		if errors.Is(err, workspace.ErrPrecondition) {
			return tools.Output{}, err
		}
		return fileFailed(tools.EditFile, rel, err)
	}
	line := strings.Count(text[:strings.Index(text, args.Old)], "\n") + 1
	return tools.Output{
		Content: fmt.Sprintf("Edited %s: replaced %d line(s) at line %d with %d line(s). The file is now %s.",
			rel, strings.Count(args.Old, "\n")+1, line, strings.Count(args.New, "\n")+1, HumanBytes(int64(len(updated)))),
		Artifacts: []string{rel},
	}, nil
}

var _ = tools.Register(tools.Def{
	Spec: tools.Spec{
		Name:        tools.DeleteFile,
		Description: "Delete a file from the team's workspace. A person must approve it first. Directories cannot be deleted.",
		Destructive: true,
		Human:       "deleting a file",
	},
	Required: []string{"path"},
	Props: func() []tools.Prop {
		return []tools.Prop{tools.PathProp("The file to delete.")}
	},
	Approval: deleteFileApproval,
}, (*Workspace).deleteFile)

type deleteFileArgs struct {
	Path string `json:"path"`
}

func (w *Workspace) deleteFile(ctx context.Context, inv tools.Invocation) (tools.Output, error) {
	var args deleteFileArgs
	rel, err := DecodePath(inv, tools.DeleteFile, false, &args)
	if err != nil {
		return tools.Output{}, err
	}
	st, err := w.Store(inv.Team)
	if err != nil {
		return tools.Output{}, err
	}
	defer w.Lock(inv.Team)()
	info, err := st.Stat(ctx, inv.Team, rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) { // a dangling link has no Stat; Delete removes it
		return fileFailed(tools.DeleteFile, rel, err)
	}
	if info.Dir {
		return tools.ToolError("%s is a folder; only files can be deleted.", rel), nil
	}
	if err := st.Delete(ctx, inv.Team, rel); err != nil {
		return fileFailed(tools.DeleteFile, rel, err)
	}
	return tools.Output{Content: fmt.Sprintf("Deleted %s (%s).", rel, HumanBytes(info.Size))}, nil
}

// HumanBytes renders a size for people and models: 512 bytes, 1.2 KB, 3.4 MB.
func HumanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}

// deleteFileApproval names the file lucy_delete_file would delete.
func deleteFileApproval(args map[string]any) (summary, details string) {
	p := tools.ArgString(args, "path")
	if p == "" {
		p = "(no path given)"
	}
	return "delete the file " + p + " from the workspace", p
}
