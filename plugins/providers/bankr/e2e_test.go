//go:build !wasip1

package main_test

// End to end: the gateway in-process with the bankr adapter compiled to
// WASM in front of the fake upstream, followed by an ordinary provider. The
// entry states no traits and no subsystems: what keeps Bankr to self-funding
// agents is the plugin's own description.

import (
	"encoding/json"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["bankr.wasm"] = "plugins/providers/bankr" }

const key = "bk-e2e-0123456789abcdef"

func start(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(key))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "bankr"
plugin = "bankr.wasm"
base_url = "`+fake.URL()+`/v1"
credential = "env:KEY"
models = ["bankr/*"]
trusted = true
model = [{ id = "gemini-3-flash", quality = "medium", input_price = "0.5", output_price = "3" }]

[[provider]]
name = "backup"
plugin = "openai-compatible.wasm"
base_url = "`+fake.URL()+`/v1"
credential = "env:KEY"
models = ["gpt-*"]
trusted = true
model = [{ id = "gpt-4o-mini", quality = "high", input_price = "0.15", output_price = "0.6" }]
`, testgateway.Options{Env: map[string]string{"KEY": key}})
	return g, fake
}

// lastPost is the last chat completion the fake got (the host's health
// prober may GET /v1/models in between).
func lastPost(fake *fakeupstream.Server) (rec fakeupstream.Recorded) {
	for _, r := range fake.Requests() {
		if r.Method == "POST" {
			rec = r
		}
	}
	return rec
}

func TestSelfFundingRouting(t *testing.T) {
	g, fake := start(t)
	const flush = "revenue=300,cost=100,balance=50"  // R = 3: $7.50 a call
	const dying = "revenue=20,cost=100,balance=0.05" // R = 0.2: $0.0015 a call, the call costs $0.0025
	for _, tc := range []struct {
		name, subsystem, wallet, provider, model string
	}{
		{"a self-funding agent", "autonomous", flush, "bankr", "gemini-3-flash"},
		{"social, the other default subsystem", "social", flush, "bankr", "gemini-3-flash"},
		{"no economics reported", "autonomous", "", "backup", "gpt-4o-mini"},
		{"not a self-funding subsystem", "dream", flush, "backup", "gpt-4o-mini"},
		{"over the contracted budget", "autonomous", dying, "backup", "gpt-4o-mini"},
	} {
		headers := []string{"X-Bardo-Subsystem", tc.subsystem}
		if tc.wallet != "" {
			headers = append(headers, "X-Bardo-Wallet", tc.wallet)
		}
		r := apitest.Post(t, g.URL, "/v1/chat/completions",
			`{"model":"auto","messages":[{"role":"user","content":"think with the money you earn"}]}`, headers...)
		if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != tc.provider {
			t.Errorf("%s: %d %q, want %s: %s", tc.name, r.Status, r.Header.Get("X-Bardo-Provider"), tc.provider, r.Body)
			continue
		}
		if got := apitest.JSON(t, lastPost(fake).Body)["model"]; got != tc.model {
			t.Errorf("%s: upstream model %v, want %s", tc.name, got, tc.model)
		}
	}
}

// "bankr/<model>" addresses Bankr explicitly; Bankr receives <model>.
func TestExplicitPrefixedModel(t *testing.T) {
	g, fake := start(t)
	r := apitest.Post(t, g.URL, "/v1/chat/completions",
		`{"model":"bankr/claude-opus-4.6","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "bankr" {
		t.Fatalf("%d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	rec := lastPost(fake)
	var body map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		t.Fatal(err)
	}
	if string(body["model"]) != `"claude-opus-4.6"` || rec.Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("upstream model %s, authorization %q", body["model"], rec.Header.Get("Authorization"))
	}
}
