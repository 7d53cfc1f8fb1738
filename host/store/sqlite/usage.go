package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

func (s *Store) insertUsage(ctx context.Context, tx *sql.Tx, u *store.Usage) error {
	if u.At.IsZero() {
		u.At = s.now()
	}
	u.At = u.At.UTC().Truncate(time.Microsecond)
	res, err := s.exec(ctx, tx, `INSERT INTO usage(request_id, account_id, key_id, model, provider, input_tokens,
		output_tokens, cache_read_tokens, cache_write_tokens, cost, charge, savings, cache, latency_us, status, at, shortfall)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.RequestID, u.AccountID, u.KeyID, u.Model, u.Provider, u.InputTokens, u.OutputTokens, u.CacheReadTokens,
		u.CacheWriteTokens, u.Cost, u.Charge, u.Savings, u.Cache, u.LatencyMicros, u.Status, micros(u.At), u.Shortfall)
	if isUnique(err) {
		return fmt.Errorf("usage of request %s: %w", u.RequestID, store.ErrExists)
	}
	if err != nil {
		return err
	}
	if u.ID, err = res.LastInsertId(); err != nil {
		return err
	}
	if err := s.addRollups(ctx, tx, u); err != nil {
		return err
	}
	_, err = s.exec(ctx, tx, `INSERT INTO usage_daily(account_id, day, requests, input_tokens, output_tokens, cost, charge, savings)
		VALUES (?, ?, 1, ?, ?, ?, ?, ?) ON CONFLICT(account_id, day) DO UPDATE SET requests = requests + 1,
		input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
		cost = cost + excluded.cost, charge = charge + excluded.charge, savings = savings + excluded.savings`,
		u.AccountID, micros(u.At)/dayMicros, u.InputTokens, u.OutputTokens, u.Cost, u.Charge, u.Savings)
	return err
}

// RecordUsage writes the record of a request that settled no reservation.
func (s *Store) RecordUsage(ctx context.Context, u store.Usage) error {
	if u.RequestID == "" {
		return fmt.Errorf("usage without a request id: %w", store.ErrInvalidAmount)
	}
	return s.write(ctx, func(tx *sql.Tx) error { return s.insertUsage(ctx, tx, &u) })
}

const usageCols = `id, request_id, account_id, key_id, model, provider, input_tokens, output_tokens, cache_read_tokens,
	cache_write_tokens, cost, charge, savings, cache, latency_us, status, at, shortfall`

// Usage returns one page of an account's records, newest first. The cursor
// is the (at, id) of the last record returned, so every page is an index
// range scan whatever its depth.
func (s *Store) Usage(ctx context.Context, q store.UsageQuery) (store.UsagePage, error) {
	limit := q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	var where []string
	var args []any
	if q.KeyID != "" {
		where, args = append(where, "key_id = ?"), append(args, q.KeyID)
	}
	if q.AccountID != "" || q.KeyID == "" {
		where, args = append(where, "account_id = ?"), append(args, q.AccountID)
	}
	if q.Model != "" {
		where, args = append(where, "model = ?"), append(args, q.Model)
	}
	if !q.From.IsZero() {
		where, args = append(where, "at >= ?"), append(args, q.From.UnixMicro())
	}
	if !q.To.IsZero() {
		where, args = append(where, "at < ?"), append(args, q.To.UnixMicro())
	}
	if q.Cursor != "" {
		a, b, ok := strings.Cut(q.Cursor, ".")
		at, err1 := strconv.ParseInt(a, 10, 64)
		id, err2 := strconv.ParseInt(b, 10, 64)
		if !ok || err1 != nil || err2 != nil {
			return store.UsagePage{}, fmt.Errorf("store: bad usage cursor %q", q.Cursor)
		}
		where, args = append(where, "(at, id) < (?, ?)"), append(args, at, id)
	}
	args = append(args, limit+1)
	rows, err := s.r.QueryContext(ctx, `SELECT `+usageCols+` FROM usage WHERE `+strings.Join(where, " AND ")+
		` ORDER BY at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return store.UsagePage{}, err
	}
	defer rows.Close()
	var page store.UsagePage
	for rows.Next() {
		var u store.Usage
		var at int64
		if err := rows.Scan(&u.ID, &u.RequestID, &u.AccountID, &u.KeyID, &u.Model, &u.Provider, &u.InputTokens,
			&u.OutputTokens, &u.CacheReadTokens, &u.CacheWriteTokens, &u.Cost, &u.Charge, &u.Savings, &u.Cache,
			&u.LatencyMicros, &u.Status, &at, &u.Shortfall); err != nil {
			return store.UsagePage{}, err
		}
		u.At = fromMicros(at)
		page.Records = append(page.Records, u)
	}
	if err := rows.Err(); err != nil {
		return store.UsagePage{}, err
	}
	if len(page.Records) > limit {
		page.Records = page.Records[:limit]
		last := page.Records[limit-1]
		page.Next = strconv.FormatInt(last.At.UnixMicro(), 10) + "." + strconv.FormatInt(last.ID, 10)
	}
	return page, nil
}

const dayMicros = int64(24 * time.Hour / time.Microsecond)

// DailyUsage returns an account's per-UTC-day totals for the days that
// intersect [from, to), from the usage_daily rollups that each record's
// transaction keeps (one row a day, whatever the number of records).
func (s *Store) DailyUsage(ctx context.Context, accountID string, from, to time.Time) ([]store.DailyUsage, error) {
	if to.IsZero() {
		to = s.now().Add(24 * time.Hour)
	}
	first := floorDiv(micros(from), dayMicros)
	last := floorDiv(to.UnixMicro()-1, dayMicros)
	rows, err := s.r.QueryContext(ctx, `SELECT day, requests, input_tokens, output_tokens, cost, charge, savings
		FROM usage_daily WHERE account_id = ? AND day BETWEEN ? AND ? ORDER BY day`, accountID, first, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.DailyUsage
	for rows.Next() {
		var d store.DailyUsage
		var day int64
		if err := rows.Scan(&day, &d.Requests, &d.InputTokens, &d.OutputTokens, &d.Cost, &d.Charge, &d.Savings); err != nil {
			return nil, err
		}
		d.Day = time.UnixMicro(day * dayMicros).UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// SumUsage totals the records of an account (or one of its keys) in a
// time range, through the (account_id, at) or (key_id, at) index: its cost
// grows with the records in the range (the billing meter calls it once per
// account at load, for today, this month and this hour).
func (s *Store) SumUsage(ctx context.Context, q store.UsageSumQuery) (store.UsageSum, error) {
	where, args := "account_id = ? AND at >= ?", []any{q.AccountID, micros(q.From)}
	if q.KeyID != "" {
		where, args = "key_id = ? AND account_id = ? AND at >= ?", []any{q.KeyID, q.AccountID, micros(q.From)}
	}
	if !q.To.IsZero() {
		where, args = where+" AND at < ?", append(args, q.To.UnixMicro())
	}
	var sum store.UsageSum
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(input_tokens + output_tokens + cache_read_tokens +
		cache_write_tokens), 0), COALESCE(SUM(charge), 0) FROM usage WHERE `+where, args...).
		Scan(&sum.Requests, &sum.Tokens, &sum.Charge)
	return sum, err
}
