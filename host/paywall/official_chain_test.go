package paywall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// TestOfficialClientOnChain: the official x402 client (@x402/fetch with
// @x402/evm's ExactEvmScheme) pays a gateway that settles on the simulated
// Base itself ([x402] settle = "chain", rpc_url over HTTP JSON-RPC, a
// settlement key from the environment): the answer's PAYMENT-RESPONSE names
// a real transaction, and the price moved from the client's wallet to
// payTo in Circle's FiatToken. A wallet without funds is refused (402,
// insufficient_funds) and nothing moves. Needs node and the x402client
// packages, like TestOfficialClient; skipped without them.
func TestOfficialClientOnChain(t *testing.T) {
	node, dir, c, gw := onChainGateway(t)
	pay := func(key string) (status int, res *x402.SettlementResponse) {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "pay.mjs")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GATEWAY_URL="+gw.URL, "X402_SCHEME=exact", "X402_MODEL=claude-sonnet-4-5", "X402_KEY="+key)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, stderr.String())
		}
		var r struct {
			Status          int
			PaymentResponse *x402.SettlementResponse
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r.Status, r.PaymentResponse
	}

	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	payer := crypto.PubkeyToAddress(key.PublicKey)
	c.Mint(t, payer, big.NewInt(1_000_000))
	status, res := pay(hexutil.Encode(crypto.FromECDSA(key)))
	if status != 200 || res == nil || !res.Success || !strings.EqualFold(res.Payer, payer.Hex()) {
		t.Fatalf("paid: status %d, %+v\n%s", status, res, gw.LogLines)
	}
	rc, err := c.Client.TransactionReceipt(t.Context(), common.HexToHash(res.Transaction))
	if err != nil || rc.Status != 1 {
		t.Fatalf("receipt of %s: %+v, %v", res.Transaction, rc, err)
	}
	got := c.Balance(t, payTo)
	if got.Sign() <= 0 || new(big.Int).Add(c.Balance(t, payer), got).Int64() != 1_000_000 {
		t.Fatalf("payTo holds %s, the payer %s: the price did not move from one to the other", got, c.Balance(t, payer))
	}

	poor, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := pay(hexutil.Encode(crypto.FromECDSA(poor))); status != 402 {
		t.Fatalf("an unfunded wallet: status %d, want 402", status)
	}
	if !strings.Contains(gw.LogLines.String(), "settling on chain") {
		t.Errorf("the gateway did not say it settles on chain:\n%s", gw.LogLines)
	}
	if after := c.Balance(t, payTo); after.Cmp(got) != 0 {
		t.Fatalf("payTo holds %s after the refusal, %s before", after, got)
	}
}

// onChainGateway starts what both official-client tests on chain need: a
// simulated Base served over HTTP JSON-RPC (a block a second), a funded
// settlement key from the environment, and a keys-mode gateway that
// accepts x402 and settles on that chain itself ([x402] settle = "chain")
// in front of the fake upstream. It skips without node or the x402client
// packages, like TestOfficialClient, and returns node's path and the
// client's directory too.
func onChainGateway(t *testing.T) (node, dir string, c *chaintest.Chain, gw *testgateway.Gateway) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	dir, _ = filepath.Abs(filepath.Join("testdata", "x402client"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@x402", "fetch", "package.json")); err != nil {
		t.Skip("run `npm ci --prefix host/paywall/testdata/x402client` to install the official x402 client")
	}
	c = chaintest.New(t, chaintest.Options{HTTP: true, BlockTime: time.Second})
	settleKey, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c.FundETH(t, crypto.PubkeyToAddress(settleKey.PublicKey), big.NewInt(1e18))
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	env := testgateway.FakeProviderEnv()
	env["BARDO_SETTLEMENT_KEY"] = hexutil.Encode(crypto.FromECDSA(settleKey))
	gw = testgateway.Start(t, `
[auth]
mode = "keys"

[storage]
data_dir = "`+t.TempDir()+`"

[x402]
enabled = true
pay_to = "`+payTo.Hex()+`"
settle = "chain"
rpc_url = "`+c.RPCURL+`"
settlement_key = "env:BARDO_SETTLEMENT_KEY"
`+testgateway.FakeProviders(fake.URL())+`
[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`, testgateway.Options{Env: env})

	return node, dir, c, gw
}
