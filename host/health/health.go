// Package health tracks the health of each upstream backend (BlockRun,
// OpenRouter, Venice, …) so routing can skip the ones that are failing and
// fail over to the next.
//
// It is a per-backend circuit breaker fed by passive observation: the
// gateway Records every upstream attempt's Outcome, and a backend whose
// error rate over a sliding window (5 minutes) exceeds a threshold (5 %,
// once the window holds enough attempts and enough failures: real evidence,
// not one caller's few bad requests) or that cannot be connected to several
// times in a row is taken out (Open). A 429 is not a failure: the backend
// backs off for the Retry-After it asked for, and is not taken out. After a cooldown that doubles with each relapse (up to a
// cap) it is Half-open: a limited number of trial requests or active probes
// pass, and a few successes close the breaker again while one failure
// re-opens it. A Prober pings backends that are out or have been idle, so
// recovery does not wait for real traffic.
//
// Record, Available and Allow are cheap (no allocation, one uncontended
// mutex or a single atomic load) and safe for concurrent use: they sit on
// every request's path. README.md in this directory lists the policy and
// its numbers.
package health

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// State is a backend's circuit-breaker state.
type State uint32

// States.
const (
	// Closed: healthy, requests flow.
	Closed State = iota
	// Open: out of the pool until its cooldown ends.
	Open
	// HalfOpen: on trial; at most Config.HalfOpenMaxInFlight requests or
	// probes at a time.
	HalfOpen
)

// String returns "healthy", "out" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "healthy"
	case Open:
		return "out"
	case HalfOpen:
		return "half-open"
	}
	return "unknown"
}

// MarshalText encodes the state as its String.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Status is the coarse health the product spec names (HealthStatus
// Healthy/Degraded/Down/Unknown), derived from State and the window.
type Status string

// Statuses.
const (
	StatusUnknown  Status = "unknown"  // closed, nothing observed in the window
	StatusHealthy  Status = "healthy"  // closed, error rate at most half the threshold
	StatusDegraded Status = "degraded" // closed above half the threshold, or half-open
	StatusDown     Status = "down"     // open
)

// Config tunes a Tracker. Zero fields take the defaults in brackets.
type Config struct {
	// Window is the span of the error-rate and latency window [5m].
	Window time.Duration
	// Bucket is the window's resolution [10s]; Window/Bucket buckets are
	// kept per backend.
	Bucket time.Duration
	// ErrorRate: a backend goes out when its window's error rate is
	// strictly above this [0.05] ...
	ErrorRate float64
	// MinSamples: ... and the window holds at least this many counted
	// attempts [20]. Below it the rate says too little: 1 error out of 3
	// must not take a backend out.
	MinSamples int
	// MinFailures: ... and at least this many failures [10]. A 5xx can be
	// caused by the request itself, and the gateway retries it once, so a
	// few of one caller's requests (each failing twice) must not take a
	// backend out for every caller of a quiet gateway.
	MinFailures int
	// ConsecutiveFailures takes a backend out on this many connection
	// failures in a row (refused, reset, no first byte), whatever the
	// sample count [5]: a backend that is plainly down must not keep eating
	// requests until MinSamples is reached. Only Connect failures count
	// here, since no request's content makes a server refuse connections;
	// an answer (5xx included) ends the run.
	ConsecutiveFailures int
	// RateLimitBackoff is how long a backend backs off after a 429 that
	// named no wait [1s]. While it backs off it is still Available (one
	// caller's rate limit — a token-heavy request, a per-model limit — must
	// not turn every caller away), but BackingOff: the gateway tries it
	// after every other candidate. Its state and error rate are untouched.
	RateLimitBackoff time.Duration
	// Cooldown is how long a backend stays out the first time [30s]; each
	// relapse (failing again in half-open, or tripping again less than a
	// Window after recovering) doubles it, up to MaxCooldown [5m].
	Cooldown    time.Duration
	MaxCooldown time.Duration
	// HalfOpenSuccesses closes the breaker after this many successful
	// trials in half-open [3].
	HalfOpenSuccesses int
	// HalfOpenMaxInFlight bounds concurrent trials in half-open [1].
	HalfOpenMaxInFlight int
	// TrialTimeout reclaims a half-open trial slot whose outcome was never
	// Recorded (the caller took it with Allow and then lost the request)
	// [1m].
	TrialTimeout time.Duration
	// Now is the clock [time.Now]. Tests inject a fake one.
	Now func() time.Time
	// OnChange, when set, is called after every state change, outside the
	// tracker's locks, on the goroutine that caused it. Keep it fast (hand
	// the event to a channel or bus).
	OnChange func(Event)
}

