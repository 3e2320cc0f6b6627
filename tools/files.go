package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// Workspace files. Every team has its own folder, DataDir/workspaces/<team>/, and every operation goes
// through an *os.Root opened on it, so that neither ".." nor a symbolic link can lead outside it; the
// lexical checks in cleanPath come first only to give the model a precise message.

const tmpPrefix = ".lucy-tmp-" // in-progress atomic writes; hidden from listings

// cleanPath validates a model-given workspace path and returns it cleaned, with forward slashes.
// allowRoot accepts "" and "." as the workspace itself (for listings).
func cleanPath(tool, p string, allowRoot bool) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" || p == "." || p == "./" {
		if allowRoot {
			return ".", nil
		}
		return "", argErrorf(tool, "give the path of a file relative to the workspace, e.g. \"reports/q3.md\"")
	}
	switch {
	case len(p) > maxPathLen:
		return "", argErrorf(tool, "the path is too long (%d bytes; the limit is %d)", len(p), maxPathLen)
	case strings.ContainsRune(p, 0) || !utf8.ValidString(p):
		return "", argErrorf(tool, "the path contains invalid characters")
	case strings.Contains(p, `\`):
		return "", argErrorf(tool, "use forward slashes in paths, e.g. \"reports/q3.md\" (got %q)", p)
	case strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~") || (len(p) >= 2 && p[1] == ':'):
		return "", argErrorf(tool, "%q is an absolute path; paths are relative to the team's workspace, e.g. \"reports/q3.md\"", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", argErrorf(tool, "%q uses \"..\"; paths must stay inside the team's workspace", p)
		}
		if strings.HasPrefix(seg, tmpPrefix) {
			return "", argErrorf(tool, "names starting with %q are reserved", tmpPrefix)
		}
	}
	p = path.Clean(p)
	if p == "." && !allowRoot {
		return "", argErrorf(tool, "give the path of a file, not the workspace itself")
	}
	return p, nil
}

// validTeam reports whether a team ID is safe as a folder name.
func validTeam(team string) bool {
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

// workspace opens the team's workspace folder, creating it on first use. The caller closes it.
func (r *Registry) workspace(team string) (*os.Root, error) {
	if r.deps.DataDir == "" {
		return nil, errors.New("workspace: tools.Deps.DataDir is not set")
	}
	if !validTeam(team) {
		return nil, fmt.Errorf("workspace: invalid team ID %q", team)
	}
	dir := filepath.Join(r.deps.DataDir, "workspaces", team)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return root, nil
}

// lock serializes the writes to one team's workspace on this worker, so that two parallel edits of a
// file cannot lose one another's change.
func (r *Registry) lock(team string) func() {
	m, _ := r.files.LoadOrStore(team, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// fileFailed turns a file system error on rel into what the model should see.
func fileFailed(tool, rel string, err error) (Output, error) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return toolError("%s does not exist in the workspace. Use lucy_list_files to see what is there.", rel), nil
	case strings.Contains(err.Error(), "path escapes from parent"): // os.Root's refusal (unexported error)
		return Output{}, argErrorf(tool, "%q leads outside the team's workspace", rel)
	case errors.Is(err, syscall.ENOTDIR), errors.Is(err, fs.ErrExist): // ErrExist: MkdirAll met a file
		return toolError("a part of %s is a file, not a folder.", rel), nil
	case errors.Is(err, syscall.EISDIR):
		return toolError("%s is a folder, not a file.", rel), nil
	case errors.Is(err, fs.ErrPermission):
		return toolError("permission denied for %s.", rel), nil
	case errors.Is(err, syscall.ENOSPC):
		return toolError("the disk is full; %s was not written.", rel), nil
	}
	return Output{}, fmt.Errorf("%s %s: %w", tool, rel, err)
}

// readText reads a workspace text file of at most MaxFileBytes.
func readText(root *os.Root, tool, rel string) (string, *Output, error) {
	info, err := root.Stat(rel)
	if err != nil {
		out, err := fileFailed(tool, rel, err)
		return "", &out, err
	}
	if info.IsDir() {
		out := toolError("%s is a folder; use lucy_list_files to see its files.", rel)
		return "", &out, nil
	}
	if info.Size() > MaxFileBytes {
		out := toolError("%s is %s, more than the 1 MB limit for text files.", rel, humanBytes(info.Size()))
		return "", &out, nil
	}
	data, err := root.ReadFile(rel)
	if err != nil {
		out, err := fileFailed(tool, rel, err)
		return "", &out, err
	}
	if bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data) {
		out := toolError("%s is a binary file (%s); only text files can be read or edited.", rel, humanBytes(int64(len(data))))
		return "", &out, nil
	}
	return string(data), nil, nil
}

// writeAtomic replaces rel with data through a temporary file and a rename, so that a reader (or a
// crash) never sees half a file. It creates the parent folders.
func writeAtomic(root *os.Root, rel string, data []byte) error {
	if dir := path.Dir(rel); dir != "." {
		if err := root.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	tmp := path.Join(path.Dir(rel), tmpPrefix+rand.Text()[:12])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
	}
	return err
}

// pathed is the arguments of a tool that works on one workspace path.
type pathed interface{ filePath() string }

func (a *listFilesArgs) filePath() string  { return a.Path }
func (a *readFileArgs) filePath() string   { return a.Path }
func (a *writeFileArgs) filePath() string  { return a.Path }
func (a *editFileArgs) filePath() string   { return a.Path }
func (a *deleteFileArgs) filePath() string { return a.Path }

// decodePath decodes a file tool's arguments into args and returns its path, cleaned and checked to
// stay inside the workspace.
func decodePath(e entry, inv Invocation, tool string, allowRoot bool, args pathed) (string, error) {
	if err := decodeArgs(e, inv.Arguments, args); err != nil {
		return "", err
	}
	return cleanPath(tool, args.filePath(), allowRoot)
}

type listFilesArgs struct {
	Path string `json:"path"`
}

func (r *Registry) listFiles(_ context.Context, e entry, inv Invocation) (Output, error) {
	var args listFilesArgs
	dir, err := decodePath(e, inv, ListFiles, true, &args)
	if err != nil {
		return Output{}, err
	}
	root, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	if info, err := root.Stat(dir); err != nil {
		return fileFailed(ListFiles, dir, err)
	} else if !info.IsDir() {
		return toolError("%s is a file, not a folder; use lucy_read_file to read it.", dir), nil
	}

	var lines []string
	var total int64
	count := 0
	err = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed while we walked
		}
		count++
		total += info.Size()
		if count <= maxListedFiles {
			lines = append(lines, fmt.Sprintf("%s  (%s, modified %s)", p, humanBytes(info.Size()),
				info.ModTime().UTC().Format("2006-01-02 15:04 UTC")))
		}
		return nil
	})
	if err != nil {
		return fileFailed(ListFiles, dir, err)
	}
	where := "The workspace"
	if dir != "." {
		where = dir + "/"
	}
	if count == 0 {
		return Output{Content: where + " has no files."}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s has %d file(s), %s in all:\n", where, count, humanBytes(total))
	b.WriteString(strings.Join(lines, "\n"))
	if count > maxListedFiles {
		fmt.Fprintf(&b, "\n... and %d more (list a folder to see them).", count-maxListedFiles)
	}
	return Output{Content: b.String()}, nil
}

type readFileArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
}

func (r *Registry) readFile(_ context.Context, e entry, inv Invocation) (Output, error) {
	var args readFileArgs
	rel, err := decodePath(e, inv, ReadFile, false, &args)
	if err != nil {
		return Output{}, err
	}
	root, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	text, failed, err := readText(root, ReadFile, rel)
	if failed != nil || err != nil {
		return *failed, err
	}
	if text == "" {
		return Output{Content: rel + " is empty (0 bytes)."}, nil
	}
	if args.Offset >= len(text) {
		return toolError("offset %d is past the end of %s (%d bytes).", args.Offset, rel, len(text)), nil
	}
	part, start, next := window(text, args.Offset, readWindowBytes)
	if next == 0 && start == 0 {
		return Output{Content: part}, nil
	}
	msg := fmt.Sprintf("%s\n\n[Showing bytes %d to %d of %d of %s.", part, start, start+len(part), len(text), rel)
	if next > 0 {
		msg += fmt.Sprintf(" Call lucy_read_file again with offset=%d to read on.", next)
	}
	return Output{Content: msg + "]"}, nil
}

type writeFileArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (r *Registry) writeFile(_ context.Context, e entry, inv Invocation) (Output, error) {
	var args writeFileArgs
	rel, err := decodePath(e, inv, WriteFile, false, &args)
	if err != nil {
		return Output{}, err
	}
	if len(args.Content) > MaxFileBytes {
		return Output{}, argErrorf(WriteFile, "content is %s; the limit is 1 MB per file", humanBytes(int64(len(args.Content))))
	}
	root, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	defer r.lock(inv.Team)()

	data := []byte(args.Content)
	what, hold, err := checkReplace(root, WriteFile, rel, data, inv)
	if err != nil {
		return Output{}, err
	}
	if hold != nil {
		return *hold, nil
	}
	if what == "" {
		return Output{
			Content:   fmt.Sprintf("%s already holds exactly this content (%s); nothing was changed.", rel, humanBytes(int64(len(data)))),
			Artifacts: []string{rel},
		}, nil
	}
	if err := writeAtomic(root, rel, data); err != nil {
		return fileFailed(WriteFile, rel, err)
	}
	return Output{
		Content:   fmt.Sprintf("Wrote %s to %s (%s).", humanBytes(int64(len(data))), rel, what),
		Artifacts: []string{rel},
	}, nil
}

// checkReplace decides, under the workspace lock, whether writing data to rel (replacing the whole
// file) may go ahead. It returns what the write does for the result ("created it", "replaced the
// previous 2.1 KB"), "" when rel already holds data (nothing to write), or hold: the result to return
// instead, for a call that must wait for approval or cannot write there at all.
func checkReplace(root *os.Root, tool, rel string, data []byte, inv Invocation) (what string, hold *Output, err error) {
	cur, exists, out, err := readCurrent(root, tool, rel)
	switch {
	case out != nil || err != nil:
		return "", out, err
	case !exists:
		return "created it", nil, nil
	case cur.data != nil && bytes.Equal(cur.data, data):
		return "", nil, nil
	case cur.size == 0:
		return "filled the empty file", nil, nil
	case mayProceed(inv, cur.hash):
		return fmt.Sprintf("replaced the previous %s, as approved", humanBytes(cur.size)), nil, nil
	}
	o := holdForApproval(inv, rel,
		fmt.Sprintf("overwriting %s (%s) with different content (%s)", rel, humanBytes(cur.size), humanBytes(int64(len(data)))),
		overwriteSummary(rel, cur.size, len(data)), changeDetails(cur, data), cur.hash)
	return "", &o, nil
}

type editFileArgs struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

func (r *Registry) editFile(_ context.Context, e entry, inv Invocation) (Output, error) {
	var args editFileArgs
	rel, err := decodePath(e, inv, EditFile, false, &args)
	if err != nil {
		return Output{}, err
	}
	if args.Old == args.New {
		return Output{}, argErrorf(EditFile, "\"old\" and \"new\" are the same, so nothing would change")
	}
	root, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	defer r.lock(inv.Team)()

	text, failed, err := readText(root, EditFile, rel)
	if failed != nil || err != nil {
		return *failed, err
	}
	switch n := strings.Count(text, args.Old); {
	case n == 0:
		hint := "Read the file with lucy_read_file and copy the exact text, whitespace and line breaks included."
		if strings.Contains(collapseSpace(text), strings.TrimSpace(collapseSpace(args.Old))) {
			hint = "It would match if whitespace were ignored: copy the exact spaces, tabs and line breaks from lucy_read_file."
		}
		return toolError("the text in \"old\" does not occur in %s. %s", rel, hint), nil
	case n > 1:
		return toolError("the text in \"old\" occurs %d times in %s; include more of the surrounding lines so that it "+
			"matches exactly once.", n, rel), nil
	}
	updated := strings.Replace(text, args.Old, args.New, 1)
	if len(updated) > MaxFileBytes {
		return toolError("the edit would make %s %s, more than the 1 MB limit.", rel, humanBytes(int64(len(updated)))), nil
	}
	if editRemovesMost(text, args.Old, updated) {
		if guard := textHash(text); !mayProceed(inv, guard) {
			size := humanBytes(int64(len(text)))
			what := fmt.Sprintf("an edit that removes most of %s (%s)", rel, size)
			summary := fmt.Sprintf("I'd like to edit `%s` (%s), replacing %s of it with %s.", mrkdwnEscape(rel), size,
				humanBytes(int64(len(args.Old))), humanBytes(int64(len(args.New))))
			if strings.TrimSpace(updated) == "" {
				what = fmt.Sprintf("an edit that empties %s (%s)", rel, size)
				summary = fmt.Sprintf("I'd like to empty `%s` (%s) with an edit.", mrkdwnEscape(rel), size)
			}
			before := current{size: int64(len(text)), data: []byte(text), hash: guard}
			return holdForApproval(inv, rel, what, summary, changeDetails(before, []byte(updated)), guard), nil
		}
	}
	if err := writeAtomic(root, rel, []byte(updated)); err != nil {
		return fileFailed(EditFile, rel, err)
	}
	line := strings.Count(text[:strings.Index(text, args.Old)], "\n") + 1
	return Output{
		Content: fmt.Sprintf("Edited %s: replaced %d line(s) at line %d with %d line(s). The file is now %s.",
			rel, strings.Count(args.Old, "\n")+1, line, strings.Count(args.New, "\n")+1, humanBytes(int64(len(updated)))),
		Artifacts: []string{rel},
	}, nil
}

type deleteFileArgs struct {
	Path string `json:"path"`
}

func (r *Registry) deleteFile(_ context.Context, e entry, inv Invocation) (Output, error) {
	var args deleteFileArgs
	rel, err := decodePath(e, inv, DeleteFile, false, &args)
	if err != nil {
		return Output{}, err
	}
	root, err := r.workspace(inv.Team)
	if err != nil {
		return Output{}, err
	}
	defer root.Close()
	defer r.lock(inv.Team)()

	info, err := root.Lstat(rel)
	if err != nil {
		return fileFailed(DeleteFile, rel, err)
	}
	if info.IsDir() {
		return toolError("%s is a folder; only files can be deleted.", rel), nil
	}
	if err := root.Remove(rel); err != nil {
		return fileFailed(DeleteFile, rel, err)
	}
	return Output{Content: fmt.Sprintf("Deleted %s (%s).", rel, humanBytes(info.Size()))}, nil
}

// humanBytes renders a size for people and models: 512 bytes, 1.2 KB, 3.4 MB.
func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d bytes", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KB", float64(n)/1024)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/(1024*1024))
}
