//go:build unix

package devserver

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockDataDir takes an exclusive, non-blocking flock on path so that two
// embedded servers never share one SQLite file. The lock goes away with the
// process, so a crashed "lucy dev" never leaves a stale lock behind.
func lockDataDir(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("cannot open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errDataDirLocked
		}
		return nil, fmt.Errorf("cannot lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
