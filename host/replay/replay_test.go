//go:build !wasip1

package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

const upKey = testgateway.FakeUpstreamKey

// providersTOML puts the Anthropic and OpenAI fakes behind the gateway with
// the providers' list prices as their catalogs: the bills are priced from
// these same entries (catalog.FromTOML), and the summariser's intent is
// resolved against them.
const providersTOML = `
[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "{{URL}}"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true
[[provider.model]]
id = "claude-sonnet-4-5"
quality = "high"
features = ["tool_use", "prompt_caching"]
context_window = 200000
input_price = "3"
output_price = "15"
cache_write_price = "3.75"   # 1.25x input (5-minute entries)
cache_read_price = "0.30"    # 0.1x input
[[provider.model]]
id = "claude-haiku-4-5"
quality = "medium"
features = ["tool_use", "prompt_caching"]
context_window = 200000
input_price = "1"
output_price = "5"
cache_write_price = "1.25"
cache_read_price = "0.10"

[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "{{URL}}/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
[[provider.model]]
id = "gpt-4o"
quality = "high"
features = ["tool_use", "prompt_caching"]
context_window = 128000
input_price = "2.50"
output_price = "10"
cache_read_price = "1.25"    # cached input, 0.5x
[[provider.model]]
id = "gpt-4o-mini"
quality = "low"
features = ["tool_use", "prompt_caching"]
context_window = 128000
input_price = "0.15"
output_price = "0.60"
cache_read_price = "0.075"
`

// answer is what the fake model says to every call: about 60 tokens, so
// output is billed like a short agent step whichever way it was sent.
const answer = "I checked the relevant code and the tool output. The change is in place and the tests pass; the next step is to verify the edge cases the user mentioned and report the result concisely, with file references, before moving on to the next item on the list."

// prices reads the catalog entries of providersTOML.
func prices(t testing.TB) map[string]catalog.Model {
	t.Helper()
	var doc struct {
		Provider []struct {
			Name  string           `toml:"name"`
			Model []map[string]any `toml:"model"`
		} `toml:"provider"`
	}
	if _, err := toml.Decode(providersTOML, &doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]catalog.Model{}
	for _, p := range doc.Provider {
		models, err := catalog.FromTOML(p.Name, p.Model)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			out[m.ID] = m
		}
	}
	return out
}

// cost prices one call in nano-USD: Anthropic cache writes at the catalog's
// write price (a 1-hour entry at 2x input), reads at its read price.
func cost(t testing.TB, cat map[string]catalog.Model, b fakeupstream.Bill) int64 {
	m, ok := cat[b.Model]
	if !ok {
		t.Fatalf("a call to %q, which the catalog does not price", b.Model)
	}
	return m.Input.Cost(int64(b.Input)) + m.CacheWrite.Cost(int64(b.CacheWrite5m)) + 2*m.Input.Cost(int64(b.CacheWrite1h)) +
		m.CacheRead.Cost(int64(b.CacheRead)) + m.Output.Cost(int64(b.Output))
}

// vclock is the providers' cache clock: replays advance it by each turn's
// gap instead of waiting.
type vclock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *vclock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *vclock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// outcome is one session replayed one way.
type outcome struct {
	requests, failed, local, degraded int
	// reused counts local answers to a request never sent before in the
	// replay: another context's answer served for this one. An agent's
	// growing conversation never repeats a request, so each is a wrong
	// answer, not a saving.
	reused   int
	upstream int    // calls the provider billed (summaries included)
	toolSets int    // distinct tool lists the provider saw
	nanoUSD  int64  // the provider's bill
	tokens   [4]int // input, cache writes, cache reads, output
	models   map[string]int
	firstErr string
	hits     []string // "turn N: <X-Bardo-Cache>"
}

