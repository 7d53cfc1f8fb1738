package billing

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/sdk/wire"
)

// logBuffer is a slog handler's destination tests read.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// journalFiles returns the journal segments in dir: name → contents.
func journalFiles(t testing.TB, dir string) map[string][]byte {
	t.Helper()
	seqs, err := segments(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, s := range seqs {
		b, err := os.ReadFile(filepath.Join(dir, segmentName(s)))
		if err != nil {
			t.Fatal(err)
		}
		out[segmentName(s)] = b
	}
	return out
}

func restore(t testing.TB, dir string, files map[string][]byte) {
	t.Helper()
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJournalReplayAfterCrash: tabs closed while the ledger cannot commit
// return at once with the meter's figures; the journal as a kill -9 leaves
// it is replayed at the next start — every settlement posted once, the
// balance the last bill showed — and replaying it again changes nothing.
func TestJournalReplayAfterCrash(t *testing.T) {
	e := newEnv(t, 1_000_000, nil)
	ctx := context.Background()
	p := e.principal("k1")
	var tabs []gateway.Tab
	for range 5 {
		c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
		if werr != nil {
			t.Fatal(werr)
		}
		tabs = append(tabs, c.Tab)
	}
	e.s.Close() // every commit fails from here on: nothing reaches the ledger
	var bills []gateway.Bill
	for _, tab := range tabs {
		bills = append(bills, tab.Close(e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000})))
	}
	if got := header(bills[4].Headers, pricing.HeaderBalance); got != "0.962500" {
		t.Fatalf("the fifth bill's balance %s, want 1 − 5 × 0.0075", got)
	}
	crashed := journalFiles(t, e.dir) // what kill -9 would leave
	if len(crashed) != 1 {
		t.Fatalf("journal segments %v", slices.Collect(mapsKeys(crashed)))
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.m.Close(cctx); err == nil {
		t.Fatal("closing with uncommitted settlements reported nothing")
	}
	e.m = nil
	if got := journalFiles(t, e.dir); !reflect.DeepEqual(got, crashed) {
		t.Fatal("closing deleted or changed a segment with uncommitted records")
	}

	// The next start replays, before the first request, and deletes it.
	e.open()
	if a := e.account(); a.Balance != 1_000_000-5*7_500 || len(e.records()) != 5 {
		t.Fatalf("after replay: balance %d, %d records", a.Balance, len(e.records()))
	}
	if left := journalFiles(t, e.dir); len(left) != 0 {
		t.Fatalf("replayed segments left: %d", len(left))
	}
	for _, b := range bills {
		id := ""
		for _, r := range e.records() {
			if r.Charge == int64(b.Figures.Charge) {
				id = r.RequestID
			}
		}
		if id == "" {
			t.Fatalf("no record charging %d", b.Figures.Charge)
		}
	}
	// A second start on the same journal (killed mid-replay) is a no-op.
	e.close()
	restore(t, e.dir, crashed)
	e.open()
	if a := e.account(); a.Balance != 1_000_000-5*7_500 || len(e.records()) != 5 {
		t.Fatalf("after a second replay: balance %d, %d records", a.Balance, len(e.records()))
	}
	c, werr := e.m.Open(ctx, p, admission(10, 10, haiku))
	if werr != nil || header(c.Headers, pricing.HeaderBalance) != "0.962500" {
		t.Fatalf("after restart: %+v %+v", werr, c.Headers)
	}
	c.Tab.Close(e.refused(&wire.Error{Status: 502}))
}

func mapsKeys(m map[string][]byte) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestJournalTornTail: a record cut short by a kill mid-write, or whose
// checksum fails, is skipped with a log line; the records before it are
// posted.
func TestJournalTornTail(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"cut":      func(b []byte) []byte { return b[:len(b)-7] },
		"checksum": func(b []byte) []byte { b[len(b)-3] ^= 0xff; return b },
		"header":   func(b []byte) []byte { return append(b, 1, 2, 3) },
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, 1_000_000, nil)
			jdir := t.TempDir()
			j := openJournal(jdir, 0, slog.New(slog.DiscardHandler))
			for i := range 3 {
				u := store.Usage{RequestID: "torn-" + strconv.Itoa(i), AccountID: "a", KeyID: "k1", Charge: 100,
					Status: 200, At: e.clk.now()}
				if _, err := j.append(&u); err != nil {
					t.Fatal(err)
				}
			}
			j.close()
			path := filepath.Join(jdir, segmentName(1))
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, damage(b), 0o600); err != nil {
				t.Fatal(err)
			}
			var log logBuffer
			if _, err := replayJournal(e.s, jdir, 256, log.logger()); err != nil {
				t.Fatal(err)
			}
			want := 2
			if name == "header" {
				want = 3 // three whole records, then three bytes of a fourth
			}
			if n := len(e.records()); n != want {
				t.Fatalf("%d records posted, want %d", n, want)
			}
			if !strings.Contains(log.String(), "torn record") {
				t.Fatalf("no log line for the torn record:\n%s", log.String())
			}
			if left := journalFiles(t, jdir); len(left) != 0 {
				t.Fatal("replayed segment not deleted")
			}
		})
	}
}

