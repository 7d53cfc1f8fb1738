package chaintest_test

import (
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// TestUSDC: the deployed FiatToken answers as USDC on Base does — name,
// symbol, decimals, version, and the DOMAIN_SEPARATOR x402 computes for
// USDC on Base (the value pinned against mainnet in host/x402) — and mints.
func TestUSDC(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{})
	a := c.TokenABI()
	var name, symbol, currency, version string
	var decimals uint8
	var sep [32]byte
	c.Read(t, c.USDC, a, "name", &name)
	c.Read(t, c.USDC, a, "symbol", &symbol)
	c.Read(t, c.USDC, a, "currency", &currency)
	c.Read(t, c.USDC, a, "version", &version)
	c.Read(t, c.USDC, a, "decimals", &decimals)
	c.Read(t, c.USDC, a, "DOMAIN_SEPARATOR", &sep)
	if name != "USD Coin" || symbol != "USDC" || currency != "USD" || version != "2" || decimals != 6 {
		t.Fatalf("token answers %q %q %q %q %d", name, symbol, currency, version, decimals)
	}
	d := x402.Domain{Name: x402.USDCBase.Name, Version: x402.USDCBase.Version, ChainID: x402.ChainBase, VerifyingContract: x402.USDCBase.Address}
	if common.Hash(sep) != d.Separator() {
		t.Fatalf("DOMAIN_SEPARATOR %x, x402 computes %s", sep, d.Separator())
	}
	payer := common.HexToAddress("0x00000000000000000000000000000000000000a1")
	c.Mint(t, payer, big.NewInt(5_000_000))
	if got := c.Balance(t, payer); got.Int64() != 5_000_000 {
		t.Fatalf("balance %s after minting 5 USDC", got)
	}
}
