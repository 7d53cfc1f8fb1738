package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

const (
	minuteMicros = int64(time.Minute / time.Microsecond)
	hourMicros   = int64(time.Hour / time.Microsecond)
)

// Grain is the width of a usage rollup's bucket.
type Grain string

// The rollup grains (migration 0012).
const (
	Minute Grain = "minute"
	Hour   Grain = "hour"
	Day    Grain = "day"
)

func (g Grain) table() (string, int64, bool) {
	switch g {
	case Minute:
		return "usage_minute", minuteMicros, true
	case Hour:
		return "usage_hour", hourMicros, true
	case Day:
		return "usage_day", dayMicros, true
	}
	return "", 0, false
}

// Rollup is the usage of one account, provider and model in one bucket.
type Rollup struct {
	Bucket        time.Time // the bucket's start (UTC)
	AccountID     string
	Provider      string
	Model         string
	Requests      int64
	Errors        int64 // records with status >= 400
	CacheHits     int64 // answered by a cache (a *-hit, or stale)
	InputTokens   int64
	OutputTokens  int64
	Cost          int64 // micro-USD
	Charge        int64 // micro-USD
	Savings       int64 // micro-USD
	LatencyMicros int64 // the sum: divide by Requests for the mean
}

// cacheHit is the rollups' test of a record's cache verdict, the same as
// migration 0012's backfill: "hash-hit", "semantic-hit", "stale".
func cacheHit(c string) bool { return strings.HasSuffix(c, "hit") || c == "stale" }

const rollupUpsert = ` VALUES (?, ?, ?, ?, 1, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT(bucket, account_id, provider, model) DO UPDATE SET requests = requests + 1,
	errors = errors + excluded.errors, cache_hits = cache_hits + excluded.cache_hits,
	input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
	cost = cost + excluded.cost, charge = charge + excluded.charge, savings = savings + excluded.savings,
	latency_us = latency_us + excluded.latency_us`

const rollupCols = `(bucket, account_id, provider, model, requests, errors, cache_hits, input_tokens, output_tokens,
	cost, charge, savings, latency_us)`

// addRollups counts u in its minute's, hour's and day's rollups, inside the
// transaction that writes u (so a group commit of usage carries them).
func (s *Store) addRollups(ctx context.Context, tx *sql.Tx, u *store.Usage) error {
	at := micros(u.At)
	errs, hits := b2i(u.Status >= 400), b2i(cacheHit(u.Cache))
	for _, t := range [...]struct {
		q   string
		div int64
	}{{`INSERT INTO usage_minute` + rollupCols + rollupUpsert, minuteMicros}, {`INSERT INTO usage_hour` + rollupCols + rollupUpsert, hourMicros},
		{`INSERT INTO usage_day` + rollupCols + rollupUpsert, dayMicros}} {
		if _, err := s.exec(ctx, tx, t.q, floorDiv(at, t.div), u.AccountID, u.Provider, u.Model, errs, hits,
			u.InputTokens, u.OutputTokens, u.Cost, u.Charge, u.Savings, u.LatencyMicros); err != nil {
			return err
		}
	}
	return nil
}

// Rollups returns the rollups of grain g whose buckets start in
// [from, to), oldest first: a range scan of the bucket-led primary key.
func (s *Store) Rollups(ctx context.Context, g Grain, from, to time.Time) ([]Rollup, error) {
	table, div, ok := g.table()
	if !ok {
		return nil, fmt.Errorf("sqlite: unknown rollup grain %q", g)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT bucket, account_id, provider, model, requests, errors, cache_hits,
		input_tokens, output_tokens, cost, charge, savings, latency_us FROM `+table+
		` WHERE bucket >= ? AND bucket < ? ORDER BY bucket`, floorDiv(micros(from), div), floorDiv(micros(to)+div-1, div))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Rollup
	for rows.Next() {
		var r Rollup
		var b int64
		if err := rows.Scan(&b, &r.AccountID, &r.Provider, &r.Model, &r.Requests, &r.Errors, &r.CacheHits,
			&r.InputTokens, &r.OutputTokens, &r.Cost, &r.Charge, &r.Savings, &r.LatencyMicros); err != nil {
			return nil, err
		}
		r.Bucket = time.UnixMicro(b * div).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// ImportUsage writes records in bulk — a restore, a move from another
// store, a benchmark's million rows — many to a statement and one
// transaction for all, then folds them into the rollups (usage_daily and
// the minute, hour and day ones) with one grouped statement each. The records' request ids must
// be new (store.ErrExists otherwise, and nothing is written); their ids
// are not set.
func (s *Store) ImportUsage(ctx context.Context, us []store.Usage) error {
	const perStmt = 64 // 17 columns × 64 rows stays under SQLite's 32,766 variables
	return s.write(ctx, func(tx *sql.Tx) error {
		var first int64
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM usage`).Scan(&first); err != nil {
			return err
		}
		args := make([]any, 0, perStmt*17)
		for len(us) > 0 {
			n := min(perStmt, len(us))
			args = args[:0]
			for i := range us[:n] {
				u := &us[i]
				if u.At.IsZero() {
					u.At = s.now()
				}
				u.At = u.At.UTC().Truncate(time.Microsecond)
				args = append(args, u.RequestID, u.AccountID, u.KeyID, u.Model, u.Provider, u.InputTokens,
					u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.Cost, u.Charge, u.Savings, u.Cache,
					u.LatencyMicros, u.Status, micros(u.At), u.Shortfall)
			}
			q := `INSERT INTO usage(request_id, account_id, key_id, model, provider, input_tokens, output_tokens,
				cache_read_tokens, cache_write_tokens, cost, charge, savings, cache, latency_us, status, at, shortfall) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?),", n), ",")
			if _, err := tx.ExecContext(ctx, q, args...); isUnique(err) {
				return fmt.Errorf("usage import: %w", store.ErrExists)
			} else if err != nil {
				return err
			}
			us = us[n:]
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO usage_daily
			SELECT account_id, at / 86400000000, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(cost), SUM(charge), SUM(savings)
			FROM usage WHERE id > ? GROUP BY 1, 2 ORDER BY 1, 2
			ON CONFLICT(account_id, day) DO UPDATE SET requests = requests + excluded.requests,
			input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
			cost = cost + excluded.cost, charge = charge + excluded.charge, savings = savings + excluded.savings`, first); err != nil {
			return err
		}
		for _, t := range [...]struct {
			table string
			div   int64
		}{{"usage_minute", minuteMicros}, {"usage_hour", hourMicros}, {"usage_day", dayMicros}} {
			if _, err := tx.ExecContext(ctx, `INSERT INTO `+t.table+`
				SELECT at / ?, account_id, provider, model, COUNT(*), SUM(status >= 400),
				SUM(cache LIKE '%hit' OR cache = 'stale'), SUM(input_tokens), SUM(output_tokens),
				SUM(cost), SUM(charge), SUM(savings), SUM(latency_us)
				FROM usage WHERE id > ? GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
				ON CONFLICT(bucket, account_id, provider, model) DO UPDATE SET requests = requests + excluded.requests,
				errors = errors + excluded.errors, cache_hits = cache_hits + excluded.cache_hits,
				input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
				cost = cost + excluded.cost, charge = charge + excluded.charge, savings = savings + excluded.savings,
				latency_us = latency_us + excluded.latency_us`, t.div, first); err != nil {
				return fmt.Errorf("usage import: %s: %w", t.table, err)
			}
		}
		return nil
	})
}
