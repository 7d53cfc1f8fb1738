package billing

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// tab is one admitted request's open bill.
type tab struct {
	m     *Meter
	a     *account
	k     *keyState
	keyID string
	// What Open decided.
	spread      pricing.Spread
	direct      bool
	inputTokens int64  // the admission's input estimate (a served answer with no usage)
	asked       string // the model asked, or the one a downgrade picked
	opened      time.Time
	reserved    int64 // held on the account and its five spends until Close

	mu       sync.Mutex
	internal []pricing.Outcome
	closed   bool
	bill     gateway.Bill
}

var _ gateway.Tab = (*tab)(nil)

// spends are the budget periods a reservation is held on and a charge
// counted in: all of them, whether a budget caps them or not, so a budget
// set while requests are open counts them.
func (t *tab) spends() [5]*spend {
	return [5]*spend{&t.a.day, &t.a.month, &t.k.day, &t.k.month, &t.k.life}
}

// Internal folds in an internal completion a layer made for the request:
// charged with it (net of savings), its tokens on the request's record.
func (t *tab) Internal(s *gateway.Settlement) {
	o := t.outcome(s)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		t.m.log.Error("billing: internal completion after its request closed: not charged",
			append(t.logAttrs(s.RequestID), "model", s.Model)...)
		return
	}
	t.internal = append(t.internal, o)
}

// outcome is what a settlement contributes to a bill (see README.md,
// "What is charged"): an answer an upstream served is priced from its
// usage; a response-cache hit costs nothing and saves the call; an error,
// a refusal, a broken stream, a simulated or stale answer adds nothing.
func (t *tab) outcome(s *gateway.Settlement) pricing.Outcome {
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
			// The answer reported no usage, yet the upstream billed us:
			// charge the input the admission estimated, and say so.
			t.m.log.Warn("billing: served answer without usage; charging the estimated input only",
				append(t.logAttrs(s.RequestID), "path", string(s.Path), "model", s.Model)...)
			u = &wire.Usage{InputTokens: t.inputTokens}
		}
		if !s.Priced {
			return pricing.Served(pricing.Prices{}, *u, s.Optimizations) // tokens counted, priced at 0
		}
		return pricing.Served(s.Prices, *u, s.Optimizations)
	}
	return pricing.Outcome{}
}

