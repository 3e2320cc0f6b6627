package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// Replacing what a file holds destroys it as surely as deleting it, and lucy_delete_file waits for a
// person's approval. So the writes wait too when they would lose content:
//
//   - lucy_write_file and lucy_generate_csv, when the file exists, is not empty and holds something
//     else than what would be written. Creating a file, writing what it already holds, or filling an
//     empty file loses nothing and goes ahead.
//   - lucy_edit_file, when the edit leaves the file empty (or only whitespace) although it held text,
//     or when the text it replaces or removes is more than half of the file and at least
//     editMostMinBytes: without the second rule, replacing a whole file through one edit would
//     bypass the first. The floor keeps small edits of tiny files (a line of a short list) free.
//
// A call that waits does nothing and returns Output.NeedsApproval; the workflow asks the person and
// makes the same call again with Invocation.Approved. The request carries a Guard, the hash of the file
// as it was shown; an approved call with a Guard re-checks it under the workspace lock and asks again if
// the file changed in the meantime, so an approval never applies to content nobody saw. The write is
// conditional on the version it checked (workspace.Cond), so a change by another worker between the
// check and the write makes it check again.

// editMostMinBytes is the least an edit must replace or remove before "most of the file" needs
// approval.
const editMostMinBytes = 128

// Limits of the approval details: enough to recognise the file and the change, small enough for one
// Block Kit section (3,000 characters).
const (
	detailLines     = 6   // lines shown on each side of the first difference
	detailLineRunes = 100 // characters shown of each line
)

// current is a workspace file as a write found it.
type current struct {
	size int64
	data []byte // the whole content; nil when it is larger than tools.MaxFileBytes
	hash string // "sha256:<hex>" of the whole content: the Guard a person approves
	etag string // the store's version of it: the write is conditional on it
}

// readCurrent reads rel for a write that would replace it. exists is false when there is no such
// file; out is set when rel is something a write must not replace (a folder, a device).
func readCurrent(ctx context.Context, st workspace.Store, team, tool, rel string) (cur current, exists bool, out *tools.Output, err error) {
	data, info, err := st.Read(ctx, team, rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return current{}, false, nil, nil
	case errors.Is(err, syscall.EISDIR):
		o := tools.ToolError("%s is a folder; choose a file name inside it.", rel)
		return current{}, true, &o, nil
	case errors.Is(err, workspace.ErrNotRegular):
		o := tools.ToolError("%s is not a regular file; choose another name.", rel)
		return current{}, true, &o, nil
	case err != nil:
		o, err := fileFailed(tool, rel, err)
		return current{}, true, &o, err
	}
	cur = current{size: int64(len(data)), hash: tools.ContentHash(data), etag: info.ETag}
	if cur.size <= tools.MaxFileBytes {
		cur.data = data
	}
	return cur, true, nil, nil
}

// mayProceed reports whether a call that needs approval has it: approved, and (when the approval
// carries a Guard) for the content the file still holds.
func mayProceed(inv tools.Invocation, hash string) bool {
	return inv.Approved && (inv.Guard == "" || inv.Guard == hash)
}

// holdForApproval is the result of a call that waits for approval: nothing was done. what says what
// waits, for the model and the logs ("overwriting reports/q3.md (2.1 KB) with different content").
func holdForApproval(inv tools.Invocation, rel, what, summary, details, guard string) tools.Output {
	content := "Nothing was changed: " + what + " needs a person's approval."
	if inv.Approved {
		// The Guard did not match: the file changed after the person approved.
		content = "Nothing was changed: " + rel + " changed after the person approved, so " + what +
			" needs their approval again."
		details = "_The file changed after the earlier approval; this is what it holds now._\n" + details
	}
	return tools.Output{Content: content, NeedsApproval: &tools.ApprovalNeed{Summary: summary, Details: details, Guard: guard}}
}

// overwriteSummary is the approval prompt's sentence for replacing a whole file.
func overwriteSummary(rel string, before int64, after int) string {
	return fmt.Sprintf("I'd like to overwrite `%s` (%s) with new content (%s).", tools.MrkdwnEscape(rel),
		HumanBytes(before), HumanBytes(int64(after)))
}

