//go:build !wasip1

package main

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// prose is English text with numbers, like an agent conversation.
const prose = "Your Aave position supplies 125,000 USDC against 41,000 borrowed, health factor 1.84. " +
	"With ETH volatility elevated, a 20% drawdown would bring it near 1.47, still above liquidation. " +
	"Consider gas costs and the current supply APYs on both venues; the last rebalance was on 2024-03-18 at 14:05. "

// benchRequests returns the benchmark inputs: the 4 KB agent request with
// and without personal data, and 16 KB of prose in one message with a few
// values to mask.
func benchRequests() map[string]*wire.Request {
	clean := fixtures.AgentRequest()
	withPII := fixtures.AgentRequest()
	last := &withPII.Messages[len(withPII.Messages)-1].Content[0]
	last.Text += " Send the summary to alice.smith@example.com and text +1 415 555 2671 when done."
	big := strings.Repeat(prose, 16384/len(prose)+1)[:16384-200] +
		" Contact bob@example.org or (415) 555-2671, card 4111 1111 1111 1111, host 10.20.30.40."
	words := strings.Repeat("With volatility elevated a drawdown would bring it near liquidation while gas costs stay low. ", 200)[:16384]
	numClean := strings.Repeat(prose, 16384/len(prose)+1)[:16384]
	cc, err := anthropic.DecodeRequest(loadtest.ClaudeCode("Fix the failing test in store_test.go", true))
	if err != nil {
		panic(err)
	}
	return map[string]*wire.Request{
		"85KB-claude-code": cc,
		"16KB-clean":       {Model: "gpt-4o-mini", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: numClean}}}}},
		"16KB-words":       {Model: "gpt-4o-mini", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: words}}}}},
		"4KB-clean":        clean,
		"4KB-pii":          withPII,
		"16KB-pii":         {Model: "gpt-4o-mini", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: big}}}}},
	}
}

func loadPII(b *testing.B) *sandbox.Plugin {
	return layertest.Load(b, "plugins/layers/pii", sandbox.Options{Trusted: true, KV: kvstore.NewMemory(16 << 20)})
}

// BenchmarkRequest measures the request phase under the real runtime
// (wazero, trusted): host encode of system+messages, the boundary, guest
// decode, detection, masking, sealing and storing the mapping, guest
// encode, host decode.
func BenchmarkRequest(b *testing.B) {
	p := loadPII(b)
	reqs := benchRequests()
	for _, name := range []string{"4KB-clean", "4KB-pii", "16KB-pii", "16KB-clean", "16KB-words", "85KB-claude-code"} {
		req := reqs[name]
		b.Run(name, func(b *testing.B) {
			meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
			info := sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant}
			var enc wire.Encoder
			var res wire.LayerResult
			var lat latencies
			b.ReportAllocs()
			for b.Loop() {
				t0 := time.Now()
				wire.EncodeLayerRequest(&enc, &meta, req, p.Descriptor().Reads)
				out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), info)
				if err != nil {
					b.Fatal(err)
				}
				if err := res.Decode(out); err != nil {
					b.Fatal(err)
				}
				lat.Add(time.Since(t0))
			}
			if strings.HasSuffix(name, "-pii") && res.Patched == 0 {
				b.Fatal("nothing masked")
			}
			lat.Report(b)
		})
	}
}

// BenchmarkRequestNewTurn is the live shape of an agent's request: the
// 4 KB agent request whose history this instance has seen (the memo holds
// it) and whose last user turn is new on every call.
func BenchmarkRequestNewTurn(b *testing.B) {
	b.Run("hot", func(b *testing.B) { benchNewTurn(b, false) })
	b.Run("cold", func(b *testing.B) { benchNewTurn(b, true) })
}

// benchNewTurn runs BenchmarkRequestNewTurn; cold evicts the CPU's caches
// before each call (untimed), as the other layers and the host do live
// between two calls of this one.
func benchNewTurn(b *testing.B, cold bool) {
	p := loadPII(b)
	req := fixtures.AgentRequest()
	last := &req.Messages[len(req.Messages)-1].Content[0]
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
	info := sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant}
	var enc wire.Encoder
	var res wire.LayerResult
	var lat latencies
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		last.Text = "Go ahead with case " + strconv.Itoa(i) + " of run 1764225600123456789, and summarize the risk in two sentences at the end."
		if cold {
			evictCaches()
		}
		t0 := time.Now()
		wire.EncodeLayerRequest(&enc, &meta, req, p.Descriptor().Reads)
		out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), info)
		if err != nil {
			b.Fatal(err)
		}
		if err := res.Decode(out); err != nil {
			b.Fatal(err)
		}
		lat.Add(time.Since(t0))
	}
	lat.Report(b)
}