// TestJournalRotation: a full segment is sealed and a new one started; a
// segment is deleted only once it is sealed and every record it holds is
// committed; closing keeps the ones with uncommitted records.
func TestJournalRotation(t *testing.T) {
	dir := t.TempDir()
	j := openJournal(dir, 41, slog.New(slog.DiscardHandler))
	u := store.Usage{RequestID: "r", AccountID: "a", At: time.Unix(0, 0).UTC()}
	rec, _ := appendRecord(nil, &u)
	j.max = int64(len(journalMagic) + 3*len(rec)) // three records a segment
	var segs []*segment
	for range 8 {
		s, err := j.append(&u)
		if err != nil {
			t.Fatal(err)
		}
		if len(segs) == 0 || segs[len(segs)-1] != s {
			segs = append(segs, s)
		}
	}
	names := func() []string {
		seqs, _ := segments(dir)
		var out []string
		for _, s := range seqs {
			out = append(out, strconv.FormatUint(s, 10))
		}
		return out
	}
	if len(segs) != 3 || segs[0].seq != 42 || segs[0].written != 3 || segs[2].written != 2 ||
		!slices.Equal(names(), []string{"42", "43", "44"}) {
		t.Fatalf("segments %v on disk %v", segs, names())
	}
	j.committed(segs[0], 2)
	j.committed(segs[1], 3)
	j.committed(segs[2], 2) // complete, but still being appended to
	if !slices.Equal(names(), []string{"42", "44"}) {
		t.Fatalf("after commits: %v, want 42 (one record uncommitted) and 44 (current)", names())
	}
	if kept := j.close(); kept != 1 || !slices.Equal(names(), []string{"42"}) {
		t.Fatalf("close kept %d records, on disk %v", kept, names())
	}
	// The next process numbers its segments after the leftovers.
	st := newEnv(t, 1_000_000, nil)
	last, err := replayJournal(st.s, dir, 256, slog.New(slog.DiscardHandler))
	if err != nil || last != 42 {
		t.Fatalf("replay: last %d, %v", last, err)
	}
}

