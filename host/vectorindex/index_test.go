package vectorindex

import (
	"errors"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"
)

const hour = time.Hour

// TestRecallAgainstBruteForce measures recall@1 of the graph path against an
// exact scan at 10k random 100-d unit vectors: 1000 uniformly random queries
// (the hardest case: the nearest neighbour is barely nearer than the rest)
// and 1000 near-duplicate queries at cosine 0.9 to a stored vector (the
// semantic-cache case). Floors sit a little below the measured values.
func TestRecallAgainstBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 10k-node graph")
	}
	const n, dim, queries = 10_000, 100, 1000
	r := rand.New(rand.NewSource(7))
	ix := newIndex(t, Config{Dim: dim, MaxEntriesPerTenant: n, ExactBelow: -1, Seed: 11}, true)
	vecs := make([][]float32, n)
	start := time.Now()
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
		if err := ix.Insert("t", itoa(i), vecs[i], hour, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("built %d entries in %v", n, time.Since(start))
	checkInvariants(t, ix)

	exact := func(q []float32) string {
		best, bs := -1, float32(-2)
		for i, v := range vecs {
			if s := cosine(q, v); s > bs {
				best, bs = i, s
			}
		}
		return itoa(best)
	}
	recall := func(mk func() []float32) float64 {
		hits := 0
		for range queries {
			q := mk()
			m, err := ix.Search("t", q, 1, -1)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) == 1 && m[0].ID == exact(q) {
				hits++
			}
		}
		return float64(hits) / queries
	}
	random := recall(func() []float32 { return randUnit(r, dim) })
	near := recall(func() []float32 { return nearby(r, vecs[r.Intn(n)], 0.9) })
	t.Logf("recall@1 (ef=%d): random queries %.3f, near-duplicate queries %.3f", ix.efSearch, random, near)
	if random < 0.95 {
		t.Errorf("recall@1 on random queries %.3f < 0.95", random)
	}
	if near < 0.99 {
		t.Errorf("recall@1 on near-duplicate queries %.3f < 0.99", near)
	}
}

func itoa(i int) string {
	const digits = "0123456789"
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append(b, digits[i%10])
	}
	slices.Reverse(b)
	return string(b)
}

