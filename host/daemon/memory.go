package daemon

import (
	"context"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/telemetry"
)

// applyMemoryLimit sets the Go runtime's soft memory limit from [server]
// memory_limit (0: none), unless GOMEMLIMIT is set: the operator's
// environment wins, as it does for the Go runtime itself. The limit is the
// process's, so the last daemon built in a process sets it.
func applyMemoryLimit(s config.Server, log interface{ Info(string, ...any) }) {
	if os.Getenv("GOMEMLIMIT") != "" {
		log.Info("memory limit from GOMEMLIMIT", "limit", os.Getenv("GOMEMLIMIT"))
		return
	}
	limit := s.MemoryLimit
	if limit <= 0 {
		limit = math.MaxInt64
	}
	if debug.SetMemoryLimit(limit) != limit && s.MemoryLimit > 0 {
		log.Info("memory limit", "limit", config.FormatSize(s.MemoryLimit))
	}
}

// idleRelease gives memory back once the gateway goes quiet: after the
// pipeline loads (or reloads), and after traffic once no request has
// started or ended for [server] idle_release and none is in flight, it
// shrinks every plugin pool to one fresh instance (sandbox.Plugin.Shrink)
// and returns the Go heap's free pages to the operating system
// (debug.FreeOSMemory) — once per idle period, never on a request's path.
// Without it a burst's instances, their grown linear memory and the heap's
// headroom stay resident for good.
type idleRelease struct {
	after    time.Duration
	manager  *pipeline.Manager
	metrics  *telemetry.Registry
	activity atomic.Uint64 // settlements and loads, bumped on the request's path

	mu      sync.Mutex
	pending string // "" (nothing to give back), "load" or "idle"

	stop chan struct{}
	done chan struct{}
}

func newIdleRelease(after time.Duration, m *pipeline.Manager, metrics *telemetry.Registry) *idleRelease {
	r := &idleRelease{after: after, manager: m, metrics: metrics, pending: "load",
		stop: make(chan struct{}), done: make(chan struct{})}
	return r
}

// Settled counts a request's end as activity (gateway.Observer).
func (r *idleRelease) Settled(gateway.Settlement) { r.activity.Add(1) }

// loaded marks a (re)loaded pipeline: what the old one and the load's
// garbage held is given back once the gateway is quiet.
func (r *idleRelease) loaded() {
	r.mu.Lock()
	r.pending = "load"
	r.mu.Unlock()
	r.activity.Add(1)
}

// start runs the idle watch until close.
func (r *idleRelease) start() {
	tick := max(r.after/5, 50*time.Millisecond)
	go func() {
		defer close(r.done)
		t := time.NewTicker(tick)
		defer t.Stop()
		seen, quiet := r.activity.Load(), time.Now()
		for {
			select {
			case <-r.stop:
				return
			case now := <-t.C:
				if a := r.activity.Load(); a != seen {
					seen, quiet = a, now
					r.mu.Lock()
					if r.pending == "" {
						r.pending = "idle"
					}
					r.mu.Unlock()
					continue
				}
				if now.Sub(quiet) < r.after || r.manager.InFlight() > 0 {
					continue
				}
				r.mu.Lock()
				reason := r.pending
				r.pending = ""
				r.mu.Unlock()
				if reason != "" {
					r.release(reason)
				}
			}
		}
	}()
}

// release shrinks the current pipeline's plugin pools to one instance each
// and returns free heap pages to the operating system.
func (r *idleRelease) release(reason string) {
	p, done := r.manager.Acquire()
	seen := map[*sandbox.Plugin]bool{}
	shrink := func(pl *sandbox.Plugin) {
		if pl != nil && !seen[pl] && !pl.Closed() {
			seen[pl] = true
			pl.Shrink(context.Background(), 1)
		}
	}
	for _, l := range p.Layers {
		shrink(l.Plugin)
	}
	for _, pr := range p.Providers {
		shrink(pr.Plugin)
	}
	done()
	debug.FreeOSMemory()
	r.metrics.Add("bardo_memory_releases_total", 1, "reason", reason)
}

func (r *idleRelease) close() {
	close(r.stop)
	<-r.done
}

// observers tells several observers of every settlement.
type observers []gateway.Observer

func (o observers) Settled(s gateway.Settlement) {
	for _, x := range o {
		x.Settled(s)
	}
}

// boundMemory applies the configuration's memory bounds: the kv store's
// budget (Options.KVBytes, when set, wins) and the Go memory limit. A
// reload applies them again.
func (d *Daemon) boundMemory(cfg *config.Config, opts Options) {
	kv := cfg.Server.KVMaxBytes
	if opts.KVBytes > 0 {
		kv = opts.KVBytes
	}
	d.KV.SetCapacity(kv)
	applyMemoryLimit(cfg.Server, d.Log)
}
