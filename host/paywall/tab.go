package paywall

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/wire"
)

// tab is a paid request's bill: the verified payment, settled at Close
// when the answer succeeded.
type tab struct {
	p        *Paywall
	payload  *x402.PaymentPayload
	req      *x402.PaymentRequirements
	verified *x402.Verified
	input    int64
	tenant   string
	purse    *purse // the wallet's budgets, holding the amount; nil: none
}

// Internal implements gateway.Tab. An exact payment is a fixed price: a
// layer's internal completions are covered by it.
func (*tab) Internal(*gateway.Settlement) {}

// served reports whether the caller got a whole answer: only then is an
// exact payment settled. A stream settles when it ended cleanly; one that
// broke, or whose client went away, is not settled (the authorization
// lapses at validBefore and no funds move).
func served(s *gateway.Settlement) bool {
	if s.Err != nil || s.Status >= 400 || s.Status == 0 {
		return false
	}
	return !s.Streamed || s.StreamEnd == gateway.StreamEnded
}

// Close implements gateway.Tab: it settles the payment through the
// facilitator when the answer succeeded, and answers PAYMENT-RESPONSE (v2)
// or X-PAYMENT-RESPONSE (v1); in a stream, whose headers are gone, the
// same value goes in the trailer comment line. A settlement that fails is
// recorded and retried, and the payer refused until it clears.
func (t *tab) Close(s *gateway.Settlement) gateway.Bill {
	p := t.p
	cost := pricing.NewBill(pricing.Terms{})
	cost.Add(outcome(s, t.input))
	f := cost.Settle() // the provider cost and usage, for the record
	f.Charge, f.Savings = 0, 0
	if !served(s) {
		p.recordUsage(s, t.tenant, &f)
		p.release(t.purse, t.verified.Amount.Int64(), 0)
		return gateway.Bill{}
	}
	f.Charge = pricing.Micros(t.verified.Amount.Int64()) // USDC atomic units are micro-USD
	f.Savings = f.Direct - f.Charge
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.SettleTimeout)
	res, err := p.cfg.Settler.Settle(ctx, t.payload, t.req)
	cancel()
	payer := strings.ToLower(t.verified.Payer.Hex())
	if err != nil || !res.Success {
		reason := x402.ReasonUnexpectedSettle
		if err == nil && res.ErrorReason != "" {
			reason = res.ErrorReason
		}
		p.cfg.Log.Error("x402: settlement failed; recorded to retry", "request_id", s.RequestID, "payer", payer, "reason", reason, "err", err)
		p.record(s.RequestID, payer, t.payload, t.req, reason)
		res = &x402.SettlementResponse{Success: false, ErrorReason: reason, Payer: t.verified.Payer.Hex(), Network: t.req.Network}
	}
	p.recordUsage(s, t.tenant, &f)
	p.release(t.purse, t.verified.Amount.Int64(), int64(f.Charge)) // settled or owed: spent either way
	name := x402.HeaderPaymentResponse
	if t.payload.X402Version == x402.Version1 {
		name = x402.HeaderXPaymentResponse
	}
	v, _ := x402.EncodeHeader(res)
	b := gateway.Bill{Figures: f, Headers: []wire.KV{{Key: name, Value: v}, {Key: pricing.HeaderCost, Value: f.CostHeader()}}}
	if s.Streamed {
		tr := pricing.Trailer{Figures: f}
		b.Trailer = tr.Append([]byte(": x402 " + name + "=" + v + "\n"))
	}
	return b
}

// record keeps a failed settlement and marks its payer as owing — unless
// it can never settle through no fault of the payer's (lost, below): then
// it is kept for the record as written off, and the payer is not refused.
func (p *Paywall) record(reqID, payer string, pl *x402.PaymentPayload, req *x402.PaymentRequirements, reason string) {
	pj, err1 := json.Marshal(pl)
	rj, err2 := json.Marshal(req)
	lost := p.lost(pl, reason)
	if !lost {
		p.mu.Lock()
		p.owed[payer] = reason
		p.mu.Unlock()
	}
	if err1 != nil || err2 != nil {
		p.cfg.Log.Error("x402: cannot encode a failed settlement", "request_id", reqID)
		return
	}
	amount := pl.Payload.Authorization.Value
	if pl.Payload.Permit2Authorization != nil {
		amount = req.Amount // upto: the actual charge, not the maximum
	}
	rec := store.X402Settlement{Payer: payer, RequestID: reqID, Network: req.Network, Amount: amount,
		Payload: pj, Requirements: rj, Attempts: 1, LastError: reason, Created: p.cfg.Now()}
	if lost {
		rec.LastError = writtenOff + reason
	}
	id, err := p.cfg.Owed.AddX402Settlement(context.Background(), rec)
	if err != nil {
		// The payer stays refused in this process; the record is lost on
		// restart, which the log says.
		p.cfg.Log.Error("x402: cannot record a failed settlement", "request_id", reqID, "payer", payer, "err", err)
		return
	}
	if lost {
		p.writeOff(context.Background(), id, payer, reason)
	}
}

// writtenOff prefixes the last error of a settlement that will never be
// made and is not the payer's debt.
const writtenOff = "written off: "