// TestJournalFiguresEqualLedger: 64 concurrent paid requests on one
// account, with the journal (Close does not wait for the commit): once
// committed, every bill's charge is its record's, and the balances the
// bills showed step down by each charge to the ledger's balance.
func TestJournalFiguresEqualLedger(t *testing.T) {
	e := newEnv(t, 10_000_000, nil)
	ctx := context.Background()
	p := e.principal("k1")
	type shown struct {
		id      string
		charge  int64
		balance string
	}
	var (
		mu    sync.Mutex
		bills []shown
		wg    sync.WaitGroup
	)
	for i := range 64 {
		wg.Go(func() {
			c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
			if werr != nil {
				t.Error(werr)
				return
			}
			s := e.served(haiku, wire.Usage{InputTokens: 1000 + int64(i), OutputTokens: 500})
			b := c.Tab.Close(s)
			mu.Lock()
			bills = append(bills, shown{s.RequestID, int64(b.Figures.Charge), header(b.Headers, pricing.HeaderBalance)})
			mu.Unlock()
		})
	}
	wg.Wait()
	a := e.account()
	recs := map[string]int64{}
	for _, r := range e.records() {
		recs[r.RequestID] = r.Charge
	}
	if len(recs) != 64 {
		t.Fatalf("%d records", len(recs))
	}
	usd := func(s string) int64 {
		m, err := pricing.ParseUSD(s)
		if err != nil {
			t.Fatalf("balance %q: %v", s, err)
		}
		return int64(m)
	}
	slices.SortFunc(bills, func(x, y shown) int { return cmp.Compare(usd(y.balance), usd(x.balance)) })
	bal := int64(10_000_000)
	for _, b := range bills {
		if recs[b.id] != b.charge || b.charge == 0 {
			t.Fatalf("%s: bill charged %d, record %d", b.id, b.charge, recs[b.id])
		}
		bal -= b.charge
		if b.balance != pricing.Micros(bal).String() {
			t.Fatalf("%s: bill shows balance %s, want %s", b.id, b.balance, pricing.Micros(bal).String())
		}
	}
	if a.Balance != bal {
		t.Fatalf("ledger balance %d, the last bill %d", a.Balance, bal)
	}
	st, err := e.m.AccountStatus(ctx, "a", "")
	if err != nil || st.Balance != a.Balance || st.Held != 0 {
		t.Fatalf("meter %+v %v, ledger %d", st, err, a.Balance)
	}
}

// TestJournalUnwritable: when the journal cannot be written, Close logs it
// once and waits for the commit instead; once it can be, Close journals
// again and says so.
func TestJournalUnwritable(t *testing.T) {
	var log logBuffer
	var jdir string
	e := newEnv(t, 1_000_000, func(c *Config) {
		jdir = filepath.Join(filepath.Dir(c.JournalDir), "journal-"+strconv.Itoa(int(time.Now().UnixNano()%1e6)))
		if err := os.MkdirAll(jdir, 0o700); err != nil {
			t.Fatal(err)
		}
		c.JournalDir, c.Log = jdir, log.logger()
	})
	ctx := context.Background()
	p := e.principal("k1")
	if err := os.RemoveAll(jdir); err != nil { // "disk full": no segment can be created
		t.Fatal(err)
	}
	for i := range 2 {
		c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
		if werr != nil {
			t.Fatal(werr)
		}
		b := c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000}))
		// Close waited: the record is committed already (no sync).
		page, err := e.s.Usage(ctx, store.UsageQuery{AccountID: "a", Limit: 10})
		if err != nil || len(page.Records) != i+1 {
			t.Fatalf("after Close %d: %d records committed, %v", i, len(page.Records), err)
		}
		if want := pricing.Micros(1_000_000 - int64(i+1)*7_500).String(); header(b.Headers, pricing.HeaderBalance) != want {
			t.Fatalf("balance %s, want %s", header(b.Headers, pricing.HeaderBalance), want)
		}
	}
	if n := strings.Count(log.String(), "cannot write the settlement journal"); n != 1 {
		t.Fatalf("logged %d times:\n%s", n, log.String())
	}
	if err := os.MkdirAll(jdir, 0o700); err != nil {
		t.Fatal(err)
	}
	c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
	if werr != nil {
		t.Fatal(werr)
	}
	c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000}))
	if !strings.Contains(log.String(), "journal writable again") || len(journalFiles(t, jdir)) != 1 {
		t.Fatalf("journal not resumed:\n%s", log.String())
	}
	e.close()
	if len(journalFiles(t, jdir)) != 0 {
		t.Fatal("Meter.Close left a committed segment")
	}
}

