package paywall_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/store"
)

// BenchmarkPayAdmission is what accepting an x402 payment adds to a
// request before it is served: detection, decoding, matching the offer,
// ecrecover over the EIP-712 digest and the nonce's INSERT in SQLite
// (the facilitator is only called at settlement). p50-µs is the median of
// the iterations.
func BenchmarkPayAdmission(b *testing.B) {
	b.Run("budgets=none", func(b *testing.B) { benchPay(b, nil, false) })
	// A default day budget and the store's per-wallet budgets: the
	// wallet's check and hold (its budgets re-read every 2 s).
	day := func(c *paywall.Config) { c.DayBudget, c.Budgets = 1<<50, c.Usage.(store.SpendBudgets) }
	b.Run("budgets=day", func(b *testing.B) { benchPay(b, day, false) })
	// Each payment from a wallet not seen before: its budgets and its
	// day's and month's spend are read from the store.
	b.Run("budgets=day/new-wallets", func(b *testing.B) { benchPay(b, day, true) })
	b.Run("budgets=none/new-wallets", func(b *testing.B) { benchPay(b, nil, true) })
	// The daemon's default: the store, no budget anywhere — a new
	// wallet's budgets are read, its spend is not summed.
	b.Run("budgets=store-only/new-wallets", func(b *testing.B) {
		benchPay(b, func(c *paywall.Config) { c.Budgets = c.Usage.(store.SpendBudgets) }, true)
	})
}

func benchPay(b *testing.B, conf func(*paywall.Config), newWallets bool) {
	r := newRig(b)
	if conf != nil {
		r.conf = conf
		r.open()
	}
	key := wallet(b)
	hs := make([]auth.HTTPHeader, b.N)
	for i := range hs {
		if newWallets {
			key = wallet(b)
		}
		hs[i] = newPayment(b, r, key).headers(b)
	}
	lat := make([]time.Duration, b.N)
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if _, e := r.keys.Admit(context.Background(), admission(hs[i])); e != nil {
			b.Fatal(e)
		}
		lat[i] = time.Since(t0)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
}

// BenchmarkChallenge is the 402 of a request without a credential.
func BenchmarkChallenge(b *testing.B) {
	r := newRig(b)
	a := admission(auth.HTTPHeader{})
	b.ResetTimer()
	for range b.N {
		if _, e := r.keys.Admit(context.Background(), a); e == nil {
			b.Fatal("admitted")
		}
	}
}
