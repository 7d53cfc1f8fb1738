//go:build !wasip1

package main

// The layer compiled to WASM and run by the real sandbox (wazero, the wire
// round trip), its complete host function served by a real gateway
// (host/testkit/testgateway: pipeline, routing, provider adapter, upstream
// client) in front of the fake upstream: the summaries are whatever the fake
// model answers.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/sdk/wire"
)

func init() { testgateway.Plugins["compress.wasm"] = "plugins/layers/compress" }

const upKey = testgateway.FakeUpstreamKey

func startGateway(tb testing.TB, pipelineTOML string) *testgateway.Gateway {
	tb.Helper()
	return testgateway.Start(tb, pipelineTOML, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
}

// providersTOML routes claude-* to the main fake (Anthropic adapter), gpt-4o
// to it too (OpenAI-compatible adapter), and gpt-4o-mini — the summariser's
// model — to the cheap fake.
func providersTOML(mainURL, cheapURL string) string {
	return `
[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + mainURL + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true

[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "` + mainURL + `/v1"
credential = "env:UP_KEY"
models = ["gpt-4o"]
trusted = true

[[provider]]
name = "cheap"
plugin = "openai-compatible.wasm"
base_url = "` + cheapURL + `/v1"
credential = "env:UP_KEY"
models = ["gpt-4o-mini"]
trusted = true
`
}

// The configuration the session tests use: the session is ≈ 9,000 tokens,
// so the defaults (24,000 / 12,000 / 4,000 / 1,024) are scaled down about
// five times; prices are smallBudget's (these fakes simulate no prompt
// cache, and the summariser is gpt-4o-mini).
const sessionConfig = smallBudget

// fakes are the two upstreams: the main model's and the summariser's.
type fakes struct {
	main, cheap *fakeupstream.Server
}

func newFakes(tb testing.TB, cheapOpts ...fakeupstream.Option) fakes {
	tb.Helper()
	f := fakes{
		main:  fakeupstream.New(fakeupstream.WithAPIKey(upKey)),
		cheap: fakeupstream.New(append([]fakeupstream.Option{fakeupstream.WithAPIKey(upKey)}, cheapOpts...)...),
	}
	tb.Cleanup(f.main.Close)
	tb.Cleanup(f.cheap.Close)
	return f
}

type rig struct {
	fakes
	gw      *testgateway.Gateway
	plugin  *sandbox.Plugin
	kv      *kvstore.Memory
	metrics *telemetry.Registry
}

// newRig starts the fakes and a gateway serving only providers, and loads
// the layer under layertest with that gateway as its Completer (as the
// daemon wires it for the layers of its own pipeline).
func newRig(tb testing.TB, config string, cheapOpts ...fakeupstream.Option) *rig {
	tb.Helper()
	r := &rig{fakes: newFakes(tb, cheapOpts...), kv: kvstore.NewMemory(64 << 20), metrics: telemetry.New()}
	r.gw = startGateway(tb, providersTOML(r.main.URL(), r.cheap.URL()))
	r.plugin = layertest.Load(tb, "plugins/layers/compress", sandbox.Options{
		Trusted: true, Timeout: 30 * time.Second, Config: []byte(config),
		KV: r.kv, Metrics: r.metrics, Services: sandbox.Services{Completer: r.gw.Daemon.Gateway},
	})
	return r
}

func (r *rig) onRequest(tb testing.TB, req *wire.Request) wire.LayerResult {
	tb.Helper()
	var enc wire.Encoder
	meta := wire.Meta{RequestID: "r", Tenant: "acme", Dialect: wire.DialectAnthropic, Model: req.Model}
	return layertest.OnRequest(tb, r.plugin, &enc, &meta, req)
}

func (r *rig) metric(name string) float64 {
	return r.metrics.Value("bardo_plugin_"+name, "plugin", "compress")
}

// summariserCalls returns the chat completions the cheap fake received.
func summariserCalls(f *fakeupstream.Server) []fakeupstream.Recorded {
	var out []fakeupstream.Recorded
	for _, rec := range f.Requests() {
		if rec.Path == "/v1/chat/completions" {
			out = append(out, rec)
		}
	}
	return out
}

type oaBody struct {
	Model     string `json:"model"`
	MaxTokens int    `json:"max_completion_tokens"`
	Messages  []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
}

func sessionReq(s session, msgs []wire.Message) *wire.Request {
	return &wire.Request{Model: "claude-sonnet-4-5", System: s.System, Messages: msgs, Tools: s.Tools,
		Params: wire.Params{Set: wire.HasMaxTokens, MaxTokens: 256}}
}

// The whole session over budget: one internal completion through the
// gateway summarises the older turns; the recent ones stay verbatim.
func TestRuntimeCompressesSession(t *testing.T) {
	r := newRig(t, sessionConfig)
	s := agentSession()
	req := sessionReq(s, s.Msgs)
	before := estimate(s.System, s.Msgs)

	res := r.onRequest(t, req)
	if got := header(res.Headers, HeaderCompress); got != StatusCompressed || res.Patched != wire.PartMessages {
		t.Fatalf("%s = %q, patched %b", HeaderCompress, got, res.Patched)
	}
	calls := summariserCalls(r.cheap)
	if len(calls) != 1 || r.main.Count("/v1/messages") != 0 {
		t.Fatalf("%d summariser calls, %d to the main upstream", len(calls), r.main.Count("/v1/messages"))
	}
	var sent oaBody
	if err := json.Unmarshal(calls[0].Body, &sent); err != nil {
		t.Fatal(err)
	}
	split, _ := strconv.Atoi(strings.Split(header(res.Headers, HeaderTurns), "/")[0])
	if sent.Model != "gpt-4o-mini" || sent.MaxTokens != 300 || len(sent.Messages) != 2 ||
		sent.Messages[0].Role != "system" || sent.Messages[0].Content != DefaultInstructions {
		t.Fatalf("summariser request: model %q max_tokens %d, %d messages", sent.Model, sent.MaxTokens, len(sent.Messages))
	}
	prompt := sent.Messages[1].Content
	for _, want := range []string{
		"Summarise the first " + strconv.Itoa(split) + " turns",
		"User: Morning Atlas.",
		"Assistant called tool get_positions: {\"protocol\":\"aave-v3\",\"chain\":\"ethereum\"}",
		"Result of get_positions: {",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("summariser prompt lacks %q", want)
		}
	}
	if strings.Contains(prompt, "Before I sign") {
		t.Error("the question being asked was sent to the summariser")
	}

	out := res.Request.Messages
	first := out[0].Content[0].Text
	// The fake model answers "echo: <the prompt>", cut at max_tokens: the
	// summary is its answer, as the gateway returned it.
	if !strings.HasPrefix(first, summaryIntro(split)+"echo: Summarise the first") || len(first) > len(summaryIntro(split))+300*4 {
		t.Fatalf("summary block (%d bytes): %.200q", len(first), first)
	}
	checkAlternates(t, out)
	if out[len(out)-1].Content[0].Text != s.Msgs[len(s.Msgs)-1].Content[0].Text {
		t.Fatal("the last question changed")
	}
	after := estimate(s.System, out)
	saved, _ := strconv.Atoi(header(res.Headers, HeaderSavedTokens))
	if saved != before-after || after > 5000 {
		t.Fatalf("estimate %d → %d, header says %d saved", before, after, saved)
	}
	t.Logf("session of %d turns: %d → %d estimated tokens (−%.1f%%), %d turns summarised in one call",
		len(s.Msgs), before, after, 100*float64(before-after)/float64(before), split)

	// The same request again: the stored summary, no call.
	res2 := r.onRequest(t, req)
	if header(res2.Headers, HeaderCompress) != StatusCached || len(summariserCalls(r.cheap)) != 1 {
		t.Fatalf("second time: %v, %d calls", res2.Headers, len(summariserCalls(r.cheap)))
	}
	if res2.Request.Messages[0].Content[0].Text != first {
		t.Fatal("the cached summary differs from the one written")
	}
	if r.metric(metricCompressed) != 1 || r.metric(metricCached) != 1 || r.metric(metricCalls) != 1 ||
		r.metric(metricSaved) != float64(2*saved) || r.metric(metricSummaryIn) == 0 {
		t.Fatalf("metrics: compressed %v cached %v calls %v saved %v summary-in %v", r.metric(metricCompressed),
			r.metric(metricCached), r.metric(metricCalls), r.metric(metricSaved), r.metric(metricSummaryIn))
	}

	// Another tenant does not see acme's summaries.
	var enc wire.Encoder
	meta := wire.Meta{RequestID: "r", Tenant: "other", Dialect: wire.DialectAnthropic, Model: req.Model}
	res3 := layertest.OnRequest(t, r.plugin, &enc, &meta, req)
	if header(res3.Headers, HeaderCompress) != StatusCompressed || len(summariserCalls(r.cheap)) != 2 {
		t.Fatalf("other tenant: %v, %d calls", res3.Headers, len(summariserCalls(r.cheap)))
	}
}

