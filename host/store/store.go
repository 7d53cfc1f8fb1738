// Package store defines the gateway's durable state behind small interfaces:
// accounts, API keys, the money ledger, usage records, consumed nonces and
// windowed counters. Every method takes a context.Context and returns an
// error, so the embedded SQLite implementation (host/store/sqlite) can be
// joined later by PostgreSQL and Redis ones without touching callers.
//
// Money is an int64 count of micro-USD (1 USD = 1,000,000) everywhere; no
// float ever holds an amount. README.md in this directory states the
// ledger's invariants.
package store

import (
	"context"
	"errors"
	"time"
)

// MicroUSD is the number of micro-USD in one US dollar.
const MicroUSD = 1_000_000

// Errors every implementation returns (wrapped or not; test with errors.Is).
var (
	ErrNotFound            = errors.New("store: not found")
	ErrExists              = errors.New("store: already exists")
	ErrInsufficientFunds   = errors.New("store: insufficient funds")
	ErrBudgetExceeded      = errors.New("store: budget exceeded")
	ErrReservationReleased = errors.New("store: reservation already released")
	ErrNonceUsed           = errors.New("store: nonce already used")
	ErrInvalidAmount       = errors.New("store: invalid amount")
	ErrAccountDisabled     = errors.New("store: account disabled")
)

// Tier is an account's feature tier; it selects the spread and gating.
type Tier string

// Tiers (spec: free / pro / golem).
const (
	TierFree  Tier = "free"
	TierPro   Tier = "pro"
	TierGolem Tier = "golem"
)

// Valid reports whether t is a known tier.
func (t Tier) Valid() bool { return t == TierFree || t == TierPro || t == TierGolem }

// Account holds a balance, a tier and (through Keys) its keys.
type Account struct {
	ID       string
	Name     string
	Tier     Tier
	Balance  int64 // posted micro-USD: Σ amount of the account's ledger entries
	Held     int64 // micro-USD held by open reservations: Σ held of its entries
	Disabled bool
	Created  time.Time
}

// Available is what a new reservation may take: Balance − Held, never < 0.
func (a Account) Available() int64 { return a.Balance - a.Held }

// Key is a stored API key. The secret itself is never stored: Hash is
// HMAC-SHA256 of the whole token under the server secret (host/auth).
type Key struct {
	ID         string // the token's non-secret lookup prefix
	AccountID  string
	Name       string
	Hash       []byte
	ReadOnly   bool      // only models, count_tokens and balance
	SpendLimit int64     // micro-USD over the key's life; 0 = none
	Models     []string  // path.Match globs of allowed models; empty = all
	CIDRs      []string  // allowed client networks; empty = any
	Expires    time.Time // zero = never
	Disabled   bool
	Revoked    time.Time // zero = not revoked
	Created    time.Time
	// RateLimit is the key's requests per minute; 0 takes its account
	// tier's default (host/billing).
	RateLimit int
}

// EntryKind names what a ledger entry records.
type EntryKind string

// Ledger entry kinds.
const (
	EntryTopUp      EntryKind = "topup"      // money in: Amount > 0
	EntryAdjustment EntryKind = "adjustment" // operator correction with a reason, either sign
	EntryHold       EntryKind = "hold"       // a reservation: Held > 0, Amount 0
	EntryCharge     EntryKind = "charge"     // a settlement: Amount = −charged, Held = −reserved
	EntryRelease    EntryKind = "release"    // a reservation given back: Held = −reserved
)

// Entry is one append-only ledger line. An account's Balance is the sum of
// its entries' Amount and its Held the sum of their Held.
type Entry struct {
	Seq           int64
	AccountID     string
	Kind          EntryKind
	Amount        int64 // change of Balance
	Held          int64 // change of Held
	ReservationID int64
	RequestID     string
	Reason        string
	At            time.Time
}

// ReservationState is the lifecycle of a reservation: held, then exactly
// one of settled or released.
type ReservationState string

// Reservation states.
const (
	Held     ReservationState = "held"
	Settled  ReservationState = "settled"
	Released ReservationState = "released"
)

// Budget caps the spend under a name the caller chooses, such as
// "key:K:day:2026-11-26" or "acct:A:month:2026-11". A reservation counts
// against every budget it names until it is settled (then its charge does)
// or released.
type Budget struct {
	Name  string
	Limit int64 // micro-USD
}

// ReserveRequest asks to hold Amount for one request.
type ReserveRequest struct {
	AccountID string
	KeyID     string
	RequestID string // unique per request: a second Reserve returns the first reservation
	Amount    int64
	Budgets   []Budget
}

// Reservation is money held for one request.
type Reservation struct {
	ID        int64
	AccountID string
	KeyID     string
	RequestID string
	Amount    int64
	State     ReservationState
	Charged   int64 // when settled
	Shortfall int64 // when settled: actual cost that could not be charged
	Created   time.Time
}

