package upstream

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// errStaleConn marks a pooled connection found closed by the upstream
// before the next request was written: nothing was sent, so the request may
// be retried on a fresh connection whatever its method.
var errStaleConn = errors.New("upstream closed the idle connection")

// errWriteFailed marks a failure while writing a request: no response byte
// had arrived.
var errWriteFailed = errors.New("writing the request failed")

// dialChecked dials like fasthttp (its DNS cache included) and wraps the
// TCP connection so that a reused one is checked before each request.
func dialChecked(addr string, timeout time.Duration) (net.Conn, error) {
	c, err := fasthttp.DialTimeout(addr, timeout)
	if err != nil {
		return nil, err
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return c, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return c, nil
	}
	return &checkedConn{Conn: c, raw: raw}, nil
}

// checkedConn is an upstream TCP connection (under TLS, if any) that checks,
// when a request starts on a connection that has already read an answer,
// whether the upstream has closed it meanwhile: fasthttp keeps no reader on
// idle connections (net/http does), so without the check a request written
// to a connection the server closed at its keep-alive timeout fails with a
// reset or EOF that looks like any other failure. The check is one
// non-blocking read; bytes it finds (a TLS session ticket, say) are kept and
// returned by the next Read, so it never loses data.
//
// fasthttp uses a connection from one goroutine at a time: the request is
// written, then the answer read (a streamed body too), so the fields need
// no lock.
type checkedConn struct {
	net.Conn
	raw     syscall.RawConn
	pending []byte
	// answered: the last operation was a read that returned data; the next
	// write starts a new exchange on a reused connection (or a TLS
	// handshake's next flight, which the check leaves intact).
	answered bool
}

func (c *checkedConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		c.answered = true
		return n, nil
	}
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.answered = true
	}
	return n, err
}

func (c *checkedConn) Write(p []byte) (int, error) {
	if c.answered {
		c.answered = false
		if err := c.check(); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		err = fmt.Errorf("%w: %w", errWriteFailed, err)
	}
	return n, err
}

// maxPending bounds what a check buffers: an HTTP/1.1 server has nothing to
// say between answers, so more than this is a broken connection.
const maxPending = 64 << 10

// check reads whatever the connection holds without waiting. EOF or an
// error (a reset) means the upstream closed it: errStaleConn. Data followed
// by nothing more is kept for the next Read; data followed by EOF (a TLS
// close_notify, an HTTP 408 sent before closing) is a closed connection
// too.
func (c *checkedConn) check() error {
	var (
		buf    [4096]byte
		closed bool
	)
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			n, err := readNonBlocking(fd, buf[:])
			switch {
			case n > 0:
				c.pending = append(c.pending, buf[:n]...)
				if len(c.pending) > maxPending {
					closed = true
					return true
				}
				continue
			case err == nil: // n == 0: EOF
				closed = true
			case !wouldBlock(err):
				closed = true
			}
			return true // never wait
		}
	})
	if err != nil || closed {
		return errStaleConn
	}
	return nil
}
