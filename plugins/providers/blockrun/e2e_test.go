//go:build !wasip1

package main_test

// End to end: the gateway in-process with the blockrun adapter compiled to
// WASM, in front of host/x402/x402test — a fake BlockRun that answers 402
// with real x402 requirements and verifies the payment's signature, amount,
// recipient and nonce before it answers. The gateway pays from its own
// wallet; the plugin never signs anything.

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

func init() { testgateway.Plugins["blockrun.wasm"] = "plugins/providers/blockrun" }

// testWalletKey is a well-known development key (the first account of the
// Hardhat/Anvil test mnemonic): public, holds nothing, for tests only.
const testWalletKey = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcbc9e2f2a5bd7d2a1"

// start serves BlockRun as pipeline.toml declares it: base_url is the API
// root (https://blockrun.ai/api/v1; the fake's /v1), no credential, no
// static catalog — the adapter's described catalog URL is fetched — and
// no traits: the plugin's own description (payment x402) is what makes the
// host pay.
func start(t *testing.T) (*testgateway.Gateway, *x402test.Server) {
	t.Helper()
	br := x402test.New(x402test.Options{})
	t.Cleanup(br.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "blockrun"
plugin = "blockrun.wasm"
base_url = "`+br.URL+`/v1"
models = ["openai/*", "anthropic/*", "deepseek/*", "nvidia/*"]
trusted = true
`, testgateway.Options{Env: map[string]string{"WALLET": testWalletKey}, WalletKey: "env:WALLET"})
	return g, br
}

func ask(model, text string) string {
	q, _ := json.Marshal(text)
	return `{"model":"` + model + `","max_tokens":64,"messages":[{"role":"user","content":` + string(q) + `}]}`
}

// The gateway pays BlockRun's 402 with x402 and the caller gets an
// ordinary answer, buffered or streamed.
func TestPaidByTheHost(t *testing.T) {
	g, br := start(t)
	r := apitest.Post(t, g.URL, "/v1/chat/completions", ask("openai/gpt-4o-mini", "what is a liquidity pool?"))
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "blockrun" {
		t.Fatalf("%d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	m := apitest.JSON(t, r.Body)
	choices, _ := m["choices"].([]any)
	msg, _ := choices[0].(map[string]any)["message"].(map[string]any)
	if len(choices) != 1 || msg["content"] != x402test.Reply("openai/gpt-4o-mini", "what is a liquidity pool?") {
		t.Fatalf("answer %s", r.Body)
	}
	st := br.Settlements()
	if paid := r.Header.Get("X-Bardo-Upstream-Payment"); !strings.HasSuffix(paid, " paid") || len(st) != 1 {
		t.Fatalf("payment header %q, settlements %d", paid, len(st))
	}
	if st[0].PayTo != x402test.DefaultPayTo || st[0].Model != "openai/gpt-4o-mini" || st[0].Amount.Sign() <= 0 {
		t.Fatalf("settlement %+v", st[0])
	}
	if c := br.Counters(); c.Challenges != 1 || c.Paid != 1 || c.Refusals != 0 {
		t.Fatalf("server counters %+v", c)
	}

	stream := strings.Replace(ask("deepseek/deepseek-chat", "and a stream?"), `{"model"`, `{"stream":true,"model"`, 1)
	r = apitest.Post(t, g.URL, "/v1/chat/completions", stream)
	evs := apitest.SSE(t, r.Body)
	if r.Status != 200 || len(evs) == 0 || evs[len(evs)-1][1] != "[DONE]" || len(br.Settlements()) != 2 {
		t.Fatalf("paid stream: %d, settlements %d: %s", r.Status, len(br.Settlements()), r.Body)
	}
}

// The described catalog URL is BlockRun's model list at <base_url>/models:
// fetched by the host (the entry has no static models), it is what intents
// resolve against.
func TestCatalogFromDescribedURL(t *testing.T) {
	g, _ := start(t)
	var ids []string
	for _, m := range x402test.DefaultModels {
		ids = append(ids, m.ID)
	}
	// The first fetch runs in the background at start: a bounded wait.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := apitest.Post(t, g.URL, "/v1/chat/completions", ask("auto", "routed by intent"), "X-Bardo-Subsystem", "curator")
		if r.Status == 200 {
			if r.Header.Get("X-Bardo-Provider") != "blockrun" || !slices.Contains(ids, r.Header.Get("X-Bardo-Model")) {
				t.Fatalf("intent served by %q with %q, want a model of BlockRun's catalog %v",
					r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Model"), ids)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no intent resolved to BlockRun's fetched catalog: %d %s\n%s", r.Status, r.Body, g.LogLines.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
