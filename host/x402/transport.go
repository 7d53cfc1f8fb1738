package x402

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// Transport is an http.RoundTripper that pays for 402 responses with a
// Payer: it sends the request, and on a 402 it signs a payment and sends the
// request once more with the payment header. Any other response, including
// the paid retry's (a second 402 among them), is returned as it is. Bodies
// must be replayable: a request without GetBody has its body buffered (at
// most MaxRequestBody bytes).
type Transport struct {
	Payer *Payer
	// Base sends the requests (http.DefaultTransport when nil).
	Base http.RoundTripper
	// MaxRequestBody bounds the buffering of a body without GetBody
	// (16 MiB when 0).
	MaxRequestBody int64
}

// Transport returns an http.RoundTripper paying with p over base.
func (p *Payer) Transport(base http.RoundTripper) *Transport {
	return &Transport{Payer: p, Base: base}
}

type receiptHookKey struct{}

// ContextWithReceiptHook returns a context under which Transport reports the
// receipt of the request's payment, if it made one, to fn: the way to
// attribute a payment to the request that caused it.
func ContextWithReceiptHook(ctx context.Context, fn func(Receipt)) context.Context {
	return context.WithValue(ctx, receiptHookKey{}, fn)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	// A request that already carries a payment is someone else's business.
	if req.Header.Get(HeaderPaymentSignature) != "" || req.Header.Get(HeaderXPayment) != "" {
		return base.RoundTrip(req)
	}
	first := req
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		limit := t.MaxRequestBody
		if limit <= 0 {
			limit = 16 << 20
		}
		b, err := io.ReadAll(io.LimitReader(req.Body, limit+1))
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("x402: buffer request body: %w", err)
		}
		if int64(len(b)) > limit {
			return nil, fmt.Errorf("x402: request body over %d bytes cannot be replayed for payment", limit)
		}
		first = req.Clone(req.Context())
		first.Body = io.NopCloser(bytes.NewReader(b))
		first.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
		first.ContentLength = int64(len(b))
	}

	resp, err := base.RoundTrip(first)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBodyLen+1))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("x402: read 402 body: %w", err)
	}
	ctx := req.Context()
	pm, err := t.Payer.Pay(ctx, Challenge{Status: resp.StatusCode, Header: resp.Header.Get, Body: body})
	if err != nil {
		return nil, fmt.Errorf("x402: %s %s: %w", req.Method, req.URL.Redacted(), err)
	}

	retry := first.Clone(ctx)
	if first.GetBody != nil {
		rb, err := first.GetBody()
		if err != nil {
			pm.Abandon()
			return nil, fmt.Errorf("x402: replay request body: %w", err)
		}
		retry.Body = rb
	}
	retry.Header.Set(pm.Header, pm.Value)
	resp2, err := base.RoundTrip(retry)
	status, header := 0, func(string) string { return "" }
	if err == nil {
		status, header = resp2.StatusCode, resp2.Header.Get
	}
	r := pm.Complete(status, header)
	if fn, ok := ctx.Value(receiptHookKey{}).(func(Receipt)); ok && fn != nil {
		fn(r)
	}
	return resp2, err
}
