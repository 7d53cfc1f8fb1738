package paywall_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"net/http"
	"strings"
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
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/wire"
)

// uptoRig is a rig whose paywall offers upto, bound to the facilitator.
func uptoRig(t testing.TB) *rig {
	r := newRig(t)
	pw, err := paywall.New(context.Background(), paywall.Config{PayTo: payTo, Settler: &x402.Facilitator{URL: r.fac.URL},
		Nonces: r.st, Owed: r.st, UptoFacilitator: r.fac.Address})
	if err != nil {
		t.Fatal(err)
	}
	r.pw, r.keys = pw, &admit.Keys{Payments: pw}
	return r
}

// uptoPayment is a wallet's Permit2 answer to the upto offer.
type uptoPayment struct {
	key   *ecdsa.PrivateKey // signs
	from  common.Address    // the payer it claims to be
	offer x402.PaymentRequirements
	w     x402.Permit2Witness
}

func newUpto(t testing.TB, r *rig, key *ecdsa.PrivateKey) *uptoPayment {
	t.Helper()
	c, _ := r.keys.Admit(context.Background(), admission(auth.HTTPHeader{}))
	pr, err := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
	if err != nil || len(pr.Accepts) != 2 || pr.Accepts[1].Scheme != "upto" {
		t.Fatalf("challenge %+v (%v)", pr, err)
	}
	o := pr.Accepts[1]
	var extra x402.UptoExtra
	if err := jsonUnmarshal(o.Extra, &extra); err != nil || extra.FacilitatorAddress != r.fac.Address.Hex() || extra.Name != "USD Coin" {
		t.Fatalf("upto extra %s", o.Extra)
	}
	maxAmt, _ := new(big.Int).SetString(o.Amount, 10)
	now := time.Now().Unix()
	return &uptoPayment{key: key, from: crypto.PubkeyToAddress(key.PublicKey), offer: o, w: x402.Permit2Witness{Token: common.HexToAddress(o.Asset), Amount: maxAmt,
		Spender: x402.UptoProxyAddress, Nonce: big.NewInt(time.Now().UnixNano()), Deadline: big.NewInt(now + 100),
		To: common.HexToAddress(o.PayTo), Facilitator: r.fac.Address, ValidAfter: big.NewInt(now - 60)}}
}

func (u *uptoPayment) headers(t testing.TB) auth.HTTPHeader {
	t.Helper()
	sig, err := crypto.Sign(u.w.Digest(8453).Bytes(), u.key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	v, err := x402.EncodeHeader(&x402.PaymentPayload{X402Version: 2, Accepted: &u.offer, Payload: x402.ExactEVMPayload{
		Signature: "0x" + common.Bytes2Hex(sig), Permit2Authorization: u.w.Wire(u.from)}})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(x402.HeaderPaymentSignature, v)
	return auth.HTTPHeader(h)
}

// served is an upstream answer that used in input and out output tokens
// of the $3 / $15 model.
func served(in, out int64) *gateway.Settlement {
	return &gateway.Settlement{RequestID: "req", Path: gateway.PathUpstream, Upstream: true, Status: 200, Priced: true,
		Usage:  &wire.Usage{InputTokens: in, OutputTokens: out},
		Prices: pricing.Prices{Input: catalog.PriceFromNanos(3e9), Output: catalog.PriceFromNanos(15e9)}}
}

// upto settles what the answer used: 100 input and 50 output tokens are
// 0.00105 USD, 0.00126 with the 20 % spread; a failed answer settles 0 and
// puts nothing on chain; usage beyond the maximum is capped at it.
func TestPayUpto(t *testing.T) {
	r := uptoRig(t)
	key := wallet(t)
	for _, tc := range []struct {
		s       *gateway.Settlement
		amount  string
		onChain bool
	}{
		{served(100, 50), "1260", true},
		{&gateway.Settlement{Path: gateway.PathUpstream, Upstream: true, Status: 502, Err: &wire.Error{Status: 502}}, "0", false},
		{served(1_000_000, 1_000_000), price, true},
	} {
		before := len(r.fac.Settlements())
		c, e := r.keys.Admit(context.Background(), admission(newUpto(t, r, key).headers(t)))
		if e != nil {
			t.Fatalf("upto payment refused: %+v", e)
		}
		if c.Tenant != "wallet:"+strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex()) {
			t.Fatalf("tenant %q", c.Tenant)
		}
		res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(tc.s), x402.HeaderPaymentResponse))
		if err != nil || !res.Success || res.Amount != tc.amount {
			t.Fatalf("want %s: PAYMENT-RESPONSE %+v (%v)", tc.amount, res, err)
		}
		got := r.fac.Settlements()[before:]
		if tc.onChain != (len(got) == 1) || tc.onChain && got[0].Amount != tc.amount {
			t.Fatalf("want %s on chain %v: facilitator settled %+v", tc.amount, tc.onChain, got)
		}
		if !tc.onChain && res.Transaction != "" {
			t.Errorf("zero settlement with a transaction %q", res.Transaction)
		}
	}
}

