package paywall_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/auth/admit"
	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
	"github.com/bardoinference/bardo/sdk/wire"
)

var payTo = common.HexToAddress("0x209693Bc6afc0C5328bA36FaF03C514EF312287C")

// rig is a paywall over a real SQLite store and the local facilitator.
type rig struct {
	t    testing.TB
	path string
	st   *sqlite.Store
	fac  *x402test.Facilitator
	pw   *paywall.Paywall
	keys *admit.Keys
	// conf, when set, adjusts the paywall's configuration at each open.
	conf func(*paywall.Config)
}

func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{t: t, path: filepath.Join(t.TempDir(), "bardo.db"), fac: x402test.NewFacilitator(nil)}
	t.Cleanup(r.fac.Close)
	r.open()
	return r
}

// open (re)opens the store and builds a fresh paywall on it: a restart.
func (r *rig) open() {
	r.t.Helper()
	if r.st != nil {
		r.st.Close()
	}
	st, err := sqlite.Open(context.Background(), r.path, sqlite.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { st.Close() })
	r.st = st // conf may use it
	cfg := paywall.Config{PayTo: payTo, Settler: &x402.Facilitator{URL: r.fac.URL}, Nonces: st, Owed: st, Usage: st}
	if r.conf != nil {
		r.conf(&cfg)
	}
	pw, err := paywall.New(context.Background(), cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	r.st, r.pw, r.keys = st, pw, &admit.Keys{Payments: pw}
}

// admission is a completion of 1000 input and at most 1000 output tokens
// of a model at $3 / $15 per million: 0.018 USD, 0.0216 with the 20 % spread.
func admission(h auth.HTTPHeader) *gateway.Admission {
	prices := pricing.Prices{Input: catalog.PriceFromNanos(3e9), Output: catalog.PriceFromNanos(15e9),
		CacheRead: catalog.PriceFromNanos(3e8), CacheWrite: catalog.PriceFromNanos(3e9)}
	return &gateway.Admission{Dialect: wire.DialectAnthropic, Path: "/v1/messages", Header: h, Model: "claude-sonnet-4",
		Spends: true, InputTokens: 1000, MaxTokens: 1000,
		Quotes: func() []gateway.Quote { return []gateway.Quote{{Model: "claude-sonnet-4", Prices: prices}} }}
}

const price = "21600"

func header(c gateway.Caller, name string) string {
	for _, kv := range c.Headers {
		if strings.EqualFold(kv.Key, name) {
			return kv.Value
		}
	}
	return ""
}

func billHeader(b gateway.Bill, name string) string {
	return header(gateway.Caller{Headers: b.Headers}, name)
}

func TestChallenge(t *testing.T) {
	r := newRig(t)
	c, e := r.keys.Admit(context.Background(), admission(auth.HTTPHeader{}))
	if e == nil || e.Status != 402 {
		t.Fatalf("no credential: %+v, want 402", e)
	}
	pr, err := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Accepts) != 1 {
		t.Fatalf("accepts %+v", pr.Accepts)
	}
	o := pr.Accepts[0]
	if o.Scheme != "exact" || o.Network != "eip155:8453" || o.Amount != price || o.Asset != x402.USDCBase.Address.Hex() ||
		o.PayTo != payTo.Hex() || o.MaxTimeoutSeconds != 120 || string(o.Extra) != `{"name":"USD Coin","version":"2"}` {
		t.Errorf("offer %+v", o)
	}
	if pr.Resource == nil || pr.Resource.URL != "/v1/messages" {
		t.Errorf("resource %+v", pr.Resource)
	}
	var q paywall.Quote
	if err := json.Unmarshal([]byte(header(c, paywall.HeaderQuote)), &q); err != nil {
		t.Fatal(err)
	}
	if q.EstimatedInputTokens != 1000 || q.EstimatedOutputTokens != 1000 || q.RoutedFrom != "claude-sonnet-4" || !q.CacheEligible ||
		q.Optimizations == nil || q.Price.TotalCharged != 0.0216 || q.Price.ProviderCost != 0.018 {
		t.Errorf("quote %+v", q)
	}
	var ext map[string]struct{ Info paywall.Quote }
	if err := json.Unmarshal(pr.Extensions, &ext); err != nil || ext[paywall.ExtensionInference].Info.RoutedFrom != "claude-sonnet-4" {
		t.Errorf("extensions %s: %v", pr.Extensions, err)
	}
	if !strings.Contains(e.Message, "0.0216") {
		t.Errorf("message %q does not name the price", e.Message)
	}

	// A read without a credential keeps the 401; a gateway without x402
	// answers a completion with the 401 too.
	a := admission(auth.HTTPHeader{})
	a.Spends = false
	if _, e := r.keys.Admit(context.Background(), a); e == nil || e.Status != 401 {
		t.Errorf("read: %+v, want 401", e)
	}
}

