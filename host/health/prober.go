package health

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// ProbeFunc checks one backend cheaply — for instance GET <base_url>/models
// with the backend's credential — and returns the HTTP status or a transport
// error. It must honour ctx (the probe timeout, and Close).
type ProbeFunc func(ctx context.Context) (status int, err error)

// ProberConfig tunes a Prober. Zero fields take the defaults in brackets.
type ProberConfig struct {
	// Interval between probes of a backend on trial (half-open), and after
	// a failed probe of a healthy one [30s: the spec's 30-second pings].
	Interval time.Duration
	// IdleAfter: a healthy backend that has seen no attempt for this long
	// is probed, so the first request after a quiet spell does not find out
	// the hard way [5m: one window]. Busy healthy backends are never probed:
	// their traffic is the signal.
	IdleAfter time.Duration
	// Jitter delays each scheduled probe by a random fraction of its
	// interval, up to this much [0.2], so gateway replicas (and backends)
	// do not probe in lockstep.
	Jitter float64
	// Timeout bounds one probe [10s].
	Timeout time.Duration
	// Tick is the scheduler's resolution [1s]; tests use a few ms.
	Tick time.Duration
	// Rand returns a number in [0, 1) for jitter [math/rand/v2.Float64].
	Rand func() float64
}

// Prober defaults.
const (
	DefaultProbeInterval = 30 * time.Second
	DefaultProbeIdle     = 5 * time.Minute
	DefaultProbeJitter   = 0.2
	DefaultProbeTimeout  = 10 * time.Second
	DefaultProbeTick     = time.Second
)

// Prober actively pings backends that are out or idle and Records each
// probe's outcome on the Tracker, so a backend recovers (half-open → closed)
// without waiting for real traffic to risk itself on it.
//
// Scheduling, per backend with a ProbeFunc:
//   - out (open): no probe until the cooldown ends; the first probe is due
//     at the cooldown's end plus jitter;
//   - half-open: a probe every Interval (+ jitter), each taking a trial
//     slot like a real request, skipped while the slots are taken;
//   - healthy: a probe only after IdleAfter without any attempt, then
//     every Interval while probes keep failing;
//   - at most one probe in flight per backend.
//
// Start runs the scheduler; Close stops it and waits for every probe.
type Prober struct {
	t   *Tracker
	cfg ProberConfig

	mu      sync.Mutex
	targets map[string]*target

	tickMu sync.Mutex // one scheduling pass at a time

	ctx    context.Context
	cancel context.CancelFunc
	closed bool // under mu: no new probe goroutines
	wg     sync.WaitGroup
	start  sync.Once
}

type target struct {
	fn        ProbeFunc
	next      int64 // ns since origin; 0: none scheduled
	openUntil int64 // the open episode next was scheduled for
	running   bool
	failed    bool // the last probe failed
}

// NewProber returns a prober over t's backends. Register backends with Set,
// then Start.
func NewProber(t *Tracker, cfg ProberConfig) *Prober {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultProbeInterval
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = DefaultProbeIdle
	}
	if cfg.Jitter < 0 {
		cfg.Jitter = 0
	} else if cfg.Jitter == 0 {
		cfg.Jitter = DefaultProbeJitter
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultProbeTimeout
	}
	if cfg.Tick <= 0 {
		cfg.Tick = DefaultProbeTick
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Float64
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Prober{t: t, cfg: cfg, targets: map[string]*target{}, ctx: ctx, cancel: cancel}
}

// Set registers (or replaces) the probe of a backend; a nil fn removes it.
// Backends without a probe are never probed.
func (p *Prober) Set(backend string, fn ProbeFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if fn == nil {
		delete(p.targets, backend)
		return
	}
	if tg := p.targets[backend]; tg != nil {
		tg.fn = fn
		return
	}
	p.t.Backend(backend)
	// A backend just configured is not idle: its first probe, if no
	// request comes, is IdleAfter from now. (Probing at once made every
	// start and reload ping every provider, and raced a test's first
	// request to the upstream.)
	p.targets[backend] = &target{fn: fn, next: p.t.now() + int64(p.cfg.IdleAfter)}
}

