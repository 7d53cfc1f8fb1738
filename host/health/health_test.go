package health

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 14, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// eventLog collects OnChange events.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) add(e Event) {
	l.mu.Lock()
	l.evs = append(l.evs, e)
	l.mu.Unlock()
}

func (l *eventLog) all() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.evs...)
}

func newTracker(t *testing.T, mod func(*Config)) (*Tracker, *fakeClock, *eventLog) {
	t.Helper()
	clk := newFakeClock()
	log := &eventLog{}
	cfg := Config{Now: clk.Now, OnChange: log.add}
	if mod != nil {
		mod(&cfg)
	}
	tr, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tr, clk, log
}

func ok(ms int) Outcome { return Outcome{Kind: OK, Latency: time.Duration(ms) * time.Millisecond} }

func fail(k Kind) Outcome { return Outcome{Kind: k, Latency: time.Millisecond} }

func TestClassify(t *testing.T) {
	var dnsErr net.Error = &net.DNSError{Err: "no such host", IsTimeout: false}
	var toErr net.Error = &net.DNSError{Err: "i/o timeout", IsTimeout: true}
	cases := []struct {
		status int
		err    error
		want   Kind
	}{
		{200, nil, OK},
		{204, nil, OK},
		{302, nil, OK},
		{400, nil, Client},
		{401, nil, Client},
		{404, nil, Client},
		{408, nil, Timeout},
		{429, nil, RateLimited},
		{500, nil, Server},
		{503, nil, Server},
		{529, nil, Server},
		{0, nil, Connect},
		{0, errors.New("connection reset by peer"), Connect},
		{0, dnsErr, Connect},
		{0, toErr, Timeout},
		{0, fmt.Errorf("upstream: %w", context.DeadlineExceeded), Timeout},
		{0, os.ErrDeadlineExceeded, Timeout},
		{0, fmt.Errorf("upstream: %w", context.Canceled), Canceled},
		{200, context.Canceled, Canceled}, // an error wins over a status
	}
	for _, c := range cases {
		if got := Classify(c.status, c.err); got != c.want {
			t.Errorf("Classify(%d, %v) = %v, want %v", c.status, c.err, got, c.want)
		}
	}
	for k := OK; int(k) < numKinds; k++ {
		if k.Transient() && !k.Failure() && k != RateLimited {
			t.Errorf("%v transient but not a failure", k)
		}
		if k.Failure() && !k.Counted() {
			t.Errorf("%v a failure but not counted", k)
		}
	}
	if Timeout.Transient() || Client.Counted() || Canceled.Counted() || RateLimited.Counted() || RateLimited.Failure() {
		t.Error("timeout must fail over at once; 4xx, 429 and cancels are not counted")
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{ErrorRate: 1.5},
		{ErrorRate: -0.1},
		{Window: time.Minute, Bucket: 2 * time.Minute},
		{Window: time.Hour, Bucket: time.Millisecond},
		{Cooldown: time.Minute, MaxCooldown: time.Second},
		{MinSamples: -1},
		{Cooldown: -time.Second},
	}
	for _, c := range bad {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	tr, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := tr.Config()
	if c.Window != 5*time.Minute || c.Bucket != 10*time.Second || c.ErrorRate != 0.05 || c.MinSamples != 20 ||
		c.ConsecutiveFailures != 5 || c.Cooldown != 30*time.Second || c.MaxCooldown != 5*time.Minute ||
		c.HalfOpenSuccesses != 3 || c.HalfOpenMaxInFlight != 1 {
		t.Errorf("defaults = %+v", c)
	}
}

func TestUnknownBackendIsAvailable(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	if !tr.Available("nobody") || !tr.Allow("nobody") {
		t.Error("a backend never seen must be available")
	}
	if _, ok := tr.Get("nobody"); ok {
		t.Error("Available/Allow must not create backends")
	}
}

// The 5 %-over-5-minutes rule, with its minimum sample and failure counts.
func TestErrorRateRule(t *testing.T) {
	tr, clk, log := newTracker(t, nil)
	const b = "blockrun"

	// 1 error out of 3 is 33 %, but 3 samples say too little.
	tr.Record(b, ok(100))
	tr.Record(b, fail(Server))
	tr.Record(b, ok(100))
	if !tr.Available(b) {
		t.Fatal("out after 1 error in 3 samples")
	}
	// 180 samples, 9 errors: 5 %, not above it.
	for i := range 177 {
		clk.Advance(time.Second)
		if i%22 == 0 && i > 0 {
			tr.Record(b, fail(Server))
		} else {
			tr.Record(b, ok(100))
		}
	}
	s, _ := tr.Get(b)
	if s.Samples != 180 || s.Errors != 9 || !tr.Available(b) {
		t.Fatalf("at 9/180: samples %d errors %d available %v", s.Samples, s.Errors, tr.Available(b))
	}
	// A tenth error: 10/181 ≈ 5.5 % > 5 %, with ≥ 20 samples and ≥ 10
	// failures.
	tr.Record(b, fail(Timeout))
	if tr.Available(b) {
		t.Fatal("still available at 10/181 errors")
	}
	evs := log.all()
	if len(evs) != 1 || evs[0].To != Open || evs[0].From != Closed || evs[0].Reason != "error rate" ||
		evs[0].Samples != 181 || evs[0].Cooldown != 30*time.Second || evs[0].Kind != Timeout {
		t.Fatalf("events = %+v", evs)
	}
	s, _ = tr.Get(b)
	if s.State != Open || s.Status != StatusDown || !s.RetryAt.Equal(clk.Now().Add(30*time.Second)) || s.Trips != 1 {
		t.Errorf("snapshot = %+v", s)
	}
}

// TestFewBadRequestsDoNotTrip is issue 11's first half of item 8: three
// requests whose upstream answers 500, each retried once, took the backend
// out for every caller (6 failures in a row). Now a run of 5xx needs the
// window's evidence: at least MinSamples attempts, MinFailures failures and
// a rate above the threshold.
func TestFewBadRequestsDoNotTrip(t *testing.T) {
	tr, _, log := newTracker(t, nil)
	retry := Outcome{Kind: Server, Latency: time.Millisecond, Retry: true}
	for range 3 {
		tr.Record("or", fail(Server))
		tr.Record("or", retry) // the same-backend retry: the same request
	}
	if !tr.Available("or") || len(log.all()) != 0 {
		t.Fatalf("out after three bad requests: %+v", log.all())
	}
	// Nor among a little other traffic: 9 failed requests (18 attempts)
	// among 30 requests is 30 %, but 9 failed requests are not enough
	// evidence.
	for range 21 {
		tr.Record("or", ok(10))
	}
	for range 6 {
		tr.Record("or", fail(Server))
		tr.Record("or", retry)
	}
	if s, _ := tr.Get("or"); !tr.Available("or") || s.Errors != 9 || s.Samples != 30 {
		t.Fatalf("out after 9 failed requests: %+v", s)
	}
	// A backend failing everything is still taken out: the tenth.
	tr.Record("or", fail(Server))
	if tr.Available("or") {
		t.Fatal("available after 10 failed requests in 31")
	}
	// Without the Retry mark each attempt is evidence: 5 requests, tried
	// twice, are 10 failures.
	tr2, _, _ := newTracker(t, nil)
	for range 10 {
		tr2.Record("x", ok(10))
		tr2.Record("x", ok(10))
	}
	for range 10 {
		tr2.Record("x", fail(Server))
	}
	if tr2.Available("x") {
		t.Fatal("available after 10 failed attempts in 30")
	}
}

// TestRateLimitIsBackoff is item 8's second half: a 429 is not a failure.
// Any number of them leave the backend in, its error rate untouched; it
// backs off (still Available, but BackingOff: tried last) for the
// Retry-After it asked for, or RateLimitBackoff, capped at MaxCooldown.
func TestRateLimitIsBackoff(t *testing.T) {
	tr, clk, log := newTracker(t, nil)
	for range 50 {
		tr.Record("a", Outcome{Kind: RateLimited, RetryAfter: 2 * time.Second})
	}
	s, _ := tr.Get("a")
	if s.State != Closed || s.Trips != 0 || s.Errors != 0 || s.Samples != 0 || s.RateLimited != 50 || len(log.all()) != 0 {
		t.Fatalf("after 50 429s: %+v events %+v", s, log.all())
	}
	if !tr.BackingOff("a") || s.Status != StatusDegraded || !s.BackoffUntil.Equal(clk.Now().Add(2*time.Second)) {
		t.Fatalf("not backing off: %+v", s)
	}
	if !tr.Available("a") || !tr.Allow("a") {
		t.Fatal("a backend backing off after a 429 must stay available (tried last)")
	}
	clk.Advance(2 * time.Second)
	if tr.BackingOff("a") {
		t.Fatal("still backing off after the Retry-After")
	}
	if s, _ := tr.Get("a"); !s.BackoffUntil.IsZero() {
		t.Fatalf("backoff until %v after it ended", s.BackoffUntil)
	}
	// No hint: the default back-off; a huge one: the cap.
	tr.Record("b", fail(RateLimited))
	clk.Advance(DefaultRateLimitBackoff - time.Millisecond)
	if !tr.BackingOff("b") {
		t.Fatal("the default back-off ended early")
	}
	clk.Advance(time.Millisecond)
	if tr.BackingOff("b") {
		t.Fatal("the default back-off did not end")
	}
	tr.Record("c", Outcome{Kind: RateLimited, RetryAfter: time.Hour})
	if s, _ := tr.Get("c"); !s.BackoffUntil.Equal(clk.Now().Add(5 * time.Minute)) {
		t.Fatalf("backoff until %v, want the 5m cap", s.BackoffUntil)
	}
	// A 429 ends a run of connection failures: the backend answered.
	for range 4 {
		tr.Record("d", fail(Connect))
	}
	tr.Record("d", fail(RateLimited))
	tr.Record("d", fail(Connect))
	if s, _ := tr.Get("d"); s.State != Closed || s.ConsecutiveFailures != 1 {
		t.Fatalf("snapshot %+v", s)
	}
}

func TestMinSamplesGuardsHighRate(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	// 4 failures and 4 successes, alternating: 50 % errors but only 8
	// samples and never more than one failure in a row.
	for range 4 {
		tr.Record("x", fail(Connect))
		tr.Record("x", ok(10))
	}
	if !tr.Available("x") {
		t.Error("out with fewer samples than MinSamples")
	}
}

func TestConsecutiveFailures(t *testing.T) {
	tr, _, log := newTracker(t, nil)
	for i := range 4 {
		tr.Record("venice", fail(Connect))
		if !tr.Available("venice") {
			t.Fatalf("out after %d consecutive failures", i+1)
		}
	}
	tr.Record("venice", fail(Connect))
	if tr.Available("venice") {
		t.Fatal("available after 5 consecutive connection failures")
	}
	if evs := log.all(); len(evs) != 1 || evs[0].Reason != "consecutive failures" {
		t.Errorf("events = %+v", evs)
	}
	// 5xx and timeouts make no run: they need the rate rule's evidence.
	tr2, _, _ := newTracker(t, nil)
	for range 9 {
		tr2.Record("v", fail(Server))
		tr2.Record("v", fail(Timeout))
	}
	if s, _ := tr2.Get("v"); s.State != Closed || s.ConsecutiveFailures != 0 {
		t.Errorf("18 5xx/timeouts with 18 samples: %+v", s)
	}
	// An answer (a 5xx too) ends a run of connection failures.
	tr3, _, _ := newTracker(t, nil)
	for range 10 {
		tr3.Record("v", fail(Connect))
		tr3.Record("v", fail(Connect))
		tr3.Record("v", fail(Server))
	}
	s, _ := tr3.Get("v")
	if s.State == Closed {
		// 30 of 30 failed: the rate rule trips it (at 20 samples), the
		// consecutive rule never did.
		t.Errorf("state = %v", s.State)
	}
}

func TestClientAndCanceledNotCounted(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	for range 50 {
		tr.Record("or", fail(Client))
		tr.Record("or", Outcome{Kind: Canceled})
	}
	tr.Record("or", ok(10))
	tr.Record("or", fail(Server))
	s, _ := tr.Get("or")
	if s.Samples != 2 || s.Errors != 1 || s.ClientErrors != 50 || s.State != Closed {
		t.Errorf("snapshot = %+v", s)
	}
	// 4xx answers do not break a run of consecutive failures either way:
	// they neither count as failures nor reset the run.
	tr.Record("or", fail(Connect))
	for range 3 {
		tr.Record("or", fail(Client))
		tr.Record("or", fail(Connect))
	}
	s, _ = tr.Get("or")
	if s.ConsecutiveFailures != 4 {
		t.Errorf("consecutive = %d, want 4", s.ConsecutiveFailures)
	}
}

func TestWindowSlidesOut(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	const c = "openrouter"
	for range 19 {
		tr.Record(c, ok(10))
	}
	tr.Record(c, fail(Server)) // 1/20: at the threshold, not above
	clk.Advance(2 * time.Minute)
	for range 10 {
		tr.Record(c, ok(10))
	}
	s, _ := tr.Get(c)
	if s.Samples != 30 || s.Errors != 1 {
		t.Fatalf("samples %d errors %d", s.Samples, s.Errors)
	}
	// Past the window: the first 20 (with the error) slid out.
	clk.Advance(3*time.Minute + 10*time.Second)
	s, _ = tr.Get(c)
	if s.Samples != 10 || s.Errors != 0 {
		t.Fatalf("after sliding: samples %d errors %d", s.Samples, s.Errors)
	}
	// A new error now is 1/11: above 5 % but under MinSamples.
	tr.Record(c, fail(Server))
	if !tr.Available(c) {
		t.Error("out on a window that had slid out")
	}
	// Far in the future everything is gone.
	clk.Advance(time.Hour)
	s, _ = tr.Get(c)
	if s.Samples != 0 || s.Status != StatusUnknown || s.P50 != 0 {
		t.Errorf("after an hour: %+v", s)
	}
}

// attempt runs one request through the breaker as the gateway would:
// Allow, the attempt's duration on the fake clock, Record.
func attempt(t *testing.T, tr *Tracker, clk *fakeClock, b string, o Outcome) {
	t.Helper()
	if !tr.Allow(b) {
		t.Fatalf("%s: Allow refused", b)
	}
	clk.Advance(o.Latency)
	tr.Record(b, o)
}

// trip takes backend b out with consecutive connect errors.
func trip(tr *Tracker, b string) {
	for range tr.Config().ConsecutiveFailures {
		tr.Record(b, fail(Connect))
	}
}

func TestHalfOpenRecovery(t *testing.T) {
	tr, clk, log := newTracker(t, nil)
	const b = "venice"
	trip(tr, b)
	if tr.Available(b) || tr.Allow(b) {
		t.Fatal("available while out")
	}
	clk.Advance(29 * time.Second)
	if tr.Available(b) {
		t.Fatal("available before the cooldown ended")
	}
	clk.Advance(time.Second)
	if !tr.Available(b) {
		t.Fatal("not half-open after the cooldown")
	}
	// One trial at a time.
	if !tr.Allow(b) {
		t.Fatal("first trial refused")
	}
	if tr.Available(b) || tr.Allow(b) {
		t.Fatal("second concurrent trial admitted")
	}
	clk.Advance(50 * time.Millisecond)
	tr.Record(b, ok(50))
	for range 2 {
		attempt(t, tr, clk, b, ok(50))
	}
	s, _ := tr.Get(b)
	if s.State != Closed || !tr.Available(b) {
		t.Fatalf("not healthy after 3 successful trials: %+v", s)
	}
	if s.Samples != 0 || s.ConsecutiveFailures != 0 {
		t.Errorf("window not reset on recovery: %+v", s)
	}
	var got []string
	for _, e := range log.all() {
		got = append(got, fmt.Sprintf("%v>%v:%s", e.From, e.To, e.Reason))
	}
	want := []string{"healthy>out:consecutive failures", "out>half-open:cooldown elapsed", "half-open>healthy:trials succeeded"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	// The half-open event is dated at the cooldown's end.
	if evs := log.all(); !evs[1].At.Equal(evs[0].At.Add(30 * time.Second)) {
		t.Errorf("half-open at %v, opened at %v", evs[1].At, evs[0].At)
	}
}

func TestHalfOpenClientAnswerCountsAsTrialSuccess(t *testing.T) {
	tr, clk, _ := newTracker(t, func(c *Config) { c.HalfOpenSuccesses = 1 })
	trip(tr, "b")
	clk.Advance(30 * time.Second)
	attempt(t, tr, clk, "b", fail(Client))
	if s, _ := tr.Get("b"); s.State != Closed {
		t.Errorf("state = %v after a coherent 4xx trial", s.State)
	}
}

// Relapses double the cooldown up to the cap.
func TestBackoffCap(t *testing.T) {
	tr, clk, log := newTracker(t, nil)
	const b = "bankr"
	trip(tr, b)
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i, cd := range want {
		s, _ := tr.Get(b)
		if s.State != Open || s.Cooldown != cd {
			t.Fatalf("relapse %d: state %v cooldown %v, want out for %v", i, s.State, s.Cooldown, cd)
		}
		clk.Advance(cd - time.Millisecond)
		if tr.Available(b) {
			t.Fatalf("relapse %d: available before %v", i, cd)
		}
		clk.Advance(time.Millisecond)
		attempt(t, tr, clk, b, fail(Server)) // the trial fails: back out
	}
	n := 0
	for _, e := range log.all() {
		if e.To == Open && e.From == HalfOpen {
			n++
			if e.Reason != "trial failed" {
				t.Errorf("reason %q", e.Reason)
			}
		}
	}
	if n != len(want) {
		t.Errorf("%d re-opens, want %d", n, len(want))
	}
}

func TestBackoffResetsAfterStableWindow(t *testing.T) {
	recoverNow := func(tr *Tracker, clk *fakeClock, b string) {
		s, _ := tr.Get(b)
		clk.Advance(s.Cooldown)
		for range 3 {
			attempt(t, tr, clk, b, ok(10))
		}
		if s, _ := tr.Get(b); s.State != Closed {
			t.Fatalf("did not recover: %v", s.State)
		}
	}
	tr, clk, _ := newTracker(t, nil)
	trip(tr, "a")
	recoverNow(tr, clk, "a")
	// Tripping again soon after recovering is a relapse: doubled.
	clk.Advance(time.Minute)
	trip(tr, "a")
	if s, _ := tr.Get("a"); s.Cooldown != time.Minute {
		t.Errorf("relapse cooldown = %v, want 1m", s.Cooldown)
	}
	recoverNow(tr, clk, "a")
	// Healthy for a whole window: a new incident starts from the base.
	clk.Advance(5 * time.Minute)
	trip(tr, "a")
	if s, _ := tr.Get("a"); s.Cooldown != 30*time.Second {
		t.Errorf("new incident cooldown = %v, want 30s", s.Cooldown)
	}
}

func TestRetryAfterExtendsCooldown(t *testing.T) {
	// A 503 with Retry-After that trips the breaker stays out at least as
	// long as asked (capped), never less than the base cooldown.
	tr, _, _ := newTracker(t, func(c *Config) { c.MinSamples, c.MinFailures, c.ErrorRate = 1, 1, 0.01 })
	tr.Record("a", Outcome{Kind: Server, RetryAfter: 2 * time.Minute})
	if s, _ := tr.Get("a"); s.Cooldown != 2*time.Minute {
		t.Errorf("cooldown = %v, want the 2m the upstream asked for", s.Cooldown)
	}
	tr.Record("b", Outcome{Kind: Server, RetryAfter: time.Hour})
	if s, _ := tr.Get("b"); s.Cooldown != 5*time.Minute {
		t.Errorf("cooldown = %v, want the 5m cap", s.Cooldown)
	}
	tr.Record("c", Outcome{Kind: Server, RetryAfter: time.Second})
	if s, _ := tr.Get("c"); s.Cooldown != 30*time.Second {
		t.Errorf("cooldown = %v, want the 30s base", s.Cooldown)
	}
}

func TestStaleOutcomesIgnored(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	trip(tr, "a")
	clk.Advance(30 * time.Second)
	if !tr.Allow("a") {
		t.Fatal("no trial")
	}
	// A request that started 40 s ago — before the backend went out —
	// finishes now: it must not count as a trial success, but it frees
	// the slot.
	tr.Record("a", Outcome{Kind: OK, Latency: 40 * time.Second})
	s, _ := tr.Get("a")
	if s.State != HalfOpen || s.Samples != 5 || s.LatencySamples != 0 {
		t.Fatalf("stale success counted: %+v", s)
	}
	if !tr.Allow("a") {
		t.Fatal("slot not released by a stale outcome")
	}
	// Likewise a stale failure does not re-open it.
	tr.Record("a", Outcome{Kind: Server, Latency: 40 * time.Second})
	if s, _ := tr.Get("a"); s.State != HalfOpen {
		t.Errorf("stale failure re-opened: %v", s.State)
	}
}

func TestTrialTimeoutReclaimsSlot(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	trip(tr, "a")
	clk.Advance(30 * time.Second)
	if !tr.Allow("a") {
		t.Fatal("no trial")
	}
	// The caller lost the request and never Records.
	clk.Advance(59 * time.Second)
	if tr.Available("a") {
		t.Fatal("slot free before the trial timeout")
	}
	clk.Advance(time.Second)
	if !tr.Available("a") || !tr.Allow("a") {
		t.Fatal("slot not reclaimed after the trial timeout")
	}
}

func TestHalfOpenMaxInFlight(t *testing.T) {
	tr, clk, _ := newTracker(t, func(c *Config) { c.HalfOpenMaxInFlight = 3 })
	trip(tr, "a")
	clk.Advance(30 * time.Second)
	for i := range 3 {
		if !tr.Allow("a") {
			t.Fatalf("trial %d refused", i)
		}
	}
	if tr.Allow("a") {
		t.Fatal("4th trial admitted with 3 slots")
	}
	tr.Record("a", ok(10))
	if !tr.Allow("a") {
		t.Fatal("slot not released")
	}
}

func TestHalfOpenSuccessNeedsFreshAttempt(t *testing.T) {
	// Dating: the half-open state begins at the cooldown's end even when
	// nobody looks until later, so a trial admitted later is fresh.
	tr, clk, _ := newTracker(t, nil)
	trip(tr, "a")
	clk.Advance(10 * time.Minute)
	for range 3 {
		attempt(t, tr, clk, "a", ok(20))
	}
	if s, _ := tr.Get("a"); s.State != Closed || !s.Since.Equal(clk.Now()) {
		t.Errorf("state %v since %v", s.State, s.Since)
	}
}

func TestLatencyPercentiles(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	for i := 1; i <= 100; i++ {
		tr.Record("a", ok(i))
	}
	tr.Record("a", Outcome{Kind: Timeout, Latency: time.Minute}) // not in the histogram
	p50, p95, n := tr.Backend("a").Latency()
	if n != 100 {
		t.Fatalf("n = %d", n)
	}
	within := func(got, want time.Duration) bool {
		d := float64(got-want) / float64(want)
		return d > -0.13 && d < 0.13
	}
	if !within(p50, 50*time.Millisecond) || !within(p95, 95*time.Millisecond) {
		t.Errorf("p50 %v p95 %v, want ≈50ms ≈95ms", p50, p95)
	}
	if p90 := tr.Backend("a").Quantile(0.9); !within(p90, 90*time.Millisecond) {
		t.Errorf("p90 %v, want ≈90ms", p90)
	}
	if s, _ := tr.Get("a"); s.P50 != p50 || s.P95 != p95 || s.LatencySamples != 100 {
		t.Errorf("snapshot latencies %v %v %d", s.P50, s.P95, s.LatencySamples)
	}
}

func TestLatencyHistogramBuckets(t *testing.T) {
	prev := -1
	for d := time.Microsecond; d < time.Hour; d = d*21/20 + time.Microsecond {
		i := latIndex(d)
		if i < prev {
			t.Fatalf("latIndex not monotonic at %v", d)
		}
		prev = i
		if i == latBuckets-1 || d < time.Millisecond {
			continue
		}
		mid := latMid(i)
		if r := float64(mid) / float64(d); r < 0.87 || r > 1.14 {
			t.Fatalf("latMid(latIndex(%v)) = %v, ratio %.3f", d, mid, r)
		}
	}
	if latIndex(0) != 0 || latIndex(-time.Second) != 0 || latIndex(24*time.Hour) != latBuckets-1 {
		t.Error("edge buckets")
	}
}

func TestSnapshotStatus(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	tr.Backend("idle")
	for range 40 {
		tr.Record("good", ok(10))
	}
	for range 38 {
		tr.Record("meh", ok(10))
	}
	tr.Record("meh", fail(Server))
	tr.Record("meh", ok(10))
	tr.Record("meh", fail(Server)) // 2/41 ≈ 4.9 %: degraded, not out
	trip(tr, "down")
	trip(tr, "trial")
	clk.Advance(30 * time.Second)
	want := map[string]Status{"idle": StatusUnknown, "good": StatusHealthy, "meh": StatusDegraded, "trial": StatusDegraded}
	snap := tr.Snapshot()
	if len(snap) != 5 {
		t.Fatalf("%d snapshots", len(snap))
	}
	for i := 1; i < len(snap); i++ {
		if snap[i-1].Backend >= snap[i].Backend {
			t.Error("snapshot not sorted")
		}
	}
	for _, s := range snap {
		if w, ok := want[s.Backend]; ok && s.Status != w {
			t.Errorf("%s: status %v, want %v", s.Backend, s.Status, w)
		}
	}
	// "down" is half-open too by now (same cooldown); check a fresh one.
	trip(tr, "down2")
	if s, _ := tr.Get("down2"); s.Status != StatusDown {
		t.Errorf("down2: %v", s.Status)
	}
}

func TestRemove(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	trip(tr, "gone")
	tr.Remove("gone")
	tr.Remove("never")
	if !tr.Available("gone") || len(tr.Names()) != 0 {
		t.Error("removed backend still tracked")
	}
}

// Concurrent Record, Available, Allow and Snapshot must be race-free and
// lose no counts.
func TestConcurrentRecord(t *testing.T) {
	tr, _, _ := newTracker(t, func(c *Config) {
		c.MinSamples = 1 << 30 // never trip: this test checks counting
		c.ConsecutiveFailures = 1 << 30
	})
	const workers, each = 8, 2000
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := tr.Backend(fmt.Sprint("b", w%2))
			for i := range each {
				switch i % 10 {
				case 0:
					b.Record(fail(Server))
				case 1:
					b.Record(fail(Client))
				default:
					b.Record(ok(i % 300))
				}
				if i%100 == 0 {
					_ = tr.Available("b0")
					_ = tr.Allow("b1")
					_ = tr.Snapshot()
				}
			}
		}()
	}
	wg.Wait()
	var samples, errs, client int
	for _, s := range tr.Snapshot() {
		samples += s.Samples
		errs += s.Errors
		client += s.ClientErrors
	}
	if samples != workers*each*9/10 || errs != workers*each/10 || client != workers*each/10 {
		t.Errorf("samples %d errors %d client %d", samples, errs, client)
	}
}

