package chaintest_test

import (
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
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

// uptoPayment is an upto payment as a client signs it: Permit2's
// permitWitnessTransferFrom for at most max, to payTo, through the upto
// proxy, bound to facilitator.
type uptoPayment struct {
	p   *x402.PaymentPayload
	req *x402.PaymentRequirements
	w   *x402.Permit2Witness
}

func newUpto(t testing.TB, c *chaintest.Chain, key *ecdsa.PrivateKey, payTo, facilitator common.Address, max int64) uptoPayment {
	t.Helper()
	extra, _ := json.Marshal(x402.UptoExtra{Name: "USD Coin", Version: "2", FacilitatorAddress: facilitator.Hex()})
	req := &x402.PaymentRequirements{Scheme: x402.SchemeUpto, Network: x402.NetworkBase, Amount: strconv.FormatInt(max, 10),
		Asset: c.USDC.Hex(), PayTo: payTo.Hex(), MaxTimeoutSeconds: 120, Extra: extra}
	now := max64(time.Now().Unix(), c.Now(t).Unix())
	nonce := make([]byte, 32)
	if _, err := rand.Read(nonce); err != nil {
		t.Fatal(err)
	}
	w := &x402.Permit2Witness{Token: c.USDC, Amount: big.NewInt(max), Spender: x402.UptoProxyAddress,
		Nonce: new(big.Int).SetBytes(nonce), Deadline: big.NewInt(now + 100), To: payTo, Facilitator: facilitator,
		ValidAfter: big.NewInt(now - 600)}
	d := w.Digest(c.ChainID.Uint64())
	sig, err := crypto.Sign(d[:], key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	p := &x402.PaymentPayload{X402Version: x402.Version2, Accepted: req, Payload: x402.ExactEVMPayload{
		Signature: hexutil.Encode(sig), Permit2Authorization: w.Wire(chaintest.Address(key))}}
	return uptoPayment{p: p, req: req, w: w}
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// at returns the settlement-time requirements: the actual amount.
func (u uptoPayment) at(amount int64) *x402.PaymentRequirements {
	r := *u.req
	r.Amount = strconv.FormatInt(amount, 10)
	return &r
}

// uptoSetup: a payer with 5 USDC who approved Permit2, a payee, and a
// settlement key that is the facilitator.
func uptoSetup(t testing.TB, approve int64) (*chaintest.Chain, *ecdsa.PrivateKey, common.Address, *x402.ChainSettler) {
	t.Helper()
	c := chaintest.New(t, chaintest.Options{})
	payer := newKey(t)
	c.Mint(t, chaintest.Address(payer), big.NewInt(5_000_000))
	if approve > 0 {
		c.ApprovePermit2(t, payer, big.NewInt(approve))
	}
	return c, payer, chaintest.Address(newKey(t)), settler(t, c)
}

// TestPermit2Canonical: the vendored Permit2 and upto proxy sit at their
// canonical addresses (deployed by CREATE2 with upstream's salts, so the
// bytecode is the deployed one), and Permit2's DOMAIN_SEPARATOR is the
// domain x402's upto digest signs over.
func TestPermit2Canonical(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	if chaintest.Permit2Address != x402.Permit2Address || chaintest.UptoProxyAddress != x402.UptoProxyAddress {
		t.Fatal("chaintest and x402 disagree on the canonical addresses")
	}
	var sep [32]byte
	c.Read(t, chaintest.Permit2Address, c.Permit2ABI(), "DOMAIN_SEPARATOR", &sep)
	var dom [4 * 32]byte
	copy(dom[:32], crypto.Keccak256([]byte("EIP712Domain(string name,uint256 chainId,address verifyingContract)")))
	copy(dom[32:64], crypto.Keccak256([]byte("Permit2")))
	big.NewInt(8453).FillBytes(dom[64:96])
	copy(dom[96+12:], x402.Permit2Address[:])
	if want := crypto.Keccak256Hash(dom[:]); common.Hash(sep) != want {
		t.Fatalf("Permit2 DOMAIN_SEPARATOR %x, want %s", sep, want)
	}
	var p2 common.Address
	c.Read(t, chaintest.UptoProxyAddress, c.UptoProxyABI(), "PERMIT2", &p2)
	if p2 != chaintest.Permit2Address {
		t.Fatalf("proxy's PERMIT2 is %s", p2)
	}
}

// TestUptoOnChain: an upto payment the Verifier accepts (allowance,
// balance, simulation at the maximum) settles for the actual charge: the
// balances move by exactly that, and the Permit2 nonce is spent; settling
// it again is refused as a used nonce with nothing sent.
func TestUptoOnChain(t *testing.T) {
	c, payer, payTo, s := uptoSetup(t, 1<<40)
	u := newUpto(t, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	v := verifier(c)
	if _, err := v.VerifyUpto(t.Context(), u.p, u.req); err != nil {
		t.Fatalf("verify: %v", err)
	}
	res, err := s.Settle(t.Context(), u.p, u.at(1_234_567))
	if err != nil || !res.Success || res.Transaction == "" || res.Amount != "1234567" {
		t.Fatalf("settle: %+v, %v", res, err)
	}
	wantBalance(t, c, "payer", chaintest.Address(payer), 5_000_000-1_234_567)
	wantBalance(t, c, "payTo", payTo, 1_234_567)
	if !c.Permit2NonceUsed(t, chaintest.Address(payer), u.w.Nonce) {
		t.Fatal("the Permit2 nonce is not spent")
	}
	before, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress())
	res, err = s.Settle(t.Context(), u.p, u.at(1))
	if err != nil || res.Success || res.ErrorReason != x402.ReasonUptoNonceUsed {
		t.Fatalf("second settlement: %+v, %v", res, err)
	}
	if after, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress()); after != before {
		t.Fatal("a refused settlement sent a transaction")
	}
	wantBalance(t, c, "payTo", payTo, 1_234_567)
	// Verification too finds the nonce spent (a fresh store: as after a
	// restart that lost it).
	if _, err := verifier(c).VerifyUpto(t.Context(), u.p, u.req); x402.ReasonOf(err) != x402.ReasonUptoNonceUsed {
		t.Fatalf("verify after settlement: %v", err)
	}
}

// TestUptoZero: a charge of 0 puts nothing on chain and succeeds; the
// authorization stays unspent.
func TestUptoZero(t *testing.T) {
	c, payer, payTo, s := uptoSetup(t, 1<<40)
	u := newUpto(t, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	before, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress())
	res, err := s.Settle(t.Context(), u.p, u.at(0))
	if err != nil || !res.Success || res.Transaction != "" || res.Amount != "0" {
		t.Fatalf("settle 0: %+v, %v", res, err)
	}
	if after, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress()); after != before {
		t.Fatal("a zero settlement sent a transaction")
	}
	wantBalance(t, c, "payer", chaintest.Address(payer), 5_000_000)
	if c.Permit2NonceUsed(t, chaintest.Address(payer), u.w.Nonce) {
		t.Fatal("a zero settlement spent the nonce")
	}
}

// TestUptoRefusals: above the maximum, a stranger's signature, another
// facilitator, and a payer without the Permit2 allowance (or the funds)
// are refused with their codes, at verification and at settlement, and
// nothing is sent.
func TestUptoRefusals(t *testing.T) {
	c, payer, payTo, s := uptoSetup(t, 1<<40)
	sent := func() uint64 {
		n, err := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress())
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := sent()
	check := func(name string, res *x402.SettlementResponse, err error, want string) {
		t.Helper()
		if err != nil || res.Success || res.ErrorReason != want {
			t.Fatalf("%s: %+v, %v; want %s", name, res, err, want)
		}
	}

	u := newUpto(t, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	res, err := s.Settle(t.Context(), u.p, u.at(2_000_001))
	check("above the maximum", res, err, x402.ReasonUptoSettlementExceeds)

	// Forged: signed by a stranger for the payer's address.
	f := newUpto(t, c, newKey(t), payTo, s.SettlementAddress(), 2_000_000)
	f.p.Payload.Permit2Authorization.From = chaintest.Address(payer).Hex()
	res, err = s.Settle(t.Context(), f.p, f.at(1))
	check("forged", res, err, x402.ReasonUptoSignature)

	// Bound to another facilitator: this key may not settle it.
	o := newUpto(t, c, payer, payTo, chaintest.Address(newKey(t)), 2_000_000)
	res, err = s.Settle(t.Context(), o.p, o.at(1))
	check("other facilitator", res, err, x402.ReasonUptoFacilitator)

	// No allowance to Permit2.
	stranger := newKey(t)
	c.Mint(t, chaintest.Address(stranger), big.NewInt(5_000_000))
	n := newUpto(t, c, stranger, payTo, s.SettlementAddress(), 2_000_000)
	if _, err := verifier(c).VerifyUpto(t.Context(), n.p, n.req); x402.ReasonOf(err) != x402.ReasonPermit2Allowance {
		t.Fatalf("verify without allowance: %v", err)
	}
	res, err = s.Settle(t.Context(), n.p, n.at(1))
	check("no allowance", res, err, x402.ReasonPermit2Allowance)

	// Approved, but poorer than the maximum (verification) and than the
	// charge (settlement).
	poor := newKey(t)
	c.Mint(t, chaintest.Address(poor), big.NewInt(1_000))
	c.ApprovePermit2(t, poor, big.NewInt(1<<40))
	pp := newUpto(t, c, poor, payTo, s.SettlementAddress(), 2_000_000)
	if _, err := verifier(c).VerifyUpto(t.Context(), pp.p, pp.req); x402.ReasonOf(err) != x402.ReasonInsufficientFunds {
		t.Fatalf("verify, balance short: %v", err)
	}
	res, err = s.Settle(t.Context(), pp.p, pp.at(1_001))
	check("balance short", res, err, x402.ReasonInsufficientFunds)

	if sent() != before {
		t.Fatal("a refused settlement sent a transaction")
	}
	wantBalance(t, c, "payTo", payTo, 0)
}

// TestUptoReverts: the contracts' own refusals, read from their custom
// errors by a simulation of the proxy's settle: above the permitted amount
// (AmountExceedsPermitted), before validAfter (PaymentTooEarly), past the
// deadline (Permit2's SignatureExpired), a signature not by the owner
// (Permit2's InvalidSigner).
func TestUptoReverts(t *testing.T) {
	c, payer, payTo, s := uptoSetup(t, 1<<40)
	ch := &x402.Chain{Client: c.Client}
	from := chaintest.Address(payer)
	sim := func(name string, u uptoPayment, amount int64, want string) {
		t.Helper()
		got, err := ch.SimulateUpto(t.Context(), from, u.w, big.NewInt(amount), common.FromHex(u.p.Payload.Signature))
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", name, got, err, want)
		}
	}
	resign := func(u uptoPayment) uptoPayment {
		d := u.w.Digest(c.ChainID.Uint64())
		sig, err := crypto.Sign(d[:], payer)
		if err != nil {
			t.Fatal(err)
		}
		sig[64] += 27
		u.p.Payload.Signature = hexutil.Encode(sig)
		return u
	}
	u := newUpto(t, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	sim("within the maximum", u, 2_000_000, "")
	sim("above the maximum", u, 2_000_001, x402.ReasonUptoSettlementExceeds)

	early := newUpto(t, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	early.w.ValidAfter = big.NewInt(c.Now(t).Unix() + 3600)
	sim("before validAfter", resign(early), 1, x402.ReasonUptoValidAfter)

	late := newUpto(t, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	late.w.Deadline = big.NewInt(c.Now(t).Unix() - 1)
	sim("past the deadline", resign(late), 1, x402.ReasonUptoDeadline)

	forged := newUpto(t, c, newKey(t), payTo, s.SettlementAddress(), 2_000_000) // signed by a stranger, presented as the payer's
	sim("a stranger's signature", forged, 1, x402.ReasonUptoSignature)
}

// TestUptoNoProxy: on a chain without the upto proxy, verification refuses
// (permit2_proxy_not_deployed) rather than trusting a call to an address
// without code, which always "succeeds".
func TestUptoNoProxy(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{NoPermit2: true})
	payer := newKey(t)
	c.Mint(t, chaintest.Address(payer), big.NewInt(5_000_000))
	u := newUpto(t, c, payer, chaintest.Address(newKey(t)), chaintest.Address(newKey(t)), 2_000_000)
	if _, err := verifier(c).VerifyUpto(t.Context(), u.p, u.req); x402.ReasonOf(err) != x402.ReasonUptoProxyMissing {
		t.Fatalf("verify without the proxy: %v", err)
	}
}
