// Command compress is layer L5, history compression: when a conversation's
// estimated size exceeds a token budget, it replaces its older turns with a
// summary written by a cheap model through the gateway's own routing (the
// complete host function, intent "session_compact"), keeps the recent turns
// verbatim, never separates a tool call from its result, and caches each
// summary in the key/value store under a hash of the turns it covers, so a
// conversation pays for every part of its history being summarised once.
// See README.md.
package main

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
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
	HeaderSavedTokens = "X-Bardo-Compress-Saved-Tokens"
	// HeaderTurns is "<summarised>/<total>" conversation turns (messages).
	HeaderTurns = "X-Bardo-Compress-Turns"
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
}

type config struct {
	budget        int           // compress when system + messages exceed this (estimated tokens)
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
	}
	if rc.TTL != "" {
		d, err := time.ParseDuration(rc.TTL)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("ttl = %q: want a duration of at least 1s, such as \"24h\"", rc.TTL)
		}
		c.ttl = d
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

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	r := &req.Request
	p := makePlan(r.System, r.Messages, cfg)
	if p.chunks == 0 {
		if p.total > cfg.budget {
			plugin.CounterAdd(metricNoSplit, 1)
		}
		plugin.CounterAdd(metricSkipped, 1)
		res.Headers = append(res.Headers, wire.KV{Key: HeaderCompress, Value: StatusSkipped})
		return nil
	}

	model := cfg.model
	if model == "" {
		model = r.Model
	}
	if model == "" {
		model = req.Meta.Model
	}
	s := summariser{cfg: cfg, model: model}
	summary, fresh, err := s.summaryFor(r.Messages, p)
	if err != nil {
		plugin.CounterAdd(metricFailed, 1)
		if cfg.failClosed {
			return fmt.Errorf("compress: summarising %d turns: %w", p.split, err)
		}
		plugin.Logf(plugin.LevelWarn, "compress: summarising %d turns failed, request passed unchanged: %v", p.split, err)
		res.Headers = append(res.Headers, wire.KV{Key: HeaderCompress, Value: StatusFailed})
		return nil
	}

	out := apply(r.Messages, p.split, summary)
	saved := p.total - estimate(r.System, out)
	if saved <= 0 {
		// Only a summariser ignoring max_tokens gets here (the plan removes
		// more than a summary's maximum): keep the original turns.
		plugin.CounterAdd(metricSkipped, 1)
		plugin.Logf(plugin.LevelWarn, "compress: a summary of %d bytes would not shorten the conversation; request passed unchanged", len(summary))
		res.Headers = append(res.Headers, wire.KV{Key: HeaderCompress, Value: StatusSkipped})
		return nil
	}
	status, metric := StatusCached, metricCached
	if fresh {
		status, metric = StatusCompressed, metricCompressed
	}
	res.Patched = wire.PartMessages
	res.Request.Messages = out
	res.Headers = append(res.Headers,
		wire.KV{Key: HeaderCompress, Value: status},
		wire.KV{Key: HeaderSavedTokens, Value: strconv.Itoa(saved)},
		wire.KV{Key: HeaderTurns, Value: strconv.Itoa(p.split) + "/" + strconv.Itoa(len(r.Messages))})
	plugin.CounterAdd(metric, 1)
	plugin.CounterAdd(metricSaved, float64(saved))
	plugin.CounterAdd(metricSummarised, float64(p.split))
	return nil
}
