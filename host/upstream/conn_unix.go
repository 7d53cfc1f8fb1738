//go:build unix

package upstream

import (
	"errors"
	"syscall"
)

func readNonBlocking(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Read(int(fd), p)
	if n < 0 {
		n = 0
	}
	return n, err
}

func wouldBlock(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) || errors.Is(err, syscall.EINTR)
}
