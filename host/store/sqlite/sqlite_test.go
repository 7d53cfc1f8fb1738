package sqlite

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

func open(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(dir, FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func account(t testing.TB, s *Store, id string, balance int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.CreateAccount(ctx, store.Account{ID: id, Tier: store.TierPro}); err != nil {
		t.Fatal(err)
	}
	if balance > 0 {
		if _, err := s.TopUp(ctx, id, balance, "test"); err != nil {
			t.Fatal(err)
		}
	}
}

func audit(t testing.TB, s *Store, id string) store.Account {
	t.Helper()
	if err := s.Audit(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	a, err := s.Account(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestMigrationsApplyOnce(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(context.Background())
	if err != nil || v != ms[len(ms)-1].version {
		t.Fatalf("version %d, %v", v, err)
	}
	account(t, s, "a", 5)
	s.Close()
	s2 := open(t, dir) // reopening applies nothing and keeps the data
	if a := audit(t, s2, "a"); a.Balance != 5 {
		t.Fatalf("balance after reopen %d", a.Balance)
	}
}

func TestLedgerAppendOnly(t *testing.T) {
	s := open(t, t.TempDir())
	account(t, s, "a", 100)
	for _, q := range []string{`UPDATE ledger SET amount = 1`, `DELETE FROM ledger`} {
		if _, err := s.w.Exec(q); err == nil {
			t.Fatalf("%s succeeded", q)
		}
	}
	// The account row cannot go negative even if a bug tried.
	if _, err := s.w.Exec(`UPDATE accounts SET balance = -1 WHERE id = 'a'`); err == nil {
		t.Fatal("negative balance accepted")
	}
}

func TestReserveSettleRelease(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 1000)

	r, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", KeyID: "k", RequestID: "r1", Amount: 600})
	if err != nil {
		t.Fatal(err)
	}
	if a := audit(t, s, "a"); a.Available() != 400 || a.Held != 600 {
		t.Fatalf("after reserve %+v", a)
	}
	again, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r1", Amount: 600})
	if err != nil || again.ID != r.ID {
		t.Fatalf("second reserve of r1: %+v %v", again, err)
	}
	if _, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r2", Amount: 401}); !errors.Is(err, store.ErrInsufficientFunds) {
		t.Fatalf("overdraw: %v", err)
	}
	st, err := s.Settle(ctx, r.ID, 250, &store.Usage{Model: "m", InputTokens: 10, Cost: 200})
	if err != nil || st.Replayed || st.Reservation.Charged != 250 {
		t.Fatalf("settle %+v %v", st, err)
	}
	st2, err := s.Settle(ctx, r.ID, 999, nil)
	if err != nil || !st2.Replayed || st2.Reservation.Charged != 250 {
		t.Fatalf("second settle %+v %v", st2, err)
	}
	if a := audit(t, s, "a"); a.Balance != 750 || a.Held != 0 {
		t.Fatalf("after settle %+v", a)
	}
	page, err := s.Usage(ctx, store.UsageQuery{AccountID: "a"})
	if err != nil || len(page.Records) != 1 || page.Records[0].Charge != 250 || page.Records[0].KeyID != "k" || page.Records[0].RequestID != "r1" {
		t.Fatalf("usage %+v %v", page, err)
	}

	r3, _ := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r3", Amount: 700})
	if got, err := s.Release(ctx, r3.ID); err != nil || got.State != store.Released {
		t.Fatalf("release %+v %v", got, err)
	}
	if _, err := s.Settle(ctx, r3.ID, 1, nil); !errors.Is(err, store.ErrReservationReleased) {
		t.Fatalf("settle after release: %v", err)
	}
	if got, err := s.Release(ctx, r.ID); err != nil || got.State != store.Settled {
		t.Fatalf("release of settled %+v %v", got, err)
	}
	if a := audit(t, s, "a"); a.Balance != 750 || a.Held != 0 {
		t.Fatalf("after release %+v", a)
	}
}

// A request that cost more than it reserved takes what is left, never more.
func TestSettleAboveReservationNeverNegative(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 100)
	r1, _ := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r1", Amount: 50})
	r2, _ := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r2", Amount: 30})
	st, err := s.Settle(ctx, r1.ID, 500, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 100 − 30 still held by r2 = 70 chargeable.
	if st.Reservation.Charged != 70 || st.Reservation.Shortfall != 430 {
		t.Fatalf("charged %d shortfall %d", st.Reservation.Charged, st.Reservation.Shortfall)
	}
	if st, _ := s.Settle(ctx, r2.ID, 30, nil); st.Reservation.Charged != 30 {
		t.Fatalf("r2 charged %d", st.Reservation.Charged)
	}
	if a := audit(t, s, "a"); a.Balance != 0 {
		t.Fatalf("balance %d", a.Balance)
	}
}

func TestAdjustAndTopUp(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 100)
	if _, err := s.TopUp(ctx, "a", 0, "x"); !errors.Is(err, store.ErrInvalidAmount) {
		t.Fatalf("zero top-up: %v", err)
	}
	if _, err := s.Adjust(ctx, "a", -10, ""); !errors.Is(err, store.ErrInvalidAmount) {
		t.Fatalf("adjustment without reason: %v", err)
	}
	s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "r", Amount: 60})
	if _, err := s.Adjust(ctx, "a", -41, "refund"); !errors.Is(err, store.ErrInsufficientFunds) {
		t.Fatalf("adjust below held: %v", err)
	}
	if _, err := s.Adjust(ctx, "a", -40, "refund"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.TopUp(ctx, "nobody", 5, "x"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("top-up of unknown account: %v", err)
	}
	es, err := s.Entries(ctx, "a", 0, 0)
	if err != nil || len(es) != 3 || es[2].Kind != store.EntryAdjustment || es[2].Reason != "refund" {
		t.Fatalf("entries %+v %v", es, err)
	}
	audit(t, s, "a")
}

func TestBudgets(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 10_000)
	day := []store.Budget{{Name: "key:k:day", Limit: 100}, {Name: "acct:a:month", Limit: 1000}}
	r1, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "1", Amount: 80, Budgets: day})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "2", Amount: 30, Budgets: day}); !errors.Is(err, store.ErrBudgetExceeded) {
		t.Fatalf("held budget: %v", err)
	}
	s.Settle(ctx, r1.ID, 20, nil) // 20 spent, 80 free again
	if _, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "3", Amount: 80, Budgets: day}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "4", Amount: 1, Budgets: day}); !errors.Is(err, store.ErrBudgetExceeded) {
		t.Fatalf("full budget: %v", err)
	}
}

