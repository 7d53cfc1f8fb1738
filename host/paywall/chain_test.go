package paywall_test

import (
	"context"
	"math/big"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/auth/admit"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// chainRig is a paywall that verifies on, and settles to, the simulated
// Base with real USDC (host/x402/chaintest): no facilitator.
type chainRig struct {
	*rig
	chain *chaintest.Chain
}

func newChainRig(t *testing.T) *chainRig {
	t.Helper()
	c := chaintest.New(t, chaintest.Options{})
	key, err := x402.GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	c.FundETH(t, key.Address(), big.NewInt(1e18))
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "bardo.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	pw, err := paywall.New(context.Background(), paywall.Config{PayTo: payTo,
		Settler: &x402.ChainSettler{Client: c.Client, Key: key}, Chain: &x402.Chain{Client: c.Client},
		Nonces: st, Owed: st, Usage: st})
	if err != nil {
		t.Fatal(err)
	}
	return &chainRig{rig: &rig{t: t, st: st, pw: pw, keys: &admit.Keys{Payments: pw}}, chain: c}
}

func refusedWith(t *testing.T, r *chainRig, h auth.HTTPHeader, reason string) {
	t.Helper()
	c, e := r.keys.Admit(context.Background(), admission(h))
	if e == nil || e.Status != 402 || c.Tab != nil {
		t.Fatalf("admitted (%+v, tab %v), want 402 %s", e, c.Tab, reason)
	}
	pr, err := x402.DecodePaymentRequired(header(c, x402.HeaderPaymentRequired))
	if err != nil || pr.Error != reason {
		t.Fatalf("402 names %q (%v), want %q; message %q", pr.Error, err, reason, e.Message)
	}
}

// TestChainPaid: an EOA pays, is served, and the answer's PAYMENT-RESPONSE
// names the real transaction that moved the price from it to payTo.
func TestChainPaid(t *testing.T) {
	r := newChainRig(t)
	key := wallet(t)
	payer := crypto.PubkeyToAddress(key.PublicKey)
	r.chain.Mint(t, payer, big.NewInt(1_000_000))
	p := newPayment(t, r.rig, key)
	c, e := r.keys.Admit(context.Background(), admission(p.headers(t)))
	if e != nil {
		t.Fatal(e)
	}
	res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(ok), x402.HeaderPaymentResponse))
	if err != nil || !res.Success {
		t.Fatalf("settlement %+v, %v", res, err)
	}
	rc, err := r.chain.Client.TransactionReceipt(t.Context(), common.HexToHash(res.Transaction))
	if err != nil || rc.Status != 1 {
		t.Fatalf("receipt of %s: %+v, %v", res.Transaction, rc, err)
	}
	if got := r.chain.Balance(t, payTo); got.String() != price {
		t.Fatalf("payTo holds %s, want %s", got, price)
	}
}

// TestChainRefusals: a contract wallet whose ERC-1271 answer is invalid,
// a payer short of funds, and a contract signature from an address with
// no code get 402 naming the reason; nothing is served or settled.
func TestChainRefusals(t *testing.T) {
	r := newChainRig(t)
	owner := wallet(t)
	refusing := r.chain.DeployRefusingWallet(t, crypto.PubkeyToAddress(owner.PublicKey))
	r.chain.Mint(t, refusing, big.NewInt(1_000_000))
	p := newPayment(t, r.rig, owner)
	p.auth.From = refusing // the owner signs for its wallet, which says no
	refusedWith(t, r, p.headers(t), x402.ReasonSignature)

	// The same signature from a wallet that accepts its owner is served.
	good := r.chain.DeployWallet(t, crypto.PubkeyToAddress(owner.PublicKey))
	r.chain.Mint(t, good, big.NewInt(1_000_000))
	p = newPayment(t, r.rig, owner)
	p.auth.From = good
	c, e := r.keys.Admit(context.Background(), admission(p.headers(t)))
	if e != nil {
		t.Fatalf("accepting wallet: %+v", e)
	}
	if res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(ok), x402.HeaderPaymentResponse)); err != nil || !res.Success {
		t.Fatalf("accepting wallet's settlement %+v, %v", res, err)
	}

	poor := newPayment(t, r.rig, wallet(t))
	refusedWith(t, r, poor.headers(t), x402.ReasonInsufficientFunds)

	if got := r.chain.Balance(t, refusing); got.Int64() != 1_000_000 {
		t.Fatalf("the refusing wallet paid: it holds %s", got)
	}
	if got := r.chain.Balance(t, payTo); got.String() != price {
		t.Fatalf("payTo holds %s, want only the accepting wallet's %s", got, price)
	}
}

// TestChainSettlementOwed: a payer that moves its funds away between
// verification and settlement is not settled (the simulation refuses,
// no gas spent); the failure is recorded, the payer refused until it
// clears, and once funded again the retry settles on chain.
func TestChainSettlementOwed(t *testing.T) {
	r := newChainRig(t)
	key := wallet(t)
	payer := crypto.PubkeyToAddress(key.PublicKey)
	r.chain.Mint(t, payer, big.NewInt(100_000))
	p := newPayment(t, r.rig, key)
	c, e := r.keys.Admit(context.Background(), admission(p.headers(t)))
	if e != nil {
		t.Fatal(e)
	}
	r.chain.FundETH(t, payer, big.NewInt(1e17))
	r.chain.Call(t, key, r.chain.USDC, r.chain.TokenABI(), "transfer", common.HexToAddress("0x0000000000000000000000000000000000000e1f"), big.NewInt(100_000))

	res, err := x402.DecodeSettlementResponse(billHeader(c.Tab.Close(ok), x402.HeaderPaymentResponse))
	if err != nil || res.Success || res.ErrorReason != x402.ReasonInsufficientFunds {
		t.Fatalf("settlement %+v, %v; want a failure %s", res, err, x402.ReasonInsufficientFunds)
	}
	owed, err := r.st.X402Owed(context.Background(), "", 10)
	if err != nil || len(owed) != 1 {
		t.Fatalf("owed %+v, %v", owed, err)
	}
	// Back with nothing: the retry at its arrival fails again, so it is
	// refused before its own payment is even verified.
	next := newPayment(t, r.rig, key)
	refusedWith(t, r, next.headers(t), x402.ReasonInvalidTransaction)
	if got := r.chain.Balance(t, payTo); got.Sign() != 0 {
		t.Fatalf("payTo holds %s before the owed payment cleared", got)
	}
	r.chain.Mint(t, payer, big.NewInt(50_000))

	// Funded: the retry (here the daemon's) settles the owed payment on
	// chain, and the payer is served again.
	r.pw.Retry(context.Background(), "")
	if got := r.chain.Balance(t, payTo); got.String() != price {
		t.Fatalf("after the retry payTo holds %s, want %s", got, price)
	}
	if owed, _ := r.st.X402Owed(context.Background(), "", 10); len(owed) != 0 {
		t.Fatalf("still owed %+v", owed)
	}
	next = newPayment(t, r.rig, key)
	if _, e := r.keys.Admit(context.Background(), admission(next.headers(t))); e != nil {
		t.Fatalf("after clearing: %+v", e)
	}
}
