// Package upstream performs the HTTP calls that provider plugins describe: one
// pooled fasthttp client for every provider, buffered or streamed responses,
// and an SSE reader for streams. Plugins never touch the network themselves.
package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Client is the pooled upstream HTTP client.
type Client struct {
	hc      *fasthttp.Client
	timeout time.Duration
}

// Config configures a Client.
type Config struct {
	// Timeout bounds a whole buffered exchange and the wait for a stream's
	// response headers (0: no limit).
	Timeout time.Duration
	// IdleTimeout closes a pooled connection unused this long
	// [DefaultIdleTimeout]. It should be shorter than the upstream's own
	// keep-alive timeout, so the gateway, not the server, closes idle
	// connections; a server that closes first is caught before reuse
	// anyway (see checkedConn).
	IdleTimeout time.Duration
	// MaxConns bounds the connections to one host [MaxConnsPerHost];
	// ConnWait is how long a request past it waits for one [ConnWait].
	MaxConns int
	ConnWait time.Duration
}

// MaxConnsPerHost bounds the connections to one upstream host; a request
// past it waits up to ConnWait for one to free (a stream holds its
// connection to its end), then fails as Saturated.
const (
	MaxConnsPerHost = 1024
	ConnWait        = 10 * time.Second
)

// DefaultIdleTimeout keeps idle upstream connections below the 60 s after
// which common load balancers (AWS ALB, GCP) drop them and nginx's 75 s.
const DefaultIdleTimeout = 30 * time.Second

// staleAttempts bounds the tries of one request that keep meeting
// connections the upstream had closed: the first failure empties the
// host's idle pool, so the next try dials afresh.
const staleAttempts = 3

// New returns a client with the given timeout and the default idle timeout.
func New(timeout time.Duration) *Client { return NewClient(Config{Timeout: timeout}) }

// NewClient returns a client configured by cfg.
func NewClient(cfg Config) *Client {
	idle := cfg.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	maxConns, wait := cfg.MaxConns, cfg.ConnWait
	if maxConns <= 0 {
		maxConns = MaxConnsPerHost
	}
	if wait <= 0 {
		wait = ConnWait
	}
	return &Client{
		timeout: cfg.Timeout,
		hc: &fasthttp.Client{
			Name:                          "bardo-inference",
			MaxConnsPerHost:               maxConns,
			MaxConnWaitTimeout:            wait,
			MaxIdleConnDuration:           idle,
			NoDefaultUserAgentHeader:      false,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
			ReadBufferSize:                16 << 10,
			MaxResponseBodySize:           64 << 20,
			MaxIdemponentCallAttempts:     staleAttempts,
			// LIFO (fasthttp's default, set for the reasoning below): the
			// connection taken is the most recently used, so when it turns
			// out closed every other idle one has idled at least as long.
			ConnPoolStrategy: fasthttp.LIFO,
			DialTimeout:      dialChecked,
			ConfigureClient: func(hc *fasthttp.HostClient) error {
				hc.RetryIfErr = func(_ *fasthttp.Request, attempts int, err error) (bool, bool) {
					return retryClosed(hc, attempts, err)
				}
				return nil
			},
		},
	}
}

// retryClosed decides whether a failed attempt is retried: only when the
// upstream had closed the connection before answering anything, and then on
// a fresh connection. Every other idle connection of the host is closed
// first (with LIFO they have idled at least as long as the dead one), so the
// retry dials instead of picking another dead one, as net/http's transport
// does by watching idle connections.
//
// errStaleConn (found closed before a byte was written) is always safe to
// retry. A request whose write failed, or whose connection closed before
// the first response byte (fasthttp reports exactly that as a bare io.EOF),
// is retried once: it is what a keep-alive close racing the request looks
// like, and nothing usable came back. A failure after the first response
// byte is never retried here: the upstream may have run the request.
func retryClosed(hc *fasthttp.HostClient, attempts int, err error) (resetTimeout, retry bool) {
	switch {
	case errors.Is(err, errStaleConn):
		hc.CloseIdleConnections()
		return false, attempts < staleAttempts
	case err == io.EOF, errors.Is(err, errWriteFailed): //nolint:errorlint // fasthttp's contract: a bare io.EOF
		hc.CloseIdleConnections()
		return false, attempts < 2
	}
	return false, false
}

// Request is what the host sends.
type Request struct {
	Method  string
	URL     string
	Headers []wire.KV
	Body    []byte
	Stream  bool
}

