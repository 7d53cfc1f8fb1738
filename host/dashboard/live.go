package dashboard

import (
	"encoding/json"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/health"
)

// maxRows bounds each table of the live view, so a gateway with thousands of
// accounts or models still answers a small document (the biggest first).
const maxRows = 50

// Live is the dashboard's view of the metrics: cumulative since the
// gateway started, exactly the figures GET /metrics exposes. The page
// turns two successive views into rates and windowed percentiles.
type Live struct {
	Time      int64              `json:"time"` // Unix milliseconds
	Requests  Counts             `json:"requests"`
	Dialects  map[string]float64 `json:"dialects"`
	Errors    Counts             `json:"errors"`
	Latency   Hist               `json:"latency"`  // bardo_answer_seconds, every series
	TTFT      Hist               `json:"ttft"`     // bardo_first_byte_seconds
	Overhead  Hist               `json:"overhead"` // bardo_overhead_seconds
	Upstream  Hist               `json:"upstream"` // bardo_upstream_seconds
	Money     Money              `json:"money"`
	Models    []ModelRow         `json:"models"`
	Accounts  []AccountRow       `json:"accounts"`
	Cache     Cache              `json:"cache"`
	Plugins   []PluginRow        `json:"plugins"`
	Failovers []FailoverRow      `json:"failovers"`
	Streams   map[string]float64 `json:"streams"`
	Providers []health.Snapshot  `json:"providers"`
}

// Counts is a counter's total and its split by one label.
type Counts struct {
	Total float64            `json:"total"`
	By    map[string]float64 `json:"by"`
}

// Hist is a histogram merged over its series: count, sum, the cumulative
// bucket counts at Bounds (the last is +Inf, sent as null), and the p50
// and p99 estimated as Prometheus' histogram_quantile does.
type Hist struct {
	Count  float64   `json:"count"`
	Sum    float64   `json:"sum"`
	P50    float64   `json:"p50"`
	P99    float64   `json:"p99"`
	Bounds []float64 `json:"-"`
	Counts []float64 `json:"counts"`
}

// MarshalJSON writes Bounds without the +Inf JSON cannot hold.
func (h Hist) MarshalJSON() ([]byte, error) {
	type plain Hist
	b := make([]float64, 0, len(h.Bounds))
	for _, v := range h.Bounds {
		if !math.IsInf(v, 1) {
			b = append(b, v)
		}
	}
	return json.Marshal(struct {
		plain
		Bounds []float64 `json:"bounds"`
	}{plain(h), b})
}

// Money is the billed requests' totals in USD.
type Money struct {
	Cost    float64 `json:"cost"`
	Charge  float64 `json:"charge"`
	Direct  float64 `json:"direct"`
	Savings float64 `json:"savings"` // direct − charge, as X-Bardo-Savings
}

// ModelRow is one provider and model's figures.
type ModelRow struct {
	Provider     string  `json:"provider"`
	Model        string  `json:"model"`
	Responses    float64 `json:"responses"`
	Cost         float64 `json:"cost"`
	Charge       float64 `json:"charge"`
	Savings      float64 `json:"savings"`
	InputTokens  float64 `json:"input_tokens"`
	OutputTokens float64 `json:"output_tokens"`
}

// AccountRow is one account's or key's spend (ids only).
type AccountRow struct {
	ID    string  `json:"id"`
	Kind  string  `json:"kind"` // account or key
	Spend float64 `json:"spend"`
}

// Cache is the caches' verdicts (X-Bardo-Cache) and the hit rate of each
// layer that answers.
type Cache struct {
	Answers map[string]float64 `json:"answers"`
	Total   float64            `json:"total"`
	Layers  []CacheLayer       `json:"layers"`
}

// CacheLayer is one caching layer's hits among the verdicts.
type CacheLayer struct {
	Layer  string  `json:"layer"`
	Result string  `json:"result"`
	Hits   float64 `json:"hits"`
	Rate   float64 `json:"rate"`
}

// layerOf names the layer behind a cache verdict.
var layerOf = map[string]string{"hash-hit": "hashcache", "semantic-hit": "semcache", "stale": "stale (any cache)"}

// PluginRow is one plugin export's call latency and failures.
type PluginRow struct {
	Plugin   string  `json:"plugin"`
	Op       string  `json:"op"`
	Calls    float64 `json:"calls"`
	Mean     float64 `json:"mean"`
	P99      float64 `json:"p99"`
	Failures float64 `json:"failures"`
	Skips    float64 `json:"skips"`
}

// FailoverRow is a provider's failed attempts by reason.
type FailoverRow struct {
	Provider string  `json:"provider"`
	Reason   string  `json:"reason"`
	Count    float64 `json:"count"`
}