// editRemovesMost reports whether replacing old (which occurs once in before) leaves after a change
// that needs approval; see the rules at the top of this file.
func editRemovesMost(before, old, after string) bool {
	if strings.TrimSpace(before) == "" {
		return false // nothing to lose
	}
	if strings.TrimSpace(after) == "" {
		return true
	}
	return len(old) >= editMostMinBytes && 2*len(old) > len(before)
}

// changeDetails shows a person what a write would change: both sizes and line counts and the first
// lines that differ (the common head and tail of the file left out), clipped, in a code block, with
// credentials masked. A current file that is binary or too large is described, not shown.
func changeDetails(before current, after []byte) string {
	var b strings.Builder
	if before.data == nil || !isText(before.data) {
		fmt.Fprintf(&b, "Now: a binary or very large file (%s). After: %s.\n", HumanBytes(before.size), describeText(after))
		writeCode(&b, nil, splitLines(string(after)))
		return b.String()
	}
	old, updated := splitLines(string(before.data)), splitLines(string(after))
	head := 0
	for head < len(old) && head < len(updated) && old[head] == updated[head] {
		head++
	}
	tail := 0
	for tail < len(old)-head && tail < len(updated)-head && old[len(old)-1-tail] == updated[len(updated)-1-tail] {
		tail++
	}
	removed, added := old[head:len(old)-tail], updated[head:len(updated)-tail]
	fmt.Fprintf(&b, "Now: %s. After: %s.\n", describeText(before.data), describeText(after))
	if len(removed) == 0 && len(added) == 0 { // only line endings or the final newline differ
		b.WriteString("The lines are the same; only line breaks or the end of the file differ.")
		return b.String()
	}
	fmt.Fprintf(&b, "From line %d: %d line(s) removed, %d added.\n", head+1, len(removed), len(added))
	writeCode(&b, removed, added)
	return b.String()
}

// writeCode writes removed lines ("- ") and added lines ("+ "), at most detailLines of each, as a
// mrkdwn code block.
func writeCode(b *strings.Builder, removed, added []string) {
	b.WriteString("```\n")
	side := func(lines []string, mark string) {
		for i, l := range lines {
			if i == detailLines {
				fmt.Fprintf(b, "… %d more line(s)\n", len(lines)-detailLines)
				break
			}
			b.WriteString(mark + showLine(l) + "\n")
		}
	}
	side(removed, "- ")
	side(added, "+ ")
	if len(removed) == 0 && len(added) == 0 {
		b.WriteString("(empty)\n")
	}
	b.WriteString("```")
}

// showLine makes one line of a file safe to show in a code block: without credentials (masked before
// the line is clipped, which could cut a URL short of what RedactCredentials recognises), without the
// characters that would end the block or make Slack render a mention or link, and clipped to
// detailLineRunes as shown, escapes included, so that the details stay within one section.
func showLine(l string) string {
	l = tools.RedactCredentials(strings.ToValidUTF8(strings.TrimSuffix(l, "\r"), "\uFFFD"))
	l = strings.ReplaceAll(l, "```", "`\u200b`\u200b`")
	var b strings.Builder
	shown := 0
	for _, c := range l {
		esc, width := string(c), 1
		switch c {
		case '&':
			esc, width = "&amp;", 5
		case '<':
			esc, width = "&lt;", 4
		case '>':
			esc, width = "&gt;", 4
		}
		if shown+width > detailLineRunes-1 {
			b.WriteString("…")
			break
		}
		shown += width
		b.WriteString(esc)
	}
	return b.String()
}

// splitLines splits text into lines; a final line break does not start another line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// describeText sizes a text for people: "empty", "1 line, 12 bytes", "42 lines, 2.1 KB".
func describeText(data []byte) string {
	if len(data) == 0 {
		return "empty"
	}
	n := len(splitLines(string(data)))
	unit := "lines"
	if n == 1 {
		unit = "line"
	}
	return fmt.Sprintf("%d %s, %s", n, unit, HumanBytes(int64(len(data))))
}

func isText(data []byte) bool { return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0 }
