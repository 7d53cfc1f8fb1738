package health

import (
	"context"
	"errors"
	"time"
)

// Kind classifies one upstream attempt. Only some kinds count against a
// backend: a 400 is the request's fault and a cancelled request is the
// caller's, so neither says anything about the backend's health.
type Kind uint8

// Attempt kinds.
const (
	// OK is any non-error answer (1xx–3xx).
	OK Kind = iota
	// Connect is a connection-level failure: dial, TLS, a reset or a body
	// that broke off. The request most likely never reached the model.
	Connect
	// Timeout is an attempt that did not answer within its deadline (and a
	// 408).
	Timeout
	// Server is a 5xx answer (Anthropic's 529 "overloaded" included).
	Server
	// RateLimited is a 429 answer: not a failure, a back-off.
	RateLimited
	// Client is any other 4xx: the request's fault, not counted.
	Client
	// Canceled is an attempt the caller abandoned (client gone, gateway
	// shutting down): not counted.
	Canceled

	numKinds = int(Canceled) + 1
)

var kindNames = [numKinds]string{"ok", "connect", "timeout", "5xx", "429", "4xx", "canceled"}

// String returns the kind's short name ("ok", "connect", "timeout", "5xx",
// "429", "4xx", "canceled").
func (k Kind) String() string {
	if int(k) < numKinds {
		return kindNames[k]
	}
	return "unknown"
}

// MarshalText encodes the kind as its String.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Counted reports whether the attempt enters the error-rate window: OK and
// the failures do; RateLimited, Client and Canceled do not.
func (k Kind) Counted() bool { return k <= Server }

// Failure reports whether the attempt counts as an error against the
// backend. A 429 does not: the upstream is up and asks the gateway to slow
// down, which is a back-off (Tracker honours its Retry-After), not an
// outage.
func (k Kind) Failure() bool { return k >= Connect && k <= Server }

// Transient reports whether the attempt may be retried once on the same
// backend before failing over: connect errors, 5xx and 429. A Timeout is a
// failure but not transient: the attempt already spent its time budget, so
// the request fails over at once instead of waiting out a second deadline.
func (k Kind) Transient() bool { return k == Connect || k == Server || k == RateLimited }

// Outcome is what Record learns from one upstream attempt.
type Outcome struct {
	Kind Kind
	// Latency is the time from sending the attempt to its answer: the
	// response headers, or the first event of a stream (the figure routing's
	// latency budgets compare against). It also dates the attempt's start
	// (now − Latency), which decides whether the outcome is stale; see
	// Tracker.Record.
	Latency time.Duration
	// RetryAfter is the wait the upstream asked for (see RetryPolicy.Decide),
	// or 0. A RateLimited outcome keeps the backend backing off this long
	// (Config.RateLimitBackoff without one); when a failure opens the
	// breaker, the cooldown is at least this long. Both are capped by
	// Config.MaxCooldown.
	RetryAfter time.Duration
	// Probe marks an active health probe's outcome (set by Prober).
	Probe bool
	// Retry marks the same-backend retry of a request whose previous
	// attempt failed. Its failure is that request's second, not new
	// evidence: it enters neither the error rate nor the failure count (a
	// connection failure still extends a run, since each dial is a fresh
	// test). Its success counts like any.
	Retry bool
}

// Classify maps an HTTP status and transport error to a Kind. A non-nil
// err wins over the status: context.Canceled is Canceled, a deadline or any
// error with a true Timeout() method (net.Error, fasthttp.ErrTimeout) is
// Timeout, anything else Connect. Otherwise 429 is RateLimited, 408 is
// Timeout, 5xx Server, other 4xx Client, and the rest OK.
func Classify(status int, err error) Kind {
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return Canceled
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return Timeout
		}
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			return Timeout
		}
		return Connect
	}
	switch {
	case status == 429:
		return RateLimited
	case status == 408:
		return Timeout
	case status >= 500:
		return Server
	case status >= 400:
		return Client
	case status <= 0:
		// No status and no error: nothing usable came back.
		return Connect
	}
	return OK
}
