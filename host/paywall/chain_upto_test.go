package paywall_test

import (
	"context"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/x402"
)

// chainUpto answers the chain rig's upto offer: the settlement key is its
// facilitator (paywall.New made it so), the spender the upto proxy.
func chainUpto(t *testing.T, r *chainRig) *uptoPayment {
	t.Helper()
	key := wallet(t)
	c, _ := r.keys.Admit(context.Background(), admission(auth.HTTPHeader{}))
	pr, err := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
	if err != nil || len(pr.Accepts) != 2 || pr.Accepts[1].Scheme != x402.SchemeUpto {
		t.Fatalf("settle on chain offers %+v (%v), want exact and upto", pr, err)
	}
	o := pr.Accepts[1]
	var extra x402.UptoExtra
	if err := jsonUnmarshal(o.Extra, &extra); err != nil {
		t.Fatal(err)
	}
	maxAmt, _ := new(big.Int).SetString(o.Amount, 10)
	now := max(time.Now().Unix(), r.chain.Now(t).Unix())
	return &uptoPayment{key: key, from: crypto.PubkeyToAddress(key.PublicKey), offer: o, w: x402.Permit2Witness{
		Token: common.HexToAddress(o.Asset), Amount: maxAmt, Spender: x402.UptoProxyAddress, Nonce: big.NewInt(time.Now().UnixNano()),
		Deadline: big.NewInt(now + 100), To: common.HexToAddress(o.PayTo), Facilitator: common.HexToAddress(extra.FacilitatorAddress),
		ValidAfter: big.NewInt(now - 600)}}
}

// TestChainUpto: with settle on chain, upto is offered with the settlement
// key as facilitator. A payer who approved Permit2 is served and settled
// at the answer's actual charge through the real upto proxy (balances move
// by exactly that); a failed answer settles 0 and puts nothing on chain;
// a replayed permit is refused; a payer who never approved Permit2 gets a
// 402 naming permit2_allowance_required, and nothing is served.
func TestChainUpto(t *testing.T) {
	r := newChainRig(t)
	u := chainUpto(t, r)
	r.chain.Mint(t, u.from, big.NewInt(1_000_000))
	r.chain.ApprovePermit2(t, u.key, new(big.Int).Lsh(big.NewInt(1), 255))
	h := u.headers(t)
	c, e := r.keys.Admit(context.Background(), admission(h))
	if e != nil {
		t.Fatalf("upto refused: %+v", e)
	}
	res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(served(100, 50)), x402.HeaderPaymentResponse))
	if err != nil || !res.Success || res.Amount != "1260" {
		t.Fatalf("settlement %+v, %v; want 1260 settled", res, err)
	}
	rc, err := r.chain.Client.TransactionReceipt(t.Context(), common.HexToHash(res.Transaction))
	if err != nil || rc.Status != 1 {
		t.Fatalf("receipt of %s: %+v, %v", res.Transaction, rc, err)
	}
	if got := r.chain.Balance(t, payTo); got.Int64() != 1260 {
		t.Fatalf("payTo holds %s, want 1260", got)
	}
	if got := r.chain.Balance(t, u.from); got.Int64() != 1_000_000-1260 {
		t.Fatalf("the payer holds %s", got)
	}

	// The same permit again: refused before serving.
	refusedWith(t, r, h, x402.ReasonUptoNonceUsed)

	// A failed answer: 0, nothing on chain, the permit unspent.
	z := chainUpto(t, r)
	z.key, z.from = u.key, u.from
	c, e = r.keys.Admit(context.Background(), admission(z.headers(t)))
	if e != nil {
		t.Fatalf("second upto refused: %+v", e)
	}
	res, err = x402.DecodeSettlementResponse(billHeader(c.Tab.Close(&gateway.Settlement{Path: gateway.PathUpstream, Upstream: true, Status: 502}),
		x402.HeaderPaymentResponse))
	if err != nil || !res.Success || res.Amount != "0" || res.Transaction != "" {
		t.Fatalf("zero settlement %+v, %v", res, err)
	}
	if r.chain.Permit2NonceUsed(t, z.from, z.w.Nonce) {
		t.Fatal("a zero settlement spent the permit")
	}
	if got := r.chain.Balance(t, payTo); got.Int64() != 1260 {
		t.Fatalf("payTo holds %s after a zero settlement", got)
	}

	// Funded, never approved Permit2.
	n := chainUpto(t, r)
	r.chain.Mint(t, n.from, big.NewInt(1_000_000))
	refusedWith(t, r, n.headers(t), x402.ReasonPermit2Allowance)
}

