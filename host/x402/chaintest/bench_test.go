package chaintest_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// BenchmarkVerifyOnChain: Verify with the chain checks, against the
// in-process simulated node (so the RPC round trip is near zero: against
// a real endpoint add one round trip per eth_call) — an EOA (ecrecover +
// balanceOf), a deployed ERC-1271 wallet (+ eth_getCode + isValidSignature)
// and a counterfactual ERC-6492 one (the deployless check deploys it in
// the simulation every time).
func BenchmarkVerifyOnChain(b *testing.B) {
	c := chaintest.New(b, chaintest.Options{})
	owner, payTo := newKey(b), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	eoa := chaintest.Address(owner)
	wallet := c.DeployWallet(b, eoa)
	factory := c.DeployFactory(b)
	cf := c.CounterfactualWallet(b, factory, eoa, [32]byte{9})
	for _, a := range []common.Address{eoa, wallet, cf.Address} {
		c.Mint(b, a, big.NewInt(10_000_000))
	}
	v := verifier(c, factory)
	v.Nonces = nil // the same payment, verified again and again
	for name, pm := range map[string]payment{
		"eoa":     newPayment(b, c, owner, eoa, payTo, 1_000_000, nil),
		"erc1271": newPayment(b, c, owner, wallet, payTo, 1_000_000, nil),
		"erc6492": newPayment(b, c, owner, cf.Address, payTo, 1_000_000, func(s []byte) []byte { return chaintest.Wrap6492(cf, s) }),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(b.Context(), pm.p, pm.req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSettleOnChain: one ChainSettler.Settle — simulate, estimate,
// sign, send, mine (a block per settlement), receipt — on the in-process
// node.
func BenchmarkSettleOnChain(b *testing.B) {
	c := chaintest.New(b, chaintest.Options{})
	owner, payTo := newKey(b), common.HexToAddress("0x00000000000000000000000000000000000b4a2d")
	payer := chaintest.Address(owner)
	c.Mint(b, payer, big.NewInt(1e12))
	s := settler(b, c)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		pm := newPayment(b, c, owner, payer, payTo, 1_000_000, nil)
		b.StartTimer()
		if res, err := s.Settle(b.Context(), pm.p, pm.req); err != nil || !res.Success {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkVerifyUptoOnChain: VerifyUpto with the chain checks — ecrecover,
// then Permit2's allowance, the balance and the upto proxy's settle at the
// maximum simulated (three eth_calls) — on the in-process node.
func BenchmarkVerifyUptoOnChain(b *testing.B) {
	c, payer, payTo, s := uptoSetup(b, 1<<40)
	u := newUpto(b, c, payer, payTo, s.SettlementAddress(), 2_000_000)
	v := verifier(c)
	v.Nonces = nil
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.VerifyUpto(b.Context(), u.p, u.req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSettleUptoOnChain: one upto ChainSettler.Settle through the
// x402UptoPermit2Proxy at an amount below the maximum — simulate,
// estimate, sign, send, mine, receipt.
func BenchmarkSettleUptoOnChain(b *testing.B) {
	c, payer, payTo, s := uptoSetup(b, 1<<40)
	c.Mint(b, chaintest.Address(payer), big.NewInt(1e12))
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		u := newUpto(b, c, payer, payTo, s.SettlementAddress(), 2_000_000)
		b.StartTimer()
		if res, err := s.Settle(b.Context(), u.p, u.at(1_234_567)); err != nil || !res.Success {
			b.Fatal(res, err)
		}
	}
}
