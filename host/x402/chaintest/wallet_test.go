package chaintest_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// TestERC1271Wallet: a deployed contract wallet (Circle's
// MockERC1271Wallet, which accepts its owner's signatures) pays: Verify
// asks isValidSignature by eth_call, and the settlement goes through
// FiatToken's bytes overload, which asks the wallet again on chain. A
// signature by someone else is refused.
func TestERC1271Wallet(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	owner, payTo := newKey(t), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	wallet := c.DeployWallet(t, chaintest.Address(owner))
	c.Mint(t, wallet, big.NewInt(3_000_000))
	v, s := verifier(c), settler(t, c)

	pm := newPayment(t, c, owner, wallet, payTo, 1_000_000, nil)
	ok, err := v.Verify(t.Context(), pm.p, pm.req)
	if err != nil || ok.Payer != wallet {
		t.Fatalf("verify: %+v, %v", ok, err)
	}
	res, err := s.Settle(t.Context(), pm.p, pm.req)
	if err != nil || !res.Success {
		t.Fatalf("settle: %+v, %v", res, err)
	}
	wantBalance(t, c, "wallet", wallet, 2_000_000)
	wantBalance(t, c, "payTo", payTo, 1_000_000)

	forged := newPayment(t, c, newKey(t), wallet, payTo, 1_000_000, nil)
	if _, err := v.Verify(t.Context(), forged.p, forged.req); x402.ReasonOf(err) != x402.ReasonSignature {
		t.Fatalf("a stranger's signature for the wallet: %v, want %s", err, x402.ReasonSignature)
	}
}

// TestERC1271Refusing: a wallet whose isValidSignature answers anything
// but the magic value is refused with invalid_exact_evm_payload_signature
// — its signature in any shape — and the settlement of the same payment
// would revert on chain: the simulation refuses it and sends nothing.
func TestERC1271Refusing(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	owner, payTo := newKey(t), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	wallet := c.DeployRefusingWallet(t, chaintest.Address(owner))
	c.Mint(t, wallet, big.NewInt(3_000_000))
	v, s := verifier(c), settler(t, c)

	long := func(sig []byte) []byte { return append(sig, make([]byte, 32)...) } // 97 bytes: an ERC-1271 blob
	for name, wrap := range map[string]func([]byte) []byte{"65-byte": nil, "97-byte": long} {
		pm := newPayment(t, c, owner, wallet, payTo, 1_000_000, wrap)
		_, err := v.Verify(t.Context(), pm.p, pm.req)
		if x402.ReasonOf(err) != x402.ReasonSignature {
			t.Fatalf("%s: verify: %v, want %s", name, err, x402.ReasonSignature)
		}
		res, err := s.Settle(t.Context(), pm.p, pm.req)
		if err != nil || res.Success || res.ErrorReason != x402.ReasonSignature {
			t.Fatalf("%s: settle: %+v, %v; want refusal %s", name, res, err, x402.ReasonSignature)
		}
	}
	if n, _ := c.Client.PendingNonceAt(t.Context(), s.SettlementAddress()); n != 0 {
		t.Fatalf("refused settlements sent %d transactions", n)
	}
	wantBalance(t, c, "wallet", wallet, 3_000_000)

	// A wallet answering a full word of 0xff (its first four bytes are not
	// the selector) is refused as FiatToken refuses it.
	odd := c.Deploy(t, c.Faucet, chaintest.Load(t, "MockERC1271WalletReturningBytes32"))
	pm := newPayment(t, c, owner, odd, payTo, 1, nil)
	if ok, err := (&x402.Chain{Client: c.Client}).ValidSignature(t.Context(), odd, pm.digest, []byte{1}); ok || err != nil {
		t.Fatalf("0xff..ff answer: valid %v, %v", ok, err)
	}
}

