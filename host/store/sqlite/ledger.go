package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// post appends one ledger entry and applies its deltas to the account row
// in the same transaction: the row is a cache of the ledger's sums that
// Audit checks, and the CHECK constraints on accounts refuse any change
// that would make the balance or the available amount negative.
func (s *Store) post(ctx context.Context, tx *sql.Tx, e *store.Entry) error {
	e.At = s.now().UTC().Truncate(time.Microsecond)
	res, err := s.exec(ctx, tx, `INSERT INTO ledger(account_id, kind, amount, held, reservation_id, request_id, reason, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		e.AccountID, string(e.Kind), e.Amount, e.Held, e.ReservationID, e.RequestID, e.Reason, micros(e.At))
	if err != nil {
		return err
	}
	if e.Seq, err = res.LastInsertId(); err != nil {
		return err
	}
	res, err = s.exec(ctx, tx, `UPDATE accounts SET balance = balance + ?, held = held + ? WHERE id = ?`,
		e.Amount, e.Held, e.AccountID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("account %s: %w", e.AccountID, store.ErrNotFound)
	}
	return nil
}

func (s *Store) balance(ctx context.Context, tx *sql.Tx, id string) (balance, held int64, disabled bool, err error) {
	err = s.queryRow(ctx, tx, `SELECT balance, held, disabled FROM accounts WHERE id = ?`, id).Scan(&balance, &held, &disabled)
	return balance, held, disabled, notFound(err, "account")
}

// TopUp adds amount (> 0) to an account as a ledger entry.
func (s *Store) TopUp(ctx context.Context, accountID string, amount int64, reason string) (store.Entry, error) {
	if amount <= 0 {
		return store.Entry{}, fmt.Errorf("top-up of %d: %w", amount, store.ErrInvalidAmount)
	}
	e := store.Entry{AccountID: accountID, Kind: store.EntryTopUp, Amount: amount, Reason: reason}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, _, _, err := s.balance(ctx, tx, accountID); err != nil {
			return err
		}
		return s.post(ctx, tx, &e)
	})
	return e, err
}

// Adjust adds delta with a reason; a negative delta may not exceed the
// available amount.
func (s *Store) Adjust(ctx context.Context, accountID string, delta int64, reason string) (store.Entry, error) {
	if delta == 0 || reason == "" {
		return store.Entry{}, fmt.Errorf("adjustment needs a non-zero amount and a reason: %w", store.ErrInvalidAmount)
	}
	e := store.Entry{AccountID: accountID, Kind: store.EntryAdjustment, Amount: delta, Reason: reason}
	err := s.write(ctx, func(tx *sql.Tx) error {
		bal, held, _, err := s.balance(ctx, tx, accountID)
		if err != nil {
			return err
		}
		if bal+delta < held {
			return fmt.Errorf("adjustment of %d on available %d: %w", delta, bal-held, store.ErrInsufficientFunds)
		}
		return s.post(ctx, tx, &e)
	})
	return e, err
}

const reservationCols = `id, account_id, key_id, request_id, amount, state, charged, shortfall, created`

func scanReservation(sc interface{ Scan(...any) error }) (store.Reservation, error) {
	var r store.Reservation
	var state string
	var created int64
	err := sc.Scan(&r.ID, &r.AccountID, &r.KeyID, &r.RequestID, &r.Amount, &state, &r.Charged, &r.Shortfall, &created)
	r.State, r.Created = store.ReservationState(state), fromMicros(created)
	return r, err
}

// Reservation returns reservation id.
func (s *Store) Reservation(ctx context.Context, id int64) (store.Reservation, error) {
	r, err := scanReservation(s.r.QueryRowContext(ctx, `SELECT `+reservationCols+` FROM reservations WHERE id = ?`, id))
	return r, notFound(err, "reservation")
}

// Reserve holds r.Amount on the account and on every budget, or refuses.
func (s *Store) Reserve(ctx context.Context, req store.ReserveRequest) (store.Reservation, error) {
	if req.Amount < 0 || req.RequestID == "" {
		return store.Reservation{}, fmt.Errorf("reserve %d for %q: %w", req.Amount, req.RequestID, store.ErrInvalidAmount)
	}
	var res store.Reservation
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := scanReservation(s.queryRow(ctx, tx, `SELECT `+reservationCols+` FROM reservations WHERE request_id = ?`, req.RequestID))
		if err == nil {
			res = r // the same request asked twice: one reservation
			return nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		bal, held, disabled, err := s.balance(ctx, tx, req.AccountID)
		if err != nil {
			return err
		}
		if disabled {
			return fmt.Errorf("account %s: %w", req.AccountID, store.ErrAccountDisabled)
		}
		if bal-held < req.Amount {
			return fmt.Errorf("reserve %d of available %d: %w", req.Amount, bal-held, store.ErrInsufficientFunds)
		}
		for _, b := range req.Budgets {
			var spent, bheld int64
			err := s.queryRow(ctx, tx, `SELECT spent, held FROM budgets WHERE name = ?`, b.Name).Scan(&spent, &bheld)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if spent+bheld+req.Amount > b.Limit {
				return fmt.Errorf("budget %s: %d spent, %d held, %d asked, limit %d: %w",
					b.Name, spent, bheld, req.Amount, b.Limit, store.ErrBudgetExceeded)
			}
		}
		res = store.Reservation{AccountID: req.AccountID, KeyID: req.KeyID, RequestID: req.RequestID,
			Amount: req.Amount, State: store.Held, Created: s.now().UTC().Truncate(time.Microsecond)}
		q, err := s.exec(ctx, tx, `INSERT INTO reservations(account_id, key_id, request_id, amount, state, created)
			VALUES (?, ?, ?, ?, 'held', ?)`, res.AccountID, res.KeyID, res.RequestID, res.Amount, micros(res.Created))
		if err != nil {
			return err
		}
		if res.ID, err = q.LastInsertId(); err != nil {
			return err
		}
		for _, b := range req.Budgets {
			if _, err := s.exec(ctx, tx, `INSERT INTO budgets(name, held) VALUES (?, ?)
				ON CONFLICT(name) DO UPDATE SET held = held + excluded.held`, b.Name, req.Amount); err != nil {
				return err
			}
			if _, err := s.exec(ctx, tx, `INSERT OR IGNORE INTO reservation_budgets(reservation_id, name) VALUES (?, ?)`,
				res.ID, b.Name); err != nil {
				return err
			}
		}
		return s.post(ctx, tx, &store.Entry{AccountID: res.AccountID, Kind: store.EntryHold, Held: res.Amount,
			ReservationID: res.ID, RequestID: res.RequestID})
	})
	return res, err
}

// Settle charges actual against reservation id; see store.Ledger.
//
// Charged = min(actual, Available after the hold is given back), so a
// request that cost more than it reserved takes what the account still
// has and no more: the balance never goes below zero and the difference is
// kept as Shortfall (the operator's loss, visible per request). Budgets are
// charged the same Charged, which may pass their limit by that overrun.
func (s *Store) Settle(ctx context.Context, id int64, actual int64, u *store.Usage) (store.Settlement, error) {
	if actual < 0 {
		return store.Settlement{}, fmt.Errorf("settle %d: %w", actual, store.ErrInvalidAmount)
	}
	var out store.Settlement
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := scanReservation(s.queryRow(ctx, tx, `SELECT `+reservationCols+` FROM reservations WHERE id = ?`, id))
		if err != nil {
			return notFound(err, "reservation")
		}
		switch r.State {
		case store.Settled:
			out = store.Settlement{Reservation: r, Replayed: true}
			return nil
		case store.Released:
			return fmt.Errorf("reservation %d: %w", id, store.ErrReservationReleased)
		}
		bal, held, _, err := s.balance(ctx, tx, r.AccountID)
		if err != nil {
			return err
		}
		r.Charged = min(actual, bal-(held-r.Amount))
		r.Shortfall = actual - r.Charged
		r.State = store.Settled
		if _, err := s.exec(ctx, tx, `UPDATE reservations SET state = 'settled', charged = ?, shortfall = ? WHERE id = ?`,
			r.Charged, r.Shortfall, r.ID); err != nil {
			return err
		}
		if _, err := s.exec(ctx, tx, `UPDATE budgets SET held = held - ?, spent = spent + ?
			WHERE name IN (SELECT name FROM reservation_budgets WHERE reservation_id = ?)`, r.Amount, r.Charged, r.ID); err != nil {
			return err
		}
		if err := s.post(ctx, tx, &store.Entry{AccountID: r.AccountID, Kind: store.EntryCharge, Amount: -r.Charged,
			Held: -r.Amount, ReservationID: r.ID, RequestID: r.RequestID}); err != nil {
			return err
		}
		if u != nil {
			rec := *u
			rec.RequestID, rec.AccountID, rec.Charge = r.RequestID, r.AccountID, r.Charged
			if rec.KeyID == "" {
				rec.KeyID = r.KeyID
			}
			if err := s.insertUsage(ctx, tx, &rec); err != nil {
				return err
			}
		}
		out = store.Settlement{Reservation: r}
		return nil
	})
	return out, err
}

// Release gives reservation id back.
func (s *Store) Release(ctx context.Context, id int64) (store.Reservation, error) {
	var out store.Reservation
	err := s.write(ctx, func(tx *sql.Tx) error {
		r, err := scanReservation(s.queryRow(ctx, tx, `SELECT `+reservationCols+` FROM reservations WHERE id = ?`, id))
		if err != nil {
			return notFound(err, "reservation")
		}
		out = r
		if r.State != store.Held {
			return nil
		}
		out.State = store.Released
		return s.release(ctx, tx, r)
	})
	return out, err
}

func (s *Store) release(ctx context.Context, tx *sql.Tx, r store.Reservation) error {
	if _, err := s.exec(ctx, tx, `UPDATE reservations SET state = 'released' WHERE id = ?`, r.ID); err != nil {
		return err
	}
	if _, err := s.exec(ctx, tx, `UPDATE budgets SET held = held - ?
		WHERE name IN (SELECT name FROM reservation_budgets WHERE reservation_id = ?)`, r.Amount, r.ID); err != nil {
		return err
	}
	return s.post(ctx, tx, &store.Entry{AccountID: r.AccountID, Kind: store.EntryRelease, Held: -r.Amount,
		ReservationID: r.ID, RequestID: r.RequestID})
}

// ReleaseOrphans releases every reservation held since before the given
// time, in one transaction.
func (s *Store) ReleaseOrphans(ctx context.Context, before time.Time) (int, error) {
	n := 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, `SELECT `+reservationCols+` FROM reservations WHERE state = 'held' AND created < ?`,
			before.UnixMicro())
		if err != nil {
			return err
		}
		var rs []store.Reservation
		for rows.Next() {
			r, err := scanReservation(rows)
			if err != nil {
				rows.Close()
				return err
			}
			rs = append(rs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, r := range rs {
			if err := s.release(ctx, tx, r); err != nil {
				return err
			}
		}
		n = len(rs)
		return nil
	})
	return n, err
}

// Entries lists an account's ledger entries after seq, oldest first.
func (s *Store) Entries(ctx context.Context, accountID string, after int64, limit int) ([]store.Entry, error) {
	if limit <= 0 {
		limit = 100
	}
	rows, err := s.r.QueryContext(ctx, `SELECT seq, account_id, kind, amount, held, reservation_id, request_id, reason, at
		FROM ledger WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`, accountID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.Entry
	for rows.Next() {
		var e store.Entry
		var kind string
		var at int64
		if err := rows.Scan(&e.Seq, &e.AccountID, &kind, &e.Amount, &e.Held, &e.ReservationID, &e.RequestID, &e.Reason, &at); err != nil {
			return nil, err
		}
		e.Kind, e.At = store.EntryKind(kind), fromMicros(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Audit checks one account against its ledger in a single read snapshot:
//
//	balance = Σ ledger.amount ≥ held = Σ ledger.held = Σ amount of held reservations ≥ 0
//	−Σ amount of charge entries = Σ charged of settled reservations + Σ posted charges
//	each posted charge (no reservation) has one usage record of its request and amount; no request is charged twice
//	each reservation has exactly one hold entry, and one charge or release entry iff it is closed
func (s *Store) Audit(ctx context.Context, accountID string) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var bal, held int64
	if err := tx.QueryRowContext(ctx, `SELECT balance, held FROM accounts WHERE id = ?`, accountID).Scan(&bal, &held); err != nil {
		return notFound(err, "account")
	}
	var sumAmt, sumHeld, sumCharge int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(held), 0),
		COALESCE(SUM(CASE WHEN kind = 'charge' THEN -amount ELSE 0 END), 0) FROM ledger WHERE account_id = ?`,
		accountID).Scan(&sumAmt, &sumHeld, &sumCharge); err != nil {
		return err
	}
	var openHeld, charged int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(CASE WHEN state = 'held' THEN amount ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN state = 'settled' THEN charged ELSE 0 END), 0) FROM reservations WHERE account_id = ?`,
		accountID).Scan(&openHeld, &charged); err != nil {
		return err
	}
	// Charges posted without a reservation (Post) each match one usage
	// record of the same request and amount, and no request is charged twice.
	var posted, unmatched, doubled int64
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(-l.amount), 0),
		COALESCE(SUM(CASE WHEN u.id IS NULL OR u.charge != -l.amount OR u.account_id != l.account_id THEN 1 ELSE 0 END), 0)
		FROM ledger l LEFT JOIN usage u ON u.request_id = l.request_id
		WHERE l.account_id = ? AND l.kind = 'charge' AND l.reservation_id = 0`, accountID).Scan(&posted, &unmatched); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM (SELECT request_id FROM ledger
		WHERE account_id = ? AND kind = 'charge' AND request_id != '' GROUP BY request_id HAVING COUNT(*) > 1)`,
		accountID).Scan(&doubled); err != nil {
		return err
	}
	var bad int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM reservations r WHERE r.account_id = ? AND (
		(SELECT COUNT(*) FROM ledger l WHERE l.reservation_id = r.id AND l.kind = 'hold') != 1 OR
		(SELECT COUNT(*) FROM ledger l WHERE l.reservation_id = r.id AND l.kind IN ('charge', 'release'))
			!= CASE WHEN r.state = 'held' THEN 0 ELSE 1 END)`, accountID).Scan(&bad); err != nil {
		return err
	}
	var errs []error
	if bal != sumAmt {
		errs = append(errs, fmt.Errorf("balance %d ≠ Σ ledger amount %d", bal, sumAmt))
	}
	if held != sumHeld || held != openHeld {
		errs = append(errs, fmt.Errorf("held %d, Σ ledger held %d, Σ open reservations %d", held, sumHeld, openHeld))
	}
	if held < 0 || bal < held {
		errs = append(errs, fmt.Errorf("balance %d, held %d: negative available", bal, held))
	}
	if sumCharge != charged+posted {
		errs = append(errs, fmt.Errorf("sum of charge entries %d ≠ Σ settled charges %d + Σ posted charges %d",
			sumCharge, charged, posted))
	}
	if unmatched != 0 {
		errs = append(errs, fmt.Errorf("%d posted charges without a usage record of the same amount", unmatched))
	}
	if doubled != 0 {
		errs = append(errs, fmt.Errorf("%d requests charged more than once", doubled))
	}
	if bad != 0 {
		errs = append(errs, fmt.Errorf("%d reservations without exactly one hold and one closing entry", bad))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("audit %s: %w", accountID, err)
	}
	return nil
}
