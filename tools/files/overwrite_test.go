package files

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

func wantFile(tb testing.TB, path, want string) {
	tb.Helper()
	if data, err := os.ReadFile(path); err != nil || string(data) != want {
		tb.Errorf("%s = %q, %v; want %q", filepath.Base(path), data, err, want)
	}
}

func TestWriteFileOverwriteNeedsApproval(t *testing.T) {
	dataDir := t.TempDir()
	r := newTestFiles(t, workspace.NewLocal(dataDir))
	file := filepath.Join(dataDir, "workspaces", testTeam, "reports", "q3.md")
	v1 := "# Q3\n\nRevenue: 10\nCosts: 4\n"
	v2 := "# Q3\n\nRevenue: 12\nCosts: 4\n"
	write := func(content string) string {
		return jsonArgs(t, map[string]string{"path": "reports/q3.md", "content": content})
	}

	wantOK(t, mustRun(t, r, tools.WriteFile, write(v1)), "(created it)")
	out := mustRun(t, r, tools.WriteFile, write(v1))
	wantOK(t, out, "already holds exactly this content", "nothing was changed")
	if out.NeedsApproval != nil {
		t.Errorf("identical content asked for approval: %+v", out.NeedsApproval)
	}

	// Different content: nothing is written, and the person is asked.
	need := wantHeld(t, mustRun(t, r, tools.WriteFile, write(v2)), "overwriting reports/q3.md (27 bytes) with different content (27 bytes)",
		"needs a person's approval")
	wantFile(t, file, v1)
	if want := "I'd like to overwrite `reports/q3.md` (27 bytes) with new content (27 bytes)."; need.Summary != want {
		t.Errorf("Summary = %q, want %q", need.Summary, want)
	}
	wantContains(t, need.Details, "Now: 4 lines, 27 bytes. After: 4 lines, 27 bytes.", "From line 3: 1 line(s) removed, 1 added.",
		"```\n- Revenue: 10\n+ Revenue: 12\n```")
	if strings.Contains(need.Details, "Costs") || strings.Contains(need.Details, "# Q3") {
		t.Errorf("details show unchanged lines:\n%s", need.Details)
	}

	// Approved, for the content the person saw: written.
	wantOK(t, runAs(t, r, tools.WriteFile, write(v2), true, need.Guard), "Wrote 27 bytes to reports/q3.md (replaced the previous 27 bytes, as approved)")
	wantFile(t, file, v2)

	// The file changes between the request and the approved call: the approval does not carry over.
	need = wantHeld(t, mustRun(t, r, tools.WriteFile, write(v1)))
	if err := os.WriteFile(file, []byte("written by another run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	again := wantHeld(t, runAs(t, r, tools.WriteFile, write(v1), true, need.Guard), "changed after the person approved", "needs their approval again")
	wantFile(t, file, "written by another run\n")
	wantContains(t, again.Details, "The file changed after the earlier approval", "- written by another run")
	if again.Guard == need.Guard {
		t.Error("the new request has the old Guard")
	}
	wantOK(t, runAs(t, r, tools.WriteFile, write(v1), true, again.Guard), "as approved")
	wantFile(t, file, v1)

	// Approved without a Guard: no check (a workflow that does not pass it back).
	wantOK(t, runAs(t, r, tools.WriteFile, write(v2), true, ""), "as approved")
	wantFile(t, file, v2)

	// Emptying a file is overwriting it.
	wantHeld(t, mustRun(t, r, tools.WriteFile, write("")), "with different content (0 bytes)")
	wantFile(t, file, v2)
}

func TestOverwriteDetailsAreSafeAndShort(t *testing.T) {
	dataDir := t.TempDir()
	r := newTestFiles(t, workspace.NewLocal(dataDir))
	ws := filepath.Join(dataDir, "workspaces", testTeam)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	var old strings.Builder
	old.WriteString("<!channel> look at ```this``` & https://bob:hunter2@example.com/x?token=abc\n")
	// A credential that a clip at the line limit would cut short of its "@".
	old.WriteString(strings.Repeat("y", detailLineRunes-21) + " https://bob:hunter2@example.com/\n")
	// Escapes count toward the limit: these lines must not blow up the details.
	for i := range 50 {
		fmt.Fprintf(&old, "row %02d %s\n", i, strings.Repeat("<", 300))
	}
	if err := os.WriteFile(filepath.Join(ws, "big.txt"), []byte(old.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	need := wantHeld(t, mustRun(t, r, tools.WriteFile, `{"path": "big.txt", "content": "short\n"}`))
	d := need.Details
	for _, leak := range []string{"<!channel>", "hunter2", "token=abc", "```this```", strings.Repeat("&lt;", detailLineRunes/4)} {
		if strings.Contains(d, leak) {
			t.Errorf("details contain %q:\n%s", leak, d)
		}
	}
	wantContains(t, d, "&lt;!channel&gt;", "&amp;", "https://REDACTED@example.com", "… 46 more line(s)", "+ short")
	if strings.Count(d, "```") != 2 {
		t.Errorf("details do not hold exactly one code block:\n%s", d)
	}
	if n := len([]rune(d)); n > 2000 {
		t.Errorf("details are %d characters", n)
	}

	// A binary file is described, not shown.
	if err := os.WriteFile(filepath.Join(ws, "logo.png"), []byte("\x89PNG\r\n\x1a\n\x00\x00secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	need = wantHeld(t, mustRun(t, r, tools.WriteFile, `{"path": "logo.png", "content": "text"}`))
	wantContains(t, need.Details, "Now: a binary or very large file (16 bytes). After: 1 line, 4 bytes.", "+ text")
	if strings.Contains(need.Details, "secret") {
		t.Errorf("details show the binary file:\n%s", need.Details)
	}
	if !strings.Contains(need.Summary, "`logo.png`") {
		t.Errorf("Summary = %q", need.Summary)
	}
}

func TestEditFileThatRemovesMostNeedsApproval(t *testing.T) {
	dataDir := t.TempDir()
	r := newTestFiles(t, workspace.NewLocal(dataDir))
	ws := filepath.Join(dataDir, "workspaces", testTeam)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	block := strings.Repeat("a long paragraph of notes. ", 8) // 216 bytes
	tests := []struct {
		name, content, old, new string
		held                    string // "" when the edit goes ahead
	}{
		{"empties a tiny file", "todo: call Bob", "todo: call Bob", "", "an edit that empties"},
		{"leaves only whitespace", "keep this\n", "keep this", " ", "an edit that empties"},
		{"replaces most of a file", block + "\nend\n", block, "x", "an edit that removes most of"},
		{"rewrites a whole file", block, block, strings.Repeat("b", len(block)), "an edit that removes most of"},
		{"removes a small part", block + strings.Repeat("other ", 60), block, "", ""},
		{"removes most of a tiny file", "line one is long\nb\n", "line one is long\n", "", ""},
		{"empties a whitespace-only file", "  \n", "  \n", "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("e%d.txt", i)
			path := filepath.Join(ws, name)
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			args := jsonArgs(t, map[string]string{"path": name, "old": tt.old, "new": tt.new})
			after := strings.Replace(tt.content, tt.old, tt.new, 1)
			out := mustRun(t, r, tools.EditFile, args)
			if tt.held == "" {
				wantOK(t, out, "Edited "+name)
				wantFile(t, path, after)
				return
			}
			need := wantHeld(t, out, tt.held, "needs a person's approval")
			wantFile(t, path, tt.content)
			wantContains(t, need.Summary, "I'd like to ", "`"+name+"`")
			wantContains(t, need.Details, "Now: ")
			wantOK(t, runAs(t, r, tools.EditFile, args, true, need.Guard), "Edited "+name)
			wantFile(t, path, after)
		})
	}

	// An approval is for the file as it was shown.
	path := filepath.Join(ws, "g.txt")
	if err := os.WriteFile(path, []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := `{"path": "g.txt", "old": "notes\n", "new": ""}`
	need := wantHeld(t, mustRun(t, r, tools.EditFile, args))
	if err := os.WriteFile(path, []byte("notes\n"+block), 0o644); err != nil {
		t.Fatal(err)
	}
	// Now the edit removes little, so it goes ahead despite the stale Guard...
	wantOK(t, runAs(t, r, tools.EditFile, args, true, need.Guard), "Edited g.txt")
	// ...but one that still removes most asks again.
	if err := os.WriteFile(path, []byte("notes\nmore notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args = `{"path": "g.txt", "old": "notes\nmore notes\n", "new": ""}`
	need = wantHeld(t, mustRun(t, r, tools.EditFile, args))
	if err := os.WriteFile(path, []byte("notes\nmore notes\nand more\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args = `{"path": "g.txt", "old": "notes\nmore notes\nand more\n", "new": ""}`
	wantHeld(t, runAs(t, r, tools.EditFile, args, true, need.Guard), "changed after the person approved")
	wantFile(t, path, "notes\nmore notes\nand more\n")
}
