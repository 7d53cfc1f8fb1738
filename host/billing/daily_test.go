package billing

import (
	"context"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// The meter passes daily sums through: without them a caller's
// /v1/usage/daily was a 404 and its balance had no spend today or this
// month.
func TestMeterDailyUsage(t *testing.T) {
	e := newEnv(t, 0, nil)
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	if err := e.s.RecordUsage(ctx, store.Usage{RequestID: "r1", AccountID: "a", Charge: 700, At: at}); err != nil {
		t.Fatal(err)
	}
	days, err := e.m.DailyUsage(ctx, "a", at.Add(-24*time.Hour), at.Add(24*time.Hour))
	if err != nil || len(days) != 1 || days[0].Charge != 700 || !days[0].Day.Equal(time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("%+v %v", days, err)
	}
}
