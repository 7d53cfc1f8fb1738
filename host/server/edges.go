package server

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Lingering close: when the gateway refuses a request before reading all of
// it (a body over the limit, a header too large, a smuggling attempt), the
// client may still be sending. Closing a socket with unread data makes the
// kernel answer with a reset, which destroys the error response in flight:
// the client sees "connection reset" instead of its 413. So such a
// connection is half-closed after the response (FIN, the response stays
// readable) and what the client still sends is read and discarded, bounded
// in time and bytes, before the socket is closed — nginx's lingering_close,
// and what net/http does with its closeWriteAndWait.
const (
	lingerTotal = 5 * time.Second  // longest a refused connection is drained
	lingerIdle  = time.Second      // give up when the client pauses this long
	lingerBytes = int64(256 << 20) // and after this much
)

// lingerListener wraps the accepted connections so the error paths can ask
// for a lingering close.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &lingerConn{Conn: c}, nil
}

// lingerConn is an accepted connection; linger marks it for a lingering
// close. It also keeps the first bytes of the request being read, so a
// request fasthttp refuses before parsing its request line (a header block
// over the buffer) is still answered in the dialect of its path.
//
// fasthttp reads requests and writes responses of one connection from one
// goroutine, so head and fresh need no lock.
type lingerConn struct {
	net.Conn
	linger atomic.Bool
	head   [128]byte
	headN  int
	fresh  bool // the next read starts a request
}

func (c *lingerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && (c.fresh || c.headN == 0) {
		c.headN = copy(c.head[:], p[:n])
		c.fresh = false
	}
	return n, err
}

func (c *lingerConn) Write(p []byte) (int, error) {
	c.fresh = true
	return c.Conn.Write(p)
}

// requestPath returns the path of the request line the connection began
// reading ("" if unknown).
func (c *lingerConn) requestPath() string {
	line := c.head[:c.headN]
	_, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return ""
	}
	if i := bytes.IndexAny(rest, " ?\r\n"); i >= 0 {
		rest = rest[:i]
	}
	return string(rest)
}

// errorDialect is dialectOf for a request fasthttp refused: its path may
// not have been parsed (or was reset with the failed parse), so the request
// line's first bytes, as read from the connection, tell.
func errorDialect(ctx *fasthttp.RequestCtx) wire.Dialect {
	if lc, ok := ctx.Conn().(*lingerConn); ok {
		if p := lc.requestPath(); p != "" {
			if strings.HasPrefix(p, "/v1/messages") {
				return wire.DialectAnthropic
			}
			return wire.DialectOpenAI
		}
	}
	return dialectOf(ctx)
}

// lingerOnClose asks for a lingering close of the request's connection.
func lingerOnClose(ctx *fasthttp.RequestCtx) {
	if lc, ok := ctx.Conn().(*lingerConn); ok {
		lc.linger.Store(true)
	}
}

func (c *lingerConn) Close() error {
	if !c.linger.Load() {
		return c.Conn.Close()
	}
	cw, ok := c.Conn.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return c.Conn.Close()
	}
	// Drain off the worker: fasthttp's worker goroutine moves on at once.
	go func() {
		defer c.Conn.Close()
		end := time.Now().Add(lingerTotal)
		buf := make([]byte, 32<<10)
		var n int64
		for n < lingerBytes {
			dl := time.Now().Add(lingerIdle)
			if dl.After(end) {
				dl = end
			}
			_ = c.Conn.SetReadDeadline(dl)
			k, err := c.Conn.Read(buf)
			n += int64(k)
			if err != nil {
				return
			}
		}
	}()
	return nil
}

// smuggled reports a request that carries both a Transfer-Encoding and a
// Content-Length (RFC 9112 §6.3): a front proxy framing it by the length
// while fasthttp frames it by the chunks would see a second request in what
// fasthttp leaves over. fasthttp keeps the chunked framing, drops the length
// and, once the body is read, rewrites the parsed header to the body's
// length, so the raw header block is what tells.
func smuggled(h *fasthttp.RequestHeader) bool {
	var te, cl bool
	for line := range bytes.Lines(h.RawHeaders()) {
		k, _, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		k = bytes.TrimSpace(k)
		te = te || bytes.EqualFold(k, []byte("transfer-encoding"))
		cl = cl || bytes.EqualFold(k, []byte("content-length"))
	}
	return te && cl
}

// refuseSmuggled answers a smuggling attempt with a 400 and closes the
// connection, so nothing after the chunked body is ever read as a request.
func refuseSmuggled(ctx *fasthttp.RequestCtx) {
	ctx.SetConnectionClose()
	lingerOnClose(ctx)
	writeError(ctx, dialectOf(ctx), &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
		Message: "the request has both Transfer-Encoding: chunked and Content-Length; send one of them"})
}

// transportError answers requests fasthttp refused before the handler (body
// too large, header too large, malformed HTTP, read timeout) in the
// caller's dialect, chosen by the path when the request line was read.
func (sv *Server) transportError(ctx *fasthttp.RequestCtx, err error) {
	e := &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "malformed HTTP request"}
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		e = &wire.Error{Status: 413, Kind: wire.ErrInvalidRequest,
			Message: fmt.Sprintf("request body exceeds the gateway's limit of %d bytes", sv.srv.MaxRequestBodySize)}
	case errors.As(err, &small):
		e = &wire.Error{Status: 431, Kind: wire.ErrInvalidRequest,
			Message: fmt.Sprintf("request headers exceed the gateway's limit of %d bytes", sv.srv.ReadBufferSize)}
	case isTimeout(err):
		e = &wire.Error{Status: 408, Kind: wire.ErrTimeout, Message: "the request was not received in time"}
	case strings.Contains(err.Error(), "content-length"):
		e.Message = "malformed HTTP request: the Content-Length header is not a valid size"
	}
	lingerOnClose(ctx)
	writeError(ctx, errorDialect(ctx), e)
}

// fasthttpLogger routes fasthttp's own messages (connection errors) to the
// gateway's log with anything quoted in them redacted: fasthttp quotes
// header keys and values in its parse errors ("invalid header value %q"),
// and those may be an Authorization header. The server also sets
// SecureErrorLogMessage, so header errors never carry the raw request head.
type fasthttpLogger struct{ log *slog.Logger }

// quoted matches Go-quoted strings and the "contents: ..." tail fasthttp
// adds to header errors without SecureErrorLogMessage.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|contents: .*`)

func (l fasthttpLogger) Printf(format string, args ...any) {
	for i, a := range args {
		switch a.(type) {
		case net.Addr:
			// Addresses are what make the message useful.
		default:
			args[i] = redact(fmt.Sprint(a))
		}
	}
	msg := fmt.Sprintf(format, args...)
	l.log.Warn("http connection error", "err", msg)
}

// redact replaces quoted text, and a raw request head, with "[redacted]".
func redact(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	return quoted.ReplaceAllString(s, `"[redacted]"`)
}
