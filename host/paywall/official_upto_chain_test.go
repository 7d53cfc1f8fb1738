package paywall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/x402"
)

// TestOfficialClientUptoOnChain: the official x402 client (@x402/fetch with
// @x402/evm's UptoEvmScheme, which signs Permit2 for the upto proxy at
// 0x4020…0002) pays a whole gateway that settles on the simulated Base
// itself ([x402] settle = "chain", no facilitator_address: the settlement
// key is upto's facilitator). Permit2 and x402UptoPermit2Proxy are the
// real contracts at their canonical addresses. The answer is settled at
// its actual charge, below the maximum signed: PAYMENT-RESPONSE names the
// transaction and the amount, and exactly that moved from the wallet to
// payTo. A funded wallet that never approved Permit2 is refused (402,
// permit2_allowance_required) and nothing moves. Skipped without node and
// the x402client packages, like TestOfficialClientOnChain.
func TestOfficialClientUptoOnChain(t *testing.T) {
	node, dir, c, gw := onChainGateway(t)
	type answer struct {
		Status          int
		PaymentResponse *x402.SettlementResponse
		Body            string
	}
	pay := func(key string) answer {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, "pay.mjs")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GATEWAY_URL="+gw.URL, "X402_SCHEME=upto", "X402_MODEL=claude-sonnet-4-5", "X402_KEY="+key)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, stderr.String())
		}
		var a answer
		if err := json.Unmarshal(bytes.TrimSpace(out), &a); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return a
	}

	const funds = 1_000_000
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	payer := crypto.PubkeyToAddress(key.PublicKey)
	c.Mint(t, payer, big.NewInt(funds))
	c.ApprovePermit2(t, key, new(big.Int).Lsh(big.NewInt(1), 255))
	a := pay(hexutil.Encode(crypto.FromECDSA(key)))
	res := a.PaymentResponse
	if a.Status != 200 || res == nil || !res.Success || !strings.EqualFold(res.Payer, payer.Hex()) {
		t.Fatalf("paid: status %d, %+v, %s\n%s", a.Status, res, a.Body, gw.LogLines)
	}
	charged, ok := new(big.Int).SetString(res.Amount, 10)
	if !ok || charged.Sign() <= 0 {
		t.Fatalf("settled amount %q", res.Amount)
	}
	rc, err := c.Client.TransactionReceipt(t.Context(), common.HexToHash(res.Transaction))
	if err != nil || rc.Status != 1 {
		t.Fatalf("receipt of %s: %+v, %v", res.Transaction, rc, err)
	}
	if got := c.Balance(t, payTo); got.Cmp(charged) != 0 {
		t.Fatalf("payTo holds %s, the settlement says %s", got, charged)
	}
	if got := c.Balance(t, payer); got.Int64() != funds-charged.Int64() {
		t.Fatalf("the payer holds %s, want %d − %s", got, funds, charged)
	}

	// Funded, never approved Permit2: refused at verification.
	lazy, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c.Mint(t, crypto.PubkeyToAddress(lazy.PublicKey), big.NewInt(funds))
	if a := pay(hexutil.Encode(crypto.FromECDSA(lazy))); a.Status != 402 || !strings.Contains(a.Body, x402.ReasonPermit2Allowance) {
		t.Fatalf("a wallet without the Permit2 allowance: status %d, body %s", a.Status, a.Body)
	}
	if got := c.Balance(t, payTo); got.Cmp(charged) != 0 {
		t.Fatalf("payTo holds %s after the refusal, %s before", got, charged)
	}
}
