package gateway_test

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// A direct provider is reached with the caller's own key and gets the
// caller's request as sent — before the layers changed it — and is chosen
// by intent only for what the gateway's own providers cannot do.
func TestDirectProvider(t *testing.T) {
	const callerKey = "sk-caller-own-key-123456"
	shared := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(shared.Close)
	own := fakeupstream.New(fakeupstream.WithAPIKey(callerKey))
	t.Cleanup(own.Close)
	testgateway.Plugins["hostcalls.wasm"] = "testplugins/hostcalls"
	g := testgateway.Start(t, `
[[layer]]
name = "hostcalls"
plugin = "hostcalls.wasm"
trusted = true

[[provider]]
name = "shared"
plugin = "openai-compatible.wasm"
base_url = "`+shared.URL()+`/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
[[provider.model]]
id = "gpt-4o"
quality = "high"
features = ["tool_use"]

[[provider]]
name = "mine"
plugin = "openai-compatible.wasm"
base_url = "`+own.URL()+`/v1"
models = ["direct/*"]
direct = true
traits = { payment = "api_key" }
trusted = true
[[provider.model]]
id = "gpt-4o"
quality = "high"
features = ["tool_use", "predicted_outputs"]
`, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})

	// An intent that needs predicted outputs: only the direct provider has
	// them. The caller's key reaches it; the hostcalls layer's rewrite of
	// the last message does not (the direct provider gets the request as
	// the caller sent it).
	ask := `{"model":"auto","bardo":{"require":["predicted_outputs"]},"messages":[{"role":"user","content":"rewrite this file"}]}`
	r := post(t, g.URL, "/v1/chat/completions", ask, "Authorization", "Bearer "+callerKey)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "mine" || r.Header.Get("X-Bardo-Cost") != "direct" {
		t.Fatalf("%d provider %q cost %q: %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Cost"), r.Body)
	}
	got := own.Last()
	if got.Header.Get("Authorization") != "Bearer "+callerKey {
		t.Errorf("the direct provider got %q", got.Header.Get("Authorization"))
	}
	body := string(got.Body)
	if strings.Contains(body, "[hostcalls]") || strings.Contains(body, `"bardo"`) || !strings.Contains(body, `"gpt-4o"`) {
		t.Errorf("direct body: %s", body)
	}
	// Without a key of its own, the caller is told so, in its dialect.
	r = post(t, g.URL, "/v1/chat/completions", ask)
	if r.Status != 401 || !strings.Contains(string(r.Body), "your own API key") {
		t.Fatalf("no key: %d %s", r.Status, r.Body)
	}
	// Everything else stays on the gateway's providers, whose upstream
	// never sees the caller's key.
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"hello"}]}`,
		"Authorization", "Bearer "+callerKey)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "shared" || r.Header.Get("X-Bardo-Cost") != "" {
		t.Fatalf("ordinary: %d %q %q", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Cost"))
	}
	if a := shared.Last().Header.Get("Authorization"); a != "Bearer "+upKey {
		t.Errorf("the shared upstream got %q", a)
	}
}

// Bankr: a self-funding provider serves only its subsystems, only agents
// that report their wallet, and only calls the wallet affords (spec 000
// "Bankr"); everything else goes on to the next provider.
func TestSelfFundingProvider(t *testing.T) {
	bankr := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(bankr.Close)
	paid := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(paid.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "bankr"
plugin = "openai-compatible.wasm"
base_url = "`+bankr.URL()+`/v1"
credential = "env:UP_KEY"
models = ["bankr/*"]
subsystems = ["heartbeat_t0", "operator"]
traits = { self_funding = true, payment = "wallet" }
trusted = true
[[provider.model]]
id = "sonnet"
quality = "maximum"
input_price = "3"
output_price = "15"

[[provider]]
name = "paid"
plugin = "openai-compatible.wasm"
base_url = "`+paid.URL()+`/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
[[provider.model]]
id = "gpt-4o"
quality = "maximum"
input_price = "2.5"
output_price = "10"
`, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	ask := `{"model":"auto","messages":[{"role":"user","content":"check the pool"}]}`
	for _, c := range []struct {
		name, subsystem, wallet, want string
	}{
		{"flush agent", "heartbeat_t0", "revenue=300,cost=100,balance=50", "bankr"},
		{"no wallet reported", "heartbeat_t0", "", "paid"},
		{"contracting, cannot afford", "heartbeat_t0", "revenue=10,cost=100,balance=0.2", "paid"},
		{"not a self-funding subsystem", "risk", "revenue=300,cost=100,balance=50", "paid"},
	} {
		h := []string{"X-Bardo-Subsystem", c.subsystem}
		if c.wallet != "" {
			h = append(h, "X-Bardo-Wallet", c.wallet)
		}
		r := post(t, g.URL, "/v1/chat/completions", ask, h...)
		if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != c.want {
			t.Errorf("%s: %d %q, want %s: %s", c.name, r.Status, r.Header.Get("X-Bardo-Provider"), c.want, r.Body)
		}
	}
	r := post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "heartbeat_t0", "X-Bardo-Wallet", "revenue=lots")
	if r.Status != 400 || !strings.Contains(string(r.Body), "X-Bardo-Wallet") {
		t.Errorf("bad wallet: %d %s", r.Status, r.Body)
	}
}
