package main

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lucy-agent/lucy/audit"
	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/secrets"
	"github.com/lucy-agent/lucy/worker"
	"github.com/lucy-agent/lucy/workspace"
	"github.com/lucy-agent/lucy/workspace/s3test"
)

const cliKey = "ghp_1a2B3c4D5e6F7g8H9i0JkLmNoPqRsTuVwXyZ"

func secretsCmd(t *testing.T, env map[string]string, stdin string, args ...string) (code int, out, errOut string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(context.Background(), append([]string{"secrets"}, args...), func(k string) string { return env[k] }, strings.NewReader(stdin), &o, &e)
	return code, o.String(), e.String()
}

// `lucy secrets` beside a running `lucy dev`: the same data directory, the same key file, so the
// worker's store (worker.Credentials, as `lucy dev` builds it) reads what the operator set.
func TestSecretsCommandOnTheDataDirectory(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"LUCY_DATA_DIR": dir}
	code, out, errOut := secretsCmd(t, env, cliKey+"\n", "set", "--team", "T1", "GitHub")
	if code != 0 || !strings.Contains(out, "Stored the key for github in team T1 (owner operator)") || strings.Contains(out+errOut, "ghp_") {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	// What `lucy dev` would open: its config, the key file in the data directory.
	cfg, err := config.Load(config.ModeDev, func(k string) string {
		return map[string]string{"LUCY_DATA_DIR": dir, "OPENAI_API_KEY": "sk-test"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := ensureSecretsKey(cfg); err != nil {
		t.Fatal(err)
	}
	creds, err := worker.Credentials(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, m, err := creds.Get(context.Background(), "T1", "github"); err != nil || v != cliKey || m.Owner != "operator" {
		t.Fatalf("the worker reads %q %+v %v", v, m, err)
	}
	var disk []byte
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			disk = append(disk, b...)
		}
		return nil
	})
	if bytes.Contains(disk, []byte(cliKey)) {
		t.Fatal("the key is on disk in clear")
	}
	// Flags after the service work too; a second set replaces.
	if code, out, _ := secretsCmd(t, env, "second-value-0000\n", "set", "github", "--team", "T1"); code != 0 || !strings.Contains(out, "Replaced") {
		t.Fatalf("replace: %d %q", code, out)
	}
	code, out, _ = secretsCmd(t, env, "", "list", "--team", "T1")
	if code != 0 || !strings.Contains(out, "SERVICE") || !strings.Contains(out, "github") || !strings.Contains(out, "operator") ||
		strings.Contains(out, "second-value") {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, out, _ := secretsCmd(t, env, "", "list", "--team", "T2"); code != 0 || !strings.Contains(out, "No keys stored for team T2") {
		t.Fatalf("empty list: %d %q", code, out)
	}
	if code, out, _ := secretsCmd(t, env, "", "delete", "--team", "T1", "github"); code != 0 || !strings.Contains(out, "Deleted") {
		t.Fatalf("delete: %d %q", code, out)
	}
	if _, _, err := creds.Get(context.Background(), "T1", "github"); err != secrets.ErrNotFound {
		t.Fatalf("after delete: %v", err)
	}
	if code, _, errOut := secretsCmd(t, env, "", "delete", "--team", "T1", "github"); code != 1 || !strings.Contains(errOut, "has no key for github") {
		t.Fatalf("delete again: %d %q", code, errOut)
	}
	// The audit record has each change, by the operator, and no value.
	rec, err := audit.New(workspace.NewLocalAt(filepath.Join(dir, worker.StateDir)), nil).List(context.Background(), "T1", time.Time{}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for _, e := range rec {
		if e.Kind != audit.KindConnect || e.By != "operator" || strings.Contains(e.Summary, "second-value") {
			t.Errorf("record entry %+v", e)
		}
		said = append(said, e.Summary)
	}
	if want := []string{"the operator stored the key for github (lucy secrets)", "the operator replaced the key for github (lucy secrets)",
		"the operator deleted the key for github (lucy secrets)"}; strings.Join(said, "|") != strings.Join(want, "|") {
		t.Errorf("record = %q, want %q", said, want)
	}
}

// Mistakes an operator can make say what to do and change nothing.
func TestSecretsCommandMistakes(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"LUCY_DATA_DIR": dir}
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", nil, "set, list or delete"},
		{"", []string{"show", "--team", "T1"}, "unknown subcommand"},
		{"x\n", []string{"set", "github"}, "--team must be a Slack team ID"},
		{"x\n", []string{"set", "--team", "../T1", "github"}, "--team must be a Slack team ID"},
		{"", []string{"set", "--team", "T1", "github", cliKey}, "never from an argument"},
		{"\n", []string{"set", "--team", "T1", "github"}, "no key on standard input"},
		{"x\n", []string{"set", "--team", "T1", "git hub"}, "not a service name"},
		{strings.Repeat("k", secrets.MaxValueBytes+1), []string{"set", "--team", "T1", "github"}, "longer than"},
		{"", []string{"list", "--team", "T1", "github"}, "takes 0 service name(s)"},
	} {
		code, out, errOut := secretsCmd(t, env, c.stdin, c.args...)
		if code == 0 || !strings.Contains(errOut, c.want) || strings.Contains(out+errOut, cliKey) && !strings.Contains(c.want, "argument") {
			t.Errorf("%v: %d %q %q, want %q", c.args, code, out, errOut, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "T1", "secrets")); err == nil {
		t.Fatal("a refused command stored something")
	}
}

// Against a cluster: the bucket's state store and the cluster's LUCY_SECRETS_KEY, which is required.
func TestSecretsCommandOnABucket(t *testing.T) {
	endpoint := s3test.Server(t)
	env := map[string]string{
		"LUCY_DATA_DIR": t.TempDir(), "LUCY_WORKSPACE_STORE": "s3://" + s3test.Bucket + "/lucy", "LUCY_S3_ENDPOINT": endpoint,
		"LUCY_S3_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test-secret",
	}
	if code, _, errOut := secretsCmd(t, env, cliKey, "set", "--team", "T1", "github"); code != 1 || !strings.Contains(errOut, "LUCY_SECRETS_KEY is not set") {
		t.Fatalf("without the cluster's key: %d %q", code, errOut)
	}
	env["LUCY_SECRETS_KEY"] = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	if code, out, errOut := secretsCmd(t, env, cliKey, "set", "--team", "T1", "github"); code != 0 {
		t.Fatalf("set: %d %q %q", code, out, errOut)
	}
	// A worker of the cluster reads it from the bucket.
	cfg, err := config.Load(config.ModeWorker, func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return map[string]string{"SLACK_BOT_TOKEN": "xoxb-1", "OPENAI_API_KEY": "sk-test"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := worker.Credentials(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, err := creds.Get(context.Background(), "T1", "github"); err != nil || v != cliKey {
		t.Fatalf("the worker reads %q %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(env["LUCY_DATA_DIR"], "state")); err == nil {
		t.Fatal("the key went to the local folder, not the bucket")
	}
}
