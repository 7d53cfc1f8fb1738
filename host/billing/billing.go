// Package billing is the gateway's meter: it admits a paid request against
// its key's rate limit, its account's hourly token allowance, its budgets
// and its balance, holds the request's estimated cost while it runs, and
// settles what it actually cost into the ledger (host/store) when it ends.
//
// Holds live in memory and settlements are durable. A SQLite reservation
// costs 230–420 µs, twenty times the admission budget, and a hold need not
// survive a crash (a killed process charged nothing for the requests it
// held), so each account's posted balance, open holds and budgets are kept
// in memory under a per-account mutex, and every closed request becomes
// one Posting, committed by a single writer that batches concurrent
// settlements into one transaction (group commit). Tab.Close appends its
// posting to a journal file with one write(2) and returns without waiting
// for the commit; a start replays what a killed process left, so a served
// answer's record survives kill -9. Without the journal, Tab.Close waits
// for its batch's commit.
//
// In-memory holds assume one gateway per database. README.md states the
// formulas, the policies and what several gateways would need.
package billing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
)

// Store is what the meter needs of host/store; *sqlite.Store has it.
type Store interface {
	Account(ctx context.Context, id string) (store.Account, error)
	Key(ctx context.Context, id string) (store.Key, error)
	ListBudgets(ctx context.Context, accountID string) ([]store.SpendBudget, error)
	SumUsage(ctx context.Context, q store.UsageSumQuery) (store.UsageSum, error)
	Usage(ctx context.Context, q store.UsageQuery) (store.UsagePage, error)
	Post(ctx context.Context, ps []store.Posting) ([]store.Posted, error)
}

// Tier is what an account tier pays and may use.
type Tier struct {
	// Spread is the markup on provider cost (basis points).
	Spread pricing.Spread
	// RequestsPerMinute is a key's default rate limit (0: none); a key's
	// own RateLimit overrides it.
	RequestsPerMinute int
	// TokensPerHour is the account's hourly token allowance (0: none).
	TokensPerHour int64
}

// Default limits per tier. The spreads are the spec's (003, "Feature
// tiers"); the rate limit is the spec's 100 requests a minute per key; the
// spec names an hourly allowance but no figure, so these are ours: about
// 15 long coding-agent turns an hour on free, 150 on pro, and a ceiling on
// golem high enough that only a runaway loop meets it.
var DefaultTiers = map[store.Tier]Tier{
	store.TierFree:  {Spread: pricing.SpreadFree, RequestsPerMinute: 100, TokensPerHour: 1_000_000},
	store.TierPro:   {Spread: pricing.SpreadPro, RequestsPerMinute: 100, TokensPerHour: 10_000_000},
	store.TierGolem: {Spread: pricing.SpreadGolem, RequestsPerMinute: 100, TokensPerHour: 100_000_000},
}

// Config configures a Meter. Zero fields take the defaults below.
type Config struct {
	Store Store
	// Tiers overrides DefaultTiers, tier by tier.
	Tiers map[store.Tier]Tier
	// MaxBatch bounds the postings one transaction commits (default 256).
	MaxBatch int
	// MaxBacklog is the number of postings waiting for a commit at which
	// new paid requests are refused with 503 until the ledger catches up
	// (default 4096): a store that cannot commit stops new spending rather
	// than pile up unrecorded charges.
	MaxBacklog int
	// CommitWait bounds how long Tab.Close waits for its commit when it
	// does (no journal, or one that cannot be written; default 10 s): past
	// it the bill shows the meter's own figures and the posting stays
	// queued, retried until it commits. It also bounds a read's Sync.
	CommitWait time.Duration
	// Refresh is how old an account's cached balance, tier and budgets may
	// grow before the next request re-reads them (default 2 s): a top-up by
	// the CLI shows within it.
	Refresh time.Duration
	// JournalDir is where settlements are journaled (the data directory;
	// README.md, "The journal"): Tab.Close appends its posting to a
	// ledger.journal.* segment there and returns without waiting for the
	// commit, and New replays what a killed process left. Empty: no
	// journal; Tab.Close waits for its commit.
	JournalDir string
	// Log receives settlement failures and shortfalls (nil: slog.Default()).
	Log *slog.Logger
	// Now replaces the clock (tests).
	Now func() time.Time
}

