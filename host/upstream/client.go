// Package upstream performs the HTTP calls that provider plugins describe: one
// pooled fasthttp client for every provider, buffered or streamed responses,
// and an SSE reader for streams. Plugins never touch the network themselves.
package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Client is the pooled upstream HTTP client.
type Client struct {
	hc      *fasthttp.Client
	timeout time.Duration
}

// New returns a client; timeout bounds a whole buffered exchange and the wait
// for a stream's response headers (0: no limit).
func New(timeout time.Duration) *Client {
	return &Client{
		timeout: timeout,
		hc: &fasthttp.Client{
			Name:                          "bardo-inference",
			MaxConnsPerHost:               1024,
			MaxIdleConnDuration:           90 * time.Second,
			NoDefaultUserAgentHeader:      false,
			DisableHeaderNamesNormalizing: true,
			DisablePathNormalizing:        true,
			ReadBufferSize:                16 << 10,
			MaxResponseBodySize:           64 << 20,
			// A pooled keep-alive connection the upstream closed while idle
			// fails before the first response byte; nothing was processed,
			// so one retry on a fresh connection is safe even for POST.
			RetryIfErr: func(_ *fasthttp.Request, attempts int, err error) (bool, bool) {
				return false, attempts < 2 && errors.Is(err, fasthttp.ErrConnectionClosed)
			},
		},
	}
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
		return nil, fmt.Errorf("%w: %s: %v", ErrConnect, hostOf(r.URL), err)
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
