package server

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Liveness answers /healthz: whether the gateway can serve a request now,
// not merely whether its HTTP loop runs. A process whose request path is
// wedged — a lock a recovered panic left held, plugin pools whose every
// instance is stuck, no pipeline — once answered 200 for 11 minutes while
// every chat request hung.
//
// Canaries run in the background through the same locks and pools a
// request takes, each in its own goroutine, every Interval; /healthz only
// reads their latest results, so it is cheap and never blocks. The gateway
// is not live when a canary failed (it honours its context's Timeout
// deadline and returned an error), or when one has been running longer than
// Timeout: a canary blocked on a lock that never comes free cannot report,
// so its age is the signal.
type Liveness struct {
	checks   []*canary
	interval time.Duration
	timeout  time.Duration

	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Check is one canary: Run must exercise a critical path (take a lock,
// borrow a plugin instance) and return an error if it cannot within ctx.
type Check struct {
	Name string
	Run  func(ctx context.Context) error
}

// LivenessConfig tunes the canaries; zero fields take the defaults.
type LivenessConfig struct {
	// Interval between canary runs [DefaultLivenessInterval].
	Interval time.Duration
	// Timeout is the longest a canary may take [DefaultLivenessTimeout]:
	// far above a healthy run (microseconds; a borrowed plugin instance
	// waits at most for one layer call), so an overloaded machine, whose
	// requests queue for instances for seconds, is not restarted by its
	// orchestrator for being busy: a liveness failure should mean wedged.
	Timeout time.Duration
}

// Liveness defaults.
const (
	DefaultLivenessInterval = 2 * time.Second
	DefaultLivenessTimeout  = 8 * time.Second
)

type canary struct {
	Check
	started atomic.Int64 // unix ns of the run in flight, 0 when idle
	mu      sync.Mutex
	err     error // the last run's result
}

// NewLiveness returns a Liveness over checks; Start runs it.
func NewLiveness(checks []Check, cfg LivenessConfig) *Liveness {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultLivenessInterval
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultLivenessTimeout
	}
	l := &Liveness{interval: cfg.Interval, timeout: cfg.Timeout, stop: make(chan struct{})}
	for _, c := range checks {
		l.checks = append(l.checks, &canary{Check: c})
	}
	return l
}

// Start runs every canary now and then every Interval until Close.
func (l *Liveness) Start() {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(l.interval)
		defer t.Stop()
		for {
			for _, c := range l.checks {
				l.launch(c)
			}
			select {
			case <-l.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// launch runs c unless its previous run is still in flight (then its age
// tells).
func (l *Liveness) launch(c *canary) {
	now := time.Now().UnixNano()
	if !c.started.CompareAndSwap(0, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
		defer cancel()
		err := runCheck(ctx, c.Run)
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		c.started.Store(0)
	}()
}

func runCheck(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return run(ctx)
}

// Close stops scheduling canaries (runs in flight finish on their own).
func (l *Liveness) Close() {
	l.once.Do(func() { close(l.stop) })
	l.wg.Wait()
}

// Status reports whether the gateway can serve; when not, why (every
// failing canary, sorted).
func (l *Liveness) Status() (ok bool, reason string) {
	now := time.Now().UnixNano()
	var why []string
	for _, c := range l.checks {
		if s := c.started.Load(); s != 0 && time.Duration(now-s) > l.timeout {
			why = append(why, fmt.Sprintf("%s: no answer for %s", c.Name, time.Duration(now-s).Round(time.Second)))
			continue
		}
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		if err != nil {
			why = append(why, c.Name+": "+err.Error())
		}
	}
	sort.Strings(why)
	return len(why) == 0, strings.Join(why, "; ")
}

// errNotLive is what a check returns when its deadline passed.
var errNotLive = errors.New("did not complete before the liveness deadline")

// PollLock is a Check helper for a lock without a context: it tries
// tryLock until it succeeds (then calls unlock) or ctx ends.
func PollLock(ctx context.Context, tryLock func() bool, unlock func()) error {
	for {
		if tryLock() {
			unlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return errNotLive
		case <-time.After(5 * time.Millisecond):
		}
	}
}
