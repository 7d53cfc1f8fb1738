package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"strings"

	"github.com/bardoinference/bardo/host/store"
)

// walletRe matches an x402 wallet's tenant, "wallet:0x<address>"
// (host/paywall), in any case.
var walletRe = regexp.MustCompile(`^(?i:wallet:0x[0-9a-f]{40})$`)

// walletSubject returns id lower-cased, as the paywall names a wallet's
// tenant, and true when id is a wallet's.
func walletSubject(id string) (string, bool) {
	if !walletRe.MatchString(id) {
		return id, false
	}
	return strings.ToLower(id), true
}

// SetBudget sets or (Limit 0) removes a spending budget; see
// store.SpendBudgets. An x402 wallet ("wallet:0x…", scope account) has no
// account until its first budget: one is created for it then (tier free,
// zero balance), so its budgets are stored, listed and shown like an
// account's. host/paywall enforces them.
func (s *Store) SetBudget(ctx context.Context, b store.SpendBudget) error {
	if b.Scope != store.ScopeKey && b.Scope != store.ScopeAccount {
		return fmt.Errorf("store: budget scope %q: must be key or account", b.Scope)
	}
	if b.Period != store.PeriodDay && b.Period != store.PeriodMonth {
		return fmt.Errorf("store: budget period %q: must be day or month", b.Period)
	}
	if b.Limit < 0 {
		return fmt.Errorf("budget limit %d: %w", b.Limit, store.ErrInvalidAmount)
	}
	wallet := false
	if b.Scope == store.ScopeAccount {
		b.Subject, wallet = walletSubject(b.Subject)
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if wallet && b.Limit > 0 {
			if _, err := s.exec(ctx, tx, `INSERT INTO accounts(id, name, tier, created) VALUES (?, 'x402 wallet', ?, ?)
				ON CONFLICT(id) DO NOTHING`, b.Subject, string(store.TierFree), micros(s.now())); err != nil {
				return err
			}
		}
		acct := b.Subject
		q, what := `SELECT id FROM accounts WHERE id = ?`, "account"
		if b.Scope == store.ScopeKey {
			q, what = `SELECT account_id FROM keys WHERE id = ?`, "key"
		}
		if err := s.queryRow(ctx, tx, q, b.Subject).Scan(&acct); err != nil {
			if wallet && b.Limit == 0 && err == sql.ErrNoRows {
				return nil // a wallet without budgets: nothing to remove
			}
			return notFound(err, what)
		}
		if b.Limit == 0 {
			_, err := s.exec(ctx, tx, `DELETE FROM spend_budgets WHERE scope = ? AND subject = ? AND period = ?`,
				string(b.Scope), b.Subject, string(b.Period))
			return err
		}
		_, err := s.exec(ctx, tx, `INSERT INTO spend_budgets(scope, subject, period, account_id, limit_micros)
			VALUES (?, ?, ?, ?, ?) ON CONFLICT(scope, subject, period) DO UPDATE SET limit_micros = excluded.limit_micros`,
			string(b.Scope), b.Subject, string(b.Period), acct, b.Limit)
		return err
	})
}

// ListBudgets returns an account's budgets and its keys', ordered by scope,
// subject and period.
func (s *Store) ListBudgets(ctx context.Context, accountID string) ([]store.SpendBudget, error) {
	accountID, _ = walletSubject(accountID)
	rows, err := s.r.QueryContext(ctx, `SELECT scope, subject, period, account_id, limit_micros FROM spend_budgets
		WHERE account_id = ? ORDER BY scope, subject, period`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.SpendBudget
	for rows.Next() {
		var b store.SpendBudget
		var scope, period string
		if err := rows.Scan(&scope, &b.Subject, &period, &b.AccountID, &b.Limit); err != nil {
			return nil, err
		}
		b.Scope, b.Period = store.BudgetScope(scope), store.BudgetPeriod(period)
		out = append(out, b)
	}
	return out, rows.Err()
}
