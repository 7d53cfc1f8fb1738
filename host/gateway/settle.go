package gateway

import (
	"context"
	"log/slog"
	"time"

	"github.com/bardoinference/bardo/host/eventlog"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/telemetry/trace"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Path is how a request's answer came about.
type Path string

// The paths of an outcome. A stream is any of them with Settlement.Streamed.
const (
	PathUpstream    Path = "upstream"    // an upstream answer, decoded and re-encoded (or relayed event by event)
	PathPassthrough Path = "passthrough" // an upstream answer's bytes (or events) forwarded as they came
	PathLayer       Path = "layer"       // a layer answered in the request phase (a cache hit)
	PathLocal       Path = "local"       // a provider adapter answered itself (the simulator)
	PathStale       Path = "stale"       // every provider failed; a layer's kept answer served
	PathError       Path = "error"       // an error in the caller's dialect
	PathInternal    Path = "internal"    // a layer's internal completion (Complete)
)

// StreamEnd is how a stream to the caller ended.
type StreamEnd string

// The ends of a stream.
const (
	StreamEnded      StreamEnd = "ended"       // the answer's end went out
	StreamBroken     StreamEnd = "broken"      // the upstream or a layer failed mid-stream: an error event ended it
	StreamClientGone StreamEnd = "client_gone" // the caller hung up; the upstream call was aborted
)

// Settlement is what one request came to, handed to the settlement point
// exactly once when its answer is fully written (a stream: once it ended,
// broke, or its client went away). It carries what a bill needs.
type Settlement struct {
	RequestID string
	Tenant    string // the admitted caller (Complete: the caller whose request caused it)
	Key       string // the id of the key that admitted it, "" without
	Dialect   wire.Dialect
	Asked     string // the model the caller asked for
	Path      Path
	Internal  bool // a layer's internal completion, not a caller's request
	Streamed  bool
	StreamEnd StreamEnd // streams only
	Provider  string    // who served (empty: no provider did)
	Direct    bool      // the provider that served is reached with the caller's own key: no charge
	Model     string    // the model that served
	// Upstream is true when the answer, or the final error, came from an
	// upstream provider: only then can money have been spent upstream.
	// Failed attempts before it are never billed.
	Upstream bool
	// Usage is what the answer reported; nil when not known (a forwarded
	// OpenAI stream without stream_options.include_usage). Forwarded bytes
	// are read for it, never re-encoded.
	Usage  *wire.Usage
	Cache  string // the layers' X-Bardo-Cache verdict (hash-hit, semantic-hit, miss, stale), if any
	Status int    // the HTTP status the caller got (a stream: 200, even when it broke)
	Err    *wire.Error
	Tried  []string // failed attempts, as in X-Bardo-Fallback
	// Degraded is what X-Bardo-Degraded says: approximations and skipped
	// layers ("layer-skipped:<name>").
	Degraded []string
	Latency  time.Duration
	// UpstreamWait is the time spent waiting on upstream attempts (failed
	// ones included): a buffered answer's until its body was read, a
	// stream's until its first event. 0 when no provider was tried.
	UpstreamWait time.Duration
	// FirstByte is the time from the request's arrival until the first
	// byte of a stream's body went to the caller (0: not a stream, or
	// nothing was written).
	FirstByte time.Duration
	// Prices are the served model's (a cache hit: the asked model's at its
	// first provider), when Priced.
	Prices pricing.Prices
	Priced bool
	// Optimizations are what the layers measured they saved (tool pruning,
	// compression, cache alignment), for the savings figure.
	Optimizations pricing.Optimizations
	// Bill is what the caller's tab showed, once closed (nil: unbilled).
	Bill *Bill

	trace *trace.Request // the request's span (nil: not traced), ended here
	resp  *wire.Response // a decoded answer, for the span (id, finish reason)
	// A decoded stream's id and finish reason, for the span (traceEvent).
	streamID, streamFinish string
}

// Observer is told of every settlement. It runs on the request's goroutine
// (a stream's writer) and must not block.
type Observer interface {
	Settled(Settlement)
}

// SetObserver installs o (nil: none); safe while serving.
func (g *Gateway) SetObserver(o Observer) {
	if o == nil {
		g.observer.Store(nil)
		return
	}
	g.observer.Store(&o)
}

// settle is the settlement point: every outcome of every request, a
// caller's or internal, passes here exactly once (holds.end, the stream
// writers' done, Complete). Today it logs and tells the observer; the
// ledger settles here later.
func (g *Gateway) settle(s *Settlement) {
	if g.Log != nil && g.Log.Enabled(context.Background(), slog.LevelDebug) {
		attrs := []any{"request_id", s.RequestID, "tenant", s.Tenant, "path", string(s.Path), "status", s.Status,
			"provider", s.Provider, "model", s.Model, "upstream", s.Upstream, "latency_ms", s.Latency.Milliseconds()}
		if s.Streamed {
			attrs = append(attrs, "stream_end", string(s.StreamEnd))
		}
		if s.Usage != nil {
			attrs = append(attrs, "input_tokens", s.Usage.InputTokens, "output_tokens", s.Usage.OutputTokens,
				"cache_read_tokens", s.Usage.CacheReadTokens, "cache_write_tokens", s.Usage.CacheWriteTokens)
		}
		if s.Cache != "" {
			attrs = append(attrs, "cache", s.Cache)
		}
		g.Log.Debug("settled", attrs...)
	}
	if o := g.observer.Load(); o != nil {
		(*o).Settled(*s)
	}
	if s.trace != nil {
		endTrace(s) // tracing.go
	}
	g.inferenceEvents(s)
}

// inferenceEvents tells the event stream how a caller's request ended
// (spec 003, "Inference events"): inference.end with cost and latency, and
// inference.cache_hit or inference.provider_fallback when they happened.
// A layer's internal completion is part of its request, not an event.
func (g *Gateway) inferenceEvents(s *Settlement) {
	if g.Events == nil || s.Internal || s.Tenant == "" {
		return
	}
	end := map[string]any{"model": s.Model, "provider": s.Provider, "status": s.Status,
		"latency_ms": s.Latency.Milliseconds(), "streamed": s.Streamed, "path": string(s.Path)}
	if s.Model == "" {
		end["model"] = s.Asked
	}
	if s.Streamed {
		end["stream_end"] = string(s.StreamEnd)
	}
	if b := s.Bill; b != nil {
		end["cost_usd"] = b.Figures.CostHeader()
		end["savings_usd"] = b.Figures.SavingsHeader()
	}
	if len(s.Tried) > 0 {
		g.Events.EmitFor(eventlog.InferenceFallback, s.RequestID, s.Tenant, map[string]any{"tried": s.Tried, "provider": s.Provider})
	}
	if s.Path == PathLayer && (s.Cache == respcache.VerdictHashHit || s.Cache == respcache.VerdictSemanticHit) {
		hit := map[string]any{"cache": s.Cache, "model": s.Asked}
		if b := s.Bill; b != nil {
			hit["saved_usd"] = b.Figures.SavingsHeader()
		}
		g.Events.EmitFor(eventlog.InferenceCacheHit, s.RequestID, s.Tenant, hit)
	}
	g.Events.EmitFor(eventlog.InferenceEnd, s.RequestID, s.Tenant, end)
}

// addUsage folds a stream event's usage into u.
func addUsage(u *wire.Usage, ev *wire.Event) {
	if ev.Type == wire.EventMessageStart || ev.Type == wire.EventMessageDelta {
		foldUsage(u, &ev.Usage)
	}
}

// foldUsage folds a stream's usage report into u: a stream reports its
// input side at the start and its output side (cumulative) at the end.
func foldUsage(u, by *wire.Usage) {
	u.InputTokens = max(u.InputTokens, by.InputTokens)
	u.OutputTokens = max(u.OutputTokens, by.OutputTokens)
	u.CacheReadTokens = max(u.CacheReadTokens, by.CacheReadTokens)
	u.CacheWriteTokens = max(u.CacheWriteTokens, by.CacheWriteTokens)
}
