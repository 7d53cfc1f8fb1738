package sandbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/telemetry"
)

// The sandbox's own metrics reach a telemetry registry: call latency, a
// trap as a failure of kind trap with its instance discarded and replaced,
// the pool size, and a call that queued for a busy pool.
func TestHostMetrics(t *testing.T) {
	m := telemetry.New()
	o := faultOptions(t, "panic")
	o.PoolSize, o.Metrics = 1, m
	p := loadFault(t, o)
	mustGood(t, p, "panic", "hello")
	if _, err := callText(context.Background(), p, "panic now"); err == nil {
		t.Fatal("the panic call succeeded")
	}
	mustGood(t, p, "panic", "hello again")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"bardo_sandbox_call_seconds", []string{"plugin", "panic", "op", "bardo_on_request"}, 3},
		{"bardo_sandbox_call_failures_total", []string{"plugin", "panic", "op", "bardo_on_request", "kind", "trap"}, 1},
		{"bardo_sandbox_instances_created_total", []string{"plugin", "panic"}, 2},
		{"bardo_sandbox_instances_discarded_total", []string{"plugin", "panic"}, 1},
		{"bardo_sandbox_pool_size", []string{"plugin", "panic"}, 1},
		{"bardo_telemetry_dropped_total", []string{"reason", "undeclared"}, 0},
	} {
		if v := m.Value(c.name, c.labels...); v != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, v, c.want)
		}
	}

	o = faultOptions(t, "slow")
	o.PoolSize, o.Metrics = 1, m
	s := loadFault(t, o)
	done := make(chan error, 1)
	go func() { _, err := callText(context.Background(), s, "sleep 300ms"); done <- err }()
	// Wait (bounded) until the sleeping call holds the only instance.
	for i := 0; ; i++ {
		if idle, _, slots := s.PoolState(); idle == 0 && slots == 1 {
			break
		}
		if i == 200 {
			t.Fatal("the first call never took the instance")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mustGood(t, s, "slow", "queued")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := m.Value("bardo_sandbox_pool_waits_total", "plugin", "slow"); v < 1 {
		t.Errorf("pool waits = %v, want ≥ 1", v)
	}
}
