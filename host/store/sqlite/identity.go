package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/bardoinference/bardo/host/store"
)

// LinkIdentity links ERC-8004 agent (its global id) to key keyID,
// replacing the agent's and the key's earlier links, and records the
// link proof's nonce: store.ErrExists when the nonce was used before,
// store.ErrNotFound when there is no such key (host/identity).
func (s *Store) LinkIdentity(ctx context.Context, agent, keyID, signer, nonce string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		var one int
		if err := s.queryRow(ctx, tx, `SELECT 1 FROM keys WHERE id = ?`, keyID).Scan(&one); err != nil {
			return notFound(err, "key")
		}
		now := micros(s.now())
		if _, err := s.exec(ctx, tx, `INSERT INTO identity_nonces(nonce, created) VALUES (?, ?)`, strings.ToLower(nonce), now); err != nil {
			if isUnique(err) {
				return fmt.Errorf("identity link nonce: %w", store.ErrExists)
			}
			return err
		}
		if _, err := s.exec(ctx, tx, `DELETE FROM identity_links WHERE agent = ? OR key_id = ?`, agent, keyID); err != nil {
			return err
		}
		_, err := s.exec(ctx, tx, `INSERT INTO identity_links(agent, key_id, signer, created) VALUES (?, ?, ?, ?)`,
			agent, keyID, signer, now)
		return err
	})
}

// UnlinkIdentity removes key keyID's link and returns the agent it had
// (store.ErrNotFound: none).
func (s *Store) UnlinkIdentity(ctx context.Context, keyID string) (string, error) {
	var agent string
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := s.queryRow(ctx, tx, `SELECT agent FROM identity_links WHERE key_id = ?`, keyID).Scan(&agent); err != nil {
			return notFound(err, "identity link")
		}
		_, err := s.exec(ctx, tx, `DELETE FROM identity_links WHERE key_id = ?`, keyID)
		return err
	})
	return agent, err
}

// IdentityKey returns the key agent is linked to, or store.ErrNotFound.
func (s *Store) IdentityKey(ctx context.Context, agent string) (string, error) {
	var id string
	err := s.r.QueryRowContext(ctx, `SELECT key_id FROM identity_links WHERE agent = ?`, agent).Scan(&id)
	return id, notFound(err, "identity link")
}

// KeyIdentity returns the agent linked to key keyID, or store.ErrNotFound.
func (s *Store) KeyIdentity(ctx context.Context, keyID string) (string, error) {
	var agent string
	err := s.r.QueryRowContext(ctx, `SELECT agent FROM identity_links WHERE key_id = ?`, keyID).Scan(&agent)
	return agent, notFound(err, "identity link")
}