// The summariser's provider fails: the request goes on unchanged.
func TestRuntimeSummariserFailure(t *testing.T) {
	r := newRig(t, sessionConfig, fakeupstream.WithDefaultBehaviour(fakeupstream.Fail(500)))
	s := agentSession()
	res := r.onRequest(t, sessionReq(s, s.Msgs))
	if header(res.Headers, HeaderCompress) != StatusFailed || res.Patched != 0 || res.Request.Messages != nil {
		t.Fatalf("headers %v, patched %b", res.Headers, res.Patched)
	}
	if len(summariserCalls(r.cheap)) == 0 || r.metric(metricFailed) != 1 {
		t.Fatalf("%d calls, failed metric %v", len(summariserCalls(r.cheap)), r.metric(metricFailed))
	}
}

// BenchmarkLayerCall measures one request-phase call under the real
// runtime (trusted): on the shared 4 KB agent request, under budget (the
// common case); on the 57-turn session under the default budget (nothing
// to do, but 34 KB of conversation to read); on the session over budget
// with its summary already stored (a folded conversation: hash the
// chunks, kv reads from the newest, the patched conversation back to the
// host); and over budget with a fold priced out.
func BenchmarkLayerCall(b *testing.B) {
	s := agentSession()
	for _, bc := range []struct {
		name, config string
		req          *wire.Request
		want         string
	}{
		{"agent4KB-under-budget", `{}`, fixtures.AgentRequest(), StatusSkipped},
		{"session34KB-under-budget", `{}`, sessionReq(s, s.Msgs), StatusSkipped},
		{"session34KB-cached", sessionConfig, sessionReq(s, s.Msgs), StatusCached},
		// Over budget at the default (cached) prices: every chunk hashed,
		// the store searched in vain, the last-seen entry written, the fold
		// priced and declined — the steady state of a long conversation
		// under a warm cache.
		{"session34KB-unprofitable", `{"budget_tokens":5000,"chunk_tokens":1200,"summary_max_tokens":300}`, sessionReq(s, s.Msgs), StatusSkipped},
	} {
		b.Run(bc.name+"/trusted", func(b *testing.B) {
			r := newRig(b, bc.config)
			if bc.want == StatusCached {
				r.onRequest(b, bc.req) // writes the summary
			}
			var enc wire.Encoder
			meta := wire.Meta{RequestID: "req_bench", Tenant: "acme", Dialect: wire.DialectAnthropic, Model: bc.req.Model}
			layertest.Measure(b, func() {
				res := layertest.OnRequest(b, r.plugin, &enc, &meta, bc.req)
				if got := header(res.Headers, HeaderCompress); got != bc.want {
					b.Fatalf("%s = %q, want %q", HeaderCompress, got, bc.want)
				}
			})
		})
	}
}
