package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

var _ store.X402Settlements = (*Store)(nil)

// AddX402Settlement implements store.X402Settlements.
func (s *Store) AddX402Settlement(ctx context.Context, x store.X402Settlement) (int64, error) {
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		return s.queryRow(ctx, tx, `INSERT INTO x402_settlements(payer, request_id, network, amount, payload, requirements, attempts, last_error, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			x.Payer, x.RequestID, x.Network, x.Amount, x.Payload, x.Requirements, max(x.Attempts, 1), x.LastError, micros(x.Created)).Scan(&id)
	})
	return id, err
}

// X402Owed implements store.X402Settlements.
func (s *Store) X402Owed(ctx context.Context, payer string, limit int) ([]store.X402Settlement, error) {
	q := `SELECT id, payer, request_id, network, amount, payload, requirements, attempts, last_error, created
		FROM x402_settlements WHERE settled = 0`
	args := []any{}
	if payer != "" {
		q += ` AND payer = ?`
		args = append(args, payer)
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, max(limit, 1))
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.X402Settlement
	for rows.Next() {
		var x store.X402Settlement
		var created int64
		if err := rows.Scan(&x.ID, &x.Payer, &x.RequestID, &x.Network, &x.Amount, &x.Payload, &x.Requirements,
			&x.Attempts, &x.LastError, &created); err != nil {
			return nil, err
		}
		x.Created = fromMicros(created)
		out = append(out, x)
	}
	return out, rows.Err()
}

// X402Attempted implements store.X402Settlements.
func (s *Store) X402Attempted(ctx context.Context, id int64, lastError string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `UPDATE x402_settlements SET attempts = attempts + 1, last_error = ? WHERE id = ?`, lastError, id)
		return err
	})
}

// X402Settled implements store.X402Settlements.
func (s *Store) X402Settled(ctx context.Context, id int64, txHash string, at time.Time) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.exec(ctx, tx, `UPDATE x402_settlements SET settled = ?, tx = ? WHERE id = ? AND settled = 0`, micros(at), txHash, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("x402 settlement %d: %w", id, store.ErrNotFound)
		}
		return nil
	})
}
