package health

import (
	"net/http"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

func headers(kv ...string) func(string) string {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h.Get
}

func TestRetryAfterForms(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name    string
		h       []string
		limited bool
		want    time.Duration
		src     string
		ok      bool
	}{
		{"seconds", []string{"Retry-After", "7"}, true, 7 * time.Second, "retry-after", true},
		{"zero", []string{"Retry-After", "0"}, true, 0, "retry-after", true},
		{"fraction", []string{"Retry-After", "1.5"}, true, 1500 * time.Millisecond, "retry-after", true},
		{"spaces", []string{"Retry-After", "  3 "}, true, 3 * time.Second, "retry-after", true},
		{"http-date", []string{"Retry-After", "Sat, 14 Mar 2026 12:00:42 GMT"}, true, 42 * time.Second, "retry-after", true},
		{"rfc850-date", []string{"Retry-After", "Saturday, 14-Mar-26 12:01:00 GMT"}, true, time.Minute, "retry-after", true},
		{"past date", []string{"Retry-After", "Sat, 14 Mar 2026 11:00:00 GMT"}, true, 0, "retry-after", true},
		{"garbage", []string{"Retry-After", "soon"}, true, 0, "", false},
		{"negative", []string{"Retry-After", "-5"}, true, 0, "", false},
		{"absurd", []string{"Retry-After", "999999999"}, true, 0, "", false},
		{"NaN", []string{"Retry-After", "NaN"}, true, 0, "", false},
		{"none", nil, true, 0, "", false},
		{"ms wins", []string{"retry-after-ms", "250", "Retry-After", "9"}, true, 250 * time.Millisecond, "retry-after-ms", true},
		{"bad ms falls back", []string{"retry-after-ms", "x", "Retry-After", "2"}, true, 2 * time.Second, "retry-after", true},
		{"openai reset", []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6m0s"}, true, 6 * time.Minute, "x-ratelimit-reset-requests", true},
		{"openai reset ms", []string{"x-ratelimit-reset-tokens", "20ms"}, true, 20 * time.Millisecond, "x-ratelimit-reset-tokens", true},
		{"openai latest exhausted", []string{
			"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s",
			"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "4s"}, true, 4 * time.Second, "x-ratelimit-reset-tokens", true},
		{"openai not exhausted", []string{
			"x-ratelimit-remaining-requests", "12", "x-ratelimit-reset-requests", "30s",
			"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "2s"}, true, 2 * time.Second, "x-ratelimit-reset-tokens", true},
		{"anthropic reset", []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-03-14T12:00:05Z"}, true, 5 * time.Second, "anthropic-ratelimit-requests-reset", true},
		{"anthropic output tokens", []string{"anthropic-ratelimit-output-tokens-reset", "2026-03-14T12:00:09Z"}, true, 9 * time.Second, "anthropic-ratelimit-output-tokens-reset", true},
		{"openrouter ms", []string{"X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "1773489610000"}, true, 10 * time.Second, "x-ratelimit-reset", true},
		{"openrouter s", []string{"X-RateLimit-Reset", "1773489603"}, true, 3 * time.Second, "x-ratelimit-reset", true},
		{"reset only on 429", []string{"x-ratelimit-reset-requests", "6s"}, false, 0, "", false},
		{"reset garbage", []string{"x-ratelimit-reset-requests", "later", "X-RateLimit-Reset", "abc"}, true, 0, "", false},
	}
	for _, c := range cases {
		w, src, ok := RetryAfter(headers(c.h...), now, c.limited)
		if w != c.want || src != c.src || ok != c.ok {
			t.Errorf("%s: got (%v, %q, %v), want (%v, %q, %v)", c.name, w, src, ok, c.want, c.src, c.ok)
		}
	}
}

func TestRetryDecide(t *testing.T) {
	now := time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)
	p := RetryPolicy{MaxWait: 5 * time.Second}
	cases := []struct {
		name string
		k    Kind
		h    []string
		same bool
		wait time.Duration
		hint time.Duration
	}{
		{"429 short wait: retry same", RateLimited, []string{"Retry-After", "2"}, true, 2 * time.Second, 2 * time.Second},
		{"429 at the cap", RateLimited, []string{"Retry-After", "5"}, true, 5 * time.Second, 5 * time.Second},
		{"429 over the cap: fail over", RateLimited, []string{"Retry-After", "60"}, false, 0, time.Minute},
		{"429 date over the cap", RateLimited, []string{"Retry-After", "Sat, 14 Mar 2026 12:10:00 GMT"}, false, 0, 10 * time.Minute},
		{"429 no hint: default wait", RateLimited, nil, true, DefaultDefaultWait, 0},
		{"429 garbage hint: default wait", RateLimited, []string{"Retry-After", "tomorrow"}, true, DefaultDefaultWait, 0},
		{"503 with Retry-After", Server, []string{"Retry-After", "1"}, true, time.Second, time.Second},
		{"503 ignores rate-limit resets", Server, []string{"x-ratelimit-reset-requests", "3s"}, true, DefaultDefaultWait, 0},
		{"connect: retry same", Connect, nil, true, DefaultDefaultWait, 0},
		{"timeout: fail over", Timeout, nil, false, 0, 0},
		{"4xx: no retry", Client, []string{"Retry-After", "1"}, false, 0, 0},
		{"ok: nothing", OK, nil, false, 0, 0},
	}
	for _, c := range cases {
		d := p.Decide(c.k, headers(c.h...), now)
		if d.SameBackend != c.same || d.Wait != c.wait || d.Hint != c.hint {
			t.Errorf("%s: got %+v, want same=%v wait=%v hint=%v", c.name, d, c.same, c.wait, c.hint)
		}
	}
	// Zero policy takes the defaults; no headers at all is fine.
	if d := (RetryPolicy{}).Decide(RateLimited, nil, now); !d.SameBackend || d.Wait != DefaultDefaultWait {
		t.Errorf("zero policy: %+v", d)
	}
	if d := (RetryPolicy{}).Decide(RateLimited, headers("Retry-After", "6"), now); d.SameBackend {
		t.Errorf("default cap: %+v", d)
	}
}

func TestHeaderFunc(t *testing.T) {
	get := HeaderFunc([]wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "retry-after", Value: "3"}})
	if get("Retry-After") != "3" || get("content-type") != "application/json" || get("x") != "" {
		t.Error("HeaderFunc lookup")
	}
}
