package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/bardoinference/bardo/host/store"
)

// Post settles a batch of requests in one transaction; see
// store.Ledger.Post. Committing many settlements at once is what lets one
// SQLite writer keep up with thousands of paid requests a second: the
// commit, not the statements, is the expensive part.
//
// Each posting is: a replay check on the record's request id (the usage
// table's unique index), a read of the account's balance and held amount,
// then, when it charges, a charge entry (reservation 0, the request id) and
// the account row's update, and the usage record with its daily rollup.
// The charge is capped at balance − held, so the store's CHECK constraints
// can never fail a batch: the meter in front caps against its own view
// first, and this cap only matters if money moved behind its back (an
// operator's adjustment between two refreshes).
func (s *Store) Post(ctx context.Context, ps []store.Posting) ([]store.Posted, error) {
	out := make([]store.Posted, len(ps))
	err := s.write(ctx, func(tx *sql.Tx) error {
		for i := range ps {
			if err := s.postOne(ctx, tx, &ps[i].Usage, &out[i]); err != nil {
				return err
			}
		}
		// Every posting learns its account's balance after the batch.
		balances := map[string]int64{}
		for i := range out {
			o := &out[i]
			if o.Err != nil {
				continue
			}
			b, ok := balances[o.AccountID]
			if !ok {
				var err error
				if b, _, _, err = s.balance(ctx, tx, o.AccountID); err != nil {
					return err
				}
				balances[o.AccountID] = b
			}
			o.Balance = b
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// postOne applies one posting inside tx. An error returned fails the
// batch; a problem of this posting alone goes to o.Err, before it wrote
// anything.
func (s *Store) postOne(ctx context.Context, tx *sql.Tx, u *store.Usage, o *store.Posted) error {
	*o = store.Posted{RequestID: u.RequestID, AccountID: u.AccountID}
	if u.RequestID == "" || u.AccountID == "" || u.Charge < 0 || u.Shortfall < 0 {
		o.Err = fmt.Errorf("posting %q of %q charging %d: %w", u.RequestID, u.AccountID, u.Charge, store.ErrInvalidAmount)
		return nil
	}
	var acct string
	var charged int64
	err := s.queryRow(ctx, tx, `SELECT account_id, charge FROM usage WHERE request_id = ?`, u.RequestID).Scan(&acct, &charged)
	if err == nil {
		o.AccountID, o.Charged, o.Replayed = acct, charged, true
		return nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	bal, held, _, err := s.balance(ctx, tx, u.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		o.Err = err
		return nil
	}
	if err != nil {
		return err
	}
	o.Charged = min(u.Charge, max(bal-held, 0))
	o.Shortfall = u.Charge - o.Charged
	rec := *u
	rec.Charge, rec.Shortfall = o.Charged, u.Shortfall+o.Shortfall
	if o.Charged > 0 {
		if err := s.post(ctx, tx, &store.Entry{AccountID: u.AccountID, Kind: store.EntryCharge, Amount: -o.Charged,
			RequestID: u.RequestID}); err != nil {
			return err
		}
	}
	return s.insertUsage(ctx, tx, &rec)
}
