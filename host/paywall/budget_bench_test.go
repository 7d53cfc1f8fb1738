package paywall

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// BenchmarkBudgetHold is what the budgets add to a paid request once its
// wallet is loaded: the check and hold at admission, and the release at
// the tab's close (no store read within the refresh interval).
func BenchmarkBudgetHold(b *testing.B) {
	p := &Paywall{cfg: Config{DayBudget: 1 << 50, MonthBudget: 1 << 50, BudgetRefresh: time.Hour, Now: time.Now, Log: slog.Default()},
		purses: map[string]*purse{}}
	const tenant = "wallet:0x209693bc6afc0c5328ba36faf03c514ef312287c"
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		u, e := p.hold(ctx, tenant, 21600)
		if e != nil {
			b.Fatal(e)
		}
		p.release(u, 21600, 21600)
	}
}
