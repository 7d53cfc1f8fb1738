// Command compress is layer L5, history compression: when a conversation's
// estimated size exceeds a token budget and folding its older turns into a
// summary is expected to save more than it costs — the summariser's call
// and the provider's cache rewrite, priced (price.go) — or when it exceeds
// a hard limit, it replaces those turns with a summary written through the
// gateway's own routing (the complete host function, intent
// "session_compact"), keeps the recent turns verbatim, never separates a
// tool call from its result, and caches each summary in the key/value store
// under a hash of the turns it covers, so a conversation pays for every part
// of its history being summarised once and keeps the same summary — the
// same cached prefix — from request to request. See README.md.
package main

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/savings"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Response headers.
const (
	// HeaderCompress says what the layer did: compressed (a new summary was
	// written for this request), cached (a stored summary was reused),
	// skipped (under budget, or nothing may be summarised) or failed (the
	// summariser failed; the request went on unchanged).
	HeaderCompress = "X-Bardo-Compress"
	// HeaderSavedTokens is the estimated number of prompt tokens removed.
	HeaderSavedTokens = savings.HeaderCompressedTokens
	// HeaderTurns is "<summarised>/<total>" conversation turns (messages).
	HeaderTurns = "X-Bardo-Compress-Turns"
	// HeaderReason says why the layer did what it did (Reason* values).
	HeaderReason = "X-Bardo-Compress-Reason"
	// HeaderNet is a priced fold's expected net saving, in the caller's
	// model's input tokens, over this request and the expected horizon
	// (negative: it would have cost more than it saves, so it was not made,
	// unless the conversation was over limit_tokens).
	HeaderNet = "X-Bardo-Compress-Net-Tokens"
)

// Values of HeaderReason.
const (
	ReasonUnderBudget  = "under-budget" // the request is under budget_tokens
	ReasonNoSplit      = "no-split"     // over budget, but no turn may be summarised
	ReasonStored       = "stored"       // a stored summary brings it under budget, or nothing more may be folded
	ReasonUnprofitable = "unprofitable" // folding (more) would cost more than it saves
	ReasonProfitable   = "profitable"   // folding is expected to save more than it costs
	ReasonColdCache    = "cold-cache"   // profitable because the provider's cache went cold since the conversation's last request
	ReasonOverLimit    = "over-limit"   // over limit_tokens: folded whatever it costs
	ReasonNoGain       = "no-gain"      // the summary would not shorten the conversation (a summariser ignoring max_tokens)
)

// Values of HeaderCompress.
const (
	StatusCompressed = "compressed"
	StatusCached     = "cached"
	StatusSkipped    = "skipped"
	StatusFailed     = "failed"
)

// Metrics (exported as bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricCompressed   = "compress_compressed_total"            // requests compressed with a newly written summary
	metricCached       = "compress_cached_total"                // requests compressed with a stored summary
	metricSkipped      = "compress_skipped_total"               // requests left as they were (under budget, or nothing summarisable)
	metricNoSplit      = "compress_no_split_total"              // over budget, but no turn may be summarised
	metricFailed       = "compress_failed_total"                // summariser failures
	metricSaved        = "compress_saved_tokens_total"          // estimated prompt tokens removed
	metricCalls        = "compress_summary_calls_total"         // internal completions made
	metricSummaryIn    = "compress_summary_input_tokens_total"  // their input tokens (as the provider reported)
	metricSummaryOut   = "compress_summary_output_tokens_total" // their output tokens
	metricSummarised   = "compress_summarised_turns_total"      // turns replaced by a summary
	metricStoreErrors  = "compress_store_errors_total"          // summaries the kv store refused
	metricEntryInvalid = "compress_invalid_entries_total"       // stored entries this version cannot read
	metricUnprofitable = "compress_unprofitable_total"          // over budget, a fold priced out
	metricOverLimit    = "compress_over_limit_total"            // folds made because the request was over limit_tokens
)

// DefaultInstructions is the summariser's system prompt.
const DefaultInstructions = "You condense the earlier part of a conversation between a user and an AI assistant, " +
	"so the assistant can continue it with less context. Write a faithful summary, in short paragraphs or " +
	"bullet points, that keeps: what the user asked for, their goals, preferences and constraints; decisions " +
	"made and why; facts and figures exactly as stated (amounts, units, prices, addresses, identifiers, " +
	"dates); the tools the assistant called, with their important inputs and results; errors met; anything " +
	"still open, pending or promised. Leave out pleasantries and repetition. Never add information that is " +
	"not in the conversation. Write only the summary, with no preamble."

