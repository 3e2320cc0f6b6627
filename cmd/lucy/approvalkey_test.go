package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/signing"
)

func loadCfg(t *testing.T, mode config.Mode, kv map[string]string) *config.Config {
	t.Helper()
	if mode == config.ModeDev {
		kv["OPENAI_API_KEY"] = "sk-test"
	}
	cfg, err := config.Load(mode, envOf(kv))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// Without Slack and without LUCY_APPROVAL_KEY, `lucy dev` makes a random key in LUCY_DATA_DIR, keeps
// it across restarts, and `lucy chat` signs with the same one, so the worker of `lucy dev` accepts a
// "yes" typed in either terminal.
func TestApprovalKeyFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	dev := loadCfg(t, config.ModeDev, map[string]string{"LUCY_DATA_DIR": dir})
	if !dev.ApprovalKey.IsZero() {
		t.Fatal("config.Load found a key without Slack or LUCY_APPROVAL_KEY")
	}
	if err := ensureApprovalKey(dev, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, approvalKeyFile)
	if dev.ApprovalKey.IsZero() || dev.ApprovalKeySource != path {
		t.Fatalf("dev key %v from %q, want one from %s", dev.ApprovalKey, dev.ApprovalKeySource, path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %04o, want 0600", fi.Mode().Perm())
	}

	restarted := loadCfg(t, config.ModeDev, map[string]string{"LUCY_DATA_DIR": dir})
	if err := ensureApprovalKey(restarted, true); err != nil {
		t.Fatal(err)
	}
	if !restarted.ApprovalKey.Equal(dev.ApprovalKey) {
		t.Fatal("a restart of lucy dev made a new key: pending approvals would be refused")
	}

	chat := loadCfg(t, config.ModeChat, map[string]string{"LUCY_DATA_DIR": dir})
	if err := ensureApprovalKey(chat, false); err != nil {
		t.Fatal(err)
	}
	m := signing.Message{Team: "TLOCAL", Channel: "CLOCAL", ThreadTS: "1.0", TS: "1.0", User: "ULOCAL", Text: "yes"}
	if err := dev.ApprovalKey.VerifyMessage(m, chat.ApprovalKey.SignMessage(m)); err != nil {
		t.Fatalf("the worker of lucy dev refuses what lucy chat signs: %v", err)
	}
}

// `lucy chat` never makes a key of its own: nothing it signed would verify.
func TestChatNeedsDevsKey(t *testing.T) {
	dir := t.TempDir()
	chat := loadCfg(t, config.ModeChat, map[string]string{"LUCY_DATA_DIR": dir})
	err := ensureApprovalKey(chat, false)
	if err == nil || !strings.Contains(err.Error(), "start `lucy dev` first") {
		t.Fatalf("err = %v, want the advice to start lucy dev", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, approvalKeyFile)); !os.IsNotExist(serr) {
		t.Fatalf("lucy chat created a key file (%v)", serr)
	}
}

// A key from the environment wins and no file is touched.
func TestApprovalKeyFromEnvironmentNeedsNoFile(t *testing.T) {
	for name, kv := range map[string]map[string]string{
		"LUCY_APPROVAL_KEY": {"LUCY_APPROVAL_KEY": "0123456789abcdef0123456789abcdef"},
		"SLACK_BOT_TOKEN":   {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xapp-1"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			kv["LUCY_DATA_DIR"] = dir
			cfg := loadCfg(t, config.ModeDev, kv)
			want := cfg.ApprovalKey
			if err := ensureApprovalKey(cfg, true); err != nil {
				t.Fatal(err)
			}
			if !cfg.ApprovalKey.Equal(want) || cfg.ApprovalKeySource != name {
				t.Fatalf("key replaced: source %q", cfg.ApprovalKeySource)
			}
			if _, err := os.Stat(filepath.Join(dir, approvalKeyFile)); !os.IsNotExist(err) {
				t.Fatalf("a key file was written although %s is set (%v)", name, err)
			}
		})
	}
}

func TestApprovalKeyFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{"too short", "short\n", 0o600, "is not valid"},
		{"empty", "", 0o600, "is not valid"},
		{"readable by others", strings.Repeat("k", 43), 0o644, "chmod 600"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mode&0o077 != 0 && runtime.GOOS == "windows" {
				t.Skip("no Unix permissions")
			}
			dir := t.TempDir()
			path := filepath.Join(dir, approvalKeyFile)
			if err := os.WriteFile(path, []byte(tc.content), tc.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, tc.mode); err != nil { // umask may have narrowed it
				t.Fatal(err)
			}
			for _, create := range []bool{true, false} {
				cfg := loadCfg(t, config.ModeChat, map[string]string{"LUCY_DATA_DIR": dir})
				err := ensureApprovalKey(cfg, create)
				if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Errorf("create=%v: err = %v, want one line containing %q", create, err, tc.want)
				}
				if !cfg.ApprovalKey.IsZero() {
					t.Errorf("create=%v: a key was set despite the error", create)
				}
			}
			if b, _ := os.ReadFile(path); string(b) != tc.content {
				t.Errorf("the bad key file was overwritten: %q", b)
			}
		})
	}
}
