package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// Three providers with catalogs, in the order an operator might write them:
// a cheap general model first, a premium thinking model, and a private
// (zero-retention) one. Intents pick among them; explicit models do not.
func intentGateway(t *testing.T, layers ...string) (*testgateway.Gateway, map[string]*fakeupstream.Server) {
	t.Helper()
	fakes := map[string]*fakeupstream.Server{}
	for _, n := range []string{"cheap", "premium", "vault"} {
		f := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
		t.Cleanup(f.Close)
		fakes[n] = f
	}
	cfg := `
[[provider]]
name = "cheap"
plugin = "openai-compatible.wasm"
base_url = "` + fakes["cheap"].URL() + `/v1"
credential = "env:UP_KEY"
models = ["cheap-*"]
trusted = true
[[provider.model]]
id = "cheap-1"
quality = "medium"
features = ["tool_use"]
input_price = "0.10"
output_price = "0.40"

[[provider]]
name = "premium"
plugin = "openai-compatible.wasm"
base_url = "` + fakes["premium"].URL() + `/v1"
credential = "env:UP_KEY"
models = ["premium-*"]
trusted = true
[[provider.model]]
id = "premium-1"
quality = "maximum"
features = ["tool_use", "interleaved_thinking", "visible_thinking", "citations"]
input_price = "15"
output_price = "75"

[[provider]]
name = "vault"
plugin = "openai-compatible.wasm"
base_url = "` + fakes["vault"].URL() + `/v1"
credential = "env:UP_KEY"
models = ["vault-*"]
trusted = true
traits = { private = true, payment = "prepaid" }
[[provider.model]]
id = "vault-1"
quality = "high"
features = ["tool_use", "zero_retention"]
input_price = "0.9"
output_price = "0.9"
`
	g := testgateway.Start(t, strings.Join(layers, "\n")+cfg, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return g, fakes
}

func upstreamModel(t *testing.T, f *fakeupstream.Server) (string, map[string]any) {
	t.Helper()
	var body map[string]any
	if err := json.Unmarshal(f.Last().Body, &body); err != nil {
		t.Fatal(err)
	}
	m, _ := body["model"].(string)
	return m, body
}

func TestIntentRouting(t *testing.T) {
	g, fakes := intentGateway(t)
	ask := `{"model":"auto","messages":[{"role":"user","content":"status check"}]}`

	for _, c := range []struct {
		name, subsystem, vitality string
		provider, model           string
	}{
		// heartbeat_t0: minimum quality, cost-sensitive: the first that fits.
		{"heartbeat_t0", "heartbeat_t0", "", "cheap", "cheap-1"},
		// risk: maximum quality.
		{"risk", "risk", "", "premium", "premium-1"},
		// death requires visible thinking.
		{"death", "death", "", "premium", "premium-1"},
		// heartbeat_t2 wants high quality: the premium model...
		{"heartbeat_t2", "heartbeat_t2", "", "premium", "premium-1"},
		// ...but under mortality pressure (vitality 0.1) quality drops one level.
		{"heartbeat_t2 dying", "heartbeat_t2", "0.1", "cheap", "cheap-1"},
		// risk is exempt from mortality pressure.
		{"risk dying", "risk", "0.1", "premium", "premium-1"},
	} {
		h := []string{"X-Bardo-Subsystem", c.subsystem}
		if c.vitality != "" {
			h = append(h, "X-Bardo-Vitality", c.vitality)
		}
		r := post(t, g.URL, "/v1/chat/completions", ask, h...)
		if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != c.provider || r.Header.Get("X-Bardo-Model") != c.model {
			t.Errorf("%s: %d provider %q model %q, want %s/%s: %s", c.name, r.Status, r.Header.Get("X-Bardo-Provider"),
				r.Header.Get("X-Bardo-Model"), c.provider, c.model, r.Body)
			continue
		}
		if got, _ := upstreamModel(t, fakes[c.provider]); got != c.model {
			t.Errorf("%s: upstream got model %q, want %q", c.name, got, c.model)
		}
		if r.Header.Get("X-Bardo-Intent") != "subsystem:"+c.subsystem {
			t.Errorf("%s: X-Bardo-Intent %q", c.name, r.Header.Get("X-Bardo-Intent"))
		}
	}

	// An explicit model is never swapped, whatever the subsystem says.
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"cheap-1","messages":[{"role":"user","content":"hi"}]}`,
		"X-Bardo-Subsystem", "risk")
	if r.Status != 200 || r.Header.Get("X-Bardo-Model") != "cheap-1" {
		t.Errorf("explicit model: %d %q %s", r.Status, r.Header.Get("X-Bardo-Model"), r.Body)
	}

	// The body's bardo object: a private security class goes to the private
	// provider only, and the object never reaches the upstream.
	r = post(t, g.URL, "/v1/chat/completions",
		`{"model":"auto","bardo":{"security_class":"private","quality":"medium"},"messages":[{"role":"user","content":"my seed phrase question"}]}`)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "vault" {
		t.Fatalf("private: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	if _, body := upstreamModel(t, fakes["vault"]); body["bardo"] != nil {
		t.Errorf("the bardo object reached the upstream: %v", body)
	}

	// A malformed intent is the caller's error, in its dialect.
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"auto","bardo":{"quality":"legendary"},"messages":[{"role":"user","content":"x"}]}`)
	if r.Status != 400 || !strings.Contains(string(r.Body), `"error"`) {
		t.Errorf("bad intent: %d %s", r.Status, r.Body)
	}

	// A plain client asking for "auto" gets an intent inferred from its
	// request.
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"write a Go function that reverses a slice"}]}`)
	if r.Status != 200 || !strings.HasPrefix(r.Header.Get("X-Bardo-Intent"), "task:") {
		t.Errorf("inferred: %d intent %q %s", r.Status, r.Header.Get("X-Bardo-Intent"), r.Body)
	}
}

func TestIntentFailoverAndPrivateFailsClosed(t *testing.T) {
	g, fakes := intentGateway(t)
	ask := `{"model":"auto","messages":[{"role":"user","content":"summarise the state of my positions"}]}`

	// curator (medium) resolves to the cheap model; when it fails twice the
	// intent is resolved again without it, and the premium model answers.
	fakes["cheap"].Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	r := post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "curator")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "premium" || r.Header.Get("X-Bardo-Fallback") != "cheap:502,cheap:502" {
		t.Fatalf("failover: %d %q fallback %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Fallback"), r.Body)
	}

	// A private request when the private provider fails: it fails closed —
	// never sent to a provider that keeps logs.
	fakes["vault"].Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	beforeCheap, beforePremium := fakes["cheap"].Count("/v1/chat/completions"), fakes["premium"].Count("/v1/chat/completions")
	r = post(t, g.URL, "/v1/chat/completions", `{"model":"auto","bardo":{"security_class":"private"},"messages":[{"role":"user","content":"x"}]}`)
	if r.Status < 500 || fakes["cheap"].Count("/v1/chat/completions") != beforeCheap || fakes["premium"].Count("/v1/chat/completions") != beforePremium {
		t.Fatalf("private failover leaked: %d %s", r.Status, r.Body)
	}
}

// A plugin's internal completion without a model (L5's default when the
// caller asked for "auto") is routed by its subsystem's intent.
func TestInternalCompletionRoutedByIntent(t *testing.T) {
	testgateway.Plugins["services.wasm"] = "testplugins/services"
	g, fakes := intentGateway(t, `