type rawConfig struct {
	BudgetTokens          *int    `json:"budget_tokens"`
	ChunkTokens           *int    `json:"chunk_tokens"`
	KeepRecentTurns       *int    `json:"keep_recent_turns"`
	SummaryMaxTokens      *int    `json:"summary_max_tokens"`
	MaxSummaryInputTokens *int    `json:"max_summary_input_tokens"`
	MaxBlockBytes         *int    `json:"max_block_bytes"`
	Model                 string  `json:"model"`
	Subsystem             *string `json:"subsystem"`
	Instructions          string  `json:"instructions"`
	TTL                   string  `json:"ttl"`
	OnSummaryError        string  `json:"on_summary_error"`
	CacheLifetime         string  `json:"cache_lifetime"`

	TargetTokens    *int `json:"target_tokens"`
	LimitTokens     *int `json:"limit_tokens"`
	HorizonRequests *int `json:"horizon_requests"`
	rawPrices
	// Prices lists price overrides by the caller's model: the first entry
	// one of whose models globs matches it is laid over the prices above.
	Prices []struct {
		Models []string `json:"models"`
		rawPrices
	} `json:"prices"`
}

// rawPrices are the price keys, relative to the caller's model's input
// price.
type rawPrices struct {
	CacheReadPrice     *float64 `json:"cache_read_price"`
	CacheWritePrice    *float64 `json:"cache_write_price"`
	SummaryInputPrice  *float64 `json:"summary_input_price"`
	SummaryOutputPrice *float64 `json:"summary_output_price"`
}

// over returns base with the prices rp sets laid over it, checked.
func (rp *rawPrices) over(base prices) (prices, error) {
	p := base
	for _, f := range []struct {
		dst *float64
		src *float64
	}{{&p.cacheRead, rp.CacheReadPrice}, {&p.cacheWrite, rp.CacheWritePrice},
		{&p.summaryInput, rp.SummaryInputPrice}, {&p.summaryOutput, rp.SummaryOutputPrice}} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	switch {
	case p.cacheRead <= 0 || p.cacheRead > 1:
		return p, fmt.Errorf("cache_read_price = %g: want a fraction of the input price, in (0, 1]", p.cacheRead)
	case p.cacheWrite < 1:
		return p, fmt.Errorf("cache_write_price = %g: want at least 1 (the input price)", p.cacheWrite)
	case p.summaryInput < 0 || p.summaryOutput < 0:
		return p, errors.New("summary_input_price and summary_output_price must be >= 0")
	}
	return p, nil
}

// modelPrices are the prices for callers whose model matches one of globs
// (path.Match syntax: "gpt-4o*").
type modelPrices struct {
	globs []string
	price prices
}

type config struct {
	budget        int           // consider compressing when system + messages exceed this (estimated tokens)
	target        int           // a fold brings the estimate down to this
	limit         int           // over this, fold whatever it costs
	horizon       int           // the most further requests a saving is counted over
	price         prices        // relative to the caller's model's input token
	byModel       []modelPrices // overrides by the caller's model, first match wins
	lifetime      time.Duration // the provider's cache lifetime for requests without breakpoints
	chunk         int           // summarise in chunks of at least this many tokens
	keepRecent    int           // the last turns always kept verbatim
	summaryMax    int           // the summariser's max_tokens
	maxInput      int           // the most history tokens one summariser call is given
	maxBlockBytes int           // longer blocks are shortened in the summariser's transcript
	model         string        // "" = the request's own model
	subsystem     string        // the routing intent of the summariser's completion
	instructions  string        // the summariser's system prompt
	ttl           time.Duration // lifetime of a stored summary
	failClosed    bool          // on_summary_error = "fail"
}

var cfg config

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "compress",
		Version: "1.0.0",
		Phases:  wire.PhaseRequest,
		// The model names the summariser's default model; the system prompt
		// counts toward the budget (it is never changed).
		Reads:     wire.PartModel | wire.PartSystem | wire.PartMessages,
		Writes:    wire.PartMessages,
		Init:      initLayer,
		OnRequest: onRequest,
	})
}

func main() {}

func initLayer() error {
	c, err := decodeConfig(plugin.Config())
	if err != nil {
		return err
	}
	cfg = c
	return nil
}

// decodeConfig reads the [layer.config] table (as JSON). An unknown key is
// an error, so a typo fails the pipeline's load instead of being ignored.
func decodeConfig(b []byte) (config, error) {
	var rc rawConfig
	if err := plugin.DecodeStrict(b, &rc); err != nil {
		return config{}, fmt.Errorf("compress config: %w", err)
	}
	c, err := parseConfig(&rc)
	if err != nil {
		return config{}, fmt.Errorf("compress config: %w", err)
	}
	return c, nil
}

