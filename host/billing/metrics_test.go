package billing

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The meter's gauges say what an account can still spend, as admission
// sees it: the available balance (less an open hold), the hourly
// allowance left, and each budget of the account and its key less charges
// and holds — and they follow a charge.
func TestCollectorRemaining(t *testing.T) {
	e := newEnv(t, 10_000_000, nil)
	ctx := context.Background()
	for _, b := range []store.SpendBudget{
		{Scope: store.ScopeKey, Subject: "k1", Period: store.PeriodDay, Limit: 100_000},
		{Scope: store.ScopeAccount, Subject: "a", Period: store.PeriodMonth, Limit: 2_000_000},
	} {
		if err := e.s.SetBudget(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.m.Collector())
	// labels are the values in the order the metric declares them.
	names := map[string][]string{
		"bardo_account_available_usd":    {"account"},
		"bardo_account_remaining_tokens": {"account"},
		"bardo_budget_remaining_usd":     {"scope", "subject", "period"},
	}
	gauge := func(name string, labels ...string) float64 {
		t.Helper()
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fams {
			if f.GetName() != name {
				continue
			}
		next:
			for _, m := range f.GetMetric() {
				for _, lp := range m.GetLabel() {
					i := slices.Index(names[name], lp.GetName())
					if i < 0 || lp.GetValue() != labels[i] {
						continue next
					}
				}
				return m.GetGauge().GetValue()
			}
		}
		t.Fatalf("%s%v not collected", name, labels)
		return 0
	}
	if n := testutil.CollectAndCount(e.m.Collector()); n != 0 {
		t.Fatalf("before any request: %d series", n)
	}

	// Sonnet, 1000 in / 1000 out at free's 25 %: an estimate of 23,438 held.
	c, werr := e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, sonnet))
	if werr != nil {
		t.Fatal(werr)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if got := gauge("bardo_account_available_usd", "a"); !near(got, 10-0.023438) {
		t.Fatalf("available while held: %v", got)
	}
	if got := gauge("bardo_budget_remaining_usd", "key", "k1", "day"); !near(got, 0.1-0.023438) {
		t.Fatalf("key's day budget while held: %v", got)
	}
	// Served 1000/1000: 18,000 × 1.25 = 22,500 charged.
	c.Tab.Close(e.served(sonnet, wire.Usage{InputTokens: 1000, OutputTokens: 1000}))
	e.sync()
	for _, tc := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"bardo_account_available_usd", []string{"a"}, 10 - 0.0225},
		{"bardo_budget_remaining_usd", []string{"key", "k1", "day"}, 0.1 - 0.0225},
		{"bardo_budget_remaining_usd", []string{"account", "a", "month"}, 2 - 0.0225},
		{"bardo_account_remaining_tokens", []string{"a"}, float64(e.m.tier(store.TierFree).TokensPerHour - 2000)},
	} {
		if got := gauge(tc.name, tc.labels...); !near(got, tc.want) {
			t.Errorf("%s%v = %v, want %v", tc.name, tc.labels, got, tc.want)
		}
	}
}