// TestChainUptoFacilitatorIsTheKey: settling on chain, upto's facilitator
// is the settlement key (the proxy takes the call from no one else): a
// different configured address is refused at start.
func TestChainUptoFacilitatorIsTheKey(t *testing.T) {
	r := newChainRig(t)
	key, err := x402.GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := paywall.New(context.Background(), paywall.Config{PayTo: payTo,
		Settler: &x402.ChainSettler{Client: r.chain.Client, Key: key}, UptoFacilitator: payTo,
		Nonces: r.st, Owed: r.st, Usage: r.st}); err == nil || !strings.Contains(err.Error(), "settlement key") {
		t.Fatalf("a facilitator that is not the settlement key: %v", err)
	}
	if _, err := paywall.New(context.Background(), paywall.Config{PayTo: payTo,
		Settler: &x402.ChainSettler{Client: r.chain.Client, Key: key}, UptoFacilitator: key.Address(),
		Nonces: r.st, Owed: r.st, Usage: r.st}); err != nil {
		t.Fatalf("the settlement key as facilitator: %v", err)
	}
}

// TestChainUptoOwed: a payer who spends its funds between verification
// and settlement is not settled (the simulation refuses; no gas spent):
// the charge is recorded as owed — its amount the charge, not the maximum
// — the payer refused until it clears, and once funded again the retry
// settles exactly the charge on chain.
func TestChainUptoOwed(t *testing.T) {
	r := newChainRig(t)
	u := chainUpto(t, r)
	r.chain.Mint(t, u.from, big.NewInt(100_000))
	r.chain.ApprovePermit2(t, u.key, new(big.Int).Lsh(big.NewInt(1), 255))
	c, e := r.keys.Admit(context.Background(), admission(u.headers(t)))
	if e != nil {
		t.Fatalf("upto refused: %+v", e)
	}
	r.chain.Call(t, u.key, r.chain.USDC, r.chain.TokenABI(), "transfer", common.HexToAddress("0x0000000000000000000000000000000000000e1f"), big.NewInt(100_000))
	res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(served(100, 50)), x402.HeaderPaymentResponse))
	if err != nil || res.Success || res.ErrorReason != x402.ReasonInsufficientFunds {
		t.Fatalf("settlement %+v, %v; want a failure %s", res, err, x402.ReasonInsufficientFunds)
	}
	owed, err := r.st.X402Owed(context.Background(), "", 10)
	if err != nil || len(owed) != 1 || owed[0].Amount != "1260" {
		t.Fatalf("owed %+v, %v; want one of 1260", owed, err)
	}
	next := chainUpto(t, r)
	next.key, next.from = u.key, u.from
	refusedWith(t, r, next.headers(t), x402.ReasonInvalidTransaction)

	r.chain.Mint(t, u.from, big.NewInt(5_000))
	r.pw.Retry(context.Background(), "")
	if got := r.chain.Balance(t, payTo); got.Int64() != 1260 {
		t.Fatalf("after the retry payTo holds %s, want 1260", got)
	}
	if owed, _ := r.st.X402Owed(context.Background(), "", 10); len(owed) != 0 {
		t.Fatalf("still owed %+v", owed)
	}
}
