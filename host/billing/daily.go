package billing

import (
	"context"
	"errors"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/store"
)

var _ gateway.DailyUsageReader = (*Meter)(nil)

// DailyUsage sums an account's usage per UTC day from the store's
// rollups: it serves a caller's GET /v1/usage/daily and the spend today
// and this month of GET /v1/balance (gateway.DailyUsageReader).
func (m *Meter) DailyUsage(ctx context.Context, account string, from, to time.Time) ([]store.DailyUsage, error) {
	d, ok := m.st.(interface {
		DailyUsage(ctx context.Context, accountID string, from, to time.Time) ([]store.DailyUsage, error)
	})
	if !ok {
		return nil, errDaily
	}
	m.syncRead(ctx) // read your writes (Usage)
	return d.DailyUsage(ctx, account, from, to)
}

var errDaily = errors.New("billing: the store cannot sum usage per day")