// Defaults.
const (
	DefaultWindow              = 5 * time.Minute
	DefaultBucket              = 10 * time.Second
	DefaultErrorRate           = 0.05
	DefaultMinSamples          = 20
	DefaultMinFailures         = 10
	DefaultRateLimitBackoff    = time.Second
	DefaultConsecutiveFailures = 5
	DefaultCooldown            = 30 * time.Second
	DefaultMaxCooldown         = 5 * time.Minute
	DefaultHalfOpenSuccesses   = 3
	DefaultHalfOpenMaxInFlight = 1
	DefaultTrialTimeout        = time.Minute
)

func (c *Config) fill() error {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(d *int, v int) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.Window, DefaultWindow)
	def(&c.Bucket, DefaultBucket)
	def(&c.Cooldown, DefaultCooldown)
	def(&c.MaxCooldown, DefaultMaxCooldown)
	def(&c.TrialTimeout, DefaultTrialTimeout)
	def(&c.RateLimitBackoff, DefaultRateLimitBackoff)
	if c.ErrorRate == 0 {
		c.ErrorRate = DefaultErrorRate
	}
	defInt(&c.MinSamples, DefaultMinSamples)
	defInt(&c.MinFailures, DefaultMinFailures)
	defInt(&c.ConsecutiveFailures, DefaultConsecutiveFailures)
	defInt(&c.HalfOpenSuccesses, DefaultHalfOpenSuccesses)
	defInt(&c.HalfOpenMaxInFlight, DefaultHalfOpenMaxInFlight)
	if c.Now == nil {
		c.Now = time.Now
	}
	var errs []error
	if c.Window < 0 || c.Bucket < 0 || c.Cooldown < 0 || c.MaxCooldown < 0 || c.TrialTimeout < 0 || c.RateLimitBackoff < 0 {
		errs = append(errs, errors.New("durations must not be negative"))
	}
	if c.Bucket > c.Window {
		errs = append(errs, fmt.Errorf("bucket %v is longer than window %v", c.Bucket, c.Window))
	} else if c.Window/c.Bucket > 3600 {
		errs = append(errs, fmt.Errorf("window %v / bucket %v is more than 3600 buckets", c.Window, c.Bucket))
	}
	if c.ErrorRate < 0 || c.ErrorRate >= 1 {
		errs = append(errs, fmt.Errorf("error rate %v is not in [0, 1)", c.ErrorRate))
	}
	if c.MinSamples < 1 || c.MinFailures < 1 || c.ConsecutiveFailures < 1 || c.HalfOpenSuccesses < 1 || c.HalfOpenMaxInFlight < 1 {
		errs = append(errs, errors.New("counts must be at least 1"))
	}
	if c.MaxCooldown < c.Cooldown {
		errs = append(errs, fmt.Errorf("max cooldown %v is shorter than cooldown %v", c.MaxCooldown, c.Cooldown))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("health: %w", err)
	}
	return nil
}

