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
// Each posting is: the usage record with its daily rollup (its request
// id's unique index is the replay check), then, when it charges, a charge
// entry (reservation 0, the request id) and the account row's update; an
// account's balance is read once a batch.
// The charge is capped at balance − held, so the store's CHECK constraints
// can never fail a batch: the meter in front caps against its own view
// first, and this cap only matters if money moved behind its back (an
// operator's adjustment between two refreshes).
func (s *Store) Post(ctx context.Context, ps []store.Posting) ([]store.Posted, error) {
	out := make([]store.Posted, len(ps))
	err := s.write(ctx, func(tx *sql.Tx) error {
		// Each account's balance and held amount as this transaction has
		// left them: read once, then kept up to date by its postings.
		accts := map[string]*[2]int64{}
		for i := range ps {
			if err := s.postOne(ctx, tx, accts, &ps[i].Usage, &out[i]); err != nil {
				return err
			}
		}
		for i := range out {
			if o := &out[i]; o.Err == nil {
				o.Balance = accts[o.AccountID][0]
			}
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
// anything. The usage record goes first: its request id's unique index
// is the replay check, so a fresh posting costs no lookup.
func (s *Store) postOne(ctx context.Context, tx *sql.Tx, accts map[string]*[2]int64, u *store.Usage, o *store.Posted) error {
	*o = store.Posted{RequestID: u.RequestID, AccountID: u.AccountID}
	if u.RequestID == "" || u.AccountID == "" || u.Charge < 0 || u.Shortfall < 0 {
		o.Err = fmt.Errorf("posting %q of %q charging %d: %w", u.RequestID, u.AccountID, u.Charge, store.ErrInvalidAmount)
		return nil
	}
	acct, err := s.postingAccount(ctx, tx, accts, u.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		o.Err = err
		return nil
	}
	if err != nil {
		return err
	}
	o.Charged = min(u.Charge, max(acct[0]-acct[1], 0))
	o.Shortfall = u.Charge - o.Charged
	rec := *u
	rec.Charge, rec.Shortfall = o.Charged, u.Shortfall+o.Shortfall
	if err := s.insertUsage(ctx, tx, &rec); errors.Is(err, store.ErrExists) {
		// A replay: the request has its record (and charge) already.
		var first string
		if err := s.queryRow(ctx, tx, `SELECT account_id, charge FROM usage WHERE request_id = ?`, u.RequestID).
			Scan(&first, &o.Charged); err != nil {
			return err
		}
		o.Shortfall, o.Replayed = 0, true
		if first != u.AccountID {
			o.AccountID = first
			if _, err := s.postingAccount(ctx, tx, accts, first); err != nil {
				return err
			}
		}
		return nil
	} else if err != nil {
		return err
	}
	if o.Charged > 0 {
		if err := s.post(ctx, tx, &store.Entry{AccountID: u.AccountID, Kind: store.EntryCharge, Amount: -o.Charged,
			RequestID: u.RequestID}); err != nil {
			return err
		}
		acct[0] -= o.Charged
	}
	return nil
}

// postingAccount returns the balance and held amount of id as the batch
// has left them, reading them on first use.
func (s *Store) postingAccount(ctx context.Context, tx *sql.Tx, accts map[string]*[2]int64, id string) (*[2]int64, error) {
	if a := accts[id]; a != nil {
		return a, nil
	}
	bal, held, _, err := s.balance(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	a := &[2]int64{bal, held}
	accts[id] = a
	return a, nil
}
