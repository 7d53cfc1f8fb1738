package gateway_test

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

// A well-known development key (the first account of the Hardhat/Anvil test
// mnemonic): public, holds nothing, used by tests only.
const testWalletKey = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcbc9e2f2a5bd7d2a1"

// BlockRun charges per request with x402: the gateway pays the 402 from its
// own wallet and retries, the caller sees an ordinary answer; a price over
// the policy's ceiling is never signed and the request fails over.
func TestX402UpstreamPayment(t *testing.T) {
	br := x402test.New(x402test.Options{})
	t.Cleanup(br.Close)
	backup := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(backup.Close)
	cfg := `
[[provider]]
name = "blockrun"
plugin = "openai-compatible.wasm"
base_url = "` + br.URL + `/v1"
models = ["openai/*", "deepseek/*"]
traits = { payment = "x402" }
trusted = true

[[provider]]
name = "backup"
plugin = "openai-compatible.wasm"
base_url = "` + backup.URL() + `/v1"
credential = "env:UP_KEY"
models = ["openai/*"]
trusted = true
`
	g := testgateway.Start(t, cfg, testgateway.Options{
		Env:       map[string]string{"UP_KEY": upKey, "WALLET": testWalletKey},
		WalletKey: "env:WALLET",
	})
	body := `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"what is a liquidity pool?"}]}`

	r := post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "blockrun" {
		t.Fatalf("paid request: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	paid := r.Header.Get("X-Bardo-Upstream-Payment")
	if !strings.HasSuffix(paid, " paid") || len(br.Settlements()) != 1 {
		t.Fatalf("payment header %q, settlements %d", paid, len(br.Settlements()))
	}

	// A streamed request is paid the same way, before its first byte.
	r = post(t, g.URL, "/v1/chat/completions", strings.Replace(body, `{"model"`, `{"stream":true,"model"`, 1))
	if evs := sseEvents(t, r.Body); r.Status != 200 || len(evs) == 0 || evs[len(evs)-1][1] != "[DONE]" || len(br.Settlements()) != 2 {
		t.Fatalf("paid stream: %d, settlements %d: %s", r.Status, len(br.Settlements()), r.Body)
	}

	// A price above the policy's ceiling (0.50 USDC a request): nothing is
	// signed, the backup answers, and the fallback header says why.
	br.SetFailure(x402test.Failure{Price: 5_000_000})
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "backup" || len(br.Settlements()) != 2 {
		t.Fatalf("over the ceiling: %d %q, settlements %d", r.Status, r.Header.Get("X-Bardo-Provider"), len(br.Settlements()))
	}
	if !strings.HasPrefix(r.Header.Get("X-Bardo-Fallback"), "blockrun:") {
		t.Errorf("fallback %q", r.Header.Get("X-Bardo-Fallback"))
	}

	// An upstream that takes the payment and then fails: the caller is not
	// charged for it (the backup answers), and the loss is reported.
	br.SetFailure(x402test.Failure{Status: 500})
	r = post(t, g.URL, "/v1/chat/completions", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "backup" {
		t.Fatalf("failed after payment: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
}

// Without a wallet an x402 provider is skipped with a clear reason.
func TestX402WithoutWallet(t *testing.T) {
	br := x402test.New(x402test.Options{})
	t.Cleanup(br.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "blockrun"
plugin = "openai-compatible.wasm"
base_url = "`+br.URL+`/v1"
models = ["openai/*"]
traits = { payment = "x402" }
trusted = true
`, testgateway.Options{})
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 502 || !strings.Contains(string(r.Body), "BARDO_WALLET_KEY") || len(br.Settlements()) != 0 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
}