// Event reports a backend's state change.
type Event struct {
	Backend string    `json:"backend"`
	From    State     `json:"from"`
	To      State     `json:"to"`
	At      time.Time `json:"at"`
	// Reason says why: "error rate", "consecutive failures", "cooldown
	// elapsed", "trial failed", "trials succeeded".
	Reason string `json:"reason"`
	// ErrorRate and Samples describe the window when the backend went out.
	ErrorRate float64 `json:"error_rate"`
	Samples   int     `json:"samples"`
	// Cooldown is how long the backend stays out (To == Open).
	Cooldown time.Duration `json:"cooldown_ns,omitempty"`
	// Kind is the outcome that caused the change, if one did.
	Kind Kind `json:"kind"`
}

// Tracker holds the health of every backend. Backends are created on first
// Record (or Backend); Available on a backend never seen is true.
type Tracker struct {
	cfg    Config
	origin time.Time

	mu       sync.Mutex // serialises adding and removing backends
	backends atomic.Pointer[map[string]*Backend]
}

// New returns a tracker, or an error naming the invalid config fields.
func New(cfg Config) (*Tracker, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	t := &Tracker{cfg: cfg, origin: cfg.Now()}
	m := map[string]*Backend{}
	t.backends.Store(&m)
	return t, nil
}

// Config returns the tracker's config with defaults applied.
func (t *Tracker) Config() Config { return t.cfg }

// now returns the time in ns since the tracker's origin. With the real
// clock both readings carry Go's monotonic clock, so wall-clock jumps do not
// disturb the window.
func (t *Tracker) now() int64 {
	d := t.cfg.Now().Sub(t.origin)
	if d < 0 {
		return 0
	}
	return int64(d)
}

func (t *Tracker) at(ns int64) time.Time { return t.origin.Add(time.Duration(ns)) }

// lookup returns the backend named name, or nil; it never allocates.
func (t *Tracker) lookup(name string) *Backend { return (*t.backends.Load())[name] }