func TestSearchScoresAndNormalisation(t *testing.T) {
	ix := newIndex(t, Config{Dim: 3}, true)
	// Not unit length: stored normalised.
	if err := ix.Insert("a", "x", []float32{3, 0, 0}, hour, []string{"t1"}, []byte("px")); err != nil {
		t.Fatal(err)
	}
	if err := ix.Insert("a", "y", []float32{1, 1, 0}, hour, nil, []byte("py")); err != nil {
		t.Fatal(err)
	}
	m, err := ix.Search("a", []float32{0.5, 0, 0}, 5, -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m[0].ID != "x" || m[1].ID != "y" {
		t.Fatalf("got %+v", m)
	}
	if m[0].Score != 1 || math.Abs(float64(m[1].Score)-math.Sqrt2/2) > 1e-6 {
		t.Fatalf("scores %v %v", m[0].Score, m[1].Score)
	}
	if string(m[0].Payload) != "px" || !slices.Equal(m[0].Tags, []string{"t1"}) {
		t.Fatalf("payload/tags %+v", m[0])
	}
	// minScore filters; k bounds.
	if m, _ = ix.Search("a", []float32{1, 0, 0}, 5, 0.8); len(m) != 1 {
		t.Fatalf("minScore: %+v", m)
	}
	if m, _ = ix.Search("a", []float32{1, 0, 0}, 1, -1); len(m) != 1 || m[0].ID != "x" {
		t.Fatalf("k=1: %+v", m)
	}
	// Returned payloads are copies.
	m[0].Payload[0] = 'Z'
	if m, _ = ix.Search("a", []float32{1, 0, 0}, 1, -1); string(m[0].Payload) != "px" {
		t.Fatal("payload aliased")
	}
	// Inserted slices are copied.
	v := []float32{0, 0, 1}
	p := []byte("pz")
	if err := ix.Insert("a", "z", v, hour, nil, p); err != nil {
		t.Fatal(err)
	}
	v[0], v[2], p[0] = 1, 0, 'Q'
	if m, _ = ix.Search("a", []float32{0, 0, 1}, 1, 0.99); len(m) != 1 || m[0].ID != "z" || string(m[0].Payload) != "pz" {
		t.Fatalf("insert did not copy: %+v", m)
	}
	// Unknown tenant: nothing, no error.
	if m, err = ix.Search("nobody", []float32{1, 0, 0}, 1, -1); err != nil || m != nil {
		t.Fatalf("unknown tenant: %v %v", m, err)
	}
}

func TestReplaceExistingID(t *testing.T) {
	clk := newFakeClock()
	ix := newIndex(t, Config{Dim: 2, Now: clk.Now}, true)
	must(t, ix.Insert("a", "x", []float32{1, 0}, hour, nil, []byte("old")))
	must(t, ix.Insert("a", "x", []float32{0, 1}, 2*hour, nil, []byte("new")))
	if ix.Len("a") != 1 {
		t.Fatalf("len %d", ix.Len("a"))
	}
	m, _ := ix.Search("a", []float32{0, 1}, 2, -1)
	if len(m) != 1 || string(m[0].Payload) != "new" || !m[0].ExpiresAt.Equal(clk.Now().Add(2*hour)) {
		t.Fatalf("got %+v", m)
	}
	if s := ix.Stats(); s.Replacements != 1 || s.Inserts != 2 || s.Entries != 1 {
		t.Fatalf("stats %+v", s)
	}
	// A ttl too long to represent saturates instead of wrapping into the past.
	must(t, ix.Insert("a", "forever", []float32{1, 1}, time.Duration(math.MaxInt64), nil, nil))
	if m, _ := ix.Search("a", []float32{1, 1}, 1, 0.99); len(m) != 1 || m[0].ID != "forever" {
		t.Fatalf("huge ttl: %+v", m)
	}
}

func TestTTLExpiry(t *testing.T) {
	clk := newFakeClock()
	ix := newIndex(t, Config{Dim: 2, Now: clk.Now}, true)
	must(t, ix.Insert("a", "short", []float32{1, 0}, 10*time.Second, nil, nil))
	must(t, ix.Insert("a", "long", []float32{1, 0.1}, time.Minute, nil, nil))
	must(t, ix.Insert("b", "other", []float32{1, 0}, 10*time.Second, nil, nil))

	clk.Advance(9 * time.Second)
	if m, _ := ix.Search("a", []float32{1, 0}, 5, -1); len(m) != 2 {
		t.Fatalf("before expiry: %+v", m)
	}
	clk.Advance(time.Second) // exactly at expiry: gone
	m, _ := ix.Search("a", []float32{1, 0}, 5, -1)
	if len(m) != 1 || m[0].ID != "long" {
		t.Fatalf("at expiry: %+v", m)
	}
	// The search removed the expired entry it met.
	if ix.Len("a") != 1 || ix.Stats().Expirations != 1 {
		t.Fatalf("lazy expiry: len %d stats %+v", ix.Len("a"), ix.Stats())
	}
	// Tenant b is untouched until something looks at it; Sweep reclaims it
	// and drops the then-empty tenant.
	if ix.Len("b") != 1 {
		t.Fatal("b swept early")
	}
	if n := ix.Sweep(); n != 1 {
		t.Fatalf("sweep expired %d", n)
	}
	if s := ix.Stats(); s.Tenants != 1 || s.Entries != 1 || s.Expirations != 2 {
		t.Fatalf("after sweep %+v", s)
	}
	// Insert also sweeps the tenant's expired entries.
	clk.Advance(time.Minute)
	must(t, ix.Insert("a", "new", []float32{0, 1}, time.Minute, nil, nil))
	if ix.Len("a") != 1 || ix.Stats().Expirations != 3 {
		t.Fatalf("insert sweep: len %d %+v", ix.Len("a"), ix.Stats())
	}
	checkInvariants(t, ix)
}

// TestLRUEvictionOrder pins the policy: expired entries go first, then the
// least recently inserted-or-returned entry.
func TestLRUEvictionOrder(t *testing.T) {
	clk := newFakeClock()
	const d = 8
	ix := newIndex(t, Config{Dim: d, MaxEntriesPerTenant: 3, Now: clk.Now}, true)
	ids := func() []string {
		m, _ := ix.Search("a", basis(d, 0), 10, -1)
		var out []string
		for _, x := range m {
			out = append(out, x.ID)
		}
		slices.Sort(out)
		return out
	}
	must(t, ix.Insert("a", "e0", basis(d, 0), hour, nil, nil))
	must(t, ix.Insert("a", "e1", basis(d, 1), hour, nil, nil))
	must(t, ix.Insert("a", "e2", basis(d, 2), hour, nil, nil))
	// A hit on e0 (k=1, min score filters the others out) refreshes it.
	if m, _ := ix.Search("a", basis(d, 0), 1, 0.5); len(m) != 1 || m[0].ID != "e0" {
		t.Fatalf("hit: %+v", m)
	}
	must(t, ix.Insert("a", "e3", basis(d, 3), hour, nil, nil)) // evicts e1
	if ix.tenants["a"].byID["e1"] != nil || ix.Len("a") != 3 {
		t.Fatal("e1 should have been evicted")
	}
	must(t, ix.Insert("a", "e4", basis(d, 4), hour, nil, nil)) // evicts e2
	if ix.tenants["a"].byID["e2"] != nil {
		t.Fatal("e2 should have been evicted")
	}
	// Now e0 is the LRU; but an expired entry goes before any live one.
	must(t, ix.Insert("a", "e5", basis(d, 5), time.Second, nil, nil)) // evicts e0
	if ix.tenants["a"].byID["e0"] != nil {
		t.Fatal("e0 should have been evicted")
	}
	// Touch e5 so it is the most recently used, then let it expire.
	if m, _ := ix.Search("a", basis(d, 5), 1, 0.5); len(m) != 1 {
		t.Fatal("e5 missing")
	}
	clk.Advance(2 * time.Second)
	must(t, ix.Insert("a", "e6", basis(d, 6), hour, nil, nil))
	if got := ids(); !slices.Equal(got, []string{"e3", "e4", "e6"}) {
		t.Fatalf("survivors %v", got)
	}
	if s := ix.Stats(); s.Evictions != 3 || s.Expirations != 1 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, ix)
}

