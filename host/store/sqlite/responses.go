package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

var _ store.ResponseStore = (*Store)(nil)

func unixMicro(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// PutResponse implements store.ResponseStore.
func (s *Store) PutResponse(ctx context.Context, r *store.StoredResponse) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := s.exec(ctx, tx, `INSERT OR REPLACE INTO responses(tenant, id, previous, model, input, response, created, expires)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			r.Tenant, r.ID, r.Previous, r.Model, r.Input, r.Response, unixMicro(r.Created), unixMicro(r.Expires))
		return err
	})
}

// GetResponse implements store.ResponseStore.
func (s *Store) GetResponse(ctx context.Context, tenant, id string) (*store.StoredResponse, error) {
	r := &store.StoredResponse{Tenant: tenant, ID: id}
	var created, expires int64
	err := s.r.QueryRowContext(ctx, `SELECT previous, model, input, response, created, expires FROM responses
		WHERE tenant = ? AND id = ? AND (expires = 0 OR expires > ?)`, tenant, id, s.now().UnixMicro()).
		Scan(&r.Previous, &r.Model, &r.Input, &r.Response, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("response %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	r.Created = time.UnixMicro(created)
	if expires > 0 {
		r.Expires = time.UnixMicro(expires)
	}
	return r, nil
}

// DeleteResponse implements store.ResponseStore.
func (s *Store) DeleteResponse(ctx context.Context, tenant, id string) error {
	n, err := s.deleteWhere(ctx, `DELETE FROM responses WHERE tenant = ? AND id = ? AND (expires = 0 OR expires > ?)`,
		tenant, id, s.now().UnixMicro())
	if err == nil && n == 0 {
		return fmt.Errorf("response %s: %w", id, store.ErrNotFound)
	}
	return err
}

// PruneResponses implements store.ResponseStore.
func (s *Store) PruneResponses(ctx context.Context, now time.Time) (int, error) {
	return s.deleteWhere(ctx, `DELETE FROM responses WHERE expires > 0 AND expires <= ?`, now.UnixMicro())
}
