//go:build !wasip1

package main_test

// The layer compiled to WASM and run by the real sandbox (wazero, the wire
// round trip, the host's kv store with its tenant namespacing): the per-call
// cost on the shared 4 KB agent request, and tenant isolation, which the
// gateway cannot show yet (every caller is the anonymous tenant until
// authentication lands).

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func load(tb testing.TB, config string, trusted bool, kv sandbox.KV) *sandbox.Plugin {
	tb.Helper()
	return layertest.Load(tb, "plugins/layers/hashcache", sandbox.Options{Trusted: trusted, Config: []byte(config), KV: kv})
}

func onRequest(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta *wire.Meta, req *wire.Request) wire.LayerResult {
	tb.Helper()
	return layertest.OnRequest(tb, p, enc, meta, req)
}

func onResponse(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta wire.Meta, resp wire.Response) {
	tb.Helper()
	layertest.OnResponse(tb, p, enc, meta, resp)
}

func agentAnswer() wire.Response {
	return wire.Response{ID: "chatcmpl-1", Model: "gpt-4o-mini",
		Content:    []wire.Block{{Type: wire.BlockText, Text: strings.Repeat("Morpho supplies 4.2% against Aave's 3.1%; the gas to move is small. ", 12)}},
		StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 1100, OutputTokens: 200}}
}

// Tenants never see each other's entries, unless the layer is configured
// shared; the namespacing is the host's, by construction.
func TestRuntimeTenantIsolation(t *testing.T) {
	for _, mode := range []string{"tenant", "shared"} {
		t.Run(mode, func(t *testing.T) {
			kv := kvstore.NewMemory(8 << 20)
			p := load(t, `{"isolation":"`+mode+`"}`, true, kv)
			var enc wire.Encoder
			req := fixtures.AgentRequest()
			a := wire.Meta{RequestID: "a1", Tenant: "acme", Dialect: wire.DialectOpenAI, Model: req.Model}
			res := onRequest(t, p, &enc, &a, req)
			if res.Action != wire.ActionContinue {
				t.Fatal("hit on an empty store")
			}
			a.Annotations = res.Annotations
			onResponse(t, p, &enc, a, agentAnswer())
			a.Annotations = nil
			if res := onRequest(t, p, &enc, &a, req); res.Action != wire.ActionAnswer || res.Answer.Content[0].Text != agentAnswer().Content[0].Text {
				t.Fatalf("same tenant: no hit: %+v", res)
			}
			b := wire.Meta{RequestID: "b1", Tenant: "globex", Dialect: wire.DialectOpenAI, Model: req.Model}
			res = onRequest(t, p, &enc, &b, req)
			if hit := res.Action == wire.ActionAnswer; hit != (mode == "shared") {
				t.Fatalf("other tenant: hit = %v in %s mode", hit, mode)
			}
			// Where the entry lives: the host's key layout (what an admin
			// flush deletes by prefix).
			prefix := "hashcache\x00" + map[string]string{"tenant": "4:acme", "shared": "*"}[mode]
			if n := kv.DeletePrefix(prefix); n != 1 {
				t.Fatalf("DeletePrefix(%q) removed %d entries, want 1", prefix, n)
			}
			if res := onRequest(t, p, &enc, &a, req); res.Action != wire.ActionContinue {
				t.Fatal("hit after the flush")
			}
		})
	}
}

// BenchmarkLayerCall measures the per-request cost under the real runtime on
// the 4 KB agent request, like host/sandbox's BenchmarkLayerCall: a miss
// (normalize, hash, kv lookup), a hit (plus decoding the entry and returning
// it as the answer), and the response phase storing a miss.
func BenchmarkLayerCall(b *testing.B) {
	req := fixtures.AgentRequest()
	for _, trusted := range []bool{true, false} {
		suffix := map[bool]string{true: "/trusted", false: "/untrusted"}[trusted]
		b.Run("miss"+suffix, func(b *testing.B) {
			p := load(b, `{}`, trusted, kvstore.NewMemory(8<<20))
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			measure(b, func() {
				if res := onRequest(b, p, &enc, &meta, req); res.Action != wire.ActionContinue {
					b.Fatal("hit")
				}
			})
		})
		b.Run("hit"+suffix, func(b *testing.B) {
			p := load(b, `{}`, trusted, kvstore.NewMemory(8<<20))
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			res := onRequest(b, p, &enc, &meta, req)
			m2 := meta
			m2.Annotations = res.Annotations
			onResponse(b, p, &enc, m2, agentAnswer())
			measure(b, func() {
				if res := onRequest(b, p, &enc, &meta, req); res.Action != wire.ActionAnswer {
					b.Fatal("miss")
				}
			})
		})
		b.Run("store"+suffix, func(b *testing.B) {
			p := load(b, `{}`, trusted, kvstore.NewMemory(64<<20))
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
			var enc wire.Encoder
			res := onRequest(b, p, &enc, &meta, req)
			meta.Annotations = res.Annotations
			resp := agentAnswer()
			measure(b, func() { onResponse(b, p, &enc, meta, resp) })
		})
	}
}

