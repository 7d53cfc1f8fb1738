package main

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"

	"github.com/bardoinference/bardo/host/x402"
)

// Proxy forwards a terminal tool's requests to a Bardo gateway and pays
// each one's x402 challenge with the user's wallet: the tool keeps speaking
// its own dialect to 127.0.0.1 and never holds a gateway key.
type Proxy struct {
	// Gateway is where requests go (scheme, host and an optional path
	// prefix).
	Gateway *url.URL
	// Payer signs the payments, within its policy.
	Payer *x402.Payer
	// Base sends the requests (http.DefaultTransport when nil).
	Base http.RoundTripper
	Log  *slog.Logger
}

// credentialHeaders are stripped from every request: the wallet is the
// caller's identity, and a tool's own provider key (ANTHROPIC_API_KEY,
// OPENAI_API_KEY) must never leave the machine towards the gateway.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie"}

// Handler returns the proxy's HTTP handler.
func (p *Proxy) Handler() http.Handler {
	log := p.Log
	if log == nil {
		log = slog.Default()
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(p.Gateway)
			r.Out.Host = p.Gateway.Host
			for _, h := range credentialHeaders {
				r.Out.Header.Del(h)
			}
		},
		Transport: p.Payer.Transport(p.Base),
		// Streams go out as they arrive.
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if v := resp.Header.Get(x402.HeaderPaymentResponse); v != "" {
				log.Info("paid", "path", resp.Request.URL.Path, "status", resp.StatusCode,
					"cost", resp.Header.Get("X-Bardo-Cost"), "model", resp.Header.Get("X-Bardo-Model"))
			} else if resp.StatusCode == http.StatusPaymentRequired {
				log.Warn("the gateway refused the payment", "path", resp.Request.URL.Path)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			status, msg := http.StatusBadGateway, "bardo-inference: the gateway could not be reached: "+err.Error()
			if errors.Is(err, x402.ErrOverPriceCeiling) || errors.Is(err, x402.ErrSpendCapExceeded) || errors.Is(err, x402.ErrNoAcceptableOffer) {
				// The wallet's limits refused the price: the tool sees a
				// payment error, not an outage, and the reason.
				status, msg = http.StatusPaymentRequired, "bardo-inference: not paid: "+err.Error()
			}
			log.Warn("request failed", "path", r.URL.Path, "status", status, "err", err)
			writeError(w, r, status, msg)
		},
	}
	return rp
}

// writeError answers in the dialect of the path the tool called:
// Anthropic's error envelope for /v1/messages, OpenAI's otherwise.
func writeError(w http.ResponseWriter, r *http.Request, status int, msg string) {
	var body any
	if strings.HasPrefix(r.URL.Path, "/v1/messages") {
		typ := "api_error"
		if status == http.StatusPaymentRequired {
			typ = "billing_error"
		}
		body = map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}}
	} else {
		typ, code := "api_error", "bad_gateway"
		if status == http.StatusPaymentRequired {
			typ, code = "insufficient_quota", "payment_required"
		}
		body = map[string]any{"error": map[string]any{"type": typ, "code": code, "message": msg}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
