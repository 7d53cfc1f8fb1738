package daemon

import (
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/sdk/wire"
)

// A cache hit's replayed usage is not counted as tokens spent; errors count
// by kind; internal completions and stream ends are counted.
func TestSettlementMetrics(t *testing.T) {
	m := telemetry.New()
	o := settlementMetrics{m}
	usage := &wire.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3}
	o.Settled(gateway.Settlement{Path: gateway.PathUpstream, Upstream: true, Provider: "up", Model: "gpt-4o", Usage: usage, Status: 200,
		Latency: 300 * time.Millisecond, UpstreamWait: 280 * time.Millisecond})
	o.Settled(gateway.Settlement{Path: gateway.PathPassthrough, Upstream: true, Provider: "up", Model: "gpt-4o", Status: 200, Streamed: true,
		StreamEnd: gateway.StreamEnded, Latency: 2 * time.Second, FirstByte: 120 * time.Millisecond, UpstreamWait: 110 * time.Millisecond})
	o.Settled(gateway.Settlement{Path: gateway.PathLayer, Provider: "up", Model: "gpt-4o", Usage: usage, Status: 200, Streamed: true, StreamEnd: gateway.StreamEnded})
	o.Settled(gateway.Settlement{Path: gateway.PathError, Upstream: true, Provider: "up", Status: 429, Err: &wire.Error{Status: 429, Kind: wire.ErrRateLimit}})
	o.Settled(gateway.Settlement{Path: gateway.PathInternal, Internal: true, Upstream: true, Provider: "up", Model: "gpt-4o", Status: 200, Tried: []string{"down:502"}})
	o.Settled(gateway.Settlement{Path: gateway.PathStale, Cache: "stale", Status: 200, Tried: []string{"up:502", "up:502", "other:down"},
		Degraded: []string{"layer-skipped:semcache", "dropped-fields:x"}})
	// A billed answer: its bill's amounts, per provider and model, account and key.
	o.Settled(gateway.Settlement{Path: gateway.PathPassthrough, Upstream: true, Provider: "up", Model: "gpt-4o", Status: 200,
		Tenant: "acct_1", Key: "k1", Bill: &gateway.Bill{Figures: pricing.Figures{Cost: 18_750, Charge: 21_563, Direct: 43_350, Savings: 21_787}}})
	// A billed hash hit: charged nothing, it saved the direct price.
	o.Settled(gateway.Settlement{Path: gateway.PathLayer, Cache: "hash-hit", Provider: "other-up", Model: "gpt-4o-mini", Status: 200,
		Tenant: "acct_1", Bill: &gateway.Bill{Figures: pricing.Figures{Direct: 43_350, Savings: 43_350}}})
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"bardo_cache_savings_usd_total", []string{"cache", "hash-hit"}, 0.04335},
		{"bardo_cache_answers_total", []string{"result", "hash-hit"}, 1},
		{"bardo_tokens_total", []string{"provider", "up", "model", "gpt-4o", "kind", "input"}, 10},
		{"bardo_cost_usd_total", []string{"provider", "up", "model", "gpt-4o"}, 0.01875},
		{"bardo_charge_usd_total", []string{"provider", "up", "model", "gpt-4o"}, 0.021563},
		{"bardo_direct_cost_usd_total", []string{"provider", "up", "model", "gpt-4o"}, 0.04335},
		{"bardo_account_spend_usd_total", []string{"account", "acct_1"}, 0.021563},
		{"bardo_key_spend_usd_total", []string{"key", "k1"}, 0.021563},
		{"bardo_tokens_total", []string{"provider", "up", "model", "gpt-4o", "kind", "output"}, 5},
		{"bardo_tokens_total", []string{"provider", "up", "model", "gpt-4o", "kind", "cache_read"}, 3},
		{"bardo_tokens_total", []string{"provider", "up", "model", "gpt-4o", "kind", "cache_write"}, 0},
		{"bardo_answer_seconds", []string{"provider", "up", "model", "gpt-4o", "path", "layer"}, 1},
		{"bardo_errors_total", []string{"kind", "rate_limit", "provider", "up"}, 1},
		{"bardo_streams_total", []string{"end", "ended"}, 2},
		{"bardo_first_byte_seconds", []string{"provider", "up", "model", "gpt-4o"}, 1},
		{"bardo_upstream_seconds", []string{"provider", "up", "model", "gpt-4o"}, 2},
		{"bardo_overhead_seconds", []string{"path", "upstream"}, 1},
		{"bardo_overhead_seconds", []string{"path", "passthrough"}, 1},
		{"bardo_internal_completions_total", []string{"provider", "up", "code", "200"}, 1},
		// What the caller's headers say, from the same settlement; an
		// internal completion's failed attempts are not a caller's failover.
		{"bardo_provider_responses_total", []string{"provider", "up", "model", "gpt-4o", "code", "200"}, 4},
		{"bardo_failovers_total", []string{"provider", "up", "reason", "502"}, 2},
		{"bardo_failovers_total", []string{"provider", "other", "reason", "down"}, 1},
		{"bardo_failovers_total", []string{"provider", "down", "reason", "502"}, 0},
		{"bardo_cache_stale_served_total", nil, 1},
		{"bardo_cache_answers_total", []string{"result", "stale"}, 1},
		{"bardo_layer_skips_total", []string{"layer", "semcache"}, 1},
		{"bardo_telemetry_dropped_total", []string{"reason", "undeclared"}, 0},
	} {
		if v := m.Value(c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}
}

// BenchmarkSettlementMetrics is the settlement observer's share of the
// per-request metrics cost (host/server's BenchmarkRequestMetrics has the
// rest): four token kinds, the answer latency and a stream end.
func BenchmarkSettlementMetrics(b *testing.B) {
	o := settlementMetrics{telemetry.New()}
	s := gateway.Settlement{Path: gateway.PathUpstream, Upstream: true, Provider: "up", Model: "gpt-4o", Status: 200,
		Usage: &wire.Usage{InputTokens: 900, OutputTokens: 120, CacheReadTokens: 400, CacheWriteTokens: 50}, Streamed: true, StreamEnd: gateway.StreamEnded}
	for b.Loop() {
		o.Settled(s)
	}
}