[[layer]]
name = "services"
plugin = "services.wasm"
trusted = true
timeout = "5s"
`)
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"cheap-1","messages":[{"role":"user","content":"summarise the morning's trades and positions"}]}`)
	// (The layer's X-Services-* headers stay inside: the gateway passes on
	// only X-Bardo-* names. What the upstreams received tells.)
	if r.Status != 200 || r.Header.Get("X-Bardo-Degraded") != "" {
		t.Fatalf("%d degraded %q: %s", r.Status, r.Header.Get("X-Bardo-Degraded"), r.Body)
	}
	// Two calls reached the cheap upstream: the internal summary (resolved
	// to cheap-1 by session_compact's intent), then the request itself.
	reqs := fakes["cheap"].Requests()
	if len(reqs) != 2 {
		t.Fatalf("the cheap upstream saw %d requests, want 2", len(reqs))
	}
	internal := string(reqs[0].Body) // the summary: the command's argument alone, 50 tokens at most
	if !strings.Contains(internal, `"cheap-1"`) || strings.Contains(internal, "summarise") ||
		!strings.Contains(internal, "the morning") || !strings.Contains(internal, `"max_completion_tokens":50`) {
		t.Fatalf("internal completion body: %s", internal)
	}
}

// A provider without a static catalog, whose catalog is fetched from its
// backend's GET /v1/models: once fetched, intents resolve to its models.
func TestRefreshedCatalogFeedsRouting(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithModels("alpha-1"))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "fetched"
plugin = "openai-compatible.wasm"
base_url = "`+fake.URL()+`/v1"
credential = "env:UP_KEY"
models = ["alpha-*"]
catalog_refresh = "1h"
trusted = true
`, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	ask := `{"model":"auto","messages":[{"role":"user","content":"hello"}]}`
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "heartbeat_t1")
		if r.Status == 200 {
			if r.Header.Get("X-Bardo-Model") != "alpha-1" || r.Header.Get("X-Bardo-Provider") != "fetched" {
				t.Fatalf("routed to %q/%q", r.Header.Get("X-Bardo-Provider"), r.Header.Get("X-Bardo-Model"))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fetched catalog never fed routing: %d %s", r.Status, r.Body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if fake.Count("/v1/models") == 0 {
		t.Fatal("the catalog was not fetched from the backend")
	}
	// The fetch carried the provider's credential.
	for _, rec := range fake.Requests() {
		if rec.Path == "/v1/models" && rec.Header.Get("Authorization") != "Bearer "+upKey {
			t.Errorf("catalog fetch without the credential: %q", rec.Header.Get("Authorization"))
		}
	}
}

// Session affinity holds for intents too: after a failover put a session on
// the premium provider, the session's next request stays there (its prompt
// cache is warm) as long as that provider satisfies the intent.
func TestIntentHonoursSessionAffinity(t *testing.T) {
	testgateway.Plugins["affinity.wasm"] = "plugins/layers/affinity"
	g, fakes := intentGateway(t, `