// Start runs the scheduler in the background; calling it again does
// nothing.
func (p *Prober) Start() {
	p.start.Do(func() {
		p.wg.Add(1)
		go p.loop()
	})
}

// Close stops the scheduler, cancels probes in flight and waits for every
// goroutine the prober started. It is safe to call more than once.
func (p *Prober) Close() {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Prober) loop() {
	defer p.wg.Done()
	tk := time.NewTicker(p.cfg.Tick)
	defer tk.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-tk.C:
			p.Tick()
		}
	}
}

// jitter returns a random delay of up to Jitter × d, in ns.
func (p *Prober) jitter(d time.Duration) int64 {
	return int64(p.cfg.Rand() * p.cfg.Jitter * float64(d))
}

// Tick runs one scheduling pass now: it starts the probes that are due (in
// their own goroutines) and returns. The background loop calls it every
// Tick; tests with a fake clock call it directly.
func (p *Prober) Tick() {
	p.tickMu.Lock()
	defer p.tickMu.Unlock()
	type cand struct {
		name string
		tg   *target
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	cands := make([]cand, 0, len(p.targets))
	for name, tg := range p.targets {
		if !tg.running {
			cands = append(cands, cand{name, tg})
		}
	}
	p.mu.Unlock()

	now := p.t.now()
	for _, c := range cands {
		b := p.t.Backend(c.name)
		// The backend's lock and OnChange run outside p.mu, so a callback
		// may call back into the prober.
		st, openUntil, last := b.probeView(now)
		p.mu.Lock()
		tg := c.tg
		due := false
		switch st {
		case Open:
			if tg.openUntil != openUntil {
				tg.openUntil = openUntil
				tg.next = openUntil + p.jitter(p.cfg.Interval)
			}
		case HalfOpen:
			due = now >= tg.next
		case Closed:
			idle := last < 0 || now-last >= int64(p.cfg.IdleAfter)
			due = now >= tg.next && (idle || tg.failed)
		}
		p.mu.Unlock()
		if !due || !b.Allow() {
			continue
		}
		p.mu.Lock()
		if p.closed || p.targets[c.name] != tg {
			p.mu.Unlock()
			b.Record(Outcome{Kind: Canceled}) // give back the trial slot
			continue
		}
		tg.running = true
		p.wg.Add(1)
		p.mu.Unlock()
		go p.run(b, tg)
	}
}

func (p *Prober) run(b *Backend, tg *target) {
	defer p.wg.Done()
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.Timeout)
	start := p.t.now()
	status, err := tg.fn(ctx)
	cancel()
	end := p.t.now()
	k := Classify(status, err)
	if p.ctx.Err() != nil {
		k = Canceled // shutting down: says nothing about the backend
	}
	b.Record(Outcome{Kind: k, Latency: time.Duration(end - start), Probe: true})
	healthy := b.State() == Closed

	p.mu.Lock()
	defer p.mu.Unlock()
	tg.running = false
	tg.failed = k.Failure()
	if healthy && !tg.failed {
		// Healthy again: the idle rule decides the next probe.
		tg.next = 0
	} else {
		tg.next = end + int64(p.cfg.Interval) + p.jitter(p.cfg.Interval)
	}
}

// ProbeNow runs the backend's probe once, synchronously, and Records its
// outcome (an admin "check now"). It obeys the breaker like a request: it
// returns false, without probing, when the backend has no probe, is out, or
// has no free trial slot.
func (p *Prober) ProbeNow(ctx context.Context, backend string) (Outcome, bool) {
	p.mu.Lock()
	var fn ProbeFunc
	if tg := p.targets[backend]; tg != nil {
		fn = tg.fn
	}
	p.mu.Unlock()
	b := p.t.Backend(backend)
	if fn == nil || !b.Allow() {
		return Outcome{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	start := p.t.now()
	status, err := fn(ctx)
	o := Outcome{Kind: Classify(status, err), Latency: time.Duration(p.t.now() - start), Probe: true}
	b.Record(o)
	return o, true
}
