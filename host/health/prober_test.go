package health

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to 5 s: a bound on a wait, not a timing
// assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// settled waits until backend b's probe count reaches n and the prober has
// finished bookkeeping for it.
func settled(t *testing.T, p *Prober, b string, n uint64) {
	t.Helper()
	waitFor(t, "probe", func() bool {
		if probes(p.t, b) != n {
			return false
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		tg := p.targets[b]
		return tg == nil || !tg.running
	})
}

func probes(tr *Tracker, b string) uint64 {
	s, _ := tr.Get(b)
	return s.Probes
}

// statusProbe returns a probe answering status and counting its calls.
func statusProbe(status *atomic.Int32, calls *atomic.Int32) ProbeFunc {
	return func(context.Context) (int, error) {
		calls.Add(1)
		return int(status.Load()), nil
	}
}

func TestProberRecoversOutBackend(t *testing.T) {
	tr, clk, log := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{Interval: 30 * time.Second, Jitter: 0.2, Rand: func() float64 { return 0.5 }})
	defer p.Close()
	var status, calls atomic.Int32
	status.Store(200)
	p.Set("a", statusProbe(&status, &calls))

	trip(tr, "a")
	p.Tick() // out: schedules the first probe at cooldown end + 3 s jitter
	clk.Advance(30 * time.Second)
	p.Tick()
	if calls.Load() != 0 {
		t.Fatal("probed before cooldown + jitter")
	}
	for i := 1; i <= 3; i++ {
		clk.Advance(3 * time.Second)
		p.Tick()
		settled(t, p, "a", uint64(i))
		if calls.Load() != int32(i) {
			t.Fatalf("calls = %d, want %d", calls.Load(), i)
		}
		p.Tick() // not due again yet
		if calls.Load() != int32(i) {
			t.Fatal("probed twice within the interval")
		}
		clk.Advance(30 * time.Second)
	}
	if s, _ := tr.Get("a"); s.State != Closed {
		t.Fatalf("not recovered after 3 good probes: %v", s.State)
	}
	last := log.all()[len(log.all())-1]
	if last.To != Closed || last.Reason != "trials succeeded" {
		t.Errorf("last event %+v", last)
	}
	// Healthy and recently active: no probe.
	p.Tick()
	if calls.Load() != 3 {
		t.Error("probed a healthy, active backend")
	}
	// Idle for IdleAfter: probed.
	clk.Advance(5 * time.Minute)
	p.Tick()
	settled(t, p, "a", 4)
}

func TestProberFailedProbeReopens(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{Jitter: -1}) // no jitter
	defer p.Close()
	var status, calls atomic.Int32
	status.Store(503)
	p.Set("a", statusProbe(&status, &calls))
	trip(tr, "a")
	p.Tick()
	clk.Advance(30 * time.Second)
	p.Tick()
	settled(t, p, "a", 1)
	s, _ := tr.Get("a")
	if s.State != Open || s.Cooldown != time.Minute {
		t.Fatalf("after a failed probe: %v for %v, want out for 1m", s.State, s.Cooldown)
	}
}

func TestProberIgnoresBusyHealthyBackend(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{})
	defer p.Close()
	var status, calls atomic.Int32
	status.Store(200)
	p.Set("busy", statusProbe(&status, &calls))
	for range 20 {
		tr.Record("busy", ok(10))
		clk.Advance(time.Minute)
		p.Tick()
	}
	if calls.Load() != 0 {
		t.Errorf("busy healthy backend probed %d times", calls.Load())
	}
}

func TestProberFailingIdleProbeRepeatsAtInterval(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{Jitter: -1})
	defer p.Close()
	var status, calls atomic.Int32
	status.Store(500)
	p.Set("a", statusProbe(&status, &calls))
	p.Tick() // just configured: not idle yet
	if calls.Load() != 0 {
		t.Fatal("a backend was probed the moment it was configured")
	}
	clk.Advance(DefaultProbeIdle)
	p.Tick() // no attempt since it was configured: idle
	settled(t, p, "a", 1)
	// The failed probe is activity, but a failing healthy backend is
	// re-probed at Interval rather than after another IdleAfter.
	clk.Advance(30 * time.Second)
	p.Tick()
	settled(t, p, "a", 2)
	status.Store(200)
	clk.Advance(30 * time.Second)
	p.Tick()
	settled(t, p, "a", 3)
	clk.Advance(30 * time.Second)
	p.Tick()
	if calls.Load() != 3 {
		t.Error("a healthy backend whose probe passed was probed again before IdleAfter")
	}
}

func TestProberRespectsTrialSlots(t *testing.T) {
	tr, clk, _ := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{Jitter: -1})
	defer p.Close()
	var status, calls atomic.Int32
	status.Store(200)
	p.Set("a", statusProbe(&status, &calls))
	trip(tr, "a")
	p.Tick()
	clk.Advance(30 * time.Second)
	if !tr.Allow("a") { // a real request takes the only trial slot
		t.Fatal("no trial slot")
	}
	p.Tick()
	if calls.Load() != 0 {
		t.Fatal("probe ran while the only trial slot was taken")
	}
	tr.Record("a", ok(1))
	p.Tick()
	settled(t, p, "a", 1)
}

func TestProberSetRemove(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{})
	defer p.Close()
	var status, calls atomic.Int32
	p.Set("a", statusProbe(&status, &calls))
	p.Set("a", nil)
	p.Tick()
	if calls.Load() != 0 {
		t.Error("removed probe ran")
	}
}

func TestProbeNow(t *testing.T) {
	tr, _, _ := newTracker(t, nil)
	p := NewProber(tr, ProberConfig{})
	defer p.Close()
	if _, ok := p.ProbeNow(context.Background(), "none"); ok {
		t.Error("ProbeNow without a probe")
	}
	var status, calls atomic.Int32
	status.Store(200)
	p.Set("a", statusProbe(&status, &calls))
	if o, ok := p.ProbeNow(context.Background(), "a"); !ok || o.Kind != OK || !o.Probe {
		t.Errorf("ProbeNow = %+v, %v", o, ok)
	}
	trip(tr, "a")
	if _, ok := p.ProbeNow(context.Background(), "a"); ok {
		t.Error("ProbeNow ran against an out backend")
	}
}

// The real scheduler loop: probes run on their own, and Close stops every
// goroutine, including a probe blocked on the network.
func TestProberLoopAndCloseNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	tr, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := NewProber(tr, ProberConfig{Tick: 2 * time.Millisecond, IdleAfter: 5 * time.Millisecond, Interval: 5 * time.Millisecond})
	var calls atomic.Int32
	p.Set("quick", func(context.Context) (int, error) { calls.Add(1); return 200, nil })
	entered := make(chan struct{})
	var sawCancel atomic.Bool
	p.Set("stuck", func(ctx context.Context) (int, error) {
		close(entered)
		<-ctx.Done()
		sawCancel.Store(true)
		return 0, ctx.Err()
	})
	p.Start()
	p.Start() // idempotent
	waitFor(t, "idle probes", func() bool { return calls.Load() >= 2 })
	<-entered
	p.Close()
	p.Close() // idempotent
	if !sawCancel.Load() {
		t.Error("Close returned before the stuck probe saw its context cancelled")
	}
	if s, _ := tr.Get("stuck"); s.Samples != 0 || s.Errors != 0 {
		t.Errorf("a probe cancelled by Close was counted: %+v", s)
	}
	p.Tick() // after Close: nothing starts
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before })
}