func TestDeleteTaggedAndDelete(t *testing.T) {
	ix := newIndex(t, Config{Dim: 4}, true)
	for _, tn := range []string{"a", "b"} {
		must(t, ix.Insert(tn, "m1", basis(4, 0), hour, []string{"market-analysis"}, nil))
		must(t, ix.Insert(tn, "m2", basis(4, 1), hour, []string{"market-analysis", "eth"}, nil))
		must(t, ix.Insert(tn, "s1", basis(4, 2), hour, []string{"strategy"}, nil))
	}
	if n := ix.DeleteTagged("a", "eth"); n != 1 {
		t.Fatalf("tenant-scoped tag delete removed %d", n)
	}
	if n := ix.DeleteTagged("", "market-analysis"); n != 3 {
		t.Fatalf("global tag delete removed %d", n)
	}
	if ix.Len("a") != 1 || ix.Len("b") != 1 {
		t.Fatalf("left a=%d b=%d", ix.Len("a"), ix.Len("b"))
	}
	if n := ix.DeleteTagged("", "nope"); n != 0 {
		t.Fatal("deleted untagged")
	}
	if !ix.Delete("a", "s1") || ix.Delete("a", "s1") || ix.Delete("zz", "s1") {
		t.Fatal("Delete results wrong")
	}
	if s := ix.Stats(); s.Deletions != 5 || s.Entries != 1 {
		t.Fatalf("stats %+v", s)
	}
	checkInvariants(t, ix)
}

func TestTenantIsolationAndFlush(t *testing.T) {
	ix := newIndex(t, Config{Dim: 2}, true)
	must(t, ix.Insert("alice", "x", []float32{1, 0}, hour, nil, []byte("alice's")))
	must(t, ix.Insert("bob", "x", []float32{0, 1}, hour, nil, []byte("bob's")))
	m, _ := ix.Search("bob", []float32{1, 0}, 5, -1)
	if len(m) != 1 || string(m[0].Payload) != "bob's" {
		t.Fatalf("bob sees %+v", m)
	}
	if !ix.Delete("alice", "x") || ix.Len("bob") != 1 {
		t.Fatal("delete crossed tenants")
	}
	must(t, ix.Insert("alice", "x", []float32{1, 0}, hour, nil, nil))
	if n := ix.Flush("alice"); n != 1 || ix.Len("bob") != 1 || ix.Stats().Tenants != 1 {
		t.Fatalf("flush: %d, %+v", n, ix.Stats())
	}
	must(t, ix.Insert("alice", "y", []float32{1, 0}, hour, nil, nil))
	if n := ix.Flush(""); n != 2 || ix.Stats().Tenants != 0 || ix.Stats().Entries != 0 {
		t.Fatalf("flush all: %d %+v", n, ix.Stats())
	}
}