// Settlement is the result of Settle.
type Settlement struct {
	Reservation Reservation
	// Replayed is true when the reservation had already been settled and
	// this call changed nothing.
	Replayed bool
}

// Usage is one request's record.
type Usage struct {
	ID               int64
	RequestID        string
	AccountID        string
	KeyID            string
	Model            string
	Provider         string
	InputTokens      int64
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
	Cost             int64 // provider cost, micro-USD
	Charge           int64 // what the caller paid, micro-USD
	Savings          int64 // micro-USD
	Cache            string
	LatencyMicros    int64
	Status           int
	At               time.Time
	// Shortfall is what the request cost beyond what the account could
	// pay (micro-USD): the operator's loss, 0 almost always.
	Shortfall int64
}

// Posting is one request's settlement for Ledger.Post: its usage record,
// whose Charge is what to charge the account (0: the record alone).
type Posting struct {
	Usage Usage
}

// Posted is the result of one Posting.
type Posted struct {
	RequestID string
	AccountID string
	// Charged is what the ledger took: Usage.Charge capped at the account's
	// available amount; the rest went to the record's Shortfall.
	Charged   int64
	Shortfall int64
	// Balance is the account's posted balance once the batch committed.
	Balance int64
	// Replayed is true when the request already had its record: nothing
	// changed, and Charged is the first posting's.
	Replayed bool
	// Err is set when this posting alone could not be applied (unknown
	// account, invalid amount); the others of the batch were.
	Err error
}

// UsageSumQuery selects the usage records of an account (and optionally
// one of its keys) in [From, To); a zero To is open-ended.
type UsageSumQuery struct {
	AccountID string
	KeyID     string
	From, To  time.Time
}

// UsageSum totals usage records.
type UsageSum struct {
	Requests int64
	Tokens   int64 // input + output + cache read + cache write
	Charge   int64
}

// BudgetScope is what a spending budget caps: one key, or a whole account.
type BudgetScope string

// Budget scopes.
const (
	ScopeKey     BudgetScope = "key"
	ScopeAccount BudgetScope = "account"
)

// BudgetPeriod is the window a spending budget resets on (UTC).
type BudgetPeriod string

// Budget periods.
const (
	PeriodDay   BudgetPeriod = "day"
	PeriodMonth BudgetPeriod = "month"
)

// SpendBudget caps what a key or an account may be charged per UTC day or
// month (host/billing enforces it, downgrading the model before refusing).
type SpendBudget struct {
	Scope     BudgetScope
	Subject   string // the key's or the account's id
	Period    BudgetPeriod
	AccountID string // the account the subject belongs to (filled by the store)
	Limit     int64  // micro-USD, > 0
}

// UsageQuery selects usage records newest first. Cursor is the Next of a
// previous page (keyset pagination: cost independent of depth).
type UsageQuery struct {
	AccountID string
	KeyID     string // optional
	Model     string // optional
	From, To  time.Time
	Limit     int
	Cursor    string
}

// UsagePage is one page of UsageQuery; Next is empty on the last page.
type UsagePage struct {
	Records []Usage
	Next    string
}

// DailyUsage aggregates an account's usage over one UTC day.
type DailyUsage struct {
	Day          time.Time
	Requests     int64
	InputTokens  int64
	OutputTokens int64
	Cost         int64
	Charge       int64
	Savings      int64
}

// Accounts stores accounts.
type Accounts interface {
	CreateAccount(ctx context.Context, a Account) (Account, error)
	Account(ctx context.Context, id string) (Account, error)
	ListAccounts(ctx context.Context) ([]Account, error)
	SetAccountTier(ctx context.Context, id string, t Tier) error
	SetAccountDisabled(ctx context.Context, id string, disabled bool) error
}

// Keys stores API keys.
type Keys interface {
	CreateKey(ctx context.Context, k Key) error
	Key(ctx context.Context, id string) (Key, error)
	ListKeys(ctx context.Context, accountID string) ([]Key, error)
	RevokeKey(ctx context.Context, id string, at time.Time) error
	SetKeyDisabled(ctx context.Context, id string, disabled bool) error
	// SetKeyRateLimit sets a key's requests per minute (0: its tier's).
	SetKeyRateLimit(ctx context.Context, id string, perMinute int) error
}

