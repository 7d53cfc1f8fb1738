package chaintest_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// payment is an exact payment as a client would send it, against
// requirements for USDC on the simulated Base.
type payment struct {
	p      *x402.PaymentPayload
	req    *x402.PaymentRequirements
	auth   *x402.TransferAuthorization
	digest common.Hash
}

// newPayment signs, with key, an authorization to pay value from `from`
// (key's address for an EOA, a wallet's for a contract wallet) to payTo.
// wrap, when set, turns the ECDSA signature into what is sent.
func newPayment(t testing.TB, c *chaintest.Chain, key *ecdsa.PrivateKey, from, payTo common.Address, value int64, wrap func([]byte) []byte) payment {
	t.Helper()
	extra, _ := json.Marshal(x402.ExactExtra{Name: "USD Coin", Version: "2"})
	req := &x402.PaymentRequirements{Scheme: x402.SchemeExact, Network: x402.NetworkBase, Amount: strconv.FormatInt(value, 10),
		Asset: c.USDC.Hex(), PayTo: payTo.Hex(), MaxTimeoutSeconds: 120, Extra: extra}
	// The simulated chain's clock runs ahead of the wall clock by a second
	// per block at worst: sign against whichever is later, as a client
	// reading the chain would.
	now := max(time.Now().Unix(), c.Now(t).Unix())
	a := &x402.TransferAuthorization{From: from, To: payTo, Value: big.NewInt(value),
		ValidAfter: big.NewInt(now - 600), ValidBefore: big.NewInt(now + 100)}
	if _, err := rand.Read(a.Nonce[:]); err != nil {
		t.Fatal(err)
	}
	d := x402.Domain{Name: "USD Coin", Version: "2", ChainID: c.ChainID.Uint64(), VerifyingContract: c.USDC}
	digest := x402.TypedDataHash(d, a)
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	if wrap != nil {
		sig = wrap(sig)
	}
	p := &x402.PaymentPayload{X402Version: x402.Version2, Accepted: req, Payload: x402.ExactEVMPayload{
		Signature: hexutil.Encode(sig),
		Authorization: x402.Authorization{From: from.Hex(), To: payTo.Hex(), Value: a.Value.String(),
			ValidAfter: a.ValidAfter.String(), ValidBefore: a.ValidBefore.String(), Nonce: hexutil.Encode(a.Nonce[:])}}}
	return payment{p: p, req: req, auth: a, digest: digest}
}

// settler returns a chain settler whose key holds ether for gas.
func settler(t testing.TB, c *chaintest.Chain, factories ...common.Address) *x402.ChainSettler {
	t.Helper()
	k, err := x402.GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	c.FundETH(t, k.Address(), big.NewInt(1e18))
	return &x402.ChainSettler{Client: c.Client, Key: k, Factories: factories, PollInterval: 10 * time.Millisecond}
}

func verifier(c *chaintest.Chain, factories ...common.Address) *x402.Verifier {
	v := x402.NewVerifier(nil, nil)
	v.Chain = &x402.Chain{Client: c.Client, Factories: factories}
	return v
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func wantBalance(t *testing.T, c *chaintest.Chain, who string, a common.Address, want int64) {
	t.Helper()
	if got := c.Balance(t, a); got.Int64() != want {
		t.Fatalf("%s holds %s, want %d", who, got, want)
	}
}

// TestSettleOnChain: the exact payload the Verifier accepts is settled by
// ChainSettler with a real transferWithAuthorization through FiatToken
// v2.2: funds move, the authorization is used on chain, and settling it
// again is refused as a used nonce by simulation, with no transaction.
func TestSettleOnChain(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	payerKey, payTo := newKey(t), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	payer := chaintest.Address(payerKey)
	c.Mint(t, payer, big.NewInt(10_000_000))
	s := settler(t, c)

	pm := newPayment(t, c, payerKey, payer, payTo, 1_250_000, nil)
	if _, err := verifier(c).Verify(t.Context(), pm.p, pm.req); err != nil {
		t.Fatalf("verify: %v", err)
	}
	res, err := s.Settle(t.Context(), pm.p, pm.req)
	if err != nil || !res.Success || len(res.Transaction) != 66 || res.Payer != payer.Hex() || res.Network != x402.NetworkBase {
		t.Fatalf("settle: %+v, %v", res, err)
	}
	wantBalance(t, c, "payer", payer, 8_750_000)
	wantBalance(t, c, "payTo", payTo, 1_250_000)
	if !c.AuthorizationState(t, payer, pm.auth.Nonce) {
		t.Fatal("authorization not marked used on chain")
	}
	r, err := c.Client.TransactionReceipt(t.Context(), common.HexToHash(res.Transaction))
	if err != nil || r.Status != 1 {
		t.Fatalf("receipt %+v, %v", r, err)
	}

	nonceBefore, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress())
	res, err = s.Settle(t.Context(), pm.p, pm.req)
	if err != nil || res.Success || res.ErrorReason != x402.ReasonNonceUsed || res.Transaction != "" {
		t.Fatalf("second settle: %+v, %v; want a refusal %s", res, err, x402.ReasonNonceUsed)
	}
	if n, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress()); n != nonceBefore {
		t.Fatalf("a refused settlement sent a transaction (nonce %d -> %d)", nonceBefore, n)
	}
	wantBalance(t, c, "payer", payer, 8_750_000)
}