func TestUptoRefusals(t *testing.T) {
	r := uptoRig(t)
	key := wallet(t)
	for _, tc := range []struct {
		name   string
		mutate func(u *uptoPayment)
		reason string
	}{
		{"forged", func(u *uptoPayment) { u.key = wallet(t) }, x402.ReasonUptoSignature},
		{"spender", func(u *uptoPayment) { u.w.Spender = x402.Permit2Address }, x402.ReasonUptoSpender},
		{"facilitator", func(u *uptoPayment) { u.w.Facilitator = payTo }, x402.ReasonUptoFacilitator},
		{"recipient", func(u *uptoPayment) { u.w.To = r.fac.Address }, x402.ReasonUptoRecipient},
		{"max below the offer", func(u *uptoPayment) { u.w.Amount = big.NewInt(1) }, x402.ReasonUptoAmount},
		{"token", func(u *uptoPayment) { u.w.Token = x402.USDCBaseSepolia.Address }, x402.ReasonUptoToken},
		{"expired", func(u *uptoPayment) { u.w.Deadline = big.NewInt(time.Now().Unix() - 1) }, x402.ReasonUptoDeadline},
		{"not yet valid", func(u *uptoPayment) { u.w.ValidAfter = big.NewInt(time.Now().Unix() + 60) }, x402.ReasonUptoValidAfter},
	} {
		u := newUpto(t, r, key)
		tc.mutate(u)
		c, e := r.keys.Admit(context.Background(), admission(u.headers(t)))
		if e == nil || e.Status != 402 || c.Tab != nil {
			t.Errorf("%s: %+v", tc.name, e)
			continue
		}
		if pr, _ := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired)); pr.Error != tc.reason {
			t.Errorf("%s: reason %q, want %q", tc.name, pr.Error, tc.reason)
		}
	}
	// One settlement per authorization: its replay is refused.
	h := newUpto(t, r, key).headers(t)
	c, e := r.keys.Admit(context.Background(), admission(h))
	if e != nil {
		t.Fatal(e)
	}
	c.Tab.Close(served(100, 50))
	if c, e := r.keys.Admit(context.Background(), admission(h)); e == nil || e.Status != 402 {
		t.Fatalf("replayed upto: %+v", e)
	} else if pr, _ := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired)); pr.Error != x402.ReasonUptoNonceUsed {
		t.Fatalf("replayed upto: reason %q", pr.Error)
	}
	if n := len(r.fac.Settlements()); n != 1 {
		t.Fatalf("settled %d, want 1", n)
	}
}

// A settlement above the authorized maximum is refused by the facilitator
// and moves nothing.
func TestUptoSettlementAboveMax(t *testing.T) {
	r := uptoRig(t)
	u := newUpto(t, r, wallet(t))
	pl, err := x402.DecodePaymentPayload(x402.HeaderPaymentSignature, string(u.headers(t).Peek(x402.HeaderPaymentSignature)))
	if err != nil {
		t.Fatal(err)
	}
	req := u.offer
	req.Amount = new(big.Int).Add(u.w.Amount, big.NewInt(1)).String()
	res, err := (&x402.Facilitator{URL: r.fac.URL}).Settle(context.Background(), pl, &req)
	if err != nil || res.Success || res.ErrorReason != x402.ReasonUptoSettlementExceeds {
		t.Fatalf("above the maximum: %+v (%v)", res, err)
	}
	if n := len(r.fac.Settlements()); n != 0 {
		t.Fatalf("settled %d", n)
	}
}