// Ledger moves money. Each method is one database transaction.
type Ledger interface {
	// TopUp adds amount (> 0) with a reason.
	TopUp(ctx context.Context, accountID string, amount int64, reason string) (Entry, error)
	// Adjust adds delta (≠ 0, either sign) with a mandatory reason; it
	// refuses to take Available below zero.
	Adjust(ctx context.Context, accountID string, delta int64, reason string) (Entry, error)
	// Reserve holds r.Amount, or fails with ErrInsufficientFunds or
	// ErrBudgetExceeded. It is idempotent by r.RequestID.
	Reserve(ctx context.Context, r ReserveRequest) (Reservation, error)
	// Settle charges actual (capped so that the balance never goes below
	// zero; the rest is recorded as Shortfall), releases the remainder and
	// writes u (when not nil) as the request's usage record, all in one
	// transaction. A second Settle returns the first result with Replayed.
	Settle(ctx context.Context, reservationID int64, actual int64, u *Usage) (Settlement, error)
	// Release gives a held reservation back. Releasing a released or
	// settled reservation is a no-op returning it.
	Release(ctx context.Context, reservationID int64) (Reservation, error)
	// Post settles requests whose money was held outside the store (the
	// billing meter's in-memory holds), all in one transaction: for each, a
	// charge entry of its Usage.Charge (when > 0, capped so the balance
	// never goes below zero; the excess is its Shortfall) and its usage
	// record. It is idempotent by request id: a posting whose request
	// already has a record changes nothing and comes back Replayed. An
	// error fails the whole batch (nothing committed); a posting that
	// alone cannot apply has its Posted.Err set.
	Post(ctx context.Context, ps []Posting) ([]Posted, error)
	// ReleaseOrphans releases every reservation still held that was created
	// before the given time: the gateway calls it at start with its start
	// time, since a killed process leaves its reservations held.
	ReleaseOrphans(ctx context.Context, before time.Time) (int, error)
	Reservation(ctx context.Context, id int64) (Reservation, error)
	// Entries lists an account's entries with Seq > after, oldest first.
	Entries(ctx context.Context, accountID string, after int64, limit int) ([]Entry, error)
	// Audit checks the invariants of README.md for one account.
	Audit(ctx context.Context, accountID string) error
}

// UsageLog stores usage records.
type UsageLog interface {
	// RecordUsage writes a record of a request that settled no
	// reservation (free, direct or refused); ErrExists if the request
	// already has one.
	RecordUsage(ctx context.Context, u Usage) error
	Usage(ctx context.Context, q UsageQuery) (UsagePage, error)
	DailyUsage(ctx context.Context, accountID string, from, to time.Time) ([]DailyUsage, error)
	// SumUsage totals the records q selects.
	SumUsage(ctx context.Context, q UsageSumQuery) (UsageSum, error)
}

// SpendBudgets stores spending budgets.
type SpendBudgets interface {
	// SetBudget sets (Limit > 0) or removes (Limit 0) the budget of
	// b.Scope, b.Subject, b.Period; ErrNotFound when the subject does not
	// exist.
	SetBudget(ctx context.Context, b SpendBudget) error
	// ListBudgets returns an account's budgets and its keys'.
	ListBudgets(ctx context.Context, accountID string) ([]SpendBudget, error)
}

// Nonces remembers consumed one-time values (x402 authorizations).
type Nonces interface {
	// ConsumeNonce records nonce in scope, or returns ErrNonceUsed.
	ConsumeNonce(ctx context.Context, scope, nonce string, expires time.Time) error
	// PruneNonces forgets nonces expired before now.
	PruneNonces(ctx context.Context, now time.Time) (int, error)
}

// X402Settlement is an accepted x402 payment whose settlement failed: the
// request was served, the payment is owed, and its payer is refused until
// a retry settles it (host/paywall).
type X402Settlement struct {
	ID        int64
	Payer     string // the paying wallet, lower-case 0x hex
	RequestID string
	Network   string // CAIP-2
	Amount    string // atomic units of the asset
	// Payload and Requirements are the payment and the offer it answered,
	// as JSON, exactly what a retry sends the facilitator.
	Payload      []byte
	Requirements []byte
	Attempts     int
	LastError    string // an x402 error code or a transport error; never a secret
	Created      time.Time
	Settled      time.Time // zero while owed
	Transaction  string    // the settlement's transaction hash, once settled
}

// X402Settlements keeps the x402 settlements still owed.
type X402Settlements interface {
	// AddX402Settlement records a failed settlement and returns its id.
	AddX402Settlement(ctx context.Context, s X402Settlement) (int64, error)
	// X402Owed returns up to limit unsettled records, oldest first; with a
	// payer, only that payer's.
	X402Owed(ctx context.Context, payer string, limit int) ([]X402Settlement, error)
	// X402Attempted counts a failed retry.
	X402Attempted(ctx context.Context, id int64, lastError string) error
	// X402Settled marks a record settled by tx.
	X402Settled(ctx context.Context, id int64, tx string, at time.Time) error
}

// Counters are fixed-window counters (rate limits, token allowances).
type Counters interface {
	// AddCounter adds n to the counter name in the window starting at
	// window and returns the new value.
	AddCounter(ctx context.Context, name string, window time.Time, n int64) (int64, error)
	// PruneCounters forgets windows that started before the given time.
	PruneCounters(ctx context.Context, before time.Time) (int, error)
}

// Store is everything the gateway keeps.
type Store interface {
	Accounts
	Keys
	Ledger
	UsageLog
	SpendBudgets
	Nonces
	Counters
	Close() error
}
