package chaintest_test

import (
	"math/big"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// TestDialChain: the gateway's way in — a URL, as [x402] rpc_url gives it
// — reaches the chain over HTTP JSON-RPC, checks its chain ID against the
// network, and reads balances through it; a URL that cannot be reached is
// an error that does not repeat the URL's path (it may hold an API key).
func TestDialChain(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{HTTP: true})
	payer := common.HexToAddress("0x00000000000000000000000000000000000000a1")
	c.Mint(t, payer, big.NewInt(42))

	client, err := x402.DialChain(t.Context(), c.RPCURL, x402.NetworkBase)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	bal, err := (&x402.Chain{Client: client}).BalanceOf(t.Context(), c.USDC, payer)
	if err != nil || bal.Int64() != 42 {
		t.Fatalf("balance over HTTP: %v, %v", bal, err)
	}
	if _, err := x402.DialChain(t.Context(), c.RPCURL, x402.NetworkBaseSepolia); err == nil || !strings.Contains(err.Error(), "8453") {
		t.Fatalf("wrong network: %v", err)
	}
	url := "http://127.0.0.1:1/v2/sk_live_secretkey?apikey=hunter2"
	_, err = x402.DialChain(t.Context(), url, x402.NetworkBase)
	if err == nil || strings.Contains(err.Error(), "secretkey") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("unreachable: %v", err)
	}
}