// replay sends every turn of tr to base (the fake itself, or a gateway) and
// prices what the fake billed meanwhile.
func replay(t *testing.T, tr Trace, base string, fake *fakeupstream.Server, clock *vclock, cat map[string]catalog.Model) outcome {
	t.Helper()
	o := outcome{models: map[string]int{}}
	before, sentBefore := len(fake.Bills()), len(fake.Requests())
	seen := map[string]bool{}
	var msgs []map[string]any
	for i, turn := range tr.Turns {
		clock.Add(time.Duration(turn.GapSeconds) * time.Second)
		msgs = append(msgs, turn.Messages...)
		body := requestBody(t, tr, msgs)
		var r apitest.Reply
		if tr.Dialect == "anthropic" {
			r = apitest.Post(t, base, tr.Path, body, "x-api-key", upKey)
		} else {
			r = apitest.Post(t, base, tr.Path, body, "Authorization", "Bearer "+upKey)
		}
		o.requests++
		bad := r.Status != 200
		if !bad && bytes.Contains(r.Body, []byte("event: error")) {
			bad = true
		}
		if bad {
			o.failed++
			if o.firstErr == "" {
				o.firstErr = fmt.Sprintf("turn %d: %d %.300s", i, r.Status, r.Body)
			}
		}
		if c := r.Header.Get("X-Bardo-Cache"); c != "" && c != "miss" {
			o.local++
			if !seen[string(body)] {
				o.reused++
			}
			o.hits = append(o.hits, fmt.Sprintf("turn %d: %s %s", i, c, r.Header.Get("X-Bardo-Cache-Similarity")))
		}
		seen[string(body)] = true
		if r.Header.Get("X-Bardo-Degraded") != "" {
			o.degraded++
		}
	}
	for _, b := range fake.Bills()[before:] {
		o.upstream++
		o.nanoUSD += cost(t, cat, b)
		o.tokens[0] += b.Input
		o.tokens[1] += b.CacheWrite5m + b.CacheWrite1h
		o.tokens[2] += b.CacheRead
		o.tokens[3] += b.Output
		o.models[b.Model]++
	}
	sets := map[string]bool{}
	for _, r := range fake.Requests()[sentBefore:] {
		sets[toolNames(r.Body)] = true
	}
	o.toolSets = len(sets)
	return o
}