// Config defaults.
const (
	DefaultMaxBatch   = 256
	DefaultMaxBacklog = 4096
	DefaultCommitWait = 10 * time.Second
	DefaultRefresh    = 2 * time.Second
)

// Validate reports what is wrong with c, with the defaults applied.
func (c *Config) Validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("billing: no store"))
	}
	for name, t := range c.Tiers {
		if !name.Valid() {
			errs = append(errs, fmt.Errorf("billing: unknown tier %q", name))
		}
		if t.Spread < 0 || t.Spread > 100_000 {
			errs = append(errs, fmt.Errorf("billing: tier %s: spread %d bp out of range [0, 100000]", name, t.Spread))
		}
		if t.RequestsPerMinute < 0 || t.TokensPerHour < 0 {
			errs = append(errs, fmt.Errorf("billing: tier %s: negative limit", name))
		}
	}
	if c.JournalDir != "" {
		if fi, err := os.Stat(c.JournalDir); err != nil {
			errs = append(errs, fmt.Errorf("billing: journal directory: %w", err))
		} else if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("billing: journal directory %s is not a directory", c.JournalDir))
		}
	}
	if c.MaxBatch < 0 || c.MaxBacklog < 0 || c.CommitWait < 0 || c.Refresh < 0 {
		errs = append(errs, errors.New("billing: negative batch, backlog, commit wait or refresh"))
	}
	return errors.Join(errs...)
}

func (c *Config) applyDefaults() {
	tiers := make(map[store.Tier]Tier, len(DefaultTiers))
	for k, v := range DefaultTiers {
		tiers[k] = v
	}
	for k, v := range c.Tiers {
		tiers[k] = v
	}
	c.Tiers = tiers
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.MaxBacklog == 0 {
		c.MaxBacklog = DefaultMaxBacklog
	}
	if c.CommitWait == 0 {
		c.CommitWait = DefaultCommitWait
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultRefresh
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Meter is the billing meter: the admitter's Open and the request's Tab.
// It implements gateway.AccountReader. Safe for concurrent use.
type Meter struct {
	cfg Config
	st  Store
	log *slog.Logger
	now func() time.Time

	mu       sync.Mutex
	accounts map[string]*account

	w *writer
	j *journal // nil: no journal
}

// New validates cfg, applies its defaults, replays the settlement journal
// a previous process left in JournalDir (so the ledger holds every
// settlement before the first account is read), and starts the meter's
// ledger writer; Close stops it. A journal that cannot be replayed is an
// error: serving before it is would show balances without its charges.
func New(cfg Config) (*Meter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.applyDefaults()
	m := &Meter{cfg: cfg, st: cfg.Store, log: cfg.Log, now: cfg.Now, accounts: map[string]*account{}}
	if cfg.JournalDir != "" {
		lock, err := lockJournal(filepath.Join(cfg.JournalDir, JournalPrefix+"lock"))
		if err != nil {
			return nil, fmt.Errorf("billing: settlement journal: %w", err)
		}
		last, err := replayJournal(cfg.Store, cfg.JournalDir, cfg.MaxBatch, cfg.Log)
		if err != nil {
			lock.Close()
			return nil, err
		}
		m.j = openJournal(cfg.JournalDir, last, cfg.Log)
		m.j.lock = lock
	}
	m.w = newWriter(m)
	go m.w.run()
	return m, nil
}

// Close waits until every queued settlement is committed or ctx ends, then
// stops the writer and deletes the journal's committed segments. Postings
// still queued at that point are logged one by one (request, account,
// charge) at error level: with the journal they stay in it and the next
// start commits them; without it they are lost to the ledger, never
// silently. Open and Tab.Close must not be called after.
func (m *Meter) Close(ctx context.Context) error {
	err := m.w.close(ctx)
	if m.j != nil {
		if kept := m.j.close(); kept > 0 {
			m.log.Error("billing: settlements left in the journal; the next start commits them", "postings", kept,
				"dir", m.cfg.JournalDir)
		}
	}
	return err
}

// tier returns the terms of a tier (the free tier's for an unknown one).
func (m *Meter) tier(t store.Tier) Tier {
	if v, ok := m.cfg.Tiers[t]; ok {
		return v
	}
	return m.cfg.Tiers[store.TierFree]
}