func parseConfig(rc *rawConfig) (config, error) {
	c := config{
		budget:        24000,
		chunk:         4000,
		keepRecent:    6,
		summaryMax:    1024,
		maxInput:      32000,
		maxBlockBytes: 8192,
		model:         rc.Model,
		subsystem:     "session_compact",
		instructions:  DefaultInstructions,
		ttl:           24 * time.Hour,
		horizon:       20,
		lifetime:      lifetime1h,
		price:         prices{cacheRead: 0.1, cacheWrite: 1.25, summaryInput: 1, summaryOutput: 5},
	}
	set := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	set(&c.budget, rc.BudgetTokens)
	set(&c.chunk, rc.ChunkTokens)
	set(&c.keepRecent, rc.KeepRecentTurns)
	set(&c.summaryMax, rc.SummaryMaxTokens)
	set(&c.maxInput, rc.MaxSummaryInputTokens)
	set(&c.maxBlockBytes, rc.MaxBlockBytes)
	c.target, c.limit = c.budget/2, max(c.budget, 100000)
	set(&c.target, rc.TargetTokens)
	set(&c.limit, rc.LimitTokens)
	set(&c.horizon, rc.HorizonRequests)
	price, err := rc.over(c.price)
	if err != nil {
		return c, err
	}
	c.price = price
	for i := range rc.Prices {
		e := &rc.Prices[i]
		if len(e.Models) == 0 {
			return c, fmt.Errorf("prices[%d]: models is empty", i)
		}
		for _, g := range e.Models {
			if _, err := path.Match(g, ""); err != nil {
				return c, fmt.Errorf("prices[%d]: models glob %q: %w", i, g, err)
			}
		}
		p, err := e.over(c.price)
		if err != nil {
			return c, fmt.Errorf("prices[%d] (%s): %w", i, strings.Join(e.Models, ", "), err)
		}
		c.byModel = append(c.byModel, modelPrices{globs: e.Models, price: p})
	}
	if rc.Subsystem != nil {
		c.subsystem = *rc.Subsystem
	}
	if rc.Instructions != "" {
		c.instructions = rc.Instructions
	}
	switch {
	case c.summaryMax < 64 || c.summaryMax > 16384:
		return c, fmt.Errorf("summary_max_tokens = %d: want 64–16384", c.summaryMax)
	case c.chunk <= c.summaryMax:
		// A chunk no larger than its summary could save nothing.
		return c, fmt.Errorf("chunk_tokens = %d: must exceed summary_max_tokens (%d)", c.chunk, c.summaryMax)
	case c.budget <= c.summaryMax:
		return c, fmt.Errorf("budget_tokens = %d: must exceed summary_max_tokens (%d)", c.budget, c.summaryMax)
	case c.keepRecent < 0:
		return c, errors.New("keep_recent_turns must be >= 0")
	case c.maxInput < c.chunk:
		return c, fmt.Errorf("max_summary_input_tokens = %d: at least chunk_tokens (%d)", c.maxInput, c.chunk)
	case c.maxBlockBytes < 256 || c.maxBlockBytes > 1<<20:
		return c, fmt.Errorf("max_block_bytes = %d: want 256–1048576", c.maxBlockBytes)
	case c.target <= 0 || c.target > c.budget:
		return c, fmt.Errorf("target_tokens = %d: want 1–budget_tokens (%d)", c.target, c.budget)
	case c.limit < c.budget:
		return c, fmt.Errorf("limit_tokens = %d: at least budget_tokens (%d)", c.limit, c.budget)
	case c.horizon < 0:
		return c, errors.New("horizon_requests must be >= 0")
	}
	if rc.TTL != "" {
		d, err := time.ParseDuration(rc.TTL)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("ttl = %q: want a duration of at least 1s, such as \"24h\"", rc.TTL)
		}
		c.ttl = d
	}
	if rc.CacheLifetime != "" {
		d, err := time.ParseDuration(rc.CacheLifetime)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("cache_lifetime = %q: want a duration of at least 1s, such as \"5m\"", rc.CacheLifetime)
		}
		c.lifetime = d
	}
	switch rc.OnSummaryError {
	case "", "pass":
	case "fail":
		c.failClosed = true
	default:
		return c, fmt.Errorf(`on_summary_error = %q: want "pass" or "fail"`, rc.OnSummaryError)
	}
	return c, nil
}