// BenchmarkNewTurn is the live shape of an agent's request: the 4 KB agent
// request whose history this instance has seen, with a new last user turn
// on every call (a miss), and the response phase storing its answer. cold
// evicts the CPU's caches before each call (untimed), as the other layers
// and the host do live between two calls of this one.
func BenchmarkNewTurn(b *testing.B) {
	for _, cold := range []bool{false, true} {
		name := map[bool]string{false: "hot", true: "cold"}[cold]
		for _, phase := range []string{"request", "response"} {
			b.Run(phase+"/"+name, func(b *testing.B) {
				req := fixtures.AgentRequest()
				last := &req.Messages[len(req.Messages)-1].Content[0]
				p := load(b, `{}`, true, kvstore.NewMemory(64<<20))
				meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
				var enc wire.Encoder
				var lat layertest.Latencies
				resp := agentAnswer()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					last.Text = "Go ahead with case " + strconv.Itoa(i) + " of run 1764225600123456789, and summarize the risk in two sentences at the end."
					if cold {
						evictCaches()
					}
					t0 := time.Now()
					res := onRequest(b, p, &enc, &meta, req)
					if phase == "request" {
						lat.Add(time.Since(t0))
					}
					if res.Action != wire.ActionContinue {
						b.Fatal("hit")
					}
					m := meta
					m.Annotations = res.Annotations
					if cold {
						evictCaches()
					}
					t0 = time.Now()
					onResponse(b, p, &enc, m, resp)
					if phase == "response" {
						lat.Add(time.Since(t0))
					}
				}
				lat.Report(b)
			})
		}
	}
}

// evictBuf is larger than the machine's L2 caches together.
var evictBuf = make([]byte, 8<<20)

// evictCaches writes a byte of every cache line of evictBuf, so the next
// call finds its code and data out of the L1 and L2 caches, as it does
// live: eight other layers and the host run between two calls of a layer.
func evictCaches() {
	for i := 0; i < len(evictBuf); i += 64 {
		evictBuf[i]++
	}
}

// BenchmarkStreamBatch measures the stream phase of a miss per batch (one
// event per batch, as upstream SSE events arrive): a 150-delta answer is
// accumulated in the state and stored on the final batch.
func BenchmarkStreamBatch(b *testing.B) {
	req := fixtures.AgentRequest()
	p := load(b, `{}`, true, kvstore.NewMemory(64<<20))
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model, Stream: true}
	var enc wire.Encoder
	meta.Annotations = onRequest(b, p, &enc, &meta, req).Annotations
	evs := []wire.Event{{Type: wire.EventMessageStart, ID: "msg_1", Model: req.Model, Usage: wire.Usage{InputTokens: 1100}},
		{Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockText}}}
	for range 150 {
		evs = append(evs, wire.Event{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "a chunk of text "})
	}
	evs = append(evs, wire.Event{Type: wire.EventBlockStop},
		wire.Event{Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn, Usage: wire.Usage{OutputTokens: 600}},
		wire.Event{Type: wire.EventMessageStop})
	var state []byte
	i := 0
	measure(b, func() {
		in := wire.LayerStream{Meta: meta, Events: evs[i : i+1], State: state, Final: i == len(evs)-1}
		in.Encode(&enc)
		out, err := p.Call(context.Background(), plugin.OpOnStream, enc.Bytes(), sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant})
		if err != nil {
			b.Fatal(err)
		}
		var res wire.LayerStreamResult
		if err := res.Decode(out); err != nil {
			b.Fatal(err)
		}
		state = res.State
		if i++; i == len(evs) {
			i, state = 0, nil
		}
	})
}

func measure(b *testing.B, f func()) { layertest.Measure(b, f) }

// A config the layer cannot use stops the plugin from loading (and so the
// pipeline from loading, with the entry's line), instead of running with a
// default the operator did not ask for.
func TestRuntimeBadConfigRefusedAtLoad(t *testing.T) {
	_, err := sandbox.Load(context.Background(), sandbox.Options{
		Name: "hashcache", Path: wasmbuild.MustBuild(t, "plugins/layers/hashcache"), Trusted: true,
		PoolSize: 1, Timeout: time.Second, Config: []byte(`{"isolation":"everyone"}`), KV: kvstore.NewMemory(1 << 20),
	})
	if err == nil || !strings.Contains(err.Error(), "isolation") {
		t.Fatalf("load error %v", err)
	}
}