// lost reports whether a failed settlement can never be made and the
// payer is not to blame: its authorization's window has passed (a long
// stream settled at its end, the facilitator down until then) and the
// failure was the expiry or the gateway's side. Refusing the payer for it
// would refuse them for good — no retry can settle an expired
// authorization. A failure of the payer's own (insufficient funds: the
// wallet emptied after being served) stays owed.
func (p *Paywall) lost(pl *x402.PaymentPayload, reason string) bool {
	switch reason {
	case x402.ReasonUnexpectedSettle, x402.ReasonValidBefore, x402.ReasonUptoDeadline:
	default:
		return false
	}
	end := pl.Payload.Authorization.ValidBefore
	if a := pl.Payload.Permit2Authorization; a != nil {
		end = a.Deadline
	}
	t, ok := new(big.Int).SetString(end, 10)
	return ok && t.Cmp(big.NewInt(p.cfg.Now().Unix())) <= 0
}

// writeOff closes record id as never to be settled.
func (p *Paywall) writeOff(ctx context.Context, id int64, payer, reason string) {
	p.cfg.Log.Warn("x402: settlement lost — its authorization expired before it could be made; the payer is not refused for it",
		"id", id, "payer", payer, "reason", reason)
	if err := p.cfg.Owed.X402Attempted(ctx, id, writtenOff+reason); err != nil {
		p.cfg.Log.Error("x402: recording a settlement attempt", "id", id, "err", err)
	}
	if err := p.cfg.Owed.X402Settled(ctx, id, "", p.cfg.Now()); err != nil {
		p.cfg.Log.Error("x402: writing a settlement off", "id", id, "err", err)
	}
}

// Retry tries once more to settle what is owed: payer's settlements, or
// with payer "" up to 100 of anyone's. A payer whose settlements all
// cleared is served again. The daemon calls it periodically.
func (p *Paywall) Retry(ctx context.Context, payer string) {
	owed, err := p.cfg.Owed.X402Owed(ctx, payer, 100)
	if err != nil {
		p.cfg.Log.Error("x402: reading owed settlements", "err", err)
		return
	}
	still := map[string]string{}
	for _, o := range owed {
		var pl x402.PaymentPayload
		var req x402.PaymentRequirements
		if json.Unmarshal(o.Payload, &pl) != nil || json.Unmarshal(o.Requirements, &req) != nil {
			still[o.Payer] = "unreadable record"
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, p.cfg.SettleTimeout)
		res, err := p.cfg.Settler.Settle(sctx, &pl, &req)
		cancel()
		if err == nil && res.Success {
			if err := p.cfg.Owed.X402Settled(ctx, o.ID, res.Transaction, p.cfg.Now()); err != nil {
				p.cfg.Log.Error("x402: recording a settlement", "id", o.ID, "err", err)
			}
			p.cfg.Log.Info("x402: owed settlement cleared", "id", o.ID, "payer", o.Payer, "tx", res.Transaction)
			continue
		}
		reason := x402.ReasonUnexpectedSettle
		if err == nil && res.ErrorReason != "" {
			reason = res.ErrorReason
		}
		if reason == x402.ReasonNonceUsed || reason == x402.ReasonUptoNonceUsed {
			// The authorization was used on chain: an earlier attempt whose
			// answer was lost went through, or someone else submitted it —
			// either way to payTo, which the signature binds. It is paid.
			if err := p.cfg.Owed.X402Settled(ctx, o.ID, "", p.cfg.Now()); err != nil {
				p.cfg.Log.Error("x402: recording a settlement", "id", o.ID, "err", err)
			}
			p.cfg.Log.Warn("x402: owed settlement found already used on chain; counted as paid", "id", o.ID, "payer", o.Payer)
			continue
		}
		if p.lost(&pl, reason) && !strings.HasPrefix(o.LastError, x402.ReasonInsufficientFunds) {
			p.writeOff(ctx, o.ID, o.Payer, reason)
			continue
		}
		still[o.Payer] = reason
		if err := p.cfg.Owed.X402Attempted(ctx, o.ID, reason); err != nil {
			p.cfg.Log.Error("x402: recording a settlement attempt", "id", o.ID, "err", err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if payer != "" {
		delete(p.owed, payer)
	} else if len(owed) < 100 {
		clear(p.owed)
	}
	for k, v := range still {
		p.owed[k] = v
	}
}

// recordUsage writes the request's usage record under its wallet, as a
// key's request gets one (Config.Usage; nil: none). The charge is what the
// payment settled or owes, 0 when nothing was settled.
func (p *Paywall) recordUsage(s *gateway.Settlement, tenant string, f *pricing.Figures) {
	if p.cfg.Usage == nil {
		return
	}
	u := store.Usage{RequestID: s.RequestID, AccountID: tenant, Model: s.Model, Provider: s.Provider,
		InputTokens: f.Usage.InputTokens, OutputTokens: f.Usage.OutputTokens,
		CacheReadTokens: f.Usage.CacheReadTokens, CacheWriteTokens: f.Usage.CacheWriteTokens,
		Cost: int64(f.Cost), Charge: int64(f.Charge), Savings: int64(f.Savings), Cache: s.Cache,
		LatencyMicros: s.Latency.Microseconds(), Status: s.Status, At: p.cfg.Now()}
	if u.Model == "" {
		u.Model = s.Asked
	}
	if err := p.cfg.Usage.RecordUsage(context.Background(), u); err != nil {
		p.cfg.Log.Error("x402: recording usage", "request_id", s.RequestID, "tenant", tenant, "err", err)
	}
}
