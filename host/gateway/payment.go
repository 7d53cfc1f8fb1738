package gateway

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// HeaderUpstreamPayment reports what the gateway paid a pay-per-request
// upstream (x402) for this answer: "<amount> <asset> <outcome>", amounts in
// the asset's atomic units (USDC: millionths).
const HeaderUpstreamPayment = "X-Bardo-Upstream-Payment"

// send performs one upstream call. A provider paid per request with x402
// (traits.payment = "x402") that answers 402 is paid from the gateway's own
// wallet — the key lives in the host (Gateway.Payer), never in a plugin —
// and the request is sent once more with the payment. A payment the policy
// refuses (price ceiling, spend cap, asset) is a transient failure of this
// provider: the request fails over, and nothing was signed.
func (g *Gateway) send(ctx context.Context, x *pipeline.Exchange, pr *pipeline.Provider, req *upstream.Request) (*upstream.Response, *wire.Error) {
	resp, err := g.Upstream.Do(ctx, req)
	if err != nil {
		return nil, g.upstreamFailed(x, pr, err)
	}
	if resp.Status != 402 || pr.Payment() != routing.PaymentX402 {
		return resp, nil
	}
	resp.Close()
	if g.Payer == nil {
		return nil, &wire.Error{Status: 502, Kind: wire.ErrUpstream, Retryable: true, Message: "provider " + pr.Spec.Name +
			" is paid per request with x402, and the gateway has no wallet (set BARDO_WALLET_KEY)"}
	}
	pm, err := g.Payer.Pay(ctx, x402.Challenge{Status: 402, Header: headerGetter(resp.Headers), Body: resp.Body})
	if err != nil {
		return nil, &wire.Error{Status: 502, Kind: wire.ErrUpstream, Retryable: true,
			Message: fmt.Sprintf("provider %s asks for a payment the gateway's policy refuses: %v", pr.Spec.Name, err)}
	}
	paid := *req
	paid.Headers = append(append([]wire.KV(nil), req.Headers...), wire.KV{Key: pm.Header, Value: pm.Value})
	resp, err = g.Upstream.Do(ctx, &paid)
	if err != nil {
		// The payment may have reached the server: it stays counted against
		// the spend cap (x402.Payment.Complete with no response).
		rc := pm.Complete(0, nil)
		x.Headers = setKV(x.Headers, HeaderUpstreamPayment, paymentSummary(rc))
		return nil, g.upstreamFailed(x, pr, err)
	}
	rc := pm.Complete(resp.Status, headerGetter(resp.Headers))
	x.Headers = setKV(x.Headers, HeaderUpstreamPayment, paymentSummary(rc))
	if g.Log != nil {
		g.Log.Info("paid upstream with x402", "request_id", x.Meta.RequestID, "provider", pr.Spec.Name,
			"amount", rc.Amount, "outcome", rc.Outcome.String(), "status", rc.Status)
	}
	if resp.Status == 402 {
		resp.Close()
		return nil, &wire.Error{Status: 502, Kind: wire.ErrUpstream, Retryable: true,
			Message: "provider " + pr.Spec.Name + " refused the gateway's x402 payment"}
	}
	return resp, nil
}

func paymentSummary(rc x402.Receipt) string {
	return strconv.FormatUint(rc.Amount, 10) + " " + rc.Token.Hex() + " " + rc.Outcome.String()
}

func headerGetter(hs []wire.KV) func(string) string {
	return func(name string) string {
		for _, h := range hs {
			if strings.EqualFold(h.Key, name) {
				return h.Value
			}
		}
		return ""
	}
}

// upstreamFailed logs the exchange's own error, which names the upstream's
// address and the socket (what an operator needs), and returns the caller's
// error, which says only why (upstreamFailure).
func (g *Gateway) upstreamFailed(x *pipeline.Exchange, pr *pipeline.Provider, err error) *wire.Error {
	if g.Log != nil {
		g.Log.Warn("upstream exchange failed", "request_id", x.Meta.RequestID, "provider", pr.Spec.Name, "err", err)
	}
	return upstreamFailure(pr.Spec.Name, err)
}