// Response is the upstream's answer. For a streamed request whose status is
// 2xx, Body is empty and the events are read with Next; Close must be called.
type Response struct {
	Status  int
	Headers []wire.KV
	Body    []byte

	resp *fasthttp.Response
	sse  *SSEReader
}

// Next returns the next server-sent event of a streamed response; io.EOF at
// the end of the stream.
func (r *Response) Next() (wire.SSE, error) {
	if r.sse == nil {
		return wire.SSE{}, io.EOF
	}
	return r.sse.Next()
}

// Abort closes the connection instead of returning it to the pool: for a
// stream that broke off, or that the caller stopped reading (a client gone
// away), so the upstream stops generating and no half-read connection is
// reused.
func (r *Response) Abort() {
	if r.resp != nil {
		r.resp.SetConnectionClose()
	}
	r.Close()
}

// Close releases the connection; on an unfinished stream it aborts it, which is
// how a client disconnect cancels the upstream call.
func (r *Response) Close() {
	if r.resp != nil {
		r.resp.CloseBodyStream()
		fasthttp.ReleaseResponse(r.resp)
		r.resp = nil
	}
}

// ErrConnect wraps failures to reach the upstream at all (retryable).
var ErrConnect = errors.New("upstream unreachable")

// Do performs the request. Non-2xx streamed responses are read whole, so the
// caller can decode the error body the same way in both modes.
func (c *Client) Do(ctx context.Context, r *Request) (*Response, error) {
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	req.Header.SetMethod(r.Method)
	req.SetRequestURI(r.URL)
	for _, h := range r.Headers {
		req.Header.Set(h.Key, h.Value)
	}
	req.SetBodyRaw(r.Body)

	resp := fasthttp.AcquireResponse()
	resp.StreamBody = r.Stream
	deadline := time.Time{}
	if c.timeout > 0 {
		deadline = time.Now().Add(c.timeout)
	}
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	var err error
	if deadline.IsZero() {
		err = c.hc.Do(req, resp)
	} else {
		err = c.hc.DoDeadline(req, resp, deadline)
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		if errors.Is(err, fasthttp.ErrTimeout) {
			return nil, fmt.Errorf("upstream %s: %w", hostOf(r.URL), context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrConnect, hostOf(r.URL), err) // Reason reads the cause
	}
	out := &Response{Status: resp.StatusCode()}
	for k, v := range resp.Header.All() {
		out.Headers = append(out.Headers, wire.KV{Key: string(k), Value: string(v)})
	}
	if r.Stream && out.Status/100 == 2 {
		out.resp = resp
		out.sse = NewSSEReader(resp.BodyStream())
		return out, nil
	}
	if r.Stream {
		body, err := io.ReadAll(io.LimitReader(resp.BodyStream(), 1<<20))
		resp.CloseBodyStream()
		fasthttp.ReleaseResponse(resp)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: reading error body: %v", ErrConnect, hostOf(r.URL), err)
		}
		out.Body = body
		return out, nil
	}
	out.Body = bytes.Clone(resp.Body())
	fasthttp.ReleaseResponse(resp)
	return out, nil
}

// hostOf names the upstream in errors without its path or query (which may
// carry keys, e.g. Gemini's ?key=).
func hostOf(url string) string {
	s := url
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	if i := strings.IndexAny(s, "/?"); i >= 0 {
		s = s[:i]
	}
	return s
}

// Reason says in a few words, fit for the caller, why an exchange failed:
// never the upstream's address, path or the gateway's own socket (Do's
// errors carry the upstream's host for the gateway's log).
func Reason(err error) string {
	var (
		dnsErr  *net.DNSError
		tlsErr  tls.RecordHeaderError
		certErr *tls.CertificateVerificationError
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.DeadlineExceeded):
		return "did not answer in time"
	case errors.Is(err, errStaleConn), errors.Is(err, fasthttp.ErrConnectionClosed), errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "closed the connection before the answer was complete"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused the connection"
	case errors.As(err, &dnsErr):
		return "could not be resolved (DNS)"
	case errors.As(err, &certErr), errors.As(err, &tlsErr):
		return "failed the TLS handshake"
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return "sent an answer larger than the gateway accepts"
	case Saturated(err):
		return "is busy: every connection the gateway may open to it is in use"
	}
	return "could not be reached"
}

// Saturated reports whether err is the gateway's own limit — no free
// connection to the host within ConnWait — rather than anything the
// upstream did: it must not count against the provider's health.
func Saturated(err error) bool { return errors.Is(err, fasthttp.ErrNoFreeConns) }
