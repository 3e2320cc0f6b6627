package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/memory"
	"github.com/lucy-agent/lucy/worker"
)

func memoryCmd(t *testing.T, env map[string]string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), append([]string{"memory"}, args...), func(k string) string { return env[k] }, strings.NewReader(""), &o, &e)
	return code, o.String(), e.String()
}

// `lucy memory` beside a running `lucy dev`: the notes its worker wrote (worker.Memory over the
// same data directory) are exported, and deleted only with --yes.
func TestMemoryCommandExportsAndDeletes(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"LUCY_DATA_DIR": dir}
	cfg, err := config.Load(config.ModeDev, func(k string) string {
		return map[string]string{"LUCY_DATA_DIR": dir, "OPENAI_API_KEY": "sk-test"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	store, err := worker.Memory(cfg, nil, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	for _, text := range []string{"Acme pays in EUR.", "Standup is at 9:30."} {
		if _, _, err := store.Remember(ctx, "T1", memory.Draft{Scope: memory.Workspace, Text: text, Source: memory.Source{By: "U1", Via: memory.ViaTold}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := store.Remember(ctx, "T2", memory.Draft{Scope: memory.Workspace, Text: "Other team.", Source: memory.Source{By: "U9", Via: memory.ViaTold}}); err != nil {
		t.Fatal(err)
	}

	code, out, errOut := memoryCmd(t, env, "export", "--team", "T1")
	if code != 0 {
		t.Fatalf("export: %d %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(errOut, "Exported 2 notes of team T1") {
		t.Fatalf("export = %q / %q", out, errOut)
	}
	var n memory.Note
	if err := json.Unmarshal([]byte(lines[0]), &n); err != nil || n.Text != "Acme pays in EUR." || n.Source.By != "U1" || n.Team != "T1" {
		t.Fatalf("first line %q: %+v %v", lines[0], n, err)
	}

	code, _, errOut = memoryCmd(t, env, "delete", "--team", "T1")
	if code == 0 || !strings.Contains(errOut, "would forget all 2 notes of team T1") || !strings.Contains(errOut, "--yes") {
		t.Fatalf("delete without --yes: %d %q", code, errOut)
	}
	if all, _ := store.All(ctx, "T1"); len(all) != 2 {
		t.Fatal("delete without --yes deleted")
	}
	code, out, errOut = memoryCmd(t, env, "delete", "--team", "T1", "--yes")
	if code != 0 || !strings.Contains(out, "Forgot 2 notes of team T1") {
		t.Fatalf("delete: %d %q %q", code, out, errOut)
	}
	if all, _ := store.All(ctx, "T1"); len(all) != 0 {
		t.Fatalf("%d notes left", len(all))
	}
	if all, _ := store.All(ctx, "T2"); len(all) != 1 {
		t.Fatal("another team's notes were deleted")
	}

	for _, args := range [][]string{{"export"}, {"export", "--team", "../x"}, {"purge", "--team", "T1"}, {"export", "--team", "T1", "--yes"}} {
		if code, _, errOut := memoryCmd(t, env, args...); code == 0 || errOut == "" {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
}
