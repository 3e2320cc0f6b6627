//go:build unix

package memory

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if needed) and returns its release. The
// local state store's own lock is a mutex of one store value; two workers (or `lucy memory` beside
// `lucy dev`) over one folder are two of them, so a merge or an edit holds this lock across its
// read and its conditional write.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the memory store: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock the memory store: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