// TestSettleRefusals: what FiatToken would revert is refused by the
// simulation, with the x402 code, and nothing is sent.
func TestSettleRefusals(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	payerKey, payTo := newKey(t), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	payer := chaintest.Address(payerKey)
	c.Mint(t, payer, big.NewInt(1_000_000))
	s := settler(t, c)

	poor := newPayment(t, c, payerKey, payer, payTo, 2_000_000, nil)
	forged := newPayment(t, c, newKey(t), payer, payTo, 500_000, nil)
	for name, tc := range map[string]struct {
		pm   payment
		want string
	}{
		"balance short": {poor, x402.ReasonInsufficientFunds},
		"forged":        {forged, x402.ReasonSignature},
	} {
		res, err := s.Settle(t.Context(), tc.pm.p, tc.pm.req)
		if err != nil || res.Success || res.ErrorReason != tc.want {
			t.Errorf("%s: %+v, %v; want refusal %s", name, res, err, tc.want)
		}
	}
	if n, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress()); n != 0 {
		t.Fatalf("refused settlements sent %d transactions", n)
	}
	wantBalance(t, c, "payer", payer, 1_000_000)
}

// TestBalanceChecked: with a chain, Verify refuses a payer whose balance
// is below the authorization's value (insufficient_funds) before claiming
// its nonce, so the same authorization passes once funded.
func TestBalanceChecked(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	payerKey, payTo := newKey(t), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	payer := chaintest.Address(payerKey)
	c.Mint(t, payer, big.NewInt(999_999))
	v := verifier(c)
	pm := newPayment(t, c, payerKey, payer, payTo, 1_000_000, nil)
	_, err := v.Verify(t.Context(), pm.p, pm.req)
	if x402.ReasonOf(err) != x402.ReasonInsufficientFunds {
		t.Fatalf("verify with 0.999999 USDC for 1 USDC: %v, want %s", err, x402.ReasonInsufficientFunds)
	}
	c.Mint(t, payer, big.NewInt(1))
	if _, err := v.Verify(t.Context(), pm.p, pm.req); err != nil {
		t.Fatalf("verify once funded: %v", err)
	}
	// With a chain, a forged signature for an EOA is still a signature
	// refusal: the address has no code to ask.
	forged := newPayment(t, c, newKey(t), payer, payTo, 1_000_000, nil)
	if _, err := v.Verify(t.Context(), forged.p, forged.req); x402.ReasonOf(err) != x402.ReasonSignature {
		t.Fatalf("forged: %v, want %s", err, x402.ReasonSignature)
	}
}

// TestSettleConcurrent: settlements racing on one settlement key each get
// their own account nonce (one sender at a time), so all land: 12 payers,
// 12 transactions, every transfer on chain.
func TestSettleConcurrent(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	payTo := common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	s := settler(t, c)
	const n = 12
	pms := make([]payment, n)
	for i := range pms {
		k := newKey(t)
		c.Mint(t, chaintest.Address(k), big.NewInt(1_000_000))
		pms[i] = newPayment(t, c, k, chaintest.Address(k), payTo, int64(1000+i), nil)
	}
	errs := make(chan error, n)
	for _, pm := range pms {
		go func() {
			res, err := s.Settle(t.Context(), pm.p, pm.req)
			if err == nil && !res.Success {
				err = errors.New(res.ErrorReason)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	var want int64
	for i := range n {
		want += int64(1000 + i)
	}
	wantBalance(t, c, "payTo", payTo, want)
	if got, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress()); got != n {
		t.Fatalf("settlement key sent %d transactions, want %d", got, n)
	}
}
