//go:build unix

package billing

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockJournal takes an exclusive advisory lock on the journal directory's
// lock file, held until the returned file is closed (or the process dies:
// the kernel releases it, so kill -9 leaves no stale lock). A second
// gateway on the same data directory would otherwise replay the first's
// live segments and delete them under its feet.
func lockJournal(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("another gateway is using %s (one gateway per data directory)", path)
		}
		return nil, err
	}
	return f, nil
}
