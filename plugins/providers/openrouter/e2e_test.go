//go:build !wasip1

package main_test

// End to end: the gateway in-process with the openrouter adapter compiled to
// WASM, in front of the fake upstream's OpenAI-compatible endpoint. Intents
// are resolved against a static catalog: the host runs the standard
// (cheapest-only) resolver natively and hands its answer to the plugin's
// resolve(), which adds the variant; the body the fake receives says what
// the gateway actually sent.

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() {
	testgateway.Plugins["openrouter.wasm"] = "plugins/providers/openrouter"
	testgateway.Plugins["badresolve.wasm"] = "testplugins/badresolve"
}

const orKey = "sk-or-e2e-0123456789abcdef"

// catalog is OpenRouter's static catalog in the tests. For curator (medium,
// prefers structured outputs and citations, cost sensitivity 0.5) the
// standard scorer would pick gpt-4o-mini, which has both; OpenRouter's
// cheapest-only policy picks qwen-plus.
const catalog = `
model = [
  { id = "anthropic/claude-opus-4.6", quality = "maximum", features = ["interleaved_thinking", "citations", "tool_use"], input_price = "5", output_price = "25" },
  { id = "deepseek/deepseek-r1", quality = "high", features = ["visible_thinking", "reasoning"], input_price = "0.55", output_price = "2.19" },
  { id = "openai/gpt-4o-mini", quality = "medium", features = ["structured_outputs", "citations", "tool_use"], input_price = "0.5", output_price = "1.5" },
  { id = "qwen/qwen-plus", quality = "medium", input_price = "0.4", output_price = "1.2" },
]
`

// openrouterEntry is the provider under test, in front of fake.
func openrouterEntry(fake *fakeupstream.Server) string {
	return `
[[provider]]
name = "openrouter"
plugin = "openrouter.wasm"
base_url = "` + fake.URL() + `/v1"
credential = "env:OR_KEY"
models = ["*/*"]
trusted = true
` + catalog + `
[provider.config]
x_title = "Bardo e2e"
http_referer = "https://bardo.example"
provider = { sort = "price", order = ["deepinfra", "together"], allow_fallbacks = false, data_collection = "deny" }
`
}

func startGateway(t *testing.T, entries string) (*testgateway.Gateway, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(orKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, strings.ReplaceAll(entries, "FAKE_URL", fake.URL())+openrouterEntry(fake),
		testgateway.Options{Env: map[string]string{"OR_KEY": orKey}})
	return g, fake
}

func ask(text string) string {
	q, _ := json.Marshal(text)
	return `{"model":"auto","messages":[{"role":"user","content":` + string(q) + `}]}`
}

// received is the last chat completion the fake got: the body decoded, and
// the request. Not simply the last request: the host's health prober may
// GET /v1/models at any time.
func received(t *testing.T, fake *fakeupstream.Server) (map[string]any, fakeupstream.Recorded) {
	t.Helper()
	reqs := fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == "POST" {
			return apitest.JSON(t, reqs[i].Body), reqs[i]
		}
	}
	t.Fatal("no chat completion reached the fake")
	return nil, fakeupstream.Recorded{}
}

// preferences is the provider object from the config; without sort for a
// :nitro / :floor model, whose variant is the sort.
func preferences(sorted bool) map[string]any {
	p := map[string]any{"order": []any{"deepinfra", "together"}, "allow_fallbacks": false, "data_collection": "deny"}
	if sorted {
		p["sort"] = "price"
	}
	return p
}

