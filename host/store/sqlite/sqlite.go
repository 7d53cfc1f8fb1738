// Package sqlite is the embedded implementation of host/store on SQLite
// (modernc.org/sqlite, pure Go). One database file in the data directory
// holds everything; see README.md for the layout and the invariants.
//
// The file is opened in WAL mode with two connection pools: a single writer
// connection, so write transactions queue in the process instead of
// retrying on SQLITE_BUSY, and a small pool of query-only readers that WAL
// lets run beside the writer. Versioned migrations (migrations/*.sql,
// embedded) are applied at Open inside one transaction and recorded in
// schema_version.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/bardoinference/bardo/host/store"
)

//go:embed migrations/*.sql
var migrations embed.FS

// FileName is the database's name inside the data directory.
const FileName = "bardo.db"

// Store is a store.Store on one SQLite file. It is safe for concurrent use,
// and several processes may open the same file (the CLI beside a running
// gateway): SQLite's locks and busy_timeout serialize their writers.
type Store struct {
	w   *sql.DB // exactly one connection: every write transaction
	r   *sql.DB // query-only readers
	now func() time.Time

	// stmts caches the writer's prepared statements by query text: parsing
	// was ~40 % of a reserve+settle. A query first seen inside a
	// transaction runs unprepared and is prepared after the commit, when
	// the single writer connection is free again (preparing while the
	// transaction holds it would wait for ever).
	stmts   sync.Map // string → *sql.Stmt
	pending sync.Map // string → struct{}
}

var _ store.Store = (*Store)(nil)

// Options tunes Open; the zero value is the production setting.
type Options struct {
	// Readers is the size of the reader pool (default: GOMAXPROCS, at least 2).
	Readers int
	// Now replaces the clock (tests).
	Now func() time.Time
}

// Open opens (creating if needed) the database at path and applies pending
// migrations.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// The file holds balances and key hashes: owner-only. SQLite gives the
	// -wal and -shm files the database file's mode.
	if f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	// synchronous=NORMAL in WAL mode: a commit survives a killed process
	// (the WAL is in the OS cache); only an OS crash or power loss can lose
	// the last commits, never corrupt the file. FULL costs an fsync per
	// commit, which caps paid requests at the disk's fsync rate.
	pragmas := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		pragmas.Add("_pragma", p)
	}
	wq := url.Values{"_txlock": {"immediate"}}
	for k, v := range pragmas {
		wq[k] = v
	}
	w, err := sql.Open("sqlite", "file:"+abs+"?"+wq.Encode())
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)

	rq := url.Values{}
	for k, v := range pragmas {
		rq[k] = v
	}
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", "file:"+abs+"?"+rq.Encode())
	if err != nil {
		w.Close()
		return nil, err
	}
	n := opt.Readers
	if n <= 0 {
		n = max(runtime.GOMAXPROCS(0), 2)
	}
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)

	s := &Store{w: w, r: r, now: opt.Now}
	if s.now == nil {
		s.now = time.Now
	}
	// Switching a fresh file to WAL takes an exclusive lock that SQLite's
	// busy handler does not wait for, so two processes opening a new file
	// at once may see SQLITE_BUSY here: retry, bounded.
	for range 50 {
		if err = s.migrate(ctx); !isBusy(err) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", abs, err)
	}
	return s, nil
}

// Close closes both pools.
func (s *Store) Close() error {
	s.stmts.Range(func(_, v any) bool { v.(*sql.Stmt).Close(); return true })
	return errors.Join(s.r.Close(), s.w.Close())
}

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

type migration struct {
	version int
	name    string
	sql     string
}

func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, n := range names {
		base := filepath.Base(n)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a positive number and '_'", base)
		}
		b, err := migrations.ReadFile(n)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{v, base, string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate applies the pending migrations in one IMMEDIATE transaction, so
// two processes opening a fresh file at once apply each exactly once.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL) STRICT`); err != nil {
			return err
		}
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&cur); err != nil {
			return err
		}
		if len(ms) > 0 && cur > ms[len(ms)-1].version {
			return fmt.Errorf("database schema version %d is newer than this binary's %d", cur, ms[len(ms)-1].version)
		}
		for _, m := range ms {
			if m.version <= cur {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("%s: %w", m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version(version, name, applied) VALUES (?, ?, ?)`,
				m.version, m.name, s.now().UnixMicro()); err != nil {
				return err
			}
		}
		return nil
	})
}

// write runs fn in a write transaction (BEGIN IMMEDIATE on the single
// writer connection) and commits it unless fn fails.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		s.prepare(ctx)
		return err
	}
	err = tx.Commit()
	s.prepare(ctx)
	return err
}

// exec runs q in tx, through the statement cache.
func (s *Store) exec(ctx context.Context, tx *sql.Tx, q string, args ...any) (sql.Result, error) {
	if st, ok := s.stmts.Load(q); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)).ExecContext(ctx, args...)
	}
	s.pending.Store(q, struct{}{})
	return tx.ExecContext(ctx, q, args...)
}

// queryRow runs q in tx, through the statement cache.
func (s *Store) queryRow(ctx context.Context, tx *sql.Tx, q string, args ...any) *sql.Row {
	if st, ok := s.stmts.Load(q); ok {
		return tx.StmtContext(ctx, st.(*sql.Stmt)).QueryRowContext(ctx, args...)
	}
	s.pending.Store(q, struct{}{})
	return tx.QueryRowContext(ctx, q, args...)
}

// prepare prepares the queries first run since the last call. It must not
// be called while this goroutine holds the writer connection.
func (s *Store) prepare(ctx context.Context) {
	s.pending.Range(func(k, _ any) bool {
		s.pending.Delete(k)
		q := k.(string)
		if _, ok := s.stmts.Load(q); ok {
			return true
		}
		st, err := s.w.PrepareContext(context.WithoutCancel(ctx), q)
		if err != nil {
			return true // it will run unprepared, as it did
		}
		if _, loaded := s.stmts.LoadOrStore(q, st); loaded {
			st.Close()
		}
		return true
	})
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// notFound maps sql.ErrNoRows to store.ErrNotFound, naming what.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, store.ErrNotFound)
	}
	return err
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended code).
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && (e.Code()&0xff == sqlite3.SQLITE_BUSY || e.Code()&0xff == sqlite3.SQLITE_LOCKED)
}

// isUnique reports whether err is a UNIQUE or PRIMARY KEY violation.
func isUnique(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}