[[layer]]
name = "affinity"
plugin = "affinity.wasm"
trusted = true
timeout = "2s"
[layer.config]
min_cache_tokens = 0
`)
	ask := `{"model":"auto","messages":[{"role":"user","content":"summarise the state of my positions"}]}`
	fakes["cheap"].Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	r := post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "curator", "X-Bardo-Session", "agent-7")
	if r.Header.Get("X-Bardo-Provider") != "premium" {
		t.Fatalf("failover: %q", r.Header.Get("X-Bardo-Provider"))
	}
	r = post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "curator", "X-Bardo-Session", "agent-7")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "premium" {
		t.Fatalf("the session left its provider: %d %q", r.Status, r.Header.Get("X-Bardo-Provider"))
	}
	// Another session resolves as usual.
	r = post(t, g.URL, "/v1/chat/completions", ask, "X-Bardo-Subsystem", "curator", "X-Bardo-Session", "agent-8")
	if r.Header.Get("X-Bardo-Provider") != "cheap" {
		t.Fatalf("a fresh session: %q", r.Header.Get("X-Bardo-Provider"))
	}
}

// A subsystem's inference profile fills the sampling parameters the caller
// left unset (risk: temperature 0.1, top_p 0.85); the caller's own win.
func TestIntentAppliesInferenceProfile(t *testing.T) {
	g, fakes := intentGateway(t)
	post(t, g.URL, "/v1/chat/completions", `{"model":"auto","messages":[{"role":"user","content":"assess"}]}`, "X-Bardo-Subsystem", "risk")
	_, body := upstreamModel(t, fakes["premium"])
	if body["temperature"] != 0.1 || body["top_p"] != 0.85 {
		t.Fatalf("risk profile not applied: temperature %v top_p %v", body["temperature"], body["top_p"])
	}
	post(t, g.URL, "/v1/chat/completions", `{"model":"auto","temperature":0.9,"messages":[{"role":"user","content":"assess"}]}`, "X-Bardo-Subsystem", "risk")
	if _, body = upstreamModel(t, fakes["premium"]); body["temperature"] != 0.9 || body["top_p"] != 0.85 {
		t.Fatalf("the caller's temperature was overridden: %v / %v", body["temperature"], body["top_p"])
	}
}
