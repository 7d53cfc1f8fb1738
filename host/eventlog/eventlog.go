// Package eventlog is the gateway's operator event stream: what routing
// chose and what it compromised (provider:resolved with its degraded
// features, provider:fallback, inference:profile_degraded,
// cache:stale_served). The spec wants every compromise visible — the
// X-Bardo-* headers tell the caller, this log tells the operator.
//
// Events are kept in a bounded ring (the newest win) and read by sequence
// number, so a reader polls "everything after N" and never misses an event
// unless it falls more than the ring's capacity behind (then it is told how
// many it missed). Emit never blocks on a reader.
package eventlog

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Event types.
const (
	ProviderResolved   = "provider:resolved"          // {subsystem, provider, model, features, degraded, pass}
	ProviderFallback   = "provider:fallback"          // {failed, status, reason, next}
	ProfileDegraded    = "inference:profile_degraded" // {subsystem, degraded}
	CacheStaleServed   = "cache:stale_served"         // {tried}
	ProvidersExhausted = "provider:exhausted"         // {tried, reason}: every provider failed, no cached answer
	BudgetDowngraded   = "budget:downgraded"          // {account, key, from, to}: a budget would be exceeded, a cheaper equivalent serves

	// Inference events (spec 003, "Inference events"): one request's way,
	// with the account it belongs to, so a caller can follow its own.
	InferenceStart    = "inference.start"             // {model, dialect, stream}
	InferenceToken    = "inference.token"             // {token_count, is_reasoning, total}: streamed tokens since the last one, throttled, only while someone watches
	InferenceEnd      = "inference.end"               // {model, provider, status, latency_ms, streamed, cost_usd, charge_usd, savings_usd}
	InferenceCacheHit = "inference.cache_hit"         // {cache, model, saved_usd}
	InferenceFallback = "inference.provider_fallback" // {tried, provider}
)

// Event is one thing that happened.
type Event struct {
	Seq       uint64    `json:"seq"`
	Time      time.Time `json:"time"`
	Type      string    `json:"type"`
	RequestID string    `json:"request_id,omitempty"`
	// Account is the caller's account the event belongs to ("" for the
	// operator's own events): GET /v1/events shows a caller only its own.
	Account string         `json:"account,omitempty"`
	Data    map[string]any `json:"data,omitempty"`
}

// DefaultCapacity is the ring's size when New is given none.
const DefaultCapacity = 4096

// Log is the ring of recent events. The zero value is not usable; call New.
// A nil *Log accepts Emit and does nothing, so callers need no checks.
type Log struct {
	mu     sync.Mutex
	ring   []Event
	next   uint64        // the sequence number of the next event (first is 1)
	wake   chan struct{} // closed and replaced on every Emit
	logger *slog.Logger
	// watchers counts the live SSE readers, so high-frequency events
	// (inference.token) are only made while someone reads them.
	watchers atomic.Int32
}

// New returns a log keeping the last capacity events (DefaultCapacity when
// capacity ≤ 0). Every event is also written to logger at debug level when
// logger is not nil: provider:resolved comes with every intent-routed
// request, too many for the info log (the gateway warns of failures on its
// own).
func New(capacity int, logger *slog.Logger) *Log {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Log{ring: make([]Event, capacity), next: 1, wake: make(chan struct{}), logger: logger}
}

// Emit records an operator event.
func (l *Log) Emit(typ, requestID string, data map[string]any) {
	l.EmitFor(typ, requestID, "", data)
}

// EmitFor records an event that belongs to a caller's account.
func (l *Log) EmitFor(typ, requestID, account string, data map[string]any) {
	if l == nil {
		return
	}
	l.mu.Lock()
	e := Event{Seq: l.next, Time: time.Now().UTC(), Type: typ, RequestID: requestID, Account: account, Data: data}
	l.ring[e.Seq%uint64(len(l.ring))] = e
	l.next++
	wake := l.wake
	l.wake = make(chan struct{})
	l.mu.Unlock()
	close(wake)
	if l.logger != nil {
		l.logger.Debug("event", "type", typ, "request_id", requestID, "data", data)
	}
}

// Since returns the events after seq, oldest first, at most limit (≤ 0:
// all kept), the sequence number to ask for next, and how many events
// after seq were already overwritten (the reader fell behind).
func (l *Log) Since(seq uint64, limit int) (events []Event, next uint64, missed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := uint64(1)
	if l.next > uint64(len(l.ring)) {
		oldest = l.next - uint64(len(l.ring))
	}
	from := seq + 1
	if from < oldest {
		missed = oldest - from
		from = oldest
	}
	for s := from; s < l.next; s++ {
		if limit > 0 && len(events) == limit {
			break
		}
		events = append(events, l.ring[s%uint64(len(l.ring))])
	}
	next = from + uint64(len(events)) - 1
	if len(events) == 0 {
		next = max(seq, from-1)
	}
	return events, next, missed
}

// Wait returns the events after seq like Since, waiting until there is at
// least one or ctx is done (then it returns what there is: possibly none).
func (l *Log) Wait(ctx context.Context, seq uint64, limit int) (events []Event, next uint64, missed uint64) {
	for {
		l.mu.Lock()
		have, wake := l.next-1 > seq, l.wake
		l.mu.Unlock()
		if have {
			return l.Since(seq, limit)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return l.Since(seq, limit)
		}
	}
}

// Watched reports whether a live reader (an SSE stream) is following the
// log. Emitters of high-frequency events ask first: a token counter nobody
// watches would only push the operator's events out of the ring.
func (l *Log) Watched() bool {
	return l != nil && l.watchers.Load() > 0
}

// Last returns the sequence number of the newest event (0: none yet).
func (l *Log) Last() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next - 1
}