// TestWaitForCommit: without the journal, Close returns only once its
// posting is committed, and the bill shows the balance the commit
// returned.
func TestWaitForCommit(t *testing.T) {
	e := newEnv(t, 1_000_000, func(c *Config) { c.JournalDir = "" })
	ctx := context.Background()
	c, werr := e.m.Open(ctx, e.principal("k1"), admission(1000, 1000, haiku))
	if werr != nil {
		t.Fatal(werr)
	}
	b := c.Tab.Close(e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000}))
	page, err := e.s.Usage(ctx, store.UsageQuery{AccountID: "a", Limit: 10})
	if err != nil || len(page.Records) != 1 || header(b.Headers, pricing.HeaderBalance) != "0.992500" {
		t.Fatalf("%d records, %v, %+v", len(page.Records), err, b.Headers)
	}
	if len(journalFiles(t, e.dir)) != 0 {
		t.Fatal("a journal without JournalDir")
	}
}

// TestJournalRecordRoundTrip: every field of store.Usage survives the
// journal, so a field added to it cannot be dropped by a replay unnoticed.
func TestJournalRecordRoundTrip(t *testing.T) {
	var u store.Usage
	v := reflect.ValueOf(&u).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("s" + strconv.Itoa(i))
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		default:
			if f.Type() == reflect.TypeOf(time.Time{}) {
				f.Set(reflect.ValueOf(time.Date(2026, 11, 27, 1, 2, 3, 456789000, time.UTC)))
				continue
			}
			t.Fatalf("store.Usage.%s: a %s the journal test does not fill", v.Type().Field(i).Name, f.Type())
		}
	}
	u.ID = 0 // the store's row id, assigned at commit: not journaled
	b, err := appendRecord([]byte(journalMagic), &u)
	if err != nil {
		t.Fatal(err)
	}
	us, torn, err := readSegment(b)
	if err != nil || torn != 0 || len(us) != 1 || !reflect.DeepEqual(us[0], u) {
		t.Fatalf("%+v (torn %d, %v), want %+v", us, torn, err, u)
	}
}

func TestJournalDirValidated(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{file, filepath.Join(t.TempDir(), "missing")} {
		c := Config{Store: newEnv(t, 0, nil).s, JournalDir: dir}
		if err := c.Validate(); err == nil {
			t.Errorf("%s: no error", dir)
		}
	}
}

