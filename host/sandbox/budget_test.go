package sandbox_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// lateMetrics records plugin metrics; panics, when set, makes recording
// panic (a fault in the host's own code during a call).
type lateMetrics struct {
	mu     sync.Mutex
	counts map[string]float64
	panics bool
}

func (m *lateMetrics) PluginMetric(plugin string, kind int, name string, v float64) {
	if m.panics {
		panic("metrics backend failed")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]float64{}
	}
	m.counts[plugin+"/"+name] += v
}

// A trusted call over its time budget is kept and counted in the
// late_calls_total metric; one within it is not counted.
func TestTrustedOverBudgetIsAMetricNotAFailure(t *testing.T) {
	m := &lateMetrics{}
	o := faultOptions(t, "slow")
	o.Trusted, o.Timeout, o.Metrics = true, 30*time.Millisecond, m
	p := loadFault(t, o)
	mustGood(t, p, "slow", "slow 100ms") // the guest spins 100 ms: over budget whatever the load
	mustGood(t, p, "slow", "quick")
	if p.Late() < 1 || m.counts["slow/late_calls_total"] != float64(p.Late()) {
		t.Fatalf("Late() = %d, metric = %v", p.Late(), m.counts)
	}
	checkPool(t, p, 2)
}

// The request's deadline bounds every plugin: once it has passed, no call
// starts (a trusted one could not be stopped, and its answer is not
// wanted), and the error says it was the request's time.
func TestNoCallAfterTheRequestIsOver(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		o := faultOptions(t, "slow")
		o.Trusted = trusted
		p := loadFault(t, o)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		st := time.Now()
		_, err := callText(ctx, p, "slow 1s")
		if !isTimeout(err) || time.Since(st) > 500*time.Millisecond {
			t.Fatalf("trusted=%v: err = %v after %v, want ErrTimeout at once", trusted, err, time.Since(st))
		}
		if inst, disc := p.Stats(); inst != 1 || disc != 0 {
			t.Errorf("trusted=%v: instantiated=%d discarded=%d: a call was made", trusted, inst, disc)
		}
		mustGood(t, p, "slow", "after")
	}
}

// A panic in the host's own code during a call (here the metrics backend,
// called for a late call) unwinds through Call to whoever recovers it (the
// HTTP server does): the instance's pool slot must not stay taken, or after
// PoolSize such panics every later call waits for an instance forever.
func TestPanicDuringCallFreesItsInstance(t *testing.T) {
	m := &lateMetrics{panics: true}
	o := faultOptions(t, "slow")
	o.Trusted, o.Timeout, o.Metrics, o.PoolSize = true, time.Millisecond, m, 1
	p := loadFault(t, o)
	for i := range 3 {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("call %d: the metrics panic did not reach the caller", i)
				}
			}()
			callText(context.Background(), p, "slow 20ms")
		}()
	}
	m.panics = false
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := callText(ctx, p, "after")
	if err := checkGood("slow", "after", res, err); err != nil {
		t.Fatalf("the pool did not serve after the panics: %v", err)
	}
	checkPool(t, p, 1)
}