func TestEventsFiredOutsideLocks(t *testing.T) {
	// A callback that reads the tracker must not deadlock.
	var tr *Tracker
	var seen []State
	clk := newFakeClock()
	tr, err := New(Config{Now: clk.Now, OnChange: func(e Event) {
		s, _ := tr.Get(e.Backend)
		seen = append(seen, s.State)
		_ = tr.Available(e.Backend)
	}})
	if err != nil {
		t.Fatal(err)
	}
	trip(tr, "a")
	clk.Advance(time.Minute)
	tr.Available("a")
	if len(seen) != 2 || seen[0] != Open || seen[1] != HalfOpen {
		t.Errorf("seen %v", seen)
	}
}

func TestSnapshotJSON(t *testing.T) {
	tr, _, log := newTracker(t, nil)
	tr.Record("a", ok(12))
	trip(tr, "a")
	s, _ := tr.Get("a")
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"backend":"a"`, `"state":"out"`, `"status":"down"`, `"connect_errors":5`, `"retry_at":"2026-03-14T12:00:30Z"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("missing %s in %s", want, b)
		}
	}
	b, err = json.Marshal(log.all()[0])
	if err != nil || !strings.Contains(string(b), `"from":"healthy","to":"out"`) || !strings.Contains(string(b), `"kind":"connect"`) {
		t.Errorf("event JSON %s, %v", b, err)
	}
}
