package health

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

// RetryPolicy decides what to do after a failed attempt: retry once on the
// same backend (after a wait) or fail over to the next backend at once.
// Counting the one retry is the caller's job.
type RetryPolicy struct {
	// MaxWait is the longest wait the gateway accepts before retrying on the
	// same backend [5s]. A backend asking for longer (Retry-After: 60) is
	// failed over at once: the request should not stall for it when another
	// backend can serve it.
	MaxWait time.Duration
	// DefaultWait is the pause before retrying a transient failure that gave
	// no hint [200ms]: enough for a reset connection or a restarting
	// instance, short against an LLM call.
	DefaultWait time.Duration
}

// Retry policy defaults.
const (
	DefaultMaxWait     = 5 * time.Second
	DefaultDefaultWait = 200 * time.Millisecond
)

// RetryDecision is RetryPolicy.Decide's answer.
type RetryDecision struct {
	// SameBackend: retry on the same backend after Wait. False: fail over
	// to the next backend that satisfies the request, now.
	SameBackend bool
	Wait        time.Duration
	// Hint is the wait the upstream asked for, uncapped (0 when none), and
	// Source the header it came from; for logs, events, and Outcome's
	// RetryAfter.
	Hint   time.Duration
	Source string
}

// Decide returns what to do after an attempt of kind k whose response
// headers get reads (nil when there was no response). Only transient kinds
// (connect, 5xx, 429) are retried on the same backend, and only when the
// upstream's requested wait, if any, is at most MaxWait.
func (p RetryPolicy) Decide(k Kind, get func(string) string, now time.Time) RetryDecision {
	if p.MaxWait <= 0 {
		p.MaxWait = DefaultMaxWait
	}
	if p.DefaultWait <= 0 {
		p.DefaultWait = DefaultDefaultWait
	}
	var d RetryDecision
	if (k == RateLimited || k == Server) && get != nil {
		if w, src, ok := RetryAfter(get, now, k == RateLimited); ok {
			d.Hint, d.Source = w, src
		}
	}
	if !k.Transient() {
		return d
	}
	switch {
	case d.Source == "":
		d.SameBackend, d.Wait = true, min(p.DefaultWait, p.MaxWait)
	case d.Hint <= p.MaxWait:
		d.SameBackend, d.Wait = true, d.Hint
	}
	return d
}

// RetryAfter reads the wait an upstream asked for from its response
// headers, in this order:
//
//   - retry-after-ms: milliseconds (sent by OpenAI and Azure OpenAI, and
//     honoured by both official SDKs);
//   - Retry-After: delay-seconds or an HTTP-date (RFC 9110 §10.2.3);
//
// and, when rateLimited (the answer was a 429), the providers' reset
// headers, taking the latest reset among the limits that are exhausted
// (remaining 0, or no remaining header):
//
//   - x-ratelimit-reset-requests / x-ratelimit-reset-tokens: a duration
//     such as "1s", "6m0s" or "20ms" (OpenAI's rate-limit headers);
//   - anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-reset:
//     an RFC 3339 time (Anthropic's rate-limit headers);
//   - X-RateLimit-Reset: a Unix time in milliseconds, or in seconds when
//     below 10^10 (OpenRouter's 429 answers).
//
// A time in the past is a wait of 0. Garbage, negative or absurd (over a
// day) values are ignored. ok is false when no header gave a usable wait.
func RetryAfter(get func(string) string, now time.Time, rateLimited bool) (wait time.Duration, source string, ok bool) {
	if v := strings.TrimSpace(get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms <= maxHint.Seconds()*1000 {
			return time.Duration(ms * float64(time.Millisecond)), "retry-after-ms", true
		}
	}
	if v := strings.TrimSpace(get("retry-after")); v != "" {
		if w, ok := parseRetryAfter(v, now); ok {
			return w, "retry-after", true
		}
	}
	if !rateLimited {
		return 0, "", false
	}
	var best time.Duration
	found := ""
	consider := func(name string, w time.Duration) {
		if found == "" || w > best {
			best, found = w, name
		}
	}
	exhausted := func(remaining string) bool {
		v := strings.TrimSpace(get(remaining))
		return v == "" || v == "0"
	}
	for _, l := range []string{"requests", "tokens"} {
		name := "x-ratelimit-reset-" + l
		if v := strings.TrimSpace(get(name)); v != "" && exhausted("x-ratelimit-remaining-"+l) {
			if d, err := time.ParseDuration(v); err == nil && d >= 0 && d <= maxHint {
				consider(name, d)
			}
		}
	}
	for _, l := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		name := "anthropic-ratelimit-" + l + "-reset"
		if v := strings.TrimSpace(get(name)); v != "" && exhausted("anthropic-ratelimit-"+l+"-remaining") {
			if t, err := time.Parse(time.RFC3339, v); err == nil {
				if d, ok := until(t, now); ok {
					consider(name, d)
				}
			}
		}
	}
	if v := strings.TrimSpace(get("x-ratelimit-reset")); v != "" && exhausted("x-ratelimit-remaining") {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			var t time.Time
			if n < 1e10 {
				t = time.Unix(n, 0)
			} else {
				t = time.UnixMilli(n)
			}
			if d, ok := until(t, now); ok {
				consider("x-ratelimit-reset", d)
			}
		}
	}
	if found == "" {
		return 0, "", false
	}
	return best, found, true
}

// maxHint bounds a believable wait: anything longer is a broken header.
const maxHint = 24 * time.Hour

// parseRetryAfter parses Retry-After's two forms.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v[0] >= '0' && v[0] <= '9' {
		// delay-seconds is an integer; a fraction is tolerated (some
		// servers send "1.5").
		s, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(s) || s < 0 || s > maxHint.Seconds() {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	t, err := http.ParseTime(v) // IMF-fixdate, RFC 850 and asctime
	if err != nil {
		return 0, false
	}
	return until(t, now)
}

// until returns t − now, 0 when t is past; false when absurdly far.
func until(t, now time.Time) (time.Duration, bool) {
	d := t.Sub(now)
	if d < 0 {
		return 0, true
	}
	if d > maxHint {
		return 0, false
	}
	return d, true
}

// HeaderFunc returns a case-insensitive header getter over upstream
// response headers (upstream.Response.Headers), for RetryAfter and Decide.
func HeaderFunc(kv []wire.KV) func(string) string {
	return func(name string) string {
		for _, h := range kv {
			if strings.EqualFold(h.Key, name) {
				return h.Value
			}
		}
		return ""
	}
}
