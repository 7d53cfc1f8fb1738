package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// ConsumeNonce records nonce in scope once; the primary key makes a second
// consumption fail even from another process.
func (s *Store) ConsumeNonce(ctx context.Context, scope, nonce string, expires time.Time) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `INSERT INTO nonces(scope, nonce, expires) VALUES (?, ?, ?)`,
			scope, nonce, expires.UnixMicro())
		return err
	})
	if isUnique(err) {
		return fmt.Errorf("nonce %s/%s: %w", scope, nonce, store.ErrNonceUsed)
	}
	return err
}

// PruneNonces deletes the nonces that expired before now.
func (s *Store) PruneNonces(ctx context.Context, now time.Time) (int, error) {
	return s.deleteWhere(ctx, `DELETE FROM nonces WHERE expires < ?`, now.UnixMicro())
}

// AddCounter adds n to a fixed-window counter and returns its new value.
func (s *Store) AddCounter(ctx context.Context, name string, window time.Time, n int64) (int64, error) {
	var v int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		return s.queryRow(ctx, tx, `INSERT INTO counters(name, start, value) VALUES (?, ?, ?)
			ON CONFLICT(name, start) DO UPDATE SET value = value + excluded.value RETURNING value`,
			name, window.UnixMicro(), n).Scan(&v)
	})
	return v, err
}

// PruneCounters deletes the windows that started before the given time.
func (s *Store) PruneCounters(ctx context.Context, before time.Time) (int, error) {
	return s.deleteWhere(ctx, `DELETE FROM counters WHERE start < ?`, before.UnixMicro())
}

func (s *Store) deleteWhere(ctx context.Context, q string, args ...any) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