func TestMaxTenants(t *testing.T) {
	clk := newFakeClock()
	ix := newIndex(t, Config{Dim: 2, MaxTenants: 2, Now: clk.Now}, true)
	must(t, ix.Insert("a", "x", []float32{1, 0}, time.Second, nil, nil))
	must(t, ix.Insert("b", "x", []float32{1, 0}, hour, nil, nil))
	if err := ix.Insert("c", "x", []float32{1, 0}, hour, nil, nil); !errors.Is(err, ErrTooManyTenants) {
		t.Fatalf("want ErrTooManyTenants, got %v", err)
	}
	// Once a's only entry expires, a is reclaimed and c fits.
	clk.Advance(time.Second)
	must(t, ix.Insert("c", "x", []float32{1, 0}, hour, nil, nil))
	if s := ix.Stats(); s.Tenants != 2 || s.Entries != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBadInput(t *testing.T) {
	ix := newIndex(t, Config{Dim: 3}, true)
	ok := []float32{1, 0, 0}
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"short", ix.Insert("a", "x", []float32{1, 0}, hour, nil, nil), ErrDimension},
		{"long", ix.Insert("a", "x", []float32{1, 0, 0, 0}, hour, nil, nil), ErrDimension},
		{"nan", ix.Insert("a", "x", []float32{1, nan, 0}, hour, nil, nil), ErrNotFinite},
		{"inf", ix.Insert("a", "x", []float32{inf, 0, 0}, hour, nil, nil), ErrNotFinite},
		{"zero", ix.Insert("a", "x", []float32{0, 0, 0}, hour, nil, nil), ErrZeroVector},
		{"tenant", ix.Insert("", "x", ok, hour, nil, nil), ErrEmptyTenant},
		{"id", ix.Insert("a", "", ok, hour, nil, nil), ErrEmptyID},
		{"ttl0", ix.Insert("a", "x", ok, 0, nil, nil), ErrBadTTL},
		{"ttlneg", ix.Insert("a", "x", ok, -time.Second, nil, nil), ErrBadTTL},
		{"tag", ix.Insert("a", "x", ok, hour, []string{"ok", ""}, nil), ErrEmptyTag},
		{"search dim", searchErr(ix, "a", []float32{1}, 1, 0), ErrDimension},
		{"search nan", searchErr(ix, "a", []float32{nan, 0, 0}, 1, 0), ErrNotFinite},
		{"search zero", searchErr(ix, "a", []float32{0, 0, 0}, 1, 0), ErrZeroVector},
		{"search k", searchErr(ix, "a", ok, 0, 0), ErrBadK},
		{"search score", searchErr(ix, "a", ok, 1, nan), ErrBadScore},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, c.err, c.want)
		}
	}
	if s := ix.Stats(); s.Entries != 0 || s.Tenants != 0 {
		t.Fatalf("bad inserts left state: %+v", s)
	}
	for _, cfg := range []Config{{}, {Dim: -1}, {Dim: 2, M: 1}, {Dim: 2, MaxEntriesPerTenant: -1}, {Dim: 2, RebuildFraction: math.NaN()}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	_ = ix.Close()
	if err := ix.Insert("a", "x", ok, hour, nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("insert after close: %v", err)
	}
	if _, err := ix.Search("a", ok, 1, 0); !errors.Is(err, ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
}

func searchErr(ix *Index, tn string, v []float32, k int, min float32) error {
	_, err := ix.Search(tn, v, k, min)
	return err
}

// TestGraphTombstonesAndRebuild drives a tenant past ExactBelow, deletes
// enough to trigger a rebuild, and checks deleted entries never come back.
func TestGraphTombstonesAndRebuild(t *testing.T) {
	const dim = 16
	r := rand.New(rand.NewSource(3))
	ix := newIndex(t, Config{Dim: dim, ExactBelow: 100, Seed: 5}, true)
	vecs := map[string][]float32{}
	for i := range 400 {
		id := itoa(i)
		vecs[id] = randUnit(r, dim)
		must(t, ix.Insert("a", id, vecs[id], hour, nil, nil))
	}
	s := ix.Stats()
	if s.Rebuilds != 1 || s.GraphNodes != 400 || s.Tombstones != 0 {
		t.Fatalf("after growth %+v", s)
	}
	// 80 deletions: 80 ≥ max(64, 0.25×320) triggers a rebuild.
	for i := range 80 {
		ix.Delete("a", itoa(i))
		delete(vecs, itoa(i))
	}
	s = ix.Stats()
	if s.Rebuilds != 2 || s.GraphNodes != 320 || s.Tombstones != 0 {
		t.Fatalf("after deletes %+v", s)
	}
	// Fewer deletions leave tombstones that searches must skip.
	for i := 80; i < 120; i++ {
		ix.Delete("a", itoa(i))
	}
	if s = ix.Stats(); s.Tombstones != 40 || s.GraphNodes != 320 {
		t.Fatalf("tombstones %+v", s)
	}
	for i := 80; i < 120; i++ {
		m, _ := ix.Search("a", vecs[itoa(i)], 3, -1)
		for _, x := range m {
			if x.ID == itoa(i) {
				t.Fatalf("deleted %s returned", x.ID)
			}
		}
	}
	for i := 120; i < 400; i += 7 {
		m, _ := ix.Search("a", vecs[itoa(i)], 1, 0.99)
		if len(m) != 1 || m[0].ID != itoa(i) {
			t.Fatalf("live %d not found: %+v", i, m)
		}
	}
	checkInvariants(t, ix)
	// Shrinking to ExactBelow/2 drops the graph.
	for i := 120; i < 350; i++ {
		ix.Delete("a", itoa(i))
	}
	if s = ix.Stats(); s.GraphNodes != 0 || s.Tombstones != 0 || s.Entries != 50 {
		t.Fatalf("after shrink %+v", s)
	}
	checkInvariants(t, ix)
}

// TestBackgroundRebuild checks the asynchronous path: inserts and searches
// keep working while the graph is built, and the result holds every entry.
func TestBackgroundRebuild(t *testing.T) {
	const dim = 16
	r := rand.New(rand.NewSource(9))
	ix := newIndex(t, Config{Dim: dim, ExactBelow: 64}, false)
	vecs := make([][]float32, 3000)
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
		must(t, ix.Insert("a", itoa(i), vecs[i], hour, nil, nil))
		if i%100 == 0 {
			m, err := ix.Search("a", vecs[i], 1, 0.99)
			if err != nil || len(m) != 1 || m[0].ID != itoa(i) {
				t.Fatalf("search during build: %+v %v", m, err)
			}
		}
		if i%3 == 0 && i > 0 {
			ix.Delete("a", itoa(i-1))
		}
	}
	ix.wg.Wait()
	checkInvariants(t, ix)
	if s := ix.Stats(); s.Rebuilds == 0 || s.GraphNodes == 0 {
		t.Fatalf("no graph built: %+v", s)
	}
	for i := 0; i < len(vecs); i += 11 {
		if i%3 == 2 {
			continue // deleted
		}
		m, _ := ix.Search("a", vecs[i], 1, 0.99)
		if len(m) != 1 || m[0].ID != itoa(i) {
			t.Fatalf("%d not found after build: %+v", i, m)
		}
	}
}

