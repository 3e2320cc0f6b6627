package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunScriptComputesOverWorkspaceFiles(t *testing.T) {
	r := newTestRegistry(t, Deps{})
	dir := filepath.Join(r.deps.DataDir, "workspaces", testTeam)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sales.csv"), []byte("region,amount\nnorth,10\nsouth,32\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, r, RunScript, `{"code":"const rows = files.read('sales.csv').trim().split('\\n').slice(1); const total = rows.reduce((s, l) => s + Number(l.split(',')[1]), 0); files.write('total.txt', String(total)); console.log('total', total); total"}`)
	wantOK(t, out, "Output:\ntotal 42", "Value: 42", "Files written: total.txt")
	if b, err := os.ReadFile(filepath.Join(dir, "total.txt")); err != nil || string(b) != "42" {
		t.Fatalf("total.txt = %q, %v", b, err)
	}
	if len(out.Artifacts) != 1 || out.Artifacts[0] != "total.txt" {
		t.Errorf("artifacts %v", out.Artifacts)
	}

	// A person's file is not replaced by a script; another team's workspace is out of reach.
	out = mustRun(t, r, RunScript, `{"code":"files.write('sales.csv', 'gone')"}`)
	if !out.IsError || !strings.Contains(out.Content, "already exists") {
		t.Fatalf("overwrite: %+v", out)
	}
	if err := os.MkdirAll(filepath.Join(r.deps.DataDir, "workspaces", "TOTHER"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.deps.DataDir, "workspaces", "TOTHER", "secret.txt"), []byte("s3cret"), 0o644)
	out = mustRun(t, r, RunScript, `{"code":"files.read('../TOTHER/secret.txt')"}`)
	if !out.IsError || !strings.Contains(out.Content, "leaves the workspace") || strings.Contains(out.Content, "s3cret") {
		t.Fatalf("other team: %+v", out)
	}
}

func TestRunScriptReportsErrorsAndLimits(t *testing.T) {
	r := newTestRegistry(t, Deps{})
	out := mustRun(t, r, RunScript, `{"code":"console.log('before'); null.x"}`)
	if !out.IsError || !strings.Contains(out.Content, "TypeError") || !strings.Contains(out.Content, "before") {
		t.Fatalf("%+v", out)
	}
	out = mustRun(t, r, RunScript, `{"code":"for (let i = 0; i < 100000; i++) console.log('line ' + i)"}`)
	if !strings.Contains(out.Content, "more were dropped") || len(out.Content) > MaxOutputChars {
		t.Fatalf("output not capped: %d bytes", len(out.Content))
	}
	_, err := run(t, r, RunScript, `{"code":""}`)
	wantArgError(t, err, RunScript, `"code" must not be empty`)
}
