//go:build !wasip1

package main_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/sdk/wire"
)

func header(kvs []wire.KV, key string) string {
	for i := len(kvs) - 1; i >= 0; i-- {
		if kvs[i].Key == key {
			return kvs[i].Value
		}
	}
	return ""
}

// BenchmarkLayerCall is L2's per-request cost on the typical 4 KB agent
// request, trusted, under the real runtime with the offline GloVe model and
// the vector index: a miss (context hash, normalised question, one
// key/value read) and a hit (the same, the guard and the decode of the
// stored answer), with 10,000 entries of other questions in the tenant's
// partition. The default strict guard needs neither the model nor the
// vector index on the request path; allow_rewording adds an embedding and
// a search.
func BenchmarkLayerCall(b *testing.B) {
	svc := modeltest.Services(b)
	p := layertest.Load(b, "plugins/layers/semcache", sandbox.Options{Trusted: true, KV: kvstore.NewMemory(8 << 20), Services: svc})
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI}
	var enc wire.Encoder
	answer := wire.Response{Model: "gpt-4o", StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 900, OutputTokens: 40},
		Content: []wire.Block{{Type: wire.BlockText, Text: "A stored answer long enough to be worth caching, about forty tokens of text in all."}}}
	req := fixtures.AgentRequest()
	// The answer the hit phase finds.
	res := layertest.OnRequest(b, p, &enc, &meta, req)
	m := meta
	m.Annotations = res.Annotations
	layertest.OnResponse(b, p, &enc, m, answer)
	// Fill the partition with 10,000 other questions (distinct word
	// combinations, so distinct vectors), each stored as a miss.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		var q6 []string
		for range 6 {
			q6 = append(q6, vocabulary[rng.IntN(len(vocabulary))])
		}
		q := &wire.Request{Model: "gpt-4o", Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText,
			Text: "what about " + strings.Join(q6, " ")}}}}}
		res := layertest.OnRequest(b, p, &enc, &meta, q)
		m := meta
		m.Annotations = res.Annotations
		layertest.OnResponse(b, p, &enc, m, answer)
	}
	// The miss: the same context and nearly the same question ("three",
	// not "two").
	missReq := fixtures.AgentRequest()
	missReq.Messages[len(missReq.Messages)-1].Content[0].Text = "Go ahead, and summarize the risk in three sentences at the end."
	// A Claude Code-sized request: an 85 KB system prompt, hashed on every
	// call.
	big := fixtures.AgentRequest()
	for len(big.System[0].Text) < 85<<10 {
		big.System[0].Text += big.System[0].Text
	}
	big.System[0].Text = big.System[0].Text[:85<<10]
	b.Run("miss-85KB", func(b *testing.B) {
		layertest.Measure(b, func() {
			if res := layertest.OnRequest(b, p, &enc, &meta, big); header(res.Headers, "X-Bardo-Cache") != "miss" {
				b.Fatal("not a miss")
			}
		})
	})
	b.Run("miss", func(b *testing.B) {
		layertest.Measure(b, func() {
			if res := layertest.OnRequest(b, p, &enc, &meta, missReq); header(res.Headers, "X-Bardo-Cache") != "miss" {
				b.Fatal("not a miss")
			}
		})
	})
	b.Run("hit", func(b *testing.B) {
		layertest.Measure(b, func() {
			if res := layertest.OnRequest(b, p, &enc, &meta, req); header(res.Headers, "X-Bardo-Cache") != "semantic-hit" {
				b.Fatalf("not a hit: %v", res.Headers)
			}
		})
	})
}

// vocabulary makes the filler questions: common words of agents' prompts.
var vocabulary = strings.Fields(`price market pool liquidity token swap bridge stake yield vault lending borrow
supply collateral loan interest rate fee gas chain network wallet address contract audit risk strategy position
hedge leverage margin futures options volatility trend volume order book spread arbitrage oracle governance vote
proposal treasury reward incentive emission inflation supply demand stable coin dollar euro bitcoin ether solana
base arbitrum optimism polygon avalanche uniswap curve aave morpho compound maker lido pendle balancer sushi
yearn convex frax ethena eigen restake validator node block transaction mempool slippage impermanent loss profit
gain deposit withdraw claim harvest compound rebalance portfolio allocation exposure drawdown return sharpe ratio
analysis report summary forecast signal alert threshold limit stop target entry exit time week month year today`)

// BenchmarkUniqueRequest is the request phase as the live gateway sees it
// most: the 4 KB agent request as an OpenAI body (decoded by the host's
// dialect), a new last user turn every call, so every call is a miss
// (context hash, normalised question, one key/value read and the miss
// annotation). Under the real runtime, trusted, with an empty cache.
func BenchmarkUniqueRequest(b *testing.B) {
	p := layertest.Load(b, "plugins/layers/semcache", sandbox.Options{Trusted: true, KV: kvstore.NewMemory(8 << 20)})
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: "gpt-4o-mini",
		Annotations: []wire.KV{{Key: "bardo.market.regime", Value: "normal"}}}
	var body map[string]any
	if err := json.Unmarshal(fixtures.AgentRequestOpenAI(false), &body); err != nil {
		b.Fatal(err)
	}
	reqs := make([]*wire.Request, 512)
	for i := range reqs {
		msgs := body["messages"].([]any)
		msgs[len(msgs)-1].(map[string]any)["content"] = fmt.Sprintf("Go ahead, and summarize the risk of position %d in two sentences at the end.", i)
		raw, _ := json.Marshal(body)
		r, err := openai.DecodeRequest(raw)
		if err != nil {
			b.Fatal(err)
		}
		reqs[i] = r
	}
	var enc wire.Encoder
	i := 0
	layertest.Measure(b, func() {
		if res := layertest.OnRequest(b, p, &enc, &meta, reqs[i%len(reqs)]); header(res.Headers, "X-Bardo-Cache") != "miss" {
			b.Fatal("not a miss")
		}
		i++
	})
}
