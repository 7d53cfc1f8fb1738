package paywall

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"sync"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// uptoOffer is the upto twin of an exact offer: the same amount, now a
// maximum, Permit2 through the upto proxy, bound to the facilitator.
func (p *Paywall) uptoOffer(exact x402.PaymentRequirements) x402.PaymentRequirements {
	o := exact
	o.Scheme = x402.SchemeUpto
	o.Extra = p.uptoExtra
	return o
}

// uptoTab is an upto payment's bill: it prices what the request consumed,
// as a prepaid key's tab does, and settles that (at most the maximum).
type uptoTab struct {
	p        *Paywall
	payload  *x402.PaymentPayload
	req      *x402.PaymentRequirements
	verified *x402.VerifiedUpto
	input    int64 // the admission's input estimate
	tenant   string
	purse    *purse // the wallet's budgets, holding the maximum; nil: none

	mu   sync.Mutex
	bill pricing.Bill
}

// Internal implements gateway.Tab: a layer's internal completion is
// charged with the request, within the maximum.
func (t *uptoTab) Internal(s *gateway.Settlement) {
	t.mu.Lock()
	t.bill.Add(outcome(s, t.input))
	t.mu.Unlock()
}

// outcome follows host/billing: an answer an upstream served is priced
// from its usage (the estimated input when it reported none); a cache hit
// costs the cache price; an error, a refusal or a broken stream costs
// nothing. A stream whose client went away is charged what it used: the
// upstream billed it.
func outcome(s *gateway.Settlement, input int64) pricing.Outcome {
	switch s.Path {
	case gateway.PathLayer:
		if s.Usage != nil && (s.Cache == respcache.VerdictHashHit || s.Cache == respcache.VerdictSemanticHit) {
			return pricing.CacheHit(s.Prices, *s.Usage)
		}
	case gateway.PathUpstream, gateway.PathPassthrough, gateway.PathLocal, gateway.PathInternal:
		if !s.Upstream || s.Err != nil || s.Status >= 400 || (s.Streamed && s.StreamEnd == gateway.StreamBroken) {
			return pricing.Outcome{}
		}
		u := s.Usage
		if u == nil {
			u = &wire.Usage{InputTokens: input}
		}
		if !s.Priced {
			return pricing.Served(pricing.Prices{}, *u, s.Optimizations)
		}
		return pricing.Served(s.Prices, *u, s.Optimizations)
	}
	return pricing.Outcome{}
}

// Close implements gateway.Tab: it settles the actual charge, capped at
// the authorized maximum; 0 puts nothing on chain (the authorization
// lapses at its deadline). One settlement per authorization: Close runs
// once, and the nonce was consumed at admission.
func (t *uptoTab) Close(s *gateway.Settlement) gateway.Bill {
	t.mu.Lock()
	t.bill.Add(outcome(s, t.input))
	f := t.bill.Settle()
	t.mu.Unlock()
	charge := big.NewInt(int64(f.Charge)) // USDC atomic units are micro-USD
	if charge.Cmp(t.verified.Max) > 0 {
		charge.Set(t.verified.Max)
		f.Charge = pricing.Micros(charge.Int64())
	}
	p := t.p
	name := x402.HeaderPaymentResponse
	if t.payload.X402Version == x402.Version1 {
		name = x402.HeaderXPaymentResponse
	}
	res := &x402.SettlementResponse{Success: true, Payer: t.verified.Payer.Hex(), Network: t.req.Network, Amount: "0"}
	if charge.Sign() > 0 {
		req := *t.req
		req.Amount = charge.String() // settlement-time requirements carry the actual amount
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.SettleTimeout)
		r, err := p.cfg.Settler.Settle(ctx, t.payload, &req)
		cancel()
		if err != nil || !r.Success {
			reason := x402.ReasonUnexpectedSettle
			if err == nil && r.ErrorReason != "" {
				reason = r.ErrorReason
			}
			payer := strings.ToLower(t.verified.Payer.Hex())
			p.cfg.Log.Error("x402: upto settlement failed; recorded to retry", "request_id", s.RequestID, "payer", payer, "reason", reason, "err", err)
			p.record(s.RequestID, payer, t.payload, &req, reason)
			r = &x402.SettlementResponse{ErrorReason: reason, Payer: t.verified.Payer.Hex(), Network: t.req.Network, Amount: charge.String()}
		}
		res = r
		if res.Amount == "" {
			res.Amount = charge.String()
		}
	}
	p.recordUsage(s, t.tenant, &f)
	p.release(t.purse, t.verified.Max.Int64(), int64(f.Charge))
	v, _ := x402.EncodeHeader(res)
	b := gateway.Bill{Figures: f, Headers: []wire.KV{{Key: name, Value: v}, {Key: pricing.HeaderCost, Value: f.CostHeader()}}}
	if s.Streamed {
		tr := pricing.Trailer{Figures: f}
		b.Trailer = tr.Append([]byte(": x402 " + name + "=" + v + "\n"))
	}
	return b
}

func uptoExtra(tok x402.Token, facilitator string) json.RawMessage {
	b, _ := json.Marshal(x402.UptoExtra{Name: tok.Name, Version: tok.Version, FacilitatorAddress: facilitator})
	return b
}