// toolNames lists a request's tool names in order, either dialect.
func toolNames(body []byte) string {
	var req struct {
		Tools []struct {
			Name     string `json:"name"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	_ = json.Unmarshal(body, &req)
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name+t.Function.Name)
	}
	return strings.Join(names, ",")
}

// requestBody is the request the client sends with msgs as its
// conversation; a rolling breakpoint marks the newest message's last block.
func requestBody(t *testing.T, tr Trace, msgs []map[string]any) []byte {
	req := map[string]any{}
	for k, v := range tr.Request {
		req[k] = v
	}
	out := append([]map[string]any(nil), msgs...)
	if tr.RollingBreakpoint {
		last := map[string]any{}
		for k, v := range out[len(out)-1] {
			last[k] = v
		}
		blocks, _ := last["content"].([]any)
		blocks = append([]any(nil), blocks...)
		b := map[string]any{}
		for k, v := range blocks[len(blocks)-1].(map[string]any) {
			b[k] = v
		}
		b["cache_control"] = map[string]any{"type": "ephemeral"}
		blocks[len(blocks)-1] = b
		last["content"] = blocks
		out[len(out)-1] = last
	}
	req["messages"] = out
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// way is one way of sending the sessions: directly, or through a gateway
// running layers.
type way struct {
	name   string
	layers string // [[layer]] TOML; "" with gateway: the gateway alone
	direct bool
}

// TestPricedReplays replays the coding-agent and DeFi-agent sessions
// directly to the providers, through the gateway without layers, through
// the shipped pipeline, and through each shipped layer alone, and prices
// every call by the providers' prompt-caching rules. No layer, and not the
// shipped pipeline, may make a session cost more than sending it directly.
func TestPricedReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("replays start eleven gateways")
	}
	cat := prices(t)
	models, layers := testgateway.ShippedPipeline(t)
	traces := []Trace{loadTrace(t, "coding-agent.json"), loadTrace(t, "defi-agent.json")}

	var all []string
	for _, l := range layers {
		all = append(all, l.TOML)
	}
	ways := []way{{name: "direct", direct: true}, {name: "gateway, no layers"}, {name: "shipped pipeline", layers: strings.Join(all, "\n")}}
	for _, l := range layers {
		ways = append(ways, way{name: l.Name + " alone", layers: l.TOML})
	}

	results := make([][]outcome, len(ways))
	for i, w := range ways {
		clock := &vclock{t: time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)}
		fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey), fakeupstream.WithPromptCaching(clock.Now),
			fakeupstream.WithDefaultBehaviour(fakeupstream.Reply(answer)))
		base := fake.URL()
		if !w.direct {
			cfg := models + strings.ReplaceAll(providersTOML, "{{URL}}", fake.URL()) + "\n" + w.layers
			base = testgateway.Start(t, cfg, testgateway.Options{Env: testgateway.FakeProviderEnv()}).URL
		}
		for _, tr := range traces {
			results[i] = append(results[i], replay(t, tr, base, fake, clock, cat))
		}
		fake.Close()
	}

	// The table: each session's bill per way, and the difference to direct.
	var tb strings.Builder
	fmt.Fprintf(&tb, "\n%-22s", "")
	for _, tr := range traces {
		fmt.Fprintf(&tb, " | %-52s", tr.Name+fmt.Sprintf(" (%d requests)", len(tr.Turns)))
	}
	fmt.Fprintf(&tb, "\n%-22s", "way")
	for range traces {
		fmt.Fprintf(&tb, " | %9s %9s %7s %5s %5s %5s %4s %4s %5s", "bill $", "vs direct", "", "calls", "local", "wrong", "fail", "degr", "tools")
	}
	for i, w := range ways {
		fmt.Fprintf(&tb, "\n%-22s", w.name)
		for j := range traces {
			o, d := results[i][j], results[0][j]
			delta := float64(o.nanoUSD-d.nanoUSD) / 1e9
			fmt.Fprintf(&tb, " | %9.4f %+9.4f %+6.1f%% %5d %5d %5d %4d %4d %5d", float64(o.nanoUSD)/1e9, delta,
				100*float64(o.nanoUSD-d.nanoUSD)/float64(d.nanoUSD), o.upstream, o.local, o.reused, o.failed, o.degraded, o.toolSets)
		}
	}
	fmt.Fprintf(&tb, "\n\nthousands of tokens billed: input / cache write / cache read / output")
	for i, w := range ways {
		fmt.Fprintf(&tb, "\n%-22s", w.name)
		for j := range traces {
			k := results[i][j].tokens
			fmt.Fprintf(&tb, " | %7.1f %7.1f %7.1f %5.1f", float64(k[0])/1e3, float64(k[1])/1e3, float64(k[2])/1e3, float64(k[3])/1e3)
		}
	}
	t.Log(tb.String())
	for i, w := range ways {
		for j, tr := range traces {
			if e := results[i][j].firstErr; e != "" {
				t.Logf("%s, %s: first failure: %s", w.name, tr.Name, e)
			}
			if m := results[i][j].models; len(m) > 1 {
				t.Logf("%s, %s: calls by model: %v", w.name, tr.Name, m)
			}
			if h := results[i][j].hits; len(h) > 0 {
				t.Logf("%s, %s: answered by the gateway: %s", w.name, tr.Name, strings.Join(h, "; "))
			}
		}
	}

	for j, tr := range traces {
		direct := results[0][j]
		if direct.failed > 0 || direct.upstream != direct.requests {
			t.Fatalf("%s sent directly: %d of %d failed (%s)", tr.Name, direct.failed, direct.requests, direct.firstErr)
		}
		// The gateway alone forwards the caller's bytes: the provider bills
		// exactly what it bills a direct caller.
		if g := results[1][j]; g.nanoUSD != direct.nanoUSD || g.failed > 0 {
			t.Errorf("%s through the gateway without layers: $%.6f, direct $%.6f, %d failed", tr.Name,
				float64(g.nanoUSD)/1e9, float64(direct.nanoUSD)/1e9, g.failed)
		}
		for i := 2; i < len(ways); i++ {
			o := results[i][j]
			// A refused request costs nothing and saves nothing: every
			// request must be answered for a bill to count. (Before issue
			// 11's fixes pii refused every turn after a tx hash, and
			// locally answered streams failed in the stream phase.)
			if o.failed > 0 {
				t.Errorf("%s through %s: %d of %d requests failed (%s)", tr.Name, ways[i].name, o.failed, o.requests, o.firstErr)
			}
			// Another context's answer is a wrong answer, not a saving.
			// (Before semcache 2.0 — requests meet only within the same
			// exact context — it answered 10 DeFi turns from another.)
			if o.reused > 0 {
				t.Errorf("%s through %s: %d requests answered with another context's answer", tr.Name, ways[i].name, o.reused)
			}
			// No layer, and not the shipped pipeline, may cost more than
			// sending directly. (Before issue 11: toolprune +63.5 % on the
			// coding session, a new tool list nearly every turn; compress
			// +10.9 %, folding cached history rewrote the provider's cache.
			// Both now price what they change.)
			if o.nanoUSD > direct.nanoUSD {
				t.Errorf("%s through %s costs $%.4f, more than the $%.4f it costs sent directly (%+.1f%%)", tr.Name, ways[i].name,
					float64(o.nanoUSD)/1e9, float64(direct.nanoUSD)/1e9, 100*float64(o.nanoUSD-direct.nanoUSD)/float64(direct.nanoUSD))
			}
		}
		// The shipped pipeline must save money, not only break even.
		if s := results[2][j]; s.nanoUSD >= direct.nanoUSD {
			t.Errorf("%s: the shipped pipeline's bill $%.4f is not below the direct bill $%.4f", tr.Name,
				float64(s.nanoUSD)/1e9, float64(direct.nanoUSD)/1e9)
		}
	}
}
