package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// Every record lands in its minute's and hour's rollup in the transaction
// that writes it, and ImportUsage's grouped fold gives the same rollups as
// record-by-record writes.
func TestRollupsFollowUsage(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	recs := func(prefix string) []store.Usage {
		var us []store.Usage
		for i := range 150 {
			us = append(us, store.Usage{RequestID: fmt.Sprintf("%s-%d", prefix, i), AccountID: "acct",
				Provider: []string{"openai", "anthropic"}[i%2], Model: "m", InputTokens: 10, OutputTokens: 5,
				Cost: 100, Charge: 115, Savings: 7, Cache: []string{"miss", "hash-hit", "stale"}[i%3],
				LatencyMicros: 1000, Status: []int{200, 200, 200, 200, 502}[i%5], At: base.Add(time.Duration(i) * time.Minute)})
		}
		return us
	}
	one, bulk := open(t, t.TempDir()), open(t, t.TempDir())
	for _, u := range recs("r") {
		if err := one.RecordUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := bulk.ImportUsage(ctx, recs("r")); err != nil {
		t.Fatal(err)
	}
	for _, g := range []Grain{Minute, Hour, Day} {
		a, err := one.Rollups(ctx, g, base, base.Add(3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		b, err := bulk.Rollups(ctx, g, base, base.Add(3*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("%s: record-by-record and import disagree:\n%v\n%v", g, a, b)
		}
		var req, errs, hits, charge int64
		for _, r := range a {
			req, errs, hits, charge = req+r.Requests, errs+r.Errors, hits+r.CacheHits, charge+r.Charge
		}
		if req != 150 || errs != 30 || hits != 100 || charge != 150*115 {
			t.Fatalf("%s: requests %d errors %d hits %d charge %d", g, req, errs, hits, charge)
		}
	}
	hours, _ := one.Rollups(ctx, Hour, base, base.Add(3*time.Hour))
	if len(hours) != 6 || !hours[0].Bucket.Equal(base) || hours[0].Requests != 30 {
		t.Fatalf("hours: %+v", hours)
	}
	// A half-open range: the bucket that starts at to is not in it.
	mins, _ := one.Rollups(ctx, Minute, base, base.Add(10*time.Minute))
	if len(mins) != 10 {
		t.Fatalf("10 minutes gave %d rollups", len(mins))
	}
	daily, err := bulk.DailyUsage(ctx, "acct", base, base.Add(24*time.Hour))
	if err != nil || len(daily) != 1 || daily[0].Requests != 150 {
		t.Fatalf("daily after import: %+v %v", daily, err)
	}
	if err := bulk.ImportUsage(ctx, recs("r")[:1]); err == nil {
		t.Fatal("re-importing a request id succeeded")
	}
	if _, err := one.Rollups(ctx, "week", base, base); err == nil {
		t.Fatal("unknown grain accepted")
	}
}
