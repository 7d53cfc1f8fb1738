//go:build !wasip1

package main_test

// The layer compiled to WASM and run by the real sandbox (wazero, the wire
// round trip, the host's kv store): the per-request cost on the shared 4 KB
// agent request — the request phase for a new session and for a hit, the
// response phase recording the session, and one stream batch.

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func load(tb testing.TB, trusted bool) *sandbox.Plugin {
	tb.Helper()
	return layertest.Load(tb, "plugins/layers/affinity", sandbox.Options{Trusted: trusted, KV: kvstore.NewMemory(8 << 20)})
}

func call(tb testing.TB, p *sandbox.Plugin, op plugin.Op, in []byte, meta *wire.Meta) []byte {
	tb.Helper()
	return layertest.Call(tb, p, op, in, meta)
}

func onRequest(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta *wire.Meta, req *wire.Request) wire.LayerResult {
	tb.Helper()
	return layertest.OnRequest(tb, p, enc, meta, req)
}

func onResponse(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta wire.Meta, resp wire.Response) wire.LayerResponseResult {
	tb.Helper()
	return layertest.OnResponse(tb, p, enc, meta, resp)
}

func get(kvs []wire.KV, key string) string {
	for i := len(kvs) - 1; i >= 0; i-- {
		if kvs[i].Key == key {
			return kvs[i].Value
		}
	}
	return ""
}

// routed is the meta the host hands the response and stream phases: the
// request phase's annotations and the route it took.
func routed(meta wire.Meta, res wire.LayerResult, provider string) wire.Meta {
	meta.Annotations = append(slices.Clone(res.Annotations),
		wire.KV{Key: "bardo.route.provider", Value: provider}, wire.KV{Key: "bardo.route.model", Value: meta.Model})
	return meta
}

var answer = wire.Response{ID: "chatcmpl-1", Model: "gpt-4o-mini", Content: []wire.Block{{Type: wire.BlockText, Text: "Morpho supplies 4.2% against Aave's 3.1%."}},
	StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 1100, OutputTokens: 20}}

// Under the real runtime and kv store: a session sticks to the provider that
// answered it.
func TestRuntimeRoundTrip(t *testing.T) {
	p := load(t, true)
	req := fixtures.AgentRequest()
	var enc wire.Encoder
	meta := wire.Meta{RequestID: "r1", Tenant: "acme", Session: "agent-7", Dialect: wire.DialectOpenAI, Model: req.Model}
	res := onRequest(t, p, &enc, &meta, req)
	if get(res.Headers, "X-Bardo-Affinity") != "new" {
		t.Fatalf("first: %+v", res)
	}
	onResponse(t, p, &enc, routed(meta, res, "backup"), answer)
	res = onRequest(t, p, &enc, &meta, req)
	if get(res.Headers, "X-Bardo-Affinity") != "hit" || get(res.Annotations, "bardo.route.prefer") != "backup" {
		t.Fatalf("second: %+v", res)
	}
	// Another tenant's session of the same name is its own (the host
	// namespaces kv keys by tenant).
	other := meta
	other.Tenant = "globex"
	if res := onRequest(t, p, &enc, &other, req); get(res.Headers, "X-Bardo-Affinity") != "new" {
		t.Fatalf("other tenant: %+v", res)
	}
}

// BenchmarkLayerCall measures the per-request cost under the real runtime on
// the 4 KB agent request, like host/sandbox's BenchmarkLayerCall: the
// request phase of a new session (hash, kv miss) and of a hit (hash, kv
// read, preference), the response phase recording the session (kv write),
// and one stream batch that is not the last (events passed through).
func BenchmarkLayerCall(b *testing.B) {
	req := fixtures.AgentRequest()
	for _, trusted := range []bool{true, false} {
		suffix := map[bool]string{true: "/trusted", false: "/untrusted"}[trusted]
		b.Run("request-new"+suffix, func(b *testing.B) {
			p := load(b, trusted)
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			measure(b, func() {
				if res := onRequest(b, p, &enc, &meta, req); get(res.Headers, "X-Bardo-Affinity") != "new" {
					b.Fatal("not new")
				}
			})
		})
		b.Run("request-hit"+suffix, func(b *testing.B) {
			p := load(b, trusted)
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Session: "agent-7", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			onResponse(b, p, &enc, routed(meta, onRequest(b, p, &enc, &meta, req), "up"), answer)
			measure(b, func() {
				if res := onRequest(b, p, &enc, &meta, req); get(res.Headers, "X-Bardo-Affinity") != "hit" {
					b.Fatal("not a hit")
				}
			})
		})
		b.Run("response-record"+suffix, func(b *testing.B) {
			p := load(b, trusted)
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Session: "agent-7", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			m := routed(meta, onRequest(b, p, &enc, &meta, req), "up")
			measure(b, func() { onResponse(b, p, &enc, m, answer) })
		})
		b.Run("response-record-annotated"+suffix, func(b *testing.B) {
			// As live: the other layers' and the router's annotations
			// around affinity's.
			p := load(b, trusted)
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			meta.Annotations = []wire.KV{{Key: "pii.masked", Value: "0"}, {Key: "injection.score", Value: "0.02"},
				{Key: "hashcache.key", Value: strings.Repeat("ab", 32)}, {Key: "hashcache.ttl_ms", Value: "300000"},
				{Key: "semcache.miss", Value: strings.Repeat("cd", 40)}, {Key: "bardo.market.regime", Value: "calm"},
				{Key: "promptcache.prefix_hash", Value: strings.Repeat("ef", 16)}, {Key: "promptcache.prefix_tokens", Value: "620"}}
			m := routed(meta, onRequest(b, p, &enc, &meta, req), "up")
			m.Annotations = append(m.Annotations, wire.KV{Key: "bardo.route.subsystem", Value: "chat"}, wire.KV{Key: "bardo.hdr.x-request-id", Value: "r1"})
			measure(b, func() { onResponse(b, p, &enc, m, answer) })
		})
		b.Run("response-record-cold"+suffix, func(b *testing.B) {
			// The CPU's caches evicted before each call (untimed), as live,
			// where eight layers and the host run between two calls.
			p := load(b, trusted)
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Session: "agent-7", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			m := routed(meta, onRequest(b, p, &enc, &meta, req), "up")
			var lat layertest.Latencies
			for b.Loop() {
				evictCaches()
				t0 := time.Now()
				onResponse(b, p, &enc, m, answer)
				lat.Add(time.Since(t0))
			}
			lat.Report(b)
		})
		b.Run("stream-batch"+suffix, func(b *testing.B) {
			p := load(b, trusted)
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Session: "agent-7", Dialect: wire.DialectOpenAI, Model: req.Model, Stream: true}
			var enc wire.Encoder
			m := routed(meta, onRequest(b, p, &enc, &meta, req), "up")
			in := wire.LayerStream{Meta: m, Events: []wire.Event{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "the position is "}}}
			var out wire.LayerStreamResult
			measure(b, func() {
				in.Encode(&enc)
				if err := out.Decode(call(b, p, plugin.OpOnStream, enc.Bytes(), &m)); err != nil || len(out.Events) != 1 {
					b.Fatal(err, out.Events)
				}
			})
		})
	}
}

func measure(b *testing.B, f func()) { layertest.Measure(b, f) }

// evictBuf is larger than the machine's L2 caches together.
var evictBuf = make([]byte, 8<<20)

// evictCaches writes a byte of every cache line of evictBuf, so the next
// call finds its code and data out of the L1 and L2 caches.
func evictCaches() {
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}
