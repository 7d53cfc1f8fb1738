package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bardoinference/bardo/host/store"
)

// PrivyAccount returns the account a Privy user (its DID) is billed to,
// or store.ErrNotFound.
func (s *Store) PrivyAccount(ctx context.Context, did string) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT account_id FROM privy_users WHERE did = ?`, did).Scan(&id)
	return id, notFound(err, "privy user")
}

// LinkPrivy bills the Privy user did to the existing account accountID,
// replacing an earlier link.
func (s *Store) LinkPrivy(ctx context.Context, did, accountID string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.queryRow(ctx, tx, `SELECT 1 FROM accounts WHERE id = ?`, accountID).Scan(&one); err != nil {
			return notFound(err, "account")
		}
		_, err := s.exec(ctx, tx, `INSERT INTO privy_users(did, account_id, created) VALUES (?, ?, ?)
			ON CONFLICT(did) DO UPDATE SET account_id = excluded.account_id`, did, accountID, micros(s.now()))
		return err
	})
}

// ProvisionPrivy returns the account of the Privy user did, creating it
// first when the user has none: account a (its ID set by the caller; its
// balance zero) and the link, in one transaction. Two first requests of
// one user at once agree on one account.
func (s *Store) ProvisionPrivy(ctx context.Context, did string, a store.Account) (string, error) {
	if a.ID == "" {
		return "", fmt.Errorf("account id: %w", store.ErrInvalidAmount)
	}
	if a.Tier == "" {
		a.Tier = store.TierFree
	}
	if !a.Tier.Valid() {
		return "", fmt.Errorf("store: unknown tier %q", a.Tier)
	}
	var id string
	err := s.write(ctx, func(tx *sql.Tx) error {
		err := s.queryRow(ctx, tx, `SELECT account_id FROM privy_users WHERE did = ?`, did).Scan(&id)
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		now := micros(s.now())
		if _, err := s.exec(ctx, tx, `INSERT INTO accounts(id, name, tier, disabled, created) VALUES (?, ?, ?, 0, ?)
			ON CONFLICT(id) DO NOTHING`, a.ID, a.Name, string(a.Tier), now); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `INSERT INTO privy_users(did, account_id, created) VALUES (?, ?, ?)`, did, a.ID, now); err != nil {
			return err
		}
		id = a.ID
		return nil
	})
	return id, err
}