// Close prices the request, releases its hold, and posts its charge and
// usage record to the ledger. With the journal, the posting is appended
// to it and queued for the writer, and Close returns at once: the bill
// shows the meter's figures, which the ledger's equal once committed (the
// balance is the posted one minus this and earlier uncommitted charges).
// Without it, Close waits for the commit (at most CommitWait) and the bill
// shows the balance the transaction returned.
func (t *tab) Close(s *gateway.Settlement) gateway.Bill {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.m.log.Error("billing: tab closed twice; the second close is ignored", t.logAttrs(s.RequestID)...)
		return gateway.Bill{}
	}
	t.closed = true
	internal := t.internal
	t.mu.Unlock()

	b := pricing.NewBill(pricing.Terms{Spread: t.spread, Direct: t.direct || s.Direct})
	b.Add(t.outcome(s))
	for _, o := range internal {
		b.Add(o)
	}
	f := b.Settle()
	if f.Overflow {
		t.m.log.Error("billing: a bill overflowed its exact sum; charged the saturated figure", t.logAttrs(s.RequestID)...)
	}
	tokens := f.Usage.InputTokens + f.Usage.OutputTokens + f.Usage.CacheReadTokens + f.Usage.CacheWriteTokens
	reqID := s.RequestID
	if reqID == "" {
		reqID = newRequestID()
	}

	model := s.Model
	if model == "" {
		model = t.asked
	}
	status := s.Status
	if status == 0 && s.Err != nil {
		status = int(s.Err.Status)
	}

	a, now := t.a, t.m.now()
	a.mu.Lock()
	a.roll(t.k, now)
	a.held -= t.reserved
	sp := t.spends()
	for _, x := range sp {
		x.held -= t.reserved
	}
	// Never more than the account has: its hold is back, so available()
	// is what this request may take, and the balance never goes below 0.
	charged := min(int64(f.Charge), max(a.available(), 0))
	a.pending += charged
	if charged > 0 {
		a.inflight++ // a posting of 0 cannot be counted twice
	}
	for _, x := range sp {
		x.spent += charged
	}
	a.tokens += tokens
	remaining := a.remaining(t.m.tier(a.tier))
	p := &posting{a: a, charged: charged, done: make(chan struct{}), u: store.Usage{
		RequestID: reqID, AccountID: a.id, KeyID: t.keyID, Model: model, Provider: s.Provider,
		InputTokens: f.Usage.InputTokens, OutputTokens: f.Usage.OutputTokens,
		CacheReadTokens: f.Usage.CacheReadTokens, CacheWriteTokens: f.Usage.CacheWriteTokens,
		Cost: int64(f.Cost), Charge: charged, Savings: int64(f.Savings), Cache: s.Cache,
		LatencyMicros: s.Latency.Microseconds(), Status: status, At: now,
		Shortfall: max(int64(f.Charge)-charged, 0),
	}}
	if short := int64(f.Charge) - charged; short > 0 {
		p.u.Savings += short
	}
	// Journaled and queued under the account's lock, so the ledger commits
	// one account's postings in the order their balances were computed:
	// the balance this bill shows is the ledger's right after its commit.
	var err error
	journaled := false
	if t.m.j != nil {
		p.seg, err = t.m.j.append(&p.u)
		journaled = err == nil
	}
	t.m.w.enqueue(p)
	balance := a.balance()
	a.mu.Unlock()

	if short := int64(f.Charge) - charged; short > 0 {
		t.m.log.Warn("billing: request cost more than the account had; the rest is a shortfall",
			append(t.logAttrs(reqID), "charge", int64(f.Charge), "charged", charged, "shortfall", short)...)
		f.Savings += f.Charge - pricing.Micros(charged)
		f.Charge = pricing.Micros(charged)
	}
	if !journaled {
		// No journal (or it cannot be written): the record is durable
		// only once committed, so the bill waits for the commit.
		balance = t.wait(p, reqID, balance)
	}
	bill := t.billOf(&f, balance, remaining)
	t.mu.Lock()
	t.bill = bill
	t.mu.Unlock()
	return bill
}

// wait waits for p's commit, at most CommitWait, and returns the balance
// the ledger reported, or the meter's figure when it timed out.
func (t *tab) wait(p *posting, reqID string, meter int64) int64 {
	timer := time.NewTimer(t.m.cfg.CommitWait)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.res.Balance
	case <-timer.C:
		t.m.log.Error("billing: settlement not committed in time; the bill shows the meter's figures and the posting stays queued",
			append(t.logAttrs(reqID), "charge", p.charged, "wait", t.m.cfg.CommitWait)...)
		return meter
	}
}

// billOf is what the caller is shown: headers and the stream trailer.
func (t *tab) billOf(f *pricing.Figures, balance, remaining int64) gateway.Bill {
	h := make([]wire.KV, 0, 5)
	h = append(h, wire.KV{Key: pricing.HeaderCost, Value: f.CostHeader()},
		wire.KV{Key: pricing.HeaderSavings, Value: f.SavingsHeader()},
		wire.KV{Key: pricing.HeaderBalance, Value: pricing.Micros(balance).String()})
	if pricing.BalanceWarning(pricing.Micros(balance)) {
		h = append(h, wire.KV{Key: pricing.HeaderBalanceWarning, Value: BalanceWarningValue})
	}
	if remaining >= 0 {
		h = append(h, wire.KV{Key: pricing.HeaderRemainingToken, Value: strconv.FormatInt(remaining, 10)})
	}
	tr := pricing.Trailer{Figures: *f, Balance: pricing.Micros(balance), HasBalance: true,
		RemainingTokens: remaining, HasRemaining: remaining >= 0}
	return gateway.Bill{Headers: h, Trailer: tr.Append(nil), Figures: *f}
}

// newRequestID names a settlement that came without a request id, so its
// record is still unique.
func newRequestID() string {
	var b [12]byte
	rand.Read(b[:])
	return "bill_" + hex.EncodeToString(b[:])
}