// Snapshot reads the live view from the metrics registry.
func (d *Dashboard) Snapshot() (*Live, error) {
	v := &Live{Time: d.now().UnixMilli(), Requests: Counts{By: map[string]float64{}}, Errors: Counts{By: map[string]float64{}},
		Dialects: map[string]float64{}, Streams: map[string]float64{}, Cache: Cache{Answers: map[string]float64{}},
		Models: []ModelRow{}, Accounts: []AccountRow{}, Plugins: []PluginRow{}, Failovers: []FailoverRow{}, Providers: []health.Snapshot{}}
	if d.Health != nil {
		v.Providers = d.Health.Snapshot()
	}
	if d.Metrics == nil {
		return v, nil
	}
	mfs, err := d.Metrics.Gatherer().Gather()
	if err != nil && len(mfs) == 0 {
		return nil, err
	}
	models := map[[2]string]*ModelRow{}
	model := func(m *dto.Metric) *ModelRow {
		k := [2]string{label(m, "provider"), label(m, "model")}
		r := models[k]
		if r == nil {
			r = &ModelRow{Provider: k[0], Model: k[1]}
			models[k] = r
		}
		return r
	}
	plugins := map[[2]string]*PluginRow{}
	plugin := func(name, op string) *PluginRow {
		k := [2]string{name, op}
		r := plugins[k]
		if r == nil {
			r = &PluginRow{Plugin: name, Op: op}
			plugins[k] = r
		}
		return r
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			c := m.GetCounter().GetValue()
			switch mf.GetName() {
			case "bardo_requests_total":
				v.Requests.Total += c
				v.Requests.By[label(m, "code")] += c
				v.Dialects[label(m, "dialect")] += c
			case "bardo_errors_total":
				v.Errors.Total += c
				v.Errors.By[label(m, "kind")] += c
			case "bardo_answer_seconds":
				v.Latency.add(m.GetHistogram())
			case "bardo_first_byte_seconds":
				v.TTFT.add(m.GetHistogram())
			case "bardo_overhead_seconds":
				v.Overhead.add(m.GetHistogram())
			case "bardo_upstream_seconds":
				v.Upstream.add(m.GetHistogram())
			case "bardo_cost_usd_total":
				v.Money.Cost += c
				model(m).Cost += c
			case "bardo_charge_usd_total":
				v.Money.Charge += c
				model(m).Charge += c
				model(m).Savings -= c
			case "bardo_direct_cost_usd_total":
				v.Money.Direct += c
				model(m).Savings += c
			case "bardo_provider_responses_total":
				model(m).Responses += c
			case "bardo_tokens_total":
				switch label(m, "kind") {
				case "input":
					model(m).InputTokens += c
				case "output":
					model(m).OutputTokens += c
				}
			case "bardo_account_spend_usd_total":
				v.Accounts = append(v.Accounts, AccountRow{ID: label(m, "account"), Kind: "account", Spend: c})
			case "bardo_key_spend_usd_total":
				v.Accounts = append(v.Accounts, AccountRow{ID: label(m, "key"), Kind: "key", Spend: c})
			case "bardo_cache_answers_total":
				v.Cache.Answers[label(m, "result")] += c
				v.Cache.Total += c
			case "bardo_sandbox_call_seconds":
				h := m.GetHistogram()
				r := plugin(label(m, "plugin"), label(m, "op"))
				r.Calls = float64(h.GetSampleCount())
				if r.Calls > 0 {
					r.Mean = h.GetSampleSum() / r.Calls
				}
				var one Hist
				one.add(h)
				one.quantiles()
				r.P99 = one.P99
			case "bardo_sandbox_call_failures_total":
				plugin(label(m, "plugin"), label(m, "op")).Failures += c
			case "bardo_layer_skips_total":
				plugin(label(m, "layer"), "skipped").Skips += c
			case "bardo_failovers_total":
				v.Failovers = append(v.Failovers, FailoverRow{Provider: label(m, "provider"), Reason: label(m, "reason"), Count: c})
			case "bardo_streams_total":
				v.Streams[label(m, "end")] += c
			}
		}
	}
	v.Money.Savings = v.Money.Direct - v.Money.Charge
	for _, h := range []*Hist{&v.Latency, &v.TTFT, &v.Overhead, &v.Upstream} {
		h.quantiles()
	}
	for _, r := range models {
		v.Models = append(v.Models, *r)
	}
	sort.Slice(v.Models, func(i, j int) bool {
		a, b := v.Models[i], v.Models[j]
		if a.Responses != b.Responses {
			return a.Responses > b.Responses
		}
		return a.Provider+"\x00"+a.Model < b.Provider+"\x00"+b.Model
	})
	v.Models = v.Models[:min(len(v.Models), maxRows)]
	sort.Slice(v.Accounts, func(i, j int) bool { return v.Accounts[i].Spend > v.Accounts[j].Spend })
	v.Accounts = v.Accounts[:min(len(v.Accounts), maxRows)]
	for _, r := range plugins {
		v.Plugins = append(v.Plugins, *r)
	}
	sort.Slice(v.Plugins, func(i, j int) bool {
		a, b := v.Plugins[i], v.Plugins[j]
		return a.Plugin+"\x00"+a.Op < b.Plugin+"\x00"+b.Op
	})
	sort.Slice(v.Failovers, func(i, j int) bool { return v.Failovers[i].Count > v.Failovers[j].Count })
	v.Failovers = v.Failovers[:min(len(v.Failovers), maxRows)]
	for result, n := range v.Cache.Answers {
		if layer, ok := layerOf[result]; ok || strings.HasSuffix(result, "-hit") {
			if !ok {
				layer = strings.TrimSuffix(result, "-hit")
			}
			v.Cache.Layers = append(v.Cache.Layers, CacheLayer{Layer: layer, Result: result, Hits: n, Rate: n / v.Cache.Total})
		}
	}
	sort.Slice(v.Cache.Layers, func(i, j int) bool { return v.Cache.Layers[i].Result < v.Cache.Layers[j].Result })
	if v.Cache.Layers == nil {
		v.Cache.Layers = []CacheLayer{}
	}
	return v, nil
}

