package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/bardoinference/bardo/host/store"
)

// SetBudget sets or (Limit 0) removes a spending budget; see
// store.SpendBudgets.
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
	return s.write(ctx, func(tx *sql.Tx) error {
		acct := b.Subject
		q, what := `SELECT id FROM accounts WHERE id = ?`, "account"
		if b.Scope == store.ScopeKey {
			q, what = `SELECT account_id FROM keys WHERE id = ?`, "key"
		}
		if err := s.queryRow(ctx, tx, q, b.Subject).Scan(&acct); err != nil {
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
