package files

import (
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/workspace"
)

// The mistakes a model makes with the file tools come back as an *tools.ArgError naming the problem.
func TestFileToolsArgValidation(t *testing.T) {
	long := strings.Repeat("x", tools.MaxPathLen+1)
	tests := []struct {
		tool, args string
		want       []string
	}{
		{tools.DeleteFile, `{}`, []string{`missing required field "path" (string)`, `Example: {"path": "..."}`}},
		{tools.DeleteFile, `{"path": "../secrets.txt"}`, []string{`uses ".."`}},
		{tools.EditFile, `{"path": "a.txt", "old": "x"}`, []string{`missing required field "new"`}},
		{tools.EditFile, `{"path": "a.txt", "old": "", "new": "y"}`, []string{`"old" must not be empty`}},
		{tools.EditFile, `{"path": "a.txt", "old": "same", "new": "same"}`, []string{"are the same"}},
		{tools.ListFiles, `{"path": "/etc"}`, []string{"absolute path"}},
		{tools.ListFiles, `{"path": "a/../../b"}`, []string{`uses ".."`}},
		{tools.ReadFile, `{"path": ""}`, []string{`"path" must not be empty`}},
		{tools.ReadFile, `{"path": "` + long + `"}`, []string{`"path" is too long`}},
		{tools.ReadFile, `{"path": "a.txt", "offset": -1}`, []string{`"offset" must be at least 0`}},
		{tools.ReadFile, `{"path": "C:\\Users\\x.txt"}`, []string{"forward slashes"}},
		{tools.ReadFile, `{"path": "~/notes.txt"}`, []string{"absolute path"}},
		{tools.WriteFile, `{"path": "a.txt"}`, []string{`missing required field "content"`}},
		{tools.WriteFile, `{"path": ".", "content": "x"}`, []string{"give the path of a file"}},
		{tools.WriteFile, `{"path": "a/.lucy-tmp-x", "content": "x"}`, []string{"reserved"}},
	}
	r := newTestFiles(t, workspace.NewLocal(t.TempDir()))
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			_, err := run(t, r, tt.tool, tt.args)
			wantArgError(t, err, tt.tool, tt.want...)
		})
	}
	if err := tools.ValidateArgs(tools.ReadFile, `{"path": "a.txt", "offset": null}`); err != nil {
		t.Errorf("ValidateArgs(%s, offset null) = %v, want nil", tools.ReadFile, err)
	}
}

func TestDeleteFileApproval(t *testing.T) {
	tests := []struct{ args, summary, details string }{
		{`{"path": "reports/q3.md"}`, "delete the file reports/q3.md from the workspace", "reports/q3.md"},
		{`{"path": `, "delete the file (no path given) from the workspace", "(no path given)"},
	}
	for _, tt := range tests {
		summary, details := tools.ApprovalSummary(tools.DeleteFile, tt.args)
		if summary != tt.summary || details != tt.details {
			t.Errorf("ApprovalSummary(%s) = %q, %q; want %q, %q", tt.args, summary, details, tt.summary, tt.details)
		}
	}
	summary, details := tools.ApprovalSummary(tools.WriteFile, `{"path":"a.txt","content":"x"}`)
	if summary != "run lucy_write_file (writing a file)" || details != "{\n  \"path\": \"a.txt\",\n  \"content\": \"x\"\n}" {
		t.Errorf("ApprovalSummary(%s) = %q, %q", tools.WriteFile, summary, details)
	}
}
