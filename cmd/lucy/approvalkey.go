package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/lucy-agent/lucy/config"
	"github.com/lucy-agent/lucy/signing"
)

// approvalKeyFile, in LUCY_DATA_DIR, holds the approval key of a stack without Slack: with neither
// LUCY_APPROVAL_KEY nor SLACK_BOT_TOKEN there is nothing to derive a shared key from, yet the
// terminal gateway must sign what it hands off and the worker must check it. `lucy dev` creates it,
// `lucy chat` (a second gateway on the same stack) reads it.
const approvalKeyFile = "approval.key"

// ensureApprovalKey gives cfg an approval key when config.Load found none, from the key file in
// LUCY_DATA_DIR; create makes the file when it is missing (`lucy dev`), otherwise a missing file is
// an error (`lucy chat`: a key of its own would sign nothing the worker accepts).
func ensureApprovalKey(cfg *config.Config, create bool) error {
	if !cfg.ApprovalKey.IsZero() {
		return nil
	}
	path := filepath.Join(cfg.DataDir, approvalKeyFile)
	secret, err := readApprovalKey(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		secret, err = createApprovalKey(path)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("no approval key: %s does not exist; start `lucy dev` first with the same LUCY_DATA_DIR (it creates the key), or give both the same LUCY_APPROVAL_KEY or SLACK_BOT_TOKEN", path)
	}
	if err != nil {
		return err
	}
	k, err := signing.FromSecret(secret)
	if err != nil {
		return fmt.Errorf("approval key file %s is not valid (%v): delete it and start `lucy dev` again, which makes a new one", path, err)
	}
	cfg.ApprovalKey, cfg.ApprovalKeySource = k, path
	return nil
}

// readApprovalKey returns the secret in path. Like ssh with its private keys, it refuses a file
// others may read: whoever reads the key can approve anything in anyone's name.
func readApprovalKey(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return "", fmt.Errorf("read approval key: %w", err)
	}
	// Windows reports no Unix permission bits worth checking.
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return "", fmt.Errorf("approval key file %s can be read by others (mode %04o): run `chmod 600 %s`", path, perm, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read approval key: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// createApprovalKey writes a new random secret to path, readable by this user only. O_EXCL keeps an
// existing key: if another process created one first, that one is read and used.
func createApprovalKey(path string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("create LUCY_DATA_DIR for the approval key: %w", err)
	}
	secret, err := signing.NewSecret()
	if err != nil {
		return "", fmt.Errorf("make approval key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readApprovalKey(path)
	}
	if err != nil {
		return "", fmt.Errorf("create approval key: %w", err)
	}
	_, err = f.WriteString(secret + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		// A half-written key would make every later start fail; without the file the next start
		// simply makes a new one.
		_ = os.Remove(path)
		return "", fmt.Errorf("write approval key %s: %w", path, err)
	}
	return secret, nil
}