// payment is a wallet's signed answer to an offer.
type payment struct {
	key     *ecdsa.PrivateKey
	offer   x402.PaymentRequirements
	auth    x402.TransferAuthorization
	domain  x402.Domain
	version int
	sig     []byte // overrides the signature when set
}

func newPayment(t testing.TB, r *rig, key *ecdsa.PrivateKey) *payment {
	t.Helper()
	c, _ := r.keys.Admit(context.Background(), admission(auth.HTTPHeader{}))
	pr, err := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatal(err)
	}
	o := pr.Accepts[0]
	v, _ := new(big.Int).SetString(o.Amount, 10)
	now := time.Now().Unix()
	p := &payment{key: key, offer: o, version: 2,
		domain: x402.Domain{Name: "USD Coin", Version: "2", ChainID: 8453, VerifyingContract: x402.USDCBase.Address},
		auth: x402.TransferAuthorization{From: crypto.PubkeyToAddress(key.PublicKey), To: payTo, Value: v,
			ValidAfter: big.NewInt(now - 60), ValidBefore: big.NewInt(now + 100)}}
	copy(p.auth.Nonce[:], crypto.Keccak256([]byte(t.Name()), big.NewInt(time.Now().UnixNano()).Bytes()))
	return p
}

// headers signs the payment and returns it as the request's headers.
func (p *payment) headers(t testing.TB) auth.HTTPHeader {
	t.Helper()
	sig := p.sig
	if sig == nil {
		var err error
		sig, err = crypto.Sign(x402.TypedDataHash(p.domain, &p.auth).Bytes(), p.key)
		if err != nil {
			t.Fatal(err)
		}
		sig[64] += 27
	}
	pl := x402.PaymentPayload{X402Version: p.version,
		Payload: x402.ExactEVMPayload{Signature: "0x" + common.Bytes2Hex(sig), Authorization: p.auth.Wire()}}
	name := x402.HeaderPaymentSignature
	if p.version == 1 {
		pl.Scheme, pl.Network, name = "exact", "base", x402.HeaderXPayment
	} else {
		pl.Accepted = &p.offer
	}
	v, err := x402.EncodeHeader(&pl)
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(name, v)
	return auth.HTTPHeader(h)
}