func TestOrphansReleased(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 100)
	s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "old", Amount: 40, Budgets: []store.Budget{{Name: "b", Limit: 50}}})
	start := time.Now()
	n, err := s.ReleaseOrphans(ctx, start.Add(time.Second))
	if err != nil || n != 1 {
		t.Fatalf("released %d, %v", n, err)
	}
	if a := audit(t, s, "a"); a.Held != 0 || a.Balance != 100 {
		t.Fatalf("%+v", a)
	}
	// The budget's hold went with it.
	if _, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: "new", Amount: 50, Budgets: []store.Budget{{Name: "b", Limit: 50}}}); err != nil {
		t.Fatal(err)
	}
}

// 64 concurrent requests reserve and settle on a balance that covers only a
// few: the balance never goes negative, the charges sum to its change and
// every settled request has exactly one usage record.
func TestLedgerInvariantsConcurrent(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	const start, reserve = 1000, 100
	account(t, s, "a", start)
	var wg sync.WaitGroup
	var mu sync.Mutex
	settled, refused := 0, 0
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("req-%d", i)
			r, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: id, Amount: reserve})
			if errors.Is(err, store.ErrInsufficientFunds) {
				mu.Lock()
				refused++
				mu.Unlock()
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			actual := int64(i%7) * 20 // sometimes above the reservation
			if _, err := s.Settle(ctx, r.ID, actual, &store.Usage{Model: "m", Cost: actual}); err != nil {
				t.Error(err)
				return
			}
			s.Settle(ctx, r.ID, actual, &store.Usage{}) // a retry changes nothing
			mu.Lock()
			settled++
			mu.Unlock()
		}()
	}
	wg.Wait()
	a := audit(t, s, "a")
	if a.Balance < 0 || a.Held != 0 {
		t.Fatalf("%+v", a)
	}
	var charged, records int64
	if err := s.r.QueryRow(`SELECT COALESCE(SUM(charge), 0), COUNT(*) FROM usage`).Scan(&charged, &records); err != nil {
		t.Fatal(err)
	}
	if start-a.Balance != charged {
		t.Fatalf("balance moved %d, usage charges %d", start-a.Balance, charged)
	}
	if records != int64(settled) || settled+refused != 64 || settled < start/reserve {
		t.Fatalf("%d records, %d settled, %d refused", records, settled, refused)
	}
}

