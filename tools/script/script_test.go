package script

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/sandbox"
	"github.com/lucy-agent/lucy/tools"
	"github.com/lucy-agent/lucy/tools/files"
	"github.com/lucy-agent/lucy/tools/tooltest"
	"github.com/lucy-agent/lucy/workspace"
)

func TestRunScriptComputesOverWorkspaceFiles(t *testing.T) {
	data := t.TempDir()
	r := newTestScripts(t, data)
	dir := filepath.Join(data, "workspaces", tooltest.Team)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sales.csv"), []byte("region,amount\nnorth,10\nsouth,32\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := tooltest.MustRun(t, r, tools.RunScript, `{"code":"const rows = files.read('sales.csv').trim().split('\\n').slice(1); const total = rows.reduce((s, l) => s + Number(l.split(',')[1]), 0); files.write('total.txt', String(total)); console.log('total', total); total"}`)
	tooltest.WantOK(t, out, "Output:\ntotal 42", "Value: 42", "Files written: total.txt")
	if b, err := os.ReadFile(filepath.Join(dir, "total.txt")); err != nil || string(b) != "42" {
		t.Fatalf("total.txt = %q, %v", b, err)
	}
	if len(out.Artifacts) != 1 || out.Artifacts[0] != "total.txt" {
		t.Errorf("artifacts %v", out.Artifacts)
	}

	// A person's file is not replaced by a script; another team's workspace is out of reach.
	out = tooltest.MustRun(t, r, tools.RunScript, `{"code":"files.write('sales.csv', 'gone')"}`)
	if !out.IsError || !strings.Contains(out.Content, "already exists") {
		t.Fatalf("overwrite: %+v", out)
	}
	if err := os.MkdirAll(filepath.Join(data, "workspaces", "TOTHER"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(data, "workspaces", "TOTHER", "secret.txt"), []byte("s3cret"), 0o644)
	out = tooltest.MustRun(t, r, tools.RunScript, `{"code":"files.read('../TOTHER/secret.txt')"}`)
	if !out.IsError || !strings.Contains(out.Content, "leaves the workspace") || strings.Contains(out.Content, "s3cret") {
		t.Fatalf("other team: %+v", out)
	}
}

func TestRunScriptReportsErrorsAndLimits(t *testing.T) {
	r := newTestScripts(t, t.TempDir())
	out := tooltest.MustRun(t, r, tools.RunScript, `{"code":"console.log('before'); null.x"}`)
	if !out.IsError || !strings.Contains(out.Content, "TypeError") || !strings.Contains(out.Content, "before") {
		t.Fatalf("%+v", out)
	}
	out = tooltest.MustRun(t, r, tools.RunScript, `{"code":"for (let i = 0; i < 100000; i++) console.log('line ' + i)"}`)
	if !strings.Contains(out.Content, "more were dropped") || len(out.Content) > tools.MaxOutputChars {
		t.Fatalf("output not capped: %d bytes", len(out.Content))
	}
	_, err := tooltest.Run(t, r, tools.RunScript, `{"code":""}`)
	tooltest.WantArgError(t, err, tools.RunScript, `"code" must not be empty`)
}

// The mistakes a model makes come back as an *tools.ArgError.
func TestRunScriptArgValidation(t *testing.T) {
	_, err := tooltest.Run(t, newTestScripts(t, t.TempDir()), tools.RunScript, `{}`)
	tooltest.WantArgError(t, err, tools.RunScript, `missing required field "code"`)
}

// newTestScripts runs scripts over the workspaces under data, in this test binary as the sandbox's
// child (main_test.go).
func newTestScripts(tb testing.TB, data string) *tools.Runner {
	tb.Helper()
	ws := files.New(workspace.NewLocal(data), nil)
	return tooltest.Runner(tb, ws, New(ws, sandbox.Command{}, sandbox.Limits{}))
}