func wallet(t testing.TB) *ecdsa.PrivateKey {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var ok = &gateway.Settlement{RequestID: "req", Status: 200}

func TestPayExact(t *testing.T) {
	for _, version := range []int{2, 1} {
		r := newRig(t)
		key := wallet(t)
		p := newPayment(t, r, key)
		p.version = version
		c, e := r.keys.Admit(context.Background(), admission(p.headers(t)))
		if e != nil {
			t.Fatalf("v%d: %+v", version, e)
		}
		addr := crypto.PubkeyToAddress(key.PublicKey)
		if c.Tenant != "wallet:"+strings.ToLower(addr.Hex()) || c.Tab == nil {
			t.Fatalf("caller %+v", c)
		}
		if n := len(r.fac.Settlements()); n != 0 {
			t.Fatalf("settled %d before the answer", n)
		}
		b := c.Tab.Close(ok)
		name := x402.HeaderPaymentResponse
		if version == 1 {
			name = x402.HeaderXPaymentResponse
		}
		res, err := x402.DecodeSettlementResponse(billHeader(b, name))
		if err != nil {
			t.Fatalf("v%d %s: %v (bill %+v)", version, name, err, b.Headers)
		}
		if !res.Success || res.Payer != addr.Hex() || !strings.HasPrefix(res.Transaction, "0x") {
			t.Errorf("v%d settlement %+v", version, res)
		}
		if got := billHeader(b, "X-Bardo-Cost"); got != "0.021600" {
			t.Errorf("X-Bardo-Cost %q", got)
		}
		if n := len(r.fac.Settlements()); n != 1 {
			t.Errorf("v%d settled %d times, want 1", version, n)
		}
	}
}

// A stream that ended settles and says so in its trailer; one that broke
// or lost its client, and a failed answer, settle nothing.
func TestSettleOnlyServed(t *testing.T) {
	r := newRig(t)
	for _, s := range []*gateway.Settlement{
		{Status: 502, Err: &wire.Error{Status: 502}},
		{Status: 200, Streamed: true, StreamEnd: gateway.StreamBroken},
		{Status: 200, Streamed: true, StreamEnd: gateway.StreamClientGone},
	} {
		p := newPayment(t, r, wallet(t))
		c, e := r.keys.Admit(context.Background(), admission(p.headers(t)))
		if e != nil {
			t.Fatal(e)
		}
		if b := c.Tab.Close(s); len(b.Headers) != 0 || len(b.Trailer) != 0 {
			t.Errorf("%+v: bill %+v", s, b)
		}
	}
	if n := len(r.fac.Settlements()); n != 0 {
		t.Fatalf("settled %d failed answers", n)
	}
	p := newPayment(t, r, wallet(t))
	c, _ := r.keys.Admit(context.Background(), admission(p.headers(t)))
	b := c.Tab.Close(&gateway.Settlement{Status: 200, Streamed: true, StreamEnd: gateway.StreamEnded})
	if !strings.HasPrefix(string(b.Trailer), ": x402 PAYMENT-RESPONSE=") || !strings.Contains(string(b.Trailer), ": bardo cost=0.0216") {
		t.Errorf("trailer %q", b.Trailer)
	}
	if n := len(r.fac.Settlements()); n != 1 {
		t.Fatalf("settled %d, want 1", n)
	}
}

func TestRefusals(t *testing.T) {
	r := newRig(t)
	key := wallet(t)
	cases := []struct {
		name   string
		mutate func(p *payment)
		reason string
	}{
		{"forged signature", func(p *payment) { p.key = wallet(t) }, x402.ReasonSignature},
		{"wrong payTo", func(p *payment) { p.auth.To = common.HexToAddress("0x00000000000000000000000000000000000000aa") }, x402.ReasonRecipientMismatch},
		{"wrong amount", func(p *payment) { p.auth.Value = big.NewInt(21599) }, x402.ReasonValue},
		{"offer amount changed", func(p *payment) { p.offer.Amount = "1" }, x402.ReasonInvalidPayload},
		{"expired", func(p *payment) { p.auth.ValidBefore = big.NewInt(time.Now().Unix() - 1) }, x402.ReasonValidBefore},
		{"expires before it can settle", func(p *payment) { p.auth.ValidBefore = big.NewInt(time.Now().Unix() + 2) }, x402.ReasonValidBefore},
		{"not yet valid", func(p *payment) { p.auth.ValidAfter = big.NewInt(time.Now().Unix() + 30) }, x402.ReasonValidAfter},
		{"wrong chain in the signature", func(p *payment) { p.domain.ChainID = 84532 }, x402.ReasonSignature},
		{"wrong chain", func(p *payment) { p.offer.Network = "eip155:84532" }, x402.ReasonInvalidPayload},
		{"wrong chain v1", func(p *payment) { p.version = 1; p.offer.Network = "base-sepolia" }, ""},
		{"wrong asset in the signature", func(p *payment) { p.domain.VerifyingContract = x402.USDCBaseSepolia.Address }, x402.ReasonSignature},
		{"wrong asset", func(p *payment) { p.offer.Asset = x402.USDCBaseSepolia.Address.Hex() }, x402.ReasonInvalidPayload},
		{"contract wallet", func(p *payment) { p.sig = make([]byte, 200) }, x402.ReasonContractSignature},
	}
	for _, tc := range cases {
		p := newPayment(t, r, key)
		tc.mutate(p)
		h := p.headers(t)
		if tc.name == "wrong chain v1" {
			// v1 names its network at the top level.
			pl, err := x402.DecodePaymentPayload(x402.HeaderXPayment, string(h.Peek(x402.HeaderXPayment)))
			if err != nil {
				t.Fatal(err)
			}
			pl.Network = "base-sepolia"
			v, _ := x402.EncodeHeader(pl)
			hh := http.Header{}
			hh.Set(x402.HeaderXPayment, v)
			h = auth.HTTPHeader(hh)
			tc.reason = x402.ReasonInvalidNetwork
		}
		c, e := r.keys.Admit(context.Background(), admission(h))
		if e == nil || e.Status != 402 || c.Tab != nil {
			t.Errorf("%s: %+v, tab %v: want 402", tc.name, e, c.Tab)
			continue
		}
		pr, err := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
		if err != nil || pr.Error != tc.reason {
			t.Errorf("%s: PAYMENT-REQUIRED error %q (%v), want %q", tc.name, pr.Error, err, tc.reason)
		}
		if !strings.Contains(e.Message, tc.reason) {
			t.Errorf("%s: message %q does not name %s", tc.name, e.Message, tc.reason)
		}
	}
	if n := len(r.fac.Settlements()); n != 0 {
		t.Fatalf("settled %d refused payments", n)
	}
}

// A payment is good for one request, also after a restart: its nonce is
// consumed in the database.
func TestReplayAfterRestart(t *testing.T) {
	r := newRig(t)
	h := newPayment(t, r, wallet(t)).headers(t)
	c, e := r.keys.Admit(context.Background(), admission(h))
	if e != nil {
		t.Fatal(e)
	}
	c.Tab.Close(ok)
	for _, restart := range []bool{false, true} {
		if restart {
			r.open()
		}
		c, e := r.keys.Admit(context.Background(), admission(h))
		if e == nil || e.Status != 402 {
			t.Fatalf("replay (restart %v): %+v", restart, e)
		}
		pr, _ := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
		if pr.Error != x402.ReasonNonceUsed {
			t.Errorf("replay (restart %v): reason %q", restart, pr.Error)
		}
	}
	if n := len(r.fac.Settlements()); n != 1 {
		t.Fatalf("settled %d, want 1", n)
	}
}

// A settlement that fails is recorded; the payer is refused until a retry
// settles it, across a restart; then it is served again.
func TestOwedSettlement(t *testing.T) {
	r := newRig(t)
	key := wallet(t)
	c, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
	if e != nil {
		t.Fatal(e)
	}
	r.fac.Down(3) // the settlement, and two retries
	res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(ok), x402.HeaderPaymentResponse))
	if err != nil || res.Success || res.ErrorReason != x402.ReasonUnexpectedSettle {
		t.Fatalf("failed settlement answered %+v (%v)", res, err)
	}
	owed, err := r.st.X402Owed(context.Background(), "", 10)
	if err != nil || len(owed) != 1 || owed[0].Payer != strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex()) {
		t.Fatalf("owed %+v (%v)", owed, err)
	}
	for _, restart := range []bool{false, true} {
		if restart {
			r.open()
		}
		c, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
		if e == nil || e.Status != 402 || c.Tab != nil {
			t.Fatalf("owing payer (restart %v) admitted: %+v", restart, e)
		}
		pr, _ := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
		if pr.Error != x402.ReasonInvalidTransaction || !strings.Contains(e.Message, "could not be settled") {
			t.Errorf("owing payer: %q %q", pr.Error, e.Message)
		}
	}
	// Another wallet is not affected.
	if _, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, wallet(t)).headers(t))); e != nil {
		t.Fatalf("another wallet: %+v", e)
	}
	// The facilitator is back: the next request's retry clears the debt.
	c, e = r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
	if e != nil {
		t.Fatalf("after the retry cleared: %+v", e)
	}
	if owed, _ := r.st.X402Owed(context.Background(), "", 10); len(owed) != 0 {
		t.Fatalf("still owed: %+v", owed)
	}
	if n := len(r.fac.Settlements()); n != 1 {
		t.Fatalf("settled %d, want 1 (the retried one)", n)
	}
	_ = c
}