// pricesFor returns the prices for a caller asking for model: the first
// override whose glob matches it, or the defaults.
func (c *config) pricesFor(model string) prices {
	for _, m := range c.byModel {
		for _, g := range m.globs {
			if ok, _ := path.Match(g, model); ok {
				return m.price
			}
		}
	}
	return c.price
}

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	r := &req.Request
	msgs := r.Messages
	p := makePlan(r.System, msgs, cfg)
	skip := func(reason string) error {
		if reason == ReasonNoSplit {
			plugin.CounterAdd(metricNoSplit, 1)
		}
		plugin.CounterAdd(metricSkipped, 1)
		res.Headers = append(res.Headers, wire.KV{Key: HeaderCompress, Value: StatusSkipped}, wire.KV{Key: HeaderReason, Value: reason})
		return nil
	}
	if p.total <= cfg.budget {
		return skip(ReasonUnderBudget)
	}
	if len(p.ends) == 0 {
		return skip(ReasonNoSplit)
	}

	caller := r.Model
	if caller == "" {
		caller = req.Meta.Model
	}
	model := cfg.model
	if model == "" {
		model = caller
	}
	s := summariser{cfg: cfg, model: model}
	keys := chunkKeys(s.seed(), msgs, p.ends, len(p.ends))

	// Once a conversation has been folded, its requests go on with the
	// newest stored summary: the provider has that prefix cached, and
	// going back to the full history would rewrite it.
	have, summary := s.newest(keys)
	now := plugin.Now()
	prev, seen := lastSeen(keys[0], now, cfg.ttl)
	cold := seen && now.Sub(prev) > cacheLifetime(r.System, msgs, cfg.lifetime)
	current := p.total
	if have >= 0 {
		current = p.size(msgs, have+1, len(summary))
	}
	n := have + 1
	reason, net := ReasonStored, 0.0
	if current > cfg.budget {
		if k := p.target(msgs, have, cfg); k > n {
			in, out := s.callTokens(&p, have, summary, k)
			kept := p.kept(k)
			removed := current - p.sys - kept
			fresh := min(freshTokens(msgs, p.toks), kept)
			if cold {
				fresh = removed + kept
			}
			net = cfg.pricesFor(caller).net(fold{
				removed:  removed,
				summary:  summaryTokens(msgs, p.split(k), 4*cfg.summaryMax),
				kept:     kept,
				fresh:    fresh,
				callsIn:  in,
				callsOut: out,
				horizon:  horizon(msgs, cfg.horizon),
			})
			switch {
			case current > cfg.limit:
				reason, n = ReasonOverLimit, k
				plugin.CounterAdd(metricOverLimit, 1)
			case net > 0 && cold:
				reason, n = ReasonColdCache, k
			case net > 0:
				reason, n = ReasonProfitable, k
			default:
				reason = ReasonUnprofitable
				plugin.CounterAdd(metricUnprofitable, 1)
			}
			res.Headers = append(res.Headers, wire.KV{Key: HeaderNet, Value: strconv.Itoa(int(net))})
		}
	}
	if n == 0 {
		return skip(reason)
	}
	wrote := n > have+1
	if wrote {
		folded, err := s.fold(msgs, &p, keys, have, summary, n)
		switch {
		case err == nil:
			summary = folded
		case cfg.failClosed:
			plugin.CounterAdd(metricFailed, 1)
			return fmt.Errorf("compress: summarising %d turns: %w", p.split(n), err)
		case have >= 0:
			// The conversation goes on with the summary it had: the
			// provider caches that prefix, the full history it does not.
			plugin.CounterAdd(metricFailed, 1)
			plugin.Logf(plugin.LevelWarn, "compress: summarising %d turns failed, the stored summary of %d used: %v", p.split(n), p.split(have+1), err)
			n, wrote = have+1, false
		default:
			plugin.CounterAdd(metricFailed, 1)
			plugin.Logf(plugin.LevelWarn, "compress: summarising %d turns failed, request passed unchanged: %v", p.split(n), err)
			res.Headers = append(res.Headers, wire.KV{Key: HeaderCompress, Value: StatusFailed}, wire.KV{Key: HeaderReason, Value: reason})
			return nil
		}
	}

	split := p.split(n)
	out := apply(msgs, split, summary)
	saved := p.total - estimate(r.System, out)
	if saved <= 0 {
		// Only a summariser ignoring max_tokens gets here (the plan removes
		// more than a summary's maximum): keep the original turns.
		plugin.Logf(plugin.LevelWarn, "compress: a summary of %d bytes would not shorten the conversation; request passed unchanged", len(summary))
		return skip(ReasonNoGain)
	}
	status, metric := StatusCached, metricCached
	if wrote {
		status, metric = StatusCompressed, metricCompressed
	}
	res.Patched = wire.PartMessages
	res.Request.Messages = out
	res.Headers = append(res.Headers,
		wire.KV{Key: HeaderCompress, Value: status},
		wire.KV{Key: HeaderReason, Value: reason},
		wire.KV{Key: HeaderSavedTokens, Value: strconv.Itoa(saved)},
		wire.KV{Key: HeaderTurns, Value: strconv.Itoa(split) + "/" + strconv.Itoa(len(msgs))})
	plugin.CounterAdd(metric, 1)
	plugin.CounterAdd(metricSaved, float64(saved))
	plugin.CounterAdd(metricSummarised, float64(split))
	return nil
}
