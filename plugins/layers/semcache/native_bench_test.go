//go:build !wasip1

package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// uniqueOpenAI returns n encoded layer requests: the 4 KB OpenAI agent
// fixture with a new last user turn each, as the live measurement sends.
func uniqueOpenAI(tb testing.TB, n int, reads wire.Part) [][]byte {
	tb.Helper()
	var body map[string]any
	if err := json.Unmarshal(fixtures.AgentRequestOpenAI(false), &body); err != nil {
		tb.Fatal(err)
	}
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: "gpt-4o-mini",
		Annotations: []wire.KV{{Key: "bardo.market.regime", Value: "normal"}}}
	out := make([][]byte, n)
	for i := range out {
		msgs := body["messages"].([]any)
		msgs[len(msgs)-1].(map[string]any)["content"] = fmt.Sprintf("Go ahead, and summarize the risk of position %d in two sentences at the end.", i)
		b, _ := json.Marshal(body)
		r, err := openai.DecodeRequest(b)
		if err != nil {
			tb.Fatal(err)
		}
		var enc wire.Encoder
		wire.EncodeLayerRequest(&enc, &meta, r, reads)
		out[i] = append([]byte(nil), enc.Bytes()...)
	}
	return out
}

// BenchmarkRequestPhase is the request phase natively (the in-memory
// host), on unique 4 KB OpenAI agent requests: a profile of the guest's
// own work (go test -bench RequestPhase -cpuprofile).
func BenchmarkRequestPhase(b *testing.B) {
	plugintest.New(b, `{}`)
	ins := uniqueOpenAI(b, 512, wire.PartAll)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		plugin.Call(plugin.OpOnRequest, ins[i%len(ins)])
		i++
	}
}

// BenchmarkResponsePhase is the response phase natively, storing a miss:
// the miss annotation of a unique 4 KB OpenAI request, then its answer,
// stored again every call (go test -bench ResponsePhase -benchmem).
func BenchmarkResponsePhase(b *testing.B) {
	plugintest.New(b, `{}`)
	ins := uniqueOpenAI(b, 1, wire.PartAll)
	var res wire.LayerResult
	if err := res.Decode(plugin.Call(plugin.OpOnRequest, ins[0])); err != nil || header(res.Headers, HeaderCache) != "miss" {
		b.Fatalf("not a miss: %v %v", err, res.Headers)
	}
	in := wire.LayerResponse{
		Meta: wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: "gpt-4o-mini", Annotations: res.Annotations},
		Response: wire.Response{Model: "gpt-4o-mini", StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 900, OutputTokens: 40},
			Content: []wire.Block{{Type: wire.BlockText, Text: "A stored answer long enough to be worth caching, about forty tokens of text in all."}}},
	}
	var enc wire.Encoder
	in.Encode(&enc)
	raw := append([]byte(nil), enc.Bytes()...)
	b.ReportAllocs()
	for b.Loop() {
		plugin.Call(plugin.OpOnResponse, raw)
	}
}