// BenchmarkResponse measures the response phase restoring a 2 KB answer
// (kv read and delete, open, restore), and BenchmarkStream one stream batch
// of a small text delta.
func BenchmarkResponse(b *testing.B) {
	p := loadPII(b)
	req := benchRequests()["4KB-pii"]
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
	info := sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant}
	answer := strings.Repeat("The position is healthy. ", 80) + "I will mail [EMAIL_1] and text [PHONE_1]."
	var enc wire.Encoder
	var lat latencies
	for b.Loop() {
		b.StopTimer()
		wire.EncodeLayerRequest(&enc, &meta, req, p.Descriptor().Reads)
		out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), info)
		var res wire.LayerResult
		if err == nil {
			err = res.Decode(out)
		}
		if err != nil {
			b.Fatal(err)
		}
		m := meta
		m.Annotations = res.Annotations
		b.StartTimer()
		t0 := time.Now()
		in := wire.LayerResponse{Meta: m, Response: wire.Response{ID: "r", Content: []wire.Block{{Type: wire.BlockText, Text: answer}}}}
		in.Encode(&enc)
		out, err = p.Call(context.Background(), plugin.OpOnResponse, enc.Bytes(), info)
		var rr wire.LayerResponseResult
		if err == nil {
			err = rr.Decode(out)
		}
		if err != nil || !rr.Replaced {
			b.Fatal(err, rr.Replaced)
		}
		lat.Add(time.Since(t0))
	}
	lat.Report(b)
}

func BenchmarkStream(b *testing.B) {
	p := loadPII(b)
	req := benchRequests()["4KB-pii"]
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model, Stream: true}
	info := sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant}
	var enc wire.Encoder
	wire.EncodeLayerRequest(&enc, &meta, req, p.Descriptor().Reads)
	out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), info)
	var res wire.LayerResult
	if err == nil {
		err = res.Decode(out)
	}
	if err != nil {
		b.Fatal(err)
	}
	meta.Annotations = res.Annotations
	// The first batch fetches the mapping; later ones carry it in State.
	first := wire.LayerStream{Meta: meta, Events: []wire.Event{{Type: wire.EventMessageStart}}}
	first.Encode(&enc)
	out, err = p.Call(context.Background(), plugin.OpOnStream, enc.Bytes(), info)
	var sr wire.LayerStreamResult
	if err == nil {
		err = sr.Decode(out)
	}
	if err != nil {
		b.Fatal(err)
	}
	state := slices.Clone(sr.State)
	for _, delta := range []string{"the position is ", "mail [EMAIL_1] now"} {
		b.Run(strings.Fields(delta)[0], func(b *testing.B) {
			var lat latencies
			for b.Loop() {
				t0 := time.Now()
				in := wire.LayerStream{Meta: meta, State: state, Events: []wire.Event{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: delta}}}
				in.Encode(&enc)
				out, err := p.Call(context.Background(), plugin.OpOnStream, enc.Bytes(), info)
				if err == nil {
					err = sr.Decode(out)
				}
				if err != nil {
					b.Fatal(err)
				}
				lat.Add(time.Since(t0))
			}
			lat.Report(b)
		})
	}
}

// BenchmarkDetectNative runs the detector alone, natively, on each input
// text: a quick check for regressions in the scanner (inside wasm the same
// code runs about ten times slower).
func BenchmarkDetectNative(b *testing.B) {
	initWordlist()
	if err := configure([]byte(`{}`)); err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"16KB-pii", "16KB-clean", "16KB-words"} {
		req := benchRequests()[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(req.Messages[0].Content[0].Text)))
			var d detector
			for i := range d.on {
				d.on[i] = entities[i].action != actOff
			}
			var out []span
			for b.Loop() {
				out = d.scan(req.Messages[0].Content[0].Text, out[:0])
			}
		})
	}
}

type latencies = layertest.Latencies

// BenchmarkRegexNative is the alternative the plugin's scanner replaced: Go's
// regexp (what the host's regex_find runs) over the same 16 KB texts, one
// pattern per entity kind, run side by side with BenchmarkDetectNative.
func BenchmarkRegexNative(b *testing.B) {
	patterns := map[string]*regexp.Regexp{
		"email":  regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}`),
		"phone":  regexp.MustCompile(`\+?[0-9][0-9 ().-]{7,}[0-9]`),
		"card":   regexp.MustCompile(`\b(?:[0-9][ -]?){13,19}\b`),
		"ipv4":   regexp.MustCompile(`\b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b`),
		"ethkey": regexp.MustCompile(`\b(?:0x)?[0-9a-fA-F]{64}\b`),
	}
	for _, name := range []string{"16KB-pii", "16KB-clean"} {
		text := benchRequests()[name].Messages[0].Content[0].Text
		for _, kind := range []string{"email", "phone", "card", "ipv4", "ethkey"} {
			re := patterns[kind]
			b.Run(name+"/"+kind, func(b *testing.B) {
				b.SetBytes(int64(len(text)))
				for b.Loop() {
					re.FindAllStringIndex(text, -1)
				}
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