// TestCloseStopsRebuild closes while a build is queued or running.
func TestCloseStopsRebuild(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	ix := newIndex(t, Config{Dim: 32, ExactBelow: 10}, false)
	for i := range 2000 {
		must(t, ix.Insert("a", itoa(i), randUnit(r, 32), hour, nil, nil))
	}
	done := make(chan struct{})
	go func() { _ = ix.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close did not return")
	}
	if ix.Delete("a", "1") || ix.Flush("") != 0 || ix.DeleteTagged("", "x") != 0 || ix.Sweep() != 0 {
		t.Fatal("mutations after close")
	}
}

// TestConcurrentUse runs inserts, searches, deletes, tag deletes, sweeps
// and flushes from several goroutines over a few tenants with background
// rebuilds. Run with -race; the work is bounded so it stays quick.
func TestConcurrentUse(t *testing.T) {
	const dim, workers, ops = 16, 6, 600
	clk := newFakeClock()
	ix := newIndex(t, Config{Dim: dim, MaxEntriesPerTenant: 300, MaxTenants: 4, ExactBelow: 40, Now: clk.Now}, false)
	tenants := []string{"a", "b", "c"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewSource(int64(w)))
			for i := range ops {
				tn := tenants[r.Intn(len(tenants))]
				id := itoa(r.Intn(500))
				switch op := r.Intn(100); {
				case op < 50:
					tags := []string{[]string{"x", "y"}[r.Intn(2)]}
					if err := ix.Insert(tn, id, randUnit(r, dim), time.Duration(1+r.Intn(60))*time.Second, tags, []byte(id)); err != nil {
						t.Error(err)
						return
					}
				case op < 85:
					m, err := ix.Search(tn, randUnit(r, dim), 1+r.Intn(4), -1)
					if err != nil {
						t.Error(err)
						return
					}
					for j := 1; j < len(m); j++ {
						if m[j].Score > m[j-1].Score {
							t.Error("results out of order")
						}
					}
				case op < 93:
					ix.Delete(tn, id)
				case op < 96:
					ix.DeleteTagged("", "x")
				case op < 98:
					clk.Advance(time.Second)
					ix.Sweep()
				case i%50 == 0:
					ix.Flush(tn)
				default:
					_ = ix.Stats()
				}
			}
		}()
	}
	wg.Wait()
	ix.wg.Wait()
	checkInvariants(t, ix)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
