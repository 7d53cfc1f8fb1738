//go:build !unix

package upstream

import "errors"

// Without a portable non-blocking read the check finds nothing: stale
// connections are then caught only by the retry after a failed write or an
// EOF before the first byte.
func readNonBlocking(uintptr, []byte) (int, error) { return 0, errNoCheck }

func wouldBlock(err error) bool { return err == errNoCheck }

var errNoCheck = errors.New("no connection check on this platform")
