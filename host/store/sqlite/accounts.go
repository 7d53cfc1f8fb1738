package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// CreateAccount inserts a with a zero balance; the balance only ever moves
// through ledger entries (TopUp). a.ID must be set by the caller.
func (s *Store) CreateAccount(ctx context.Context, a store.Account) (store.Account, error) {
	if a.ID == "" {
		return a, fmt.Errorf("account id: %w", store.ErrInvalidAmount)
	}
	if a.Tier == "" {
		a.Tier = store.TierFree
	}
	if !a.Tier.Valid() {
		return a, fmt.Errorf("store: unknown tier %q", a.Tier)
	}
	a.Balance, a.Held = 0, 0
	if a.Created.IsZero() {
		a.Created = s.now()
	}
	a.Created = a.Created.UTC().Truncate(time.Microsecond)
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `INSERT INTO accounts(id, name, tier, disabled, created) VALUES (?, ?, ?, ?, ?)`,
			a.ID, a.Name, string(a.Tier), b2i(a.Disabled), micros(a.Created))
		return err
	})
	if isUnique(err) {
		return a, fmt.Errorf("account %s: %w", a.ID, store.ErrExists)
	}
	return a, err
}

const accountCols = `id, name, tier, balance, held, disabled, created`

func scanAccount(sc interface{ Scan(...any) error }) (store.Account, error) {
	var a store.Account
	var tier string
	var created int64
	err := sc.Scan(&a.ID, &a.Name, &tier, &a.Balance, &a.Held, &a.Disabled, &created)
	a.Tier, a.Created = store.Tier(tier), fromMicros(created)
	return a, err
}

// Account returns the account id.
func (s *Store) Account(ctx context.Context, id string) (store.Account, error) {
	a, err := scanAccount(s.r.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = ?`, id))
	return a, notFound(err, "account")
}

// ListAccounts returns every account ordered by id.
func (s *Store) ListAccounts(ctx context.Context) ([]store.Account, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+accountCols+` FROM accounts ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

func (s *Store) updateOne(ctx context.Context, what, q string, args ...any) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%s: %w", what, store.ErrNotFound)
		}
		return nil
	})
}

// SetAccountTier changes an account's tier.
func (s *Store) SetAccountTier(ctx context.Context, id string, t store.Tier) error {
	if !t.Valid() {
		return fmt.Errorf("store: unknown tier %q", t)
	}
	return s.updateOne(ctx, "account", `UPDATE accounts SET tier = ? WHERE id = ?`, string(t), id)
}

// SetAccountDisabled disables or re-enables an account; a disabled account
// cannot reserve.
func (s *Store) SetAccountDisabled(ctx context.Context, id string, disabled bool) error {
	return s.updateOne(ctx, "account", `UPDATE accounts SET disabled = ? WHERE id = ?`, b2i(disabled), id)
}

// CreateKey inserts k; its account must exist.
func (s *Store) CreateKey(ctx context.Context, k store.Key) error {
	if k.ID == "" || len(k.Hash) == 0 {
		return fmt.Errorf("store: key needs an id and a hash")
	}
	if k.RateLimit < 0 {
		return fmt.Errorf("store: negative rate limit %d", k.RateLimit)
	}
	if k.Created.IsZero() {
		k.Created = s.now()
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.queryRow(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`, k.AccountID).Scan(&one); err != nil {
			return notFound(err, "account")
		}
		_, err := s.exec(ctx, tx, `INSERT INTO keys(id, account_id, name, hash, read_only, spend_limit, models, cidrs,
			expires, disabled, revoked, created, rate_limit) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			k.ID, k.AccountID, k.Name, k.Hash, b2i(k.ReadOnly), k.SpendLimit,
			strings.Join(k.Models, "\n"), strings.Join(k.CIDRs, "\n"),
			micros(k.Expires), b2i(k.Disabled), micros(k.Revoked), micros(k.Created), k.RateLimit)
		return err
	})
	if isUnique(err) {
		return fmt.Errorf("key %s: %w", k.ID, store.ErrExists)
	}
	return err
}

const keyCols = `id, account_id, name, hash, read_only, spend_limit, models, cidrs, expires, disabled, revoked, created, rate_limit`

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func scanKey(sc interface{ Scan(...any) error }) (store.Key, error) {
	var k store.Key
	var models, cidrs string
	var expires, revoked, created int64
	err := sc.Scan(&k.ID, &k.AccountID, &k.Name, &k.Hash, &k.ReadOnly, &k.SpendLimit, &models, &cidrs,
		&expires, &k.Disabled, &revoked, &created, &k.RateLimit)
	k.Models, k.CIDRs = splitList(models), splitList(cidrs)
	k.Expires, k.Revoked, k.Created = fromMicros(expires), fromMicros(revoked), fromMicros(created)
	return k, err
}

// Key returns the key with the given id (its lookup prefix).
func (s *Store) Key(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(s.r.QueryRowContext(ctx, `SELECT `+keyCols+` FROM keys WHERE id = ?`, id))
	return k, notFound(err, "key")
}

// ListKeys returns an account's keys ordered by creation, or every key when
// accountID is empty.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]store.Key, error) {
	q, args := `SELECT `+keyCols+` FROM keys ORDER BY created, id`, []any(nil)
	if accountID != "" {
		q, args = `SELECT `+keyCols+` FROM keys WHERE account_id = ? ORDER BY created, id`, []any{accountID}
	}
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey revokes a key for good (a second revoke keeps the first time).
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		at = s.now()
	}
	return s.updateOne(ctx, "key", `UPDATE keys SET revoked = CASE WHEN revoked = 0 THEN ? ELSE revoked END WHERE id = ?`,
		micros(at), id)
}

// SetKeyDisabled disables or re-enables a key.
func (s *Store) SetKeyDisabled(ctx context.Context, id string, disabled bool) error {
	return s.updateOne(ctx, "key", `UPDATE keys SET disabled = ? WHERE id = ?`, b2i(disabled), id)
}

// SetKeyRateLimit sets a key's requests per minute (0: its tier's default).
func (s *Store) SetKeyRateLimit(ctx context.Context, id string, perMinute int) error {
	if perMinute < 0 {
		return fmt.Errorf("store: negative rate limit %d", perMinute)
	}
	return s.updateOne(ctx, "key", `UPDATE keys SET rate_limit = ? WHERE id = ?`, perMinute, id)
}
