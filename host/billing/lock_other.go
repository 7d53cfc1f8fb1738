//go:build !unix

package billing

import "os"

// lockJournal opens the lock file without locking it: this platform has
// no flock; one gateway per data directory is the operator's to keep.
func lockJournal(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
}