func TestIntentVariants(t *testing.T) {
	g, fake := startGateway(t, "")
	for _, tc := range []struct {
		subsystem, model string
		sorted           bool
	}{
		// operator: Maximum quality; the only Maximum model, :nitro.
		{"operator", "anthropic/claude-opus-4.6:nitro", false},
		// dream: High or better, cheapest is DeepSeek R1, :floor.
		{"dream", "deepseek/deepseek-r1:floor", false},
		// curator: cheapest Medium model, no variant, the configured sort.
		{"curator", "qwen/qwen-plus", true},
	} {
		r := apitest.Post(t, g.URL, "/v1/chat/completions", ask("hello from "+tc.subsystem), "X-Bardo-Subsystem", tc.subsystem)
		if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "openrouter" {
			t.Fatalf("%s: %d %q %s", tc.subsystem, r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
		}
		body, rec := received(t, fake)
		if body["model"] != tc.model {
			t.Errorf("%s: upstream model %v, want %s", tc.subsystem, body["model"], tc.model)
		}
		if !reflect.DeepEqual(body["provider"], preferences(tc.sorted)) {
			t.Errorf("%s: upstream provider object %v, want %v", tc.subsystem, body["provider"], preferences(tc.sorted))
		}
		if rec.Path != "/v1/chat/completions" || rec.Header.Get("Authorization") != "Bearer "+orKey ||
			rec.Header.Get("X-Title") != "Bardo e2e" || rec.Header.Get("HTTP-Referer") != "https://bardo.example" {
			t.Errorf("%s: upstream request %s %v", tc.subsystem, rec.Path, rec.Header)
		}
		if got := r.Header.Get("X-Bardo-Model"); got != tc.model {
			t.Errorf("%s: X-Bardo-Model %q, want %q", tc.subsystem, got, tc.model)
		}
		m := apitest.JSON(t, r.Body)
		if c, _ := m["choices"].([]any); len(c) == 0 || !strings.Contains(string(r.Body), "echo: hello from "+tc.subsystem) {
			t.Errorf("%s: answer %s", tc.subsystem, r.Body)
		}
	}
}

// A request naming its model is sent as named, with the configured
// preferences, and the caller's own provider object gives way to the
// operator's (the operator's routing policy, e.g. data_collection "deny",
// is not the caller's to weaken).
func TestExplicitModel(t *testing.T) {
	g, fake := startGateway(t, "")
	r := apitest.Post(t, g.URL, "/v1/chat/completions",
		`{"model":"openai/gpt-4o-mini","provider":{"data_collection":"allow"},"messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "openrouter" {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	body, _ := received(t, fake)
	if body["model"] != "openai/gpt-4o-mini" || !reflect.DeepEqual(body["provider"], preferences(true)) {
		t.Fatalf("upstream body %v", body)
	}
}

// A provider whose resolve() panics, answers without a model, answers
// something that cannot be encoded, or is too slow does not serve the
// intent: the walk goes on to OpenRouter. ("Too slow" is an untrusted
// plugin's: its deadline is hard. A trusted plugin's timeout is a budget —
// a completed call is kept, docs/abi.md — so the slow one runs untrusted.) The control gateway shows the same
// provider serving when its resolve() behaves, so the fall-through is the
// misbehaviour's doing. Each bad provider's catalog is cheaper and first in
// order: it would win otherwise.
func TestMisbehavingResolve(t *testing.T) {
	bad := func(name, mode string) string {
		trusted := "true"
		if mode == "slow" {
			trusted = "false"
		}
		return `
[[provider]]
name = "` + name + `"
plugin = "badresolve.wasm"
base_url = "FAKE_URL/v1"
credential = "env:OR_KEY"
models = ["bad/*"]
trusted = ` + trusted + `
model = [{ id = "bad/cheap", quality = "maximum", input_price = "0.01", output_price = "0.01" }]
[provider.config]
mode = "` + mode + `"
`
	}
	modes := []string{"panic", "nomodel", "nan", "slow", "none"}
	var entries string
	for _, m := range modes {
		entries += bad("bad-"+m, m)
	}
	g, fake := startGateway(t, entries)
	for i := range 2 { // twice: a trapped instance is replaced, the next call fails alike
		r := apitest.Post(t, g.URL, "/v1/chat/completions", ask("who serves?"), "X-Bardo-Subsystem", "operator")
		if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "openrouter" {
			t.Fatalf("round %d: %d %q %s", i, r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
		}
		if body, _ := received(t, fake); body["model"] != "anthropic/claude-opus-4.6:nitro" {
			t.Fatalf("round %d: upstream model %v", i, body["model"])
		}
	}
	// Every failing resolve was asked and refused (the host says why); a
	// veto ("none") is an answer, not a failure, and is not logged.
	refused := map[string]bool{}
	for _, l := range strings.Split(g.LogLines.String(), "\n") {
		if strings.Contains(l, "the provider does not serve this intent") {
			for _, f := range strings.Fields(l) {
				if p, ok := strings.CutPrefix(f, "provider="); ok {
					refused[p] = true
				}
			}
		}
	}
	for _, m := range []string{"panic", "nomodel", "nan", "slow"} {
		if !refused["bad-"+m] {
			t.Errorf("no log line for bad-%s's refused resolve; refused: %v", m, refused)
		}
	}
	if refused["bad-none"] || refused["openrouter"] {
		t.Errorf("refused: %v", refused)
	}

	ctl, ctlFake := startGateway(t, bad("bad-ok", "ok"))
	r := apitest.Post(t, ctl.URL, "/v1/chat/completions", ask("who serves?"), "X-Bardo-Subsystem", "operator")
	if r.Status != 200 || r.Header.Get("X-Bardo-Provider") != "bad-ok" {
		t.Fatalf("control: %d %q %s", r.Status, r.Header.Get("X-Bardo-Provider"), r.Body)
	}
	if body, _ := received(t, ctlFake); body["model"] != "bad/cheap" {
		t.Fatalf("control: upstream model %v", body["model"])
	}
}
