package paywall_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
)

// TestOfficialClient: the official x402 client (@x402/fetch's
// wrapFetchWithPayment with @x402/evm's ExactEvmScheme and UptoEvmScheme,
// and ExactEvmSchemeV1 in its x402 v1 mode, reading the 402's body) gets
// the gateway's 402, signs, retries and is served, and the local
// facilitator settles once. It needs node and `npm ci --prefix
// host/paywall/testdata/x402client`; without them it is skipped.
func TestOfficialClient(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "x402client"))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@x402", "fetch", "package.json")); err != nil {
		t.Skip("run `npm ci --prefix host/paywall/testdata/x402client` to install the official x402 client")
	}
	e := startE2E(t)
	key := wallet(t)
	for i, scheme := range []string{"exact", "upto", "exact-v1"} {
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, node, "pay.mjs")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GATEWAY_URL="+e.gw.URL, "X402_SCHEME="+scheme, "X402_MODEL=claude-sonnet-4-5",
			"X402_KEY="+hexutil.Encode(crypto.FromECDSA(key)))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("%s: node: %v\n%s", scheme, err, stderr.String())
		}
		var r struct {
			Status          int
			PaymentResponse *struct {
				Success     bool
				Payer       string
				Transaction string
				Amount      string
				Network     string
			}
			Body string
		}
		if err := json.Unmarshal(bytes.TrimSpace(out), &r); err != nil {
			t.Fatalf("%s: %v: %s", scheme, err, out)
		}
		if r.Status != 200 || r.PaymentResponse == nil || !r.PaymentResponse.Success ||
			!strings.EqualFold(r.PaymentResponse.Payer, crypto.PubkeyToAddress(key.PublicKey).Hex()) {
			t.Fatalf("%s: %+v %+v", scheme, r, r.PaymentResponse)
		}
		if scheme == "exact-v1" && r.PaymentResponse.Network != "base" {
			t.Errorf("v1: settled on network %q, want v1's name \"base\"", r.PaymentResponse.Network)
		}
		if n := len(e.fac.Settlements()); n != i+1 {
			t.Fatalf("%s: %d settlements, want %d", scheme, n, i+1)
		}
		t.Logf("%s: served, settled %+v", scheme, *r.PaymentResponse)
	}
}
