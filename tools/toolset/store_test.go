package toolset_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/toolset"
	"github.com/lucy-agent/lucy/tools/tooltest"
)

// The tools that work on a team's files (the file tools, the generated documents, the scripts)
// behave the same on both stores, wired as the worker wires them.
func TestFileToolsOnEachStore(t *testing.T) {
	for _, tc := range tooltest.WorkspaceStores(t) {
		t.Run(tc.Name, func(t *testing.T) {
			r := toolset.New(toolset.Deps{Workspace: tc.Store(), Log: zerolog.Nop()}).Runner
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.ListFiles, `{}`), "The workspace has no files.")
			out := tooltest.MustRun(t, r, tools.WriteFile, `{"path": "reports/q3.md", "content": "# Q3\n\nRevenue: 10\n"}`)
			tooltest.WantOK(t, out, "Wrote 18 bytes to reports/q3.md (created it).")
			if !slices.Equal(out.Artifacts, []string{"reports/q3.md"}) {
				t.Errorf("artifacts = %v", out.Artifacts)
			}
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.WriteFile, `{"path": "./notes.txt", "content": ""}`), "notes.txt (created it)")
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.WriteFile, `{"path": "notes.txt", "content": "hello"}`), "(filled the empty file)")
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.WriteFile, `{"path": "notes.txt", "content": "hello"}`), "already holds exactly this content")
			if got := tooltest.MustRun(t, r, tools.ReadFile, `{"path": "reports/q3.md"}`).Content; got != "# Q3\n\nRevenue: 10\n" {
				t.Errorf("read = %q", got)
			}
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.ListFiles, `{}`), "The workspace has 2 file(s)", "notes.txt  (5 bytes", "reports/q3.md  (18 bytes")
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.ListFiles, `{"path": "reports"}`), "reports/ has 1 file(s)")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.ListFiles, `{"path": "nope"}`), "nope does not exist")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.ListFiles, `{"path": "notes.txt"}`), "is a file, not a folder")

			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.EditFile, `{"path": "reports/q3.md", "old": "Revenue: 10", "new": "Revenue: 12\nCosts: 4"}`),
				"Edited reports/q3.md: replaced 1 line(s) at line 3 with 2 line(s)")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.EditFile, `{"path": "reports/q3.md", "old": "Revenue: 10", "new": "x"}`), "does not occur")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.ReadFile, `{"path": "missing.txt"}`), "missing.txt does not exist")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.ReadFile, `{"path": "reports"}`), "reports is a folder")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.WriteFile, `{"path": "reports", "content": "x"}`), "reports is a folder")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.WriteFile, `{"path": "notes.txt/inner.txt", "content": "x"}`), "not a folder")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.ReadFile, `{"path": "img.bin"}`), "does not exist")

			// Replacing content waits for approval, and the approval holds for what the person saw.
			held := tooltest.WantHeld(t, tooltest.MustRun(t, r, tools.WriteFile, `{"path": "notes.txt", "content": "bye"}`), "overwriting notes.txt")
			tooltest.WantOK(t, tooltest.RunApproved(t, r, tools.WriteFile, `{"path": "notes.txt", "content": "bye"}`, true, held.Guard), "as approved")
			if got := tooltest.MustRun(t, r, tools.ReadFile, `{"path": "notes.txt"}`).Content; got != "bye" {
				t.Errorf("after approved overwrite = %q", got)
			}
			tooltest.WantHeld(t, tooltest.RunApproved(t, r, tools.WriteFile, `{"path": "notes.txt", "content": "again"}`, true, held.Guard), "changed after the person approved")

			// Paths that leave the workspace are refused before the store sees them.
			for _, bad := range []string{"../x.txt", "/etc/passwd", "a/../../x"} {
				_, err := tooltest.Run(t, r, tools.ReadFile, tooltest.JSONArgs(t, map[string]string{"path": bad}))
				tooltest.WantArgError(t, err, tools.ReadFile)
			}

			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.DeleteFile, `{"path": "reports"}`), "only files can be deleted")
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.DeleteFile, `{"path": "notes.txt"}`), "Deleted notes.txt (3 bytes).")
			tooltest.WantToolError(t, tooltest.MustRun(t, r, tools.DeleteFile, `{"path": "notes.txt"}`), "notes.txt does not exist")

			// A generated file, without Slack: saved in the workspace all the same.
			tooltest.WantOK(t, tooltest.MustRun(t, r, tools.GenerateCSV, `{"filename": "out/t", "rows": [["a","b"],["1","2"]]}`), "Created out/t.csv")
			if got := tooltest.MustRun(t, r, tools.ReadFile, `{"path": "out/t.csv"}`).Content; got != "a,b\r\n1,2\r\n" {
				t.Errorf("csv = %q", got)
			}

			// A script reads the workspace and creates files in it, whichever the store; it may not
			// replace a file it did not create.
			out = tooltest.MustRun(t, r, tools.RunScript, `{"code":"const n = files.read('out/t.csv').split('\\r\\n').length; files.write('count.txt', String(n)); files.list('out')"}`)
			tooltest.WantOK(t, out, "Files written: count.txt")
			if got := tooltest.MustRun(t, r, tools.ReadFile, `{"path": "count.txt"}`).Content; got != "3" {
				t.Errorf("count.txt = %q (script output %s)", got, out.Content)
			}
			out = tooltest.MustRun(t, r, tools.RunScript, `{"code":"files.write('count.txt', 'gone')"}`)
			if !out.IsError || !strings.Contains(out.Content, "already exists") {
				t.Errorf("script overwrite: %+v", out)
			}
		})
	}
}