// TestERC6492: a wallet that does not exist yet pays with an ERC-6492
// signature. Verify deploys it only inside an eth_call (it is still not
// on chain afterwards); the settlement deploys it through its factory,
// then transfers. A factory not allowed is refused before any simulation,
// and a wrapped signature by the wrong owner is refused.
func TestERC6492(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	owner, payTo := newKey(t), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	factory := c.DeployFactory(t)
	cf := c.CounterfactualWallet(t, factory, chaintest.Address(owner), [32]byte{7})
	c.Mint(t, cf.Address, big.NewInt(5_000_000))
	wrap := func(sig []byte) []byte { return chaintest.Wrap6492(cf, sig) }

	pm := newPayment(t, c, owner, cf.Address, payTo, 2_000_000, wrap)
	if _, err := verifier(c).Verify(t.Context(), pm.p, pm.req); x402.ReasonOf(err) != x402.ReasonFactoryNotAllowed {
		t.Fatalf("verify without allowed factories: %v, want %s", err, x402.ReasonFactoryNotAllowed)
	}
	bad := newPayment(t, c, newKey(t), cf.Address, payTo, 2_000_000, wrap)
	if _, err := verifier(c, factory).Verify(t.Context(), bad.p, bad.req); x402.ReasonOf(err) != x402.ReasonSignature {
		t.Fatalf("verify a stranger's wrapped signature: %v, want %s", err, x402.ReasonSignature)
	}
	if _, err := verifier(c, factory).Verify(t.Context(), pm.p, pm.req); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if c.HasCode(t, cf.Address) {
		t.Fatal("verification deployed the wallet on chain; it must only simulate")
	}

	if res, err := settler(t, c).Settle(t.Context(), pm.p, pm.req); err != nil || res.Success || res.ErrorReason != x402.ReasonFactoryNotAllowed {
		t.Fatalf("settle without allowed factories: %+v, %v", res, err)
	}
	// A factory call that cannot deploy (calldata the factory reverts on)
	// is a bad signature at verification and, at settlement, refused
	// before anything is sent.
	broken := cf
	broken.Calldata = append([]byte{}, cf.Calldata[:4]...) // deploy() with no arguments
	bw := newPayment(t, c, owner, cf.Address, payTo, 2_000_000, func(sig []byte) []byte { return chaintest.Wrap6492(broken, sig) })
	if _, err := verifier(c, factory).Verify(t.Context(), bw.p, bw.req); x402.ReasonOf(err) != x402.ReasonSignature {
		t.Fatalf("verify with a failing factory call: %v, want %s", err, x402.ReasonSignature)
	}
	bs := settler(t, c, factory)
	if res, err := bs.Settle(t.Context(), bw.p, bw.req); err != nil || res.Success || res.ErrorReason != x402.ReasonWalletDeployment {
		t.Fatalf("settle with a failing factory call: %+v, %v", res, err)
	}
	if n, _ := c.Client.PendingNonceAt(t.Context(), bs.SettlementAddress()); n != 0 || c.HasCode(t, cf.Address) {
		t.Fatalf("a failing deployment sent %d transactions", n)
	}
	res, err := settler(t, c, factory).Settle(t.Context(), pm.p, pm.req)
	if err != nil || !res.Success {
		t.Fatalf("settle: %+v, %v", res, err)
	}
	if !c.HasCode(t, cf.Address) {
		t.Fatal("the wallet was not deployed by the settlement")
	}
	wantBalance(t, c, "wallet", cf.Address, 3_000_000)
	wantBalance(t, c, "payTo", payTo, 2_000_000)

	// Deployed now: the next wrapped payment is checked against the wallet
	// itself (the inner signature), and settles without a deployment.
	next := newPayment(t, c, owner, cf.Address, payTo, 1_000_000, wrap)
	if _, err := verifier(c).Verify(t.Context(), next.p, next.req); err != nil {
		t.Fatalf("verify once deployed: %v", err)
	}
	if res, err := settler(t, c).Settle(t.Context(), next.p, next.req); err != nil || !res.Success {
		t.Fatalf("settle once deployed: %+v, %v", res, err)
	}
	wantBalance(t, c, "wallet", cf.Address, 2_000_000)
}