// Backend returns the backend named name, creating it (healthy, empty
// window) if needed. Holding the *Backend spares the hot path a map lookup.
func (t *Tracker) Backend(name string) *Backend {
	if b := t.lookup(name); b != nil {
		return b
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.backends.Load()
	if b := old[name]; b != nil {
		return b
	}
	b := newBackend(t, name)
	// Copy on write: readers never lock, and backends are added rarely
	// (once per configured provider).
	m := make(map[string]*Backend, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[name] = b
	t.backends.Store(&m)
	return b
}

// Remove forgets a backend (a provider removed by a config reload). A
// *Backend still held keeps working but is no longer in Snapshot.
func (t *Tracker) Remove(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.backends.Load()
	if _, ok := old[name]; !ok {
		return
	}
	m := make(map[string]*Backend, len(old))
	for k, v := range old {
		if k != name {
			m[k] = v
		}
	}
	t.backends.Store(&m)
}

// Names returns the known backends' names, sorted.
func (t *Tracker) Names() []string {
	m := *t.backends.Load()
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Available reports whether routing may pick the backend now: true when
// healthy (or never seen), false when out, and in half-open true only while
// a trial slot is free. It takes nothing; call Allow on the backend actually
// chosen.
func (t *Tracker) Available(name string) bool {
	b := t.lookup(name)
	return b == nil || b.Available()
}

// Allow is Available that, in half-open, also takes a trial slot, released
// by the attempt's Record (or reclaimed after Config.TrialTimeout). Call it
// once for the backend a request is about to be sent to; on false, pick
// another.
func (t *Tracker) Allow(name string) bool {
	b := t.lookup(name)
	if b == nil {
		return true
	}
	return b.Allow()
}

// BackingOff reports whether the backend answered 429 and the wait it asked
// for (or RateLimitBackoff) is still running: pick it last, not never.
func (t *Tracker) BackingOff(name string) bool {
	b := t.lookup(name)
	return b != nil && b.backingOff()
}

// Record counts one upstream attempt's outcome against the backend; see
// Backend.Record.
func (t *Tracker) Record(name string, o Outcome) { t.Backend(name).Record(o) }

// Snapshot returns every backend's health, sorted by name.
func (t *Tracker) Snapshot() []Snapshot {
	m := *t.backends.Load()
	out := make([]Snapshot, 0, len(m))
	for _, b := range m {
		out = append(out, b.Snapshot())
	}
	slices.SortFunc(out, func(a, b Snapshot) int {
		switch {
		case a.Backend < b.Backend:
			return -1
		case a.Backend > b.Backend:
			return 1
		}
		return 0
	})
	return out
}

// Get returns one backend's health; false if the backend was never seen.
func (t *Tracker) Get(name string) (Snapshot, bool) {
	b := t.lookup(name)
	if b == nil {
		return Snapshot{}, false
	}
	return b.Snapshot(), true
}

// Snapshot is one backend's health at a moment: for an admin endpoint,
// /v1/models metadata, X-Bardo-* headers and routing's latency budgets.
type Snapshot struct {
	Backend string    `json:"backend"`
	State   State     `json:"state"`
	Status  Status    `json:"status"`
	Since   time.Time `json:"since"` // when the current state began
	// RetryAt is when an out backend becomes half-open (zero otherwise).
	RetryAt time.Time `json:"retry_at,omitzero"`
	// BackoffUntil is when a backend that answered 429 may be sent to again
	// (zero when it is not backing off).
	BackoffUntil time.Time `json:"backoff_until,omitzero"`
	// Window counts: counted attempts, failures, and failures by kind.
	Samples     int     `json:"samples"`
	Errors      int     `json:"errors"`
	ErrorRate   float64 `json:"error_rate"`
	Connect     int     `json:"connect_errors"`
	Timeouts    int     `json:"timeouts"`
	ServerErr   int     `json:"server_errors"`
	RateLimited int     `json:"rate_limited"`
	// ClientErrors counts 4xx answers in the window (not part of Samples).
	ClientErrors        int `json:"client_errors"`
	ConsecutiveFailures int `json:"consecutive_failures"`
	// Latency percentiles of successful attempts in the window (0 when
	// none), and how many there were.
	P50            time.Duration `json:"p50_ns"`
	P90            time.Duration `json:"p90_ns"` // the backend-scoring formula's figure
	P95            time.Duration `json:"p95_ns"`
	LatencySamples int           `json:"latency_samples"`
	// Trips counts how often the backend went out since it was created;
	// Cooldown is the length of the current or last time out.
	Trips        uint64        `json:"trips"`
	Cooldown     time.Duration `json:"cooldown_ns,omitempty"`
	Probes       uint64        `json:"probes"`
	LastActivity time.Time     `json:"last_activity,omitzero"`
}

// Backend is one backend's breaker and window.
type Backend struct {
	name string
	t    *Tracker

	// Read without the lock by Available; written under mu.
	state     atomic.Uint32
	openUntil atomic.Int64 // ns since origin; meaningful when Open
	trials    atomic.Int32 // half-open slots held
	// backoff is when a 429's back-off ends (ns since origin), 0 for none.
	backoff atomic.Int64

	mu           sync.Mutex
	win          window
	since        int64 // ns since origin the current state began
	consec       int
	level        uint // cooldown doublings for the next open
	halfOK       int
	trialStarts  []int64
	trips        uint64
	probes       uint64
	cooldown     time.Duration
	lastActivity int64 // -1: none
}

func newBackend(t *Tracker, name string) *Backend {
	return &Backend{
		name:         name,
		t:            t,
		win:          newWindow(t.cfg.Window, t.cfg.Bucket),
		trialStarts:  make([]int64, 0, t.cfg.HalfOpenMaxInFlight),
		lastActivity: -1,
	}
}

// Name returns the backend's name.
func (b *Backend) Name() string { return b.name }

// State returns the current state (an out backend whose cooldown has
// elapsed reads as HalfOpen).
func (b *Backend) State() State {
	s := State(b.state.Load())
	if s == Open && b.t.now() >= b.openUntil.Load() {
		return HalfOpen
	}
	return s
}

// events collects the state changes of one call, fired after unlocking.
type events struct {
	n  int
	ev [2]Event
}

func (e *events) add(ev Event) {
	if e.n < len(e.ev) {
		e.ev[e.n] = ev
		e.n++
	}
}

func (b *Backend) fire(e *events) {
	if e.n == 0 || b.t.cfg.OnChange == nil {
		return
	}
	for i := 0; i < e.n; i++ {
		b.t.cfg.OnChange(e.ev[i])
	}
}

// Available reports whether the backend may be picked now; see
// Tracker.Available.
func (b *Backend) Available() bool {
	switch State(b.state.Load()) {
	case Closed:
		return true
	case HalfOpen:
		if int(b.trials.Load()) < b.t.cfg.HalfOpenMaxInFlight {
			return true
		}
	case Open:
		if b.t.now() < b.openUntil.Load() {
			return false
		}
	}
	// Cooldown elapsed, or every trial slot is taken (maybe by a lost
	// request): settle under the lock.
	var e events
	now := b.t.now()
	b.mu.Lock()
	b.refresh(now, &e)
	ok := State(b.state.Load()) == Closed || (b.reclaim(now) && len(b.trialStarts) < b.t.cfg.HalfOpenMaxInFlight)
	b.mu.Unlock()
	b.fire(&e)
	return ok
}

// Allow reports whether a request may be sent now and, in half-open, takes
// a trial slot for it; see Tracker.Allow.
func (b *Backend) Allow() bool {
	if State(b.state.Load()) == Closed {
		return true
	}
	var e events
	now := b.t.now()
	b.mu.Lock()
	ok := b.allow(now, &e)
	b.mu.Unlock()
	b.fire(&e)
	return ok
}

func (b *Backend) allow(now int64, e *events) bool {
	b.refresh(now, e)
	switch State(b.state.Load()) {
	case Closed:
		return true
	case Open:
		return false
	}
	b.reclaim(now)
	if len(b.trialStarts) >= b.t.cfg.HalfOpenMaxInFlight {
		return false
	}
	b.trialStarts = append(b.trialStarts, now)
	b.trials.Store(int32(len(b.trialStarts)))
	return true
}

// backingOff reports whether a 429's back-off is running; the clock is read
// only while one is set, so the healthy path stays one atomic load.
func (b *Backend) backingOff() bool {
	u := b.backoff.Load()
	if u == 0 {
		return false
	}
	if b.t.now() < u {
		return true
	}
	b.backoff.CompareAndSwap(u, 0)
	return false
}

// reclaim drops trial slots held longer than TrialTimeout; it returns true
// for chaining.
func (b *Backend) reclaim(now int64) bool {
	limit := now - int64(b.t.cfg.TrialTimeout)
	kept := b.trialStarts[:0]
	for _, s := range b.trialStarts {
		if s > limit {
			kept = append(kept, s)
		}
	}
	b.trialStarts = kept
	b.trials.Store(int32(len(kept)))
	return true
}

// refresh makes the lazy Open → HalfOpen transition once the cooldown has
// elapsed. The half-open state is dated from the cooldown's end, not from
// when someone noticed, so staleness checks do not depend on traffic.
func (b *Backend) refresh(now int64, e *events) {
	if State(b.state.Load()) != Open {
		return
	}
	until := b.openUntil.Load()
	if now < until {
		return
	}
	b.setState(HalfOpen, until)
	b.halfOK = 0
	b.trialStarts = b.trialStarts[:0]
	b.trials.Store(0)
	e.add(Event{Backend: b.name, From: Open, To: HalfOpen, At: b.t.at(until), Reason: "cooldown elapsed"})
}

func (b *Backend) setState(s State, at int64) {
	b.state.Store(uint32(s))
	b.since = at
}

// Record counts one upstream attempt's outcome.
//
// The attempt is dated to have started at now − o.Latency. An outcome that
// started before the backend's current state began is stale: it describes
// the backend as it was (a request sent before an outage, finishing after
// recovery) and is ignored, apart from releasing a trial slot. Client and
// Canceled outcomes never enter the window; in half-open a Client answer
// still counts as a successful trial, since the backend answered coherently.
func (b *Backend) Record(o Outcome) {
	var e events
	now := b.t.now()
	b.mu.Lock()
	b.record(now, o, &e)
	b.mu.Unlock()
	b.fire(&e)
}

func (b *Backend) record(now int64, o Outcome, e *events) {
	b.refresh(now, e)
	b.lastActivity = now
	if o.Probe {
		b.probes++
	}
	st := State(b.state.Load())
	if st == HalfOpen && len(b.trialStarts) > 0 {
		// Release the oldest slot: outcomes carry no slot identity, and the
		// oldest is the one most likely to belong to a finished attempt.
		copy(b.trialStarts, b.trialStarts[1:])
		b.trialStarts = b.trialStarts[:len(b.trialStarts)-1]
		b.trials.Store(int32(len(b.trialStarts)))
	}
	if max(now-int64(o.Latency), 0) < b.since {
		return // stale
	}
	switch {
	case o.Kind == Canceled:
		return
	case o.Kind == Client:
		b.win.add(now, Client, 0) // kept for the snapshot, not counted
		if st == HalfOpen {
			b.trialSuccess(now, o, e)
		}
		return
	case o.Kind == RateLimited:
		// The backend answered: slow down. Back off for the wait it asked
		// for; it is not an outage, so neither the rate nor the run moves,
		// and a trial that gets a 429 found the backend up.
		b.win.add(now, RateLimited, 0)
		b.consec = 0
		d := o.RetryAfter
		if d <= 0 {
			d = b.t.cfg.RateLimitBackoff
		}
		if until := now + int64(min(d, b.t.cfg.MaxCooldown)); until > b.backoff.Load() {
			b.backoff.Store(until)
		}
		if st == HalfOpen {
			b.trialSuccess(now, o, e)
		}
		return
	case o.Kind == OK:
		b.win.add(now, OK, o.Latency)
		b.consec = 0
		if st == HalfOpen {
			b.trialSuccess(now, o, e)
		}
		return
	}
	// A failure. Only connection failures make a run: a 5xx or a timeout
	// may be the request's own doing, so they need the window's evidence,
	// counted once per request.
	if !o.Retry {
		b.win.add(now, o.Kind, 0)
	}
	switch o.Kind {
	case Connect:
		b.consec++
	case Server:
		b.consec = 0 // it answered
	}
	cfg := &b.t.cfg
	switch st {
	case Closed:
		switch {
		case b.consec >= cfg.ConsecutiveFailures:
			b.open(now, o, "consecutive failures", e)
		case int(b.win.n) >= cfg.MinSamples && int(b.win.errs) >= cfg.MinFailures && b.win.rate() > cfg.ErrorRate:
			b.open(now, o, "error rate", e)
		}
	case HalfOpen:
		b.open(now, o, "trial failed", e)
	}
}

func (b *Backend) trialSuccess(now int64, o Outcome, e *events) {
	b.halfOK++
	if b.halfOK < b.t.cfg.HalfOpenSuccesses {
		return
	}
	from := State(b.state.Load())
	b.setState(Closed, now)
	b.win.clear(now / b.win.width) // a fresh start: old errors must not re-trip it
	b.consec, b.halfOK = 0, 0
	b.trialStarts = b.trialStarts[:0]
	b.trials.Store(0)
	e.add(Event{Backend: b.name, From: from, To: Closed, At: b.t.at(now), Reason: "trials succeeded", Kind: o.Kind})
}

func (b *Backend) open(now int64, o Outcome, reason string, e *events) {
	from := State(b.state.Load())
	cfg := &b.t.cfg
	if from == Closed && now-b.since >= int64(cfg.Window) {
		// It had been healthy for a whole window: a new incident, not a
		// relapse.
		b.level = 0
	}
	cd := cfg.Cooldown
	for i := uint(0); i < b.level && cd < cfg.MaxCooldown; i++ {
		cd *= 2
	}
	cd = min(cd, cfg.MaxCooldown)
	if b.level < 32 {
		b.level++
	}
	if o.RetryAfter > cd {
		cd = min(o.RetryAfter, cfg.MaxCooldown)
	}
	ev := Event{Backend: b.name, From: from, To: Open, At: b.t.at(now), Reason: reason,
		ErrorRate: b.win.rate(), Samples: int(b.win.n), Cooldown: cd, Kind: o.Kind}
	b.openUntil.Store(now + int64(cd))
	b.setState(Open, now)
	b.cooldown = cd
	b.trips++
	b.halfOK = 0
	b.trialStarts = b.trialStarts[:0]
	b.trials.Store(0)
	e.add(ev)
}

// Latency returns the window's p50 and p95 latency of successful attempts
// and how many there were (0, 0, 0 when none).
func (b *Backend) Latency() (p50, p95 time.Duration, n int) {
	now := b.t.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.win.advance(now)
	return b.win.quantile(0.50), b.win.quantile(0.95), int(b.win.latN)
}

// Quantile estimates the q-quantile (0 < q ≤ 1) of the window's successful
// attempt latencies, within about ±11 %; 0 when there are none.
func (b *Backend) Quantile(q float64) time.Duration {
	now := b.t.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.win.advance(now)
	return b.win.quantile(q)
}

// Snapshot returns the backend's health now.
func (b *Backend) Snapshot() Snapshot {
	var e events
	now := b.t.now()
	b.mu.Lock()
	b.refresh(now, &e)
	b.win.advance(now)
	w := &b.win
	st := State(b.state.Load())
	s := Snapshot{
		Backend:             b.name,
		State:               st,
		Since:               b.t.at(b.since),
		Samples:             int(w.n),
		Errors:              int(w.errs),
		ErrorRate:           w.rate(),
		Connect:             int(w.kinds[Connect]),
		Timeouts:            int(w.kinds[Timeout]),
		ServerErr:           int(w.kinds[Server]),
		RateLimited:         int(w.kinds[RateLimited]),
		ClientErrors:        int(w.kinds[Client]),
		ConsecutiveFailures: b.consec,
		P50:                 w.quantile(0.50),
		P90:                 w.quantile(0.90),
		P95:                 w.quantile(0.95),
		LatencySamples:      int(w.latN),
		Trips:               b.trips,
		Cooldown:            b.cooldown,
		Probes:              b.probes,
	}
	if b.lastActivity >= 0 {
		s.LastActivity = b.t.at(b.lastActivity)
	}
	backoff := false
	if u := b.backoff.Load(); u > now {
		s.BackoffUntil = b.t.at(u)
		backoff = true
	}
	switch st {
	case Open:
		s.Status = StatusDown
		s.RetryAt = b.t.at(b.openUntil.Load())
	case HalfOpen:
		s.Status = StatusDegraded
	default:
		switch {
		case backoff:
			s.Status = StatusDegraded
		case w.n == 0:
			s.Status = StatusUnknown
		case w.rate() > b.t.cfg.ErrorRate/2:
			s.Status = StatusDegraded
		default:
			s.Status = StatusHealthy
		}
	}
	b.mu.Unlock()
	b.fire(&e)
	return s
}

// probeView returns what the Prober needs to schedule: the state (after the
// lazy transition), when an out backend turns half-open, and the last
// activity (-1: none), all in ns since origin.
func (b *Backend) probeView(now int64) (st State, openUntil, lastActivity int64) {
	var e events
	b.mu.Lock()
	b.refresh(now, &e)
	st, openUntil, lastActivity = State(b.state.Load()), b.openUntil.Load(), b.lastActivity
	b.mu.Unlock()
	b.fire(&e)
	return st, openUntil, lastActivity
}