func label(m *dto.Metric, name string) string {
	for _, p := range m.GetLabel() {
		if p.GetName() == name {
			return p.GetValue()
		}
	}
	return ""
}

// add merges one series into h (the series of one metric share buckets).
func (h *Hist) add(s *dto.Histogram) {
	if s == nil {
		return
	}
	h.Count += float64(s.GetSampleCount())
	h.Sum += s.GetSampleSum()
	bs := s.GetBucket()
	if h.Bounds == nil {
		for _, b := range bs {
			h.Bounds = append(h.Bounds, b.GetUpperBound())
		}
		h.Bounds = append(h.Bounds, math.Inf(1))
		h.Counts = make([]float64, len(h.Bounds))
	}
	if len(bs)+1 != len(h.Bounds) {
		return // another layout: not mergeable (never, for one metric)
	}
	for i, b := range bs {
		h.Counts[i] += float64(b.GetCumulativeCount())
	}
	h.Counts[len(bs)] += float64(s.GetSampleCount())
}

func (h *Hist) quantiles() {
	if h.Bounds == nil {
		h.Bounds, h.Counts = []float64{}, []float64{}
	}
	h.P50, h.P99 = Quantile(0.5, h.Bounds, h.Counts), Quantile(0.99, h.Bounds, h.Counts)
}

// Quantile estimates the q-quantile from cumulative bucket counts at
// upper bounds (the last +Inf) by linear interpolation inside the bucket,
// as PromQL's histogram_quantile does; 0 without samples.
func Quantile(q float64, bounds, cum []float64) float64 {
	n := len(cum)
	if n == 0 || cum[n-1] <= 0 {
		return 0
	}
	rank := q * cum[n-1]
	i := sort.SearchFloat64s(cum, rank)
	if i >= n {
		i = n - 1
	}
	if math.IsInf(bounds[i], 1) {
		if i == 0 {
			return 0
		}
		return bounds[i-1]
	}
	lo, below := 0.0, 0.0
	if i > 0 {
		lo, below = bounds[i-1], cum[i-1]
	}
	in := cum[i] - below
	if in <= 0 {
		return bounds[i]
	}
	return lo + (bounds[i]-lo)*(rank-below)/in
}

func (d *Dashboard) live(ctx *fasthttp.RequestCtx) {
	v, err := d.Snapshot()
	if err != nil {
		apiFail(ctx, 503, "the metrics could not be read; see the gateway's log")
		if d.Log != nil {
			d.Log.Warn("dashboard: gathering metrics", "err", err)
		}
		return
	}
	reply(ctx, 200, v)
}

func reply(ctx *fasthttp.RequestCtx, status int, body any) {
	b, _ := json.Marshal(body)
	ctx.SetStatusCode(status)
	ctx.SetContentType("application/json")
	ctx.SetBody(b)
}

func apiFail(ctx *fasthttp.RequestCtx, status int, msg string) {
	reply(ctx, status, map[string]any{"error": map[string]string{"message": msg}})
}