func TestUsagePaginationAndDaily(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	base := time.Date(2026, 11, 25, 23, 0, 0, 0, time.UTC)
	for i := range 25 {
		u := store.Usage{RequestID: fmt.Sprint(i), AccountID: "a", Model: "m", InputTokens: 10, Charge: 3,
			At: base.Add(time.Duration(i/2) * 10 * time.Minute)} // pairs share a timestamp
		if err := s.RecordUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordUsage(ctx, store.Usage{RequestID: "0", AccountID: "a"}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate usage: %v", err)
	}
	seen := map[string]bool{}
	q := store.UsageQuery{AccountID: "a", Limit: 4}
	var prev time.Time
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("pagination does not end")
		}
		p, err := s.Usage(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range p.Records {
			if seen[u.RequestID] {
				t.Fatalf("record %s twice", u.RequestID)
			}
			if !prev.IsZero() && u.At.After(prev) {
				t.Fatal("not newest first")
			}
			seen[u.RequestID], prev = true, u.At
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
	}
	if len(seen) != 25 {
		t.Fatalf("saw %d records", len(seen))
	}
	days, err := s.DailyUsage(ctx, "a", base.Add(-time.Hour), base.Add(48*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	// 23:00, 23:00, 23:10, 23:10, … 23:50: 12 records on the 25th, 13 on the 26th.
	if len(days) != 2 || days[0].Requests != 12 || days[1].Requests != 13 || days[1].Charge != 39 || days[0].Day.Day() != 25 {
		t.Fatalf("days %+v", days)
	}
}

func TestNoncesAndCounters(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	exp := time.Now().Add(time.Hour)
	if err := s.ConsumeNonce(ctx, "x402", "n1", exp); err != nil {
		t.Fatal(err)
	}
	if err := s.ConsumeNonce(ctx, "x402", "n1", exp); !errors.Is(err, store.ErrNonceUsed) {
		t.Fatalf("replay: %v", err)
	}
	if err := s.ConsumeNonce(ctx, "other", "n1", exp); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.PruneNonces(ctx, exp.Add(time.Second)); n != 2 {
		t.Fatalf("pruned %d", n)
	}
	w := time.Unix(600, 0)
	for i := 1; i <= 3; i++ {
		if v, err := s.AddCounter(ctx, "rl:k", w, 1); err != nil || v != int64(i) {
			t.Fatalf("counter %d %v", v, err)
		}
	}
	if v, _ := s.AddCounter(ctx, "rl:k", w.Add(time.Minute), 5); v != 5 {
		t.Fatalf("new window %d", v)
	}
	if n, _ := s.PruneCounters(ctx, w.Add(time.Second)); n != 1 {
		t.Fatalf("pruned %d windows", n)
	}
}

func TestKeysRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 0)
	k := store.Key{ID: "abc", AccountID: "a", Hash: []byte{1, 2, 3}, Models: []string{"claude-*", "gpt-4o"},
		CIDRs: []string{"10.0.0.0/8"}, SpendLimit: 5, Expires: time.Unix(2e9, 0).UTC()}
	if err := s.CreateKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateKey(ctx, k); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate key: %v", err)
	}
	if err := s.CreateKey(ctx, store.Key{ID: "x", AccountID: "none", Hash: []byte{1}}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("key of unknown account: %v", err)
	}
	got, err := s.Key(ctx, "abc")
	if err != nil || len(got.Models) != 2 || got.CIDRs[0] != "10.0.0.0/8" || !got.Expires.Equal(k.Expires) || got.SpendLimit != 5 {
		t.Fatalf("%+v %v", got, err)
	}
	if err := s.RevokeKey(ctx, "abc", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Key(ctx, "abc"); got.Revoked.IsZero() {
		t.Fatal("not revoked")
	}
	if err := s.RevokeKey(ctx, "nope", time.Time{}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	if ks, _ := s.ListKeys(ctx, "a"); len(ks) != 1 {
		t.Fatalf("%d keys", len(ks))
	}
}

// Two stores opening a fresh file at once (as two processes would) apply
// the migrations once between them.
func TestConcurrentOpen(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(context.Background(), filepath.Join(dir, FileName), Options{})
			if err == nil {
				s.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	s := open(t, dir)
	var n int
	s.r.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&n)
	if ms, _ := loadMigrations(); n != len(ms) {
		t.Fatalf("%d schema_version rows for %d migrations", n, len(ms))
	}
}

// 64 concurrent reservations against one budget never hold or spend more
// than its limit, whatever the account holds.
func TestBudgetConcurrent(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	account(t, s, "a", 1_000_000)
	const limit, each = 1000, 70
	b := []store.Budget{{Name: "key:k:day", Limit: limit}}
	var wg sync.WaitGroup
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.Reserve(ctx, store.ReserveRequest{AccountID: "a", RequestID: fmt.Sprint(i), Amount: each, Budgets: b})
			if errors.Is(err, store.ErrBudgetExceeded) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			s.Settle(ctx, r.ID, each, nil)
		}()
	}
	wg.Wait()
	var spent, held int64
	s.r.QueryRow(`SELECT spent, held FROM budgets WHERE name = 'key:k:day'`).Scan(&spent, &held)
	if spent > limit || held != 0 || spent != limit/each*each {
		t.Fatalf("spent %d, held %d, limit %d", spent, held, limit)
	}
	if a := audit(t, s, "a"); 1_000_000-a.Balance != spent {
		t.Fatalf("account charged %d, budget spent %d", 1_000_000-a.Balance, spent)
	}
}