// BenchmarkJournalAppend is one settlement's journal record: its JSON
// (~345 bytes), the frame and one write(2) to the page cache, under the
// journal's mutex; "64" is 64 goroutines appending at once.
func BenchmarkJournalAppend(b *testing.B) {
	u := store.Usage{RequestID: "req_0123456789abcdef01234567", AccountID: "acct_1234", KeyID: "key_abcdef",
		Model: "claude-sonnet-4-5", Provider: "anthropic", InputTokens: 2500, OutputTokens: 300, CacheReadTokens: 1000,
		Cost: 12345, Charge: 14197, Savings: 2700, Cache: "miss", LatencyMicros: 812345, Status: 200, At: time.Now()}
	for _, par := range []int{1, 64} {
		b.Run(strconv.Itoa(par), func(b *testing.B) {
			j := openJournal(b.TempDir(), 0, slog.New(slog.DiscardHandler))
			defer j.close()
			if par == 1 {
				for b.Loop() {
					if _, err := j.append(&u); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.SetParallelism(max(par/runtime.GOMAXPROCS(0), 1))
			b.RunParallel(func(pb *testing.PB) {
				u := u
				for pb.Next() {
					if _, err := j.append(&u); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// TestUsageReadsItsWrites: with the journal, Close returns before its
// commit, yet the caller's GET /v1/usage (Meter.Usage) right after shows
// the request, and GET /v1/balance (AccountStatus) the balance its bill
// showed: the reads wait for the commit. Another connection holds
// SQLite's write lock so the commit cannot happen before the read starts.
func TestUsageReadsItsWrites(t *testing.T) {
	e := newEnv(t, 1_000_000, nil)
	ctx := context.Background()
	p := e.principal("k1")
	c, werr := e.m.Open(ctx, p, admission(1000, 1000, haiku))
	if werr != nil {
		t.Fatal(werr)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.dir, sqlite.FileName)+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	s := e.served(haiku, wire.Usage{InputTokens: 1000, OutputTokens: 1000})
	c.Tab.Close(s) // journaled; its commit waits for the lock
	got := make(chan store.UsagePage, 1)
	status := make(chan gateway.AccountStatus, 1)
	go func() {
		page, err := e.m.Usage(ctx, store.UsageQuery{AccountID: "a", Limit: 10})
		if err != nil {
			t.Error(err)
		}
		got <- page
	}()
	go func() {
		st, err := e.m.AccountStatus(ctx, "a", "k1")
		if err != nil {
			t.Error(err)
		}
		status <- st
	}()
	select {
	case page := <-got: // answered while the commit cannot have happened
		t.Fatalf("usage answered before the commit: %d records", len(page.Records))
	case st := <-status:
		t.Fatalf("balance answered before the commit: %+v", st)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if page := <-got; len(page.Records) != 1 || page.Records[0].RequestID != s.RequestID {
		t.Fatalf("usage after the commit: %+v", page.Records)
	}
	if st := <-status; st.Balance != 1_000_000-7_500 || st.Held != 0 {
		t.Fatalf("balance after the commit: %d held %d; the bill showed 0.992500", st.Balance, st.Held)
	}
}

// TestJournalOneGatewayPerDir: a second meter on a data directory whose
// journal a live meter holds refuses to start (it would replay and delete
// the live segments); once the first closes, it starts.
func TestJournalOneGatewayPerDir(t *testing.T) {
	e := newEnv(t, 1_000_000, nil)
	cfg := Config{Store: e.s, Log: slog.New(slog.DiscardHandler), JournalDir: e.dir}
	if m, err := New(cfg); err == nil || !strings.Contains(err.Error(), "another gateway") {
		if m != nil {
			m.Close(context.Background())
		}
		t.Fatalf("second meter on a held journal: %v", err)
	}
	if err := e.m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m // closed by the env
}

// BenchmarkReplay is a start after kill -9 with a full segment (3,000
// records) to replay: "new" posts them all, "committed" finds each
// already in the ledger (the segment a killed idle gateway leaves).
//
//	go test -run '^$' -bench Replay -benchtime 5x ./host/billing/
func BenchmarkReplay(b *testing.B) {
	for _, committed := range []bool{false, true} {
		b.Run(map[bool]string{false: "new", true: "committed"}[committed], func(b *testing.B) {
			dir := b.TempDir()
			j := openJournal(dir, 0, slog.New(slog.DiscardHandler))
			j.max = 1 << 30
			for i := range 3000 {
				u := store.Usage{RequestID: "replay-" + strconv.Itoa(i), AccountID: "a", KeyID: "k1", Model: "m",
					InputTokens: 2500, OutputTokens: 300, Charge: 100, Status: 200, At: time.Now()}
				if _, err := j.append(&u); err != nil {
					b.Fatal(err)
				}
			}
			j.close()
			files := journalFiles(b, dir)
			var e *env
			for b.Loop() {
				b.StopTimer()
				if e == nil || !committed {
					e = newEnv(b, 1<<50, nil)
					if committed {
						restore(b, dir, files)
						if _, err := replayJournal(e.s, dir, DefaultMaxBatch, slog.New(slog.DiscardHandler)); err != nil {
							b.Fatal(err)
						}
					}
				}
				restore(b, dir, files)
				b.StartTimer()
				if _, err := replayJournal(e.s, dir, DefaultMaxBatch, slog.New(slog.DiscardHandler)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/3000, "µs/record")
		})
	}
}
