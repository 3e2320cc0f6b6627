//go:build unix

package workspace

import (
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path (created if needed) and returns its release: what
// makes a conditional write of the local store atomic across processes (a worker, the gateway and
// `lucy secrets` or `lucy memory` over one LUCY_DATA_DIR) and across two store values of one process.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock the local store: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("lock the local store: %w", err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
