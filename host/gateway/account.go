package gateway

import (
	"context"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// AccountReader is what a caller's account endpoints (GET /v1/balance,
// GET /v1/usage) read: the billing meter implements it (host/billing), so
// the balance a caller reads counts the money its open requests hold.
type AccountReader interface {
	// AccountStatus is the account's live state as key sees it.
	AccountStatus(ctx context.Context, account, key string) (AccountStatus, error)
	// Usage pages the account's usage records, newest first.
	Usage(ctx context.Context, q store.UsageQuery) (store.UsagePage, error)
}

// AccountStatus is an account's balance, limits and budgets, in micro-USD
// and tokens.
type AccountStatus struct {
	Account   string
	Tier      string
	Balance   int64 // posted: Σ ledger entries
	Held      int64 // reserved by requests in flight
	Available int64 // Balance − Held
	// LowBalance is true below the warning threshold ($1.00, spec 003).
	LowBalance bool
	// RemainingTokens is what is left of the hourly token allowance
	// (−1: unlimited), until TokensReset.
	RemainingTokens int64
	TokensReset     time.Time
	// RateLimit is the key's requests per minute (0: unlimited).
	RateLimit int
	Budgets   []BudgetStatus
}

// BudgetStatus is one spending cap and how much of it is used.
type BudgetStatus struct {
	Scope  string // "key" or "account"
	Period string // "day" or "month"
	Limit  int64
	Spent  int64 // charged plus held, this period
	Resets time.Time
}