func TestRateLimitPerWallet(t *testing.T) {
	r := newRig(t)
	st := r.st
	pw, err := paywall.New(context.Background(), paywall.Config{PayTo: payTo, Settler: &x402.Facilitator{URL: r.fac.URL},
		Nonces: st, Owed: st, RequestsPerMinute: 2})
	if err != nil {
		t.Fatal(err)
	}
	r.pw, r.keys = pw, &admit.Keys{Payments: pw}
	key := wallet(t)
	for i := range 3 {
		_, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
		if i < 2 && e != nil || i == 2 && (e == nil || e.Status != 429) {
			t.Fatalf("request %d: %+v", i, e)
		}
	}
	if _, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, wallet(t)).headers(t))); e != nil {
		t.Fatalf("another wallet: %+v", e)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// Each paid request leaves a usage record under its wallet: the charge
// settled, or 0 with the answer's status when nothing was.
func TestUsageRecords(t *testing.T) {
	r := newRig(t)
	key := wallet(t)
	tenant := "wallet:" + strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
	for _, s := range []*gateway.Settlement{
		{RequestID: "ok", Path: gateway.PathUpstream, Upstream: true, Status: 200, Model: "claude-sonnet-4", Provider: "claude",
			Usage: &wire.Usage{InputTokens: 100, OutputTokens: 50}, Priced: true,
			Prices: pricing.Prices{Input: catalog.PriceFromNanos(3e9), Output: catalog.PriceFromNanos(15e9)}},
		{RequestID: "failed", Path: gateway.PathUpstream, Upstream: true, Status: 502, Err: &wire.Error{Status: 502}},
	} {
		c, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
		if e != nil {
			t.Fatal(e)
		}
		c.Tab.Close(s)
	}
	page, err := r.st.Usage(context.Background(), store.UsageQuery{AccountID: tenant, Limit: 10})
	if err != nil || len(page.Records) != 2 {
		t.Fatalf("usage %+v (%v)", page, err)
	}
	got := map[string]store.Usage{}
	for _, u := range page.Records {
		got[u.RequestID] = u
	}
	if u := got["ok"]; u.Charge != 21600 || u.Cost != 1050 || u.InputTokens != 100 || u.OutputTokens != 50 || u.Status != 200 || u.Provider != "claude" {
		t.Errorf("served: %+v", u)
	}
	if u := got["failed"]; u.Charge != 0 || u.Status != 502 {
		t.Errorf("failed: %+v", u)
	}
}

// The daemon's periodic pass (Retry with no payer) settles what is owed
// once the facilitator answers; a payer without funds stays owing, with
// the facilitator's reason.
func TestRetryAll(t *testing.T) {
	r := newRig(t)
	rich, poor := wallet(t), wallet(t)
	r.fac.SetBalance(crypto.PubkeyToAddress(rich.PublicKey).Hex(), 1_000_000)
	r.fac.SetBalance(crypto.PubkeyToAddress(poor.PublicKey).Hex(), 10)
	for _, k := range []*ecdsa.PrivateKey{rich, poor} {
		c, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, k).headers(t)))
		if e != nil {
			t.Fatal(e)
		}
		r.fac.Down(1)
		c.Tab.Close(ok)
	}
	if owed, _ := r.st.X402Owed(context.Background(), "", 10); len(owed) != 2 {
		t.Fatalf("owed %+v", owed)
	}
	r.pw.Retry(context.Background(), "")
	owed, err := r.st.X402Owed(context.Background(), "", 10)
	if err != nil || len(owed) != 1 || owed[0].Payer != strings.ToLower(crypto.PubkeyToAddress(poor.PublicKey).Hex()) ||
		owed[0].LastError != x402.ReasonInsufficientFunds || owed[0].Attempts != 2 {
		t.Fatalf("after the retry: %+v (%v)", owed, err)
	}
	if got := r.fac.Balance(payTo.Hex()); got == nil || got.Int64() != 21600 {
		t.Fatalf("payTo balance %v, want 21600", got)
	}
	_, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, poor).headers(t)))
	if e == nil || !strings.Contains(e.Message, x402.ReasonInsufficientFunds) {
		t.Fatalf("the payer without funds: %+v", e)
	}
	if _, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, rich).headers(t))); e != nil {
		t.Fatalf("the payer whose debt cleared: %+v", e)
	}
}

