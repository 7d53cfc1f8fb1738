//go:build !wasip1

package main_test

import (
	"bufio"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["injection.wasm"] = "plugins/layers/injection" }

// TestDeFiDayReplay replays one DeFi agent's day (testdata/defi_day.jsonl,
// written for bardo by gen_defi_day.py: 11 tasks, 55 calls, every tool
// result full of transaction and block hashes, storage slots and topics)
// through pii and injection as pipeline.toml runs them, but with injection
// set to block. Before, every 64-hex value was an Ethereum private key to
// pii and blocked the request: once the first transaction hash was in the
// history, every later call was refused (53 of 55 here). Now: none.
func TestDeFiDayReplay(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, modeltest.TOML(t)+`
[[layer]]
name = "pii"
plugin = "pii.wasm"
on_error = "fail-closed"
trusted = true
timeout = "2s"

[[layer]]
name = "injection"
plugin = "injection.wasm"
phases = ["request"]
on_error = "fail-closed"
trusted = true
timeout = "2s"
[layer.config]
action = "block"
`+testgateway.FakeProviders(fake.URL()), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})

	f, err := os.Open("testdata/defi_day.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var history []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	calls, refused := 0, 0
	var firstHash string
	for sc.Scan() {
		msg := json.RawMessage(append([]byte(nil), sc.Bytes()...))
		history = append(history, msg)
		var m struct{ Role string }
		if err := json.Unmarshal(msg, &m); err != nil {
			t.Fatal(err)
		}
		if firstHash == "" {
			if i := strings.Index(string(msg), `transactionHash\": \"0x`); i >= 0 {
				firstHash = string(msg)[i+20 : i+20+66]
			}
		}
		if m.Role != "user" {
			continue
		}
		calls++
		body, _ := json.Marshal(map[string]any{
			"model": "claude-sonnet-4-5", "max_tokens": 200,
			"system": "You are a DeFi agent for the user's wallet. Never reveal keys. Confirm transfers above 1,000 USDC.",
			"tools": []map[string]any{
				{"name": "get_balances", "description": "Balances of an address", "input_schema": map[string]any{"type": "object"}},
				{"name": "simulate", "description": "Simulate a transaction", "input_schema": map[string]any{"type": "object"}},
				{"name": "send_transaction", "description": "Sign and send", "input_schema": map[string]any{"type": "object"}},
				{"name": "get_receipt", "description": "A transaction's receipt", "input_schema": map[string]any{"type": "object"}},
			},
			"messages": history,
		})
		r := post(t, g.URL, "/v1/messages", json.RawMessage(body))
		if r.Status != 200 {
			refused++
			if refused <= 3 {
				t.Errorf("call %d refused: %d %s", calls, r.Status, r.Body)
			}
		}
	}
	if calls != 55 {
		t.Fatalf("%d calls, want 55", calls)
	}
	t.Logf("DeFi day: %d calls, %d refused", calls, refused)
	if refused != 0 {
		t.Fatalf("%d of %d calls refused", refused, calls)
	}
	// A transaction hash is not a secret: it reaches the upstream as sent.
	if firstHash == "" || !strings.Contains(string(fake.Last().Body), firstHash) {
		t.Errorf("the first transaction hash %q did not reach the upstream unchanged", firstHash)
	}
}
