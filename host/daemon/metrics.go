package daemon

import (
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/telemetry"
)

// settlementMetrics turns the gateway's settlements into the per-provider
// metrics: tokens by kind, answer latency, errors by kind, stream ends and
// internal completions. It runs on the request's goroutine and only adds to
// counters.
type settlementMetrics struct{ m *telemetry.Registry }

// Settled records one settlement (gateway.Observer).
func (o settlementMetrics) Settled(s gateway.Settlement) {
	if s.Upstream && s.Usage != nil && s.Provider != "" {
		// Only an upstream's answer spent tokens: a cache hit's replayed
		// usage was not paid for.
		for _, k := range [...]struct {
			kind string
			n    int64
		}{{"input", s.Usage.InputTokens}, {"output", s.Usage.OutputTokens},
			{"cache_read", s.Usage.CacheReadTokens}, {"cache_write", s.Usage.CacheWriteTokens}} {
			if k.n > 0 {
				o.m.Add("bardo_tokens_total", float64(k.n), "provider", s.Provider, "model", s.Model, "kind", k.kind)
			}
		}
	}
	if s.Provider != "" && s.Err == nil {
		o.m.Observe("bardo_answer_seconds", s.Latency.Seconds(), "provider", s.Provider, "model", s.Model, "path", string(s.Path))
		if s.Streamed && s.FirstByte > 0 {
			o.m.Observe("bardo_first_byte_seconds", s.FirstByte.Seconds(), "provider", s.Provider, "model", s.Model)
		}
	}
	if s.UpstreamWait > 0 && s.Provider != "" {
		o.m.Observe("bardo_upstream_seconds", s.UpstreamWait.Seconds(), "provider", s.Provider, "model", s.Model)
		// The gateway's own share: until the first byte of a stream (what
		// follows is the upstream's pace), or of the whole buffered answer.
		until := s.Latency
		if s.Streamed {
			until = s.FirstByte
		}
		if until > 0 && s.Err == nil {
			o.m.Observe("bardo_overhead_seconds", max(until-s.UpstreamWait, 0).Seconds(), "path", string(s.Path))
		}
	}
	if s.Err != nil {
		o.m.Add("bardo_errors_total", 1, "kind", s.Err.Kind, "provider", s.Provider)
	}
	if s.Streamed {
		o.m.Add("bardo_streams_total", 1, "end", string(s.StreamEnd))
	}
	if b := s.Bill; b != nil {
		// Money, from the bill the caller was shown (internal completions
		// are on their request's bill, under the model that answered it).
		f := &b.Figures
		o.m.Add("bardo_cost_usd_total", usd(int64(f.Cost)), "provider", s.Provider, "model", s.Model)
		o.m.Add("bardo_charge_usd_total", usd(int64(f.Charge)), "provider", s.Provider, "model", s.Model)
		o.m.Add("bardo_direct_cost_usd_total", usd(int64(f.Direct)), "provider", s.Provider, "model", s.Model)
		if s.Tenant != "" {
			o.m.Add("bardo_account_spend_usd_total", usd(int64(f.Charge)), "account", s.Tenant)
		}
		if s.Key != "" {
			o.m.Add("bardo_key_spend_usd_total", usd(int64(f.Charge)), "key", s.Key)
		}
	}
	if s.Internal {
		o.m.Add("bardo_internal_completions_total", 1, "provider", s.Provider, "code", strconv.Itoa(s.Status))
		return
	}
	// What the caller was told in X-Bardo-* headers, from the same record.
	code := strconv.Itoa(s.Status)
	if s.Provider != "" {
		o.m.Add("bardo_provider_responses_total", 1, "provider", s.Provider, "model", s.Model, "code", code)
	}
	for _, e := range s.Tried { // "provider:status" or "provider:down"
		if i := strings.LastIndexByte(e, ':'); i > 0 {
			o.m.Add("bardo_failovers_total", 1, "provider", e[:i], "reason", e[i+1:])
		}
	}
	if s.Path == gateway.PathStale {
		o.m.Add("bardo_cache_stale_served_total", 1)
	}
	for _, d := range s.Degraded {
		if l, ok := strings.CutPrefix(d, "layer-skipped:"); ok {
			o.m.Add("bardo_layer_skips_total", 1, "layer", l)
		}
	}
	if s.Cache != "" {
		o.m.Add("bardo_cache_answers_total", 1, "result", s.Cache)
		if b := s.Bill; b != nil && s.Path == gateway.PathLayer && b.Figures.Savings > 0 {
			o.m.Add("bardo_cache_savings_usd_total", usd(int64(b.Figures.Savings)), "cache", s.Cache)
		}
	}
}

// usd turns micro-dollars into the dollars a metric counts in.
func usd(micros int64) float64 { return float64(micros) / 1e6 }