// A settlement that went through but whose answer was lost is owed; its
// retry finds the nonce used on chain and counts it paid, once.
func TestRetryLostAnswer(t *testing.T) {
	r := newRig(t)
	key := wallet(t)
	c, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
	if e != nil {
		t.Fatal(e)
	}
	r.fac.LoseAnswers(1)
	c.Tab.Close(ok)
	if owed, _ := r.st.X402Owed(context.Background(), "", 10); len(owed) != 1 {
		t.Fatalf("owed %+v", owed)
	}
	r.pw.Retry(context.Background(), "")
	if owed, _ := r.st.X402Owed(context.Background(), "", 10); len(owed) != 0 {
		t.Fatalf("still owed after the retry: %+v", owed)
	}
	if n := len(r.fac.Settlements()); n != 1 {
		t.Fatalf("settled %d times, want 1", n)
	}
	if _, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t))); e != nil {
		t.Fatalf("payer refused after its debt cleared: %+v", e)
	}
}

// A settlement that can no longer be made because its authorization
// expired — a long answer settled at its end, the facilitator down until
// then — is written off, not held against the payer (no retry could ever
// clear it, so the payer would be refused for good). A payer whose own
// failure it was (insufficient funds: the wallet emptied after being
// served) still owes.
func TestExpiredSettlementWrittenOff(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fail  func(r *rig, key *ecdsa.PrivateKey)
		owing bool
	}{
		{"facilitator down", func(r *rig, _ *ecdsa.PrivateKey) { r.fac.Down(1) }, false},
		{"wallet emptied", func(r *rig, key *ecdsa.PrivateKey) {
			r.fac.SetBalance(crypto.PubkeyToAddress(key.PublicKey).Hex(), 0)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			clock := time.Now()
			var mu sync.Mutex
			now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
			pw, err := paywall.New(context.Background(), paywall.Config{PayTo: payTo, Settler: &x402.Facilitator{URL: r.fac.URL},
				Nonces: r.st, Owed: r.st, Usage: r.st, Now: now})
			if err != nil {
				t.Fatal(err)
			}
			r.pw, r.keys = pw, &admit.Keys{Payments: pw}
			key := wallet(t)
			c, e := r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
			if e != nil {
				t.Fatal(e)
			}
			tc.fail(r, key)
			mu.Lock()
			clock = clock.Add(5 * time.Minute) // past the authorization's validBefore (now + 100 s)
			mu.Unlock()
			c.Tab.Close(ok)
			owed, err := r.st.X402Owed(context.Background(), "", 10)
			if err != nil || (len(owed) == 1) != tc.owing {
				t.Fatalf("owed %+v (%v), want owing %v", owed, err, tc.owing)
			}
			mu.Lock()
			clock = time.Now()
			mu.Unlock()
			_, e = r.keys.Admit(context.Background(), admission(newPayment(t, r, key).headers(t)))
			if (e != nil) != tc.owing {
				t.Fatalf("the payer's next request: %+v, want refused %v", e, tc.owing)
			}
		})
	}
}
