package vectorindex

import (
	"errors"
	"math"
	"slices"
	"sort"
	"testing"
	"time"
)

// fuzzVecs are the vectors fuzz inserts and searches with: axis-aligned,
// diagonal and opposite directions so scores tie, cross thresholds and go
// negative. Index 0 is the zero vector (an error case).
var fuzzVecs = [][]float32{
	{0, 0, 0, 0},
	{1, 0, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 1},
	{1, 1, 0, 0}, {1, 0.9, 0.1, 0}, {-1, 0, 0, 0}, {0.2, 0.3, -0.5, 2},
	{3, 1, 4, 1}, {-2, 7, 1, -8}, {1, 1, 1, 1},
	// Scaled copies and a -0 variant that normalise to the same bits as
	// vectors above, so entries share nodes through different inputs.
	{2, 0, 0, 0}, {0.5, 0.5, 0.5, 0.5}, {1, negZero, 0, 0},
}

var negZero = float32(math.Copysign(0, -1))

var (
	fuzzTenants = []string{"a", "b", "c"}
	fuzzTags    = []string{"market-analysis", "strategy", "eth"}
	fuzzScores  = []float32{-1, 0, 0.5, 0.9, 0.99}
)

type modelEntry struct {
	vec      []float32
	expires  int64
	tags     []string
	lastUsed uint64
	seq      uint64 // insertion order: ties rank newest first
}

// model is a straightforward reference implementation of the policy.
type model struct {
	tenants    map[string]map[string]*modelEntry
	clock      uint64
	seq        uint64
	maxEntries int
	maxTenants int
}

func (m *model) expire(tn string, now int64) int {
	n := 0
	for id, e := range m.tenants[tn] {
		if e.expires <= now {
			delete(m.tenants[tn], id)
			n++
		}
	}
	return n
}

func (m *model) dropEmpty() {
	for tn, es := range m.tenants {
		if len(es) == 0 {
			delete(m.tenants, tn)
		}
	}
}

// FuzzIndexOps runs byte-coded operation sequences against the index and
// the reference model: no panics, structural invariants after every step,
// the same live ids per tenant, exact search results when the tenant is
// scanned, and well-formed results when it is searched through the graph.
func FuzzIndexOps(f *testing.F) {
	f.Add([]byte{0, 3, 0, 0, 1, 2, 0, 2, 3, 1, 0, 1, 4, 9, 1})
	f.Add([]byte{1, 1, 2, 0, 0, 5, 0, 1, 6, 0, 2, 7, 6, 0, 0, 1, 3, 2, 5, 1, 1})
	f.Add([]byte{2, 5, 0, 0, 10, 3, 0, 20, 4, 0, 30, 5, 0, 40, 6, 0, 50, 7, 1, 0, 2, 4, 0, 0, 2, 1, 1})
	f.Add([]byte{1, 0, 1, 0, 1, 1, 0, 2, 2, 0, 3, 3, 6, 0, 0, 0, 4, 4, 3, 1, 0, 5, 0, 0, 7, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 || len(data) > 3000 {
			return
		}
		exactBelow := []int{1000, -1, 3}[int(data[0])%3]
		clk := newFakeClock()
		cfg := Config{
			Dim:                 4,
			MaxEntriesPerTenant: 2 + int(data[1])%6,
			MaxTenants:          int(data[2]) % 4,
			ExactBelow:          exactBelow,
			M:                   2 + int(data[1]>>4)%4,
			EfSearch:            4,
			EfConstruction:      4,
			Now:                 clk.Now,
			Seed:                1,
		}
		ix, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ix.syncRebuild = true
		ix.minTombstones = 2
		defer ix.Close()
		m := &model{tenants: map[string]map[string]*modelEntry{}, maxEntries: cfg.MaxEntriesPerTenant, maxTenants: cfg.MaxTenants}

		ops := data[3:]
		for i := 0; i+2 < len(ops); i += 3 {
			op, a, b := ops[i]%8, int(ops[i+1]), int(ops[i+2])
			tn := fuzzTenants[a%len(fuzzTenants)]
			id := itoa(b % 10)
			now := clk.Now().UnixNano()
			switch op {
			case 0, 1: // insert
				vi := (a/3 + b) % len(fuzzVecs)
				ttl := time.Duration(1+b%5) * time.Second
				tags := []string{fuzzTags[a%len(fuzzTags)]}
				err := ix.Insert(tn, id, fuzzVecs[vi], ttl, tags, []byte(id))
				want := m.insert(tn, id, fuzzVecs[vi], now, ttl, tags)
				if !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Fatalf("op %d insert: got %v want %v", i, err, want)
				}
			case 2: // search
				q := fuzzVecs[1+(a/3+b)%(len(fuzzVecs)-1)]
				k := 1 + b%3
				minScore := fuzzScores[(a/3)%len(fuzzScores)]
				got, err := ix.Search(tn, q, k, minScore)
				if err != nil {
					t.Fatalf("op %d search: %v", i, err)
				}
				m.checkSearch(t, ix, tn, q, k, minScore, now, got)
			case 3:
				if got, want := ix.Delete(tn, id), m.delete(tn, id); got != want {
					t.Fatalf("op %d delete: got %v want %v", i, got, want)
				}
			case 4:
				scope := tn
				if b%2 == 0 {
					scope = ""
				}
				tag := fuzzTags[b%len(fuzzTags)]
				if got, want := ix.DeleteTagged(scope, tag), m.deleteTagged(scope, tag); got != want {
					t.Fatalf("op %d delete tagged: got %d want %d", i, got, want)
				}
			case 5:
				scope := tn
				if b%4 == 0 {
					scope = ""
				}
				if got, want := ix.Flush(scope), m.flush(scope); got != want {
					t.Fatalf("op %d flush: got %d want %d", i, got, want)
				}
			case 6:
				n := 0
				for tn := range m.tenants {
					n += m.expire(tn, now)
				}
				m.dropEmpty()
				if got := ix.Sweep(); got != n {
					t.Fatalf("op %d sweep: got %d want %d", i, got, n)
				}
			case 7:
				clk.Advance(time.Duration(1+b%3) * time.Second)
			}
			checkInvariants(t, ix)
			m.compare(t, ix, i)
		}
	})
}

func (m *model) insert(tn, id string, vec []float32, now int64, ttl time.Duration, tags []string) error {
	if slices.Equal(vec, fuzzVecs[0]) {
		return ErrZeroVector
	}
	if _, ok := m.tenants[tn]; !ok {
		if m.maxTenants > 0 && len(m.tenants) >= m.maxTenants {
			for name := range m.tenants {
				m.expire(name, now)
			}
			m.dropEmpty()
			if len(m.tenants) >= m.maxTenants {
				return ErrTooManyTenants
			}
		}
		m.tenants[tn] = map[string]*modelEntry{}
	}
	es := m.tenants[tn]
	m.expire(tn, now)
	delete(es, id)
	for len(es) >= m.maxEntries {
		var victim string
		var oldest uint64 = math.MaxUint64
		for vid, e := range es {
			if e.lastUsed < oldest {
				victim, oldest = vid, e.lastUsed
			}
		}
		delete(es, victim)
	}
	m.clock++
	m.seq++
	es[id] = &modelEntry{vec: vec, expires: now + int64(ttl), tags: tags, lastUsed: m.clock, seq: m.seq}
	return nil
}

func (m *model) delete(tn, id string) bool {
	if _, ok := m.tenants[tn][id]; ok {
		delete(m.tenants[tn], id)
		return true
	}
	return false
}

func (m *model) deleteTagged(scope, tag string) int {
	n := 0
	for tn, es := range m.tenants {
		if scope != "" && tn != scope {
			continue
		}
		for id, e := range es {
			if slices.Contains(e.tags, tag) {
				delete(es, id)
				n++
			}
		}
	}
	return n
}

func (m *model) flush(scope string) int {
	n := 0
	for tn, es := range m.tenants {
		if scope == "" || tn == scope {
			n += len(es)
			delete(m.tenants, tn)
		}
	}
	return n
}

func modelCos(a, b []float32) float32 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return float32(dot / math.Sqrt(na*nb))
}

func (m *model) checkSearch(t *testing.T, ix *Index, tn string, q []float32, k int, minScore float32, now int64, got []Match) {
	t.Helper()
	es := m.tenants[tn]
	ix.mu.RLock()
	it := ix.tenants[tn]
	ix.mu.RUnlock()
	exact := it == nil || it.graph == nil || (ix.exactBelow >= 0 && len(es) <= ix.exactBelow)

	if len(got) > k {
		t.Fatalf("search returned %d > k=%d", len(got), k)
	}
	// The index's own score of a model entry: the same normalisation and
	// dot product, so ties are exactly the index's ties.
	uq, err := ix.unit(q)
	if err != nil {
		t.Fatal(err)
	}
	score := func(e *modelEntry) float32 {
		u, err := ix.unit(e.vec)
		if err != nil {
			t.Fatal(err)
		}
		return cosine(uq, u)
	}
	for j, g := range got {
		e := es[g.ID]
		if e == nil || e.expires <= now {
			t.Fatalf("search returned dead or expired %q", g.ID)
		}
		if want := modelCos(q, e.vec); math.Abs(float64(g.Score-want)) > 1e-5 || g.Score != score(e) {
			t.Fatalf("score of %q: got %v want %v", g.ID, g.Score, want)
		}
		if g.Score < minScore {
			t.Fatalf("results below minScore: %+v", got)
		}
		if j > 0 {
			p := got[j-1]
			if g.Score > p.Score || (g.Score == p.Score && e.seq > es[p.ID].seq) {
				t.Fatalf("results not ranked by score, then newest first: %+v", got)
			}
		}
		if string(g.Payload) != g.ID || !slices.Equal(g.Tags, e.tags) || g.ExpiresAt.UnixNano() != e.expires {
			t.Fatalf("payload %q tags %v expiry %v for %q", g.Payload, g.Tags, g.ExpiresAt, g.ID)
		}
	}
	if exact {
		type ranked struct {
			id    string
			score float32
			seq   uint64
		}
		var want []ranked
		for id, e := range es {
			if s := score(e); e.expires > now && s >= minScore {
				want = append(want, ranked{id, s, e.seq})
			}
		}
		sort.Slice(want, func(i, j int) bool {
			return want[i].score > want[j].score || (want[i].score == want[j].score && want[i].seq > want[j].seq)
		})
		if len(want) > k {
			want = want[:k]
		}
		if len(want) != len(got) {
			t.Fatalf("exact search: got %d results, want %d (%+v vs %v)", len(got), len(want), got, want)
		}
		for j := range want {
			if got[j].ID != want[j].id {
				t.Fatalf("exact search: got %+v, want %v", got, want)
			}
		}
		// A scan meets, and so removes, every expired entry.
		m.expire(tn, now)
	} else if it != nil {
		// The graph path removes only the expired entries it met; mirror.
		it.mu.RLock()
		for id, e := range es {
			if e.expires <= now && it.byID[id] == nil {
				delete(es, id)
			}
		}
		it.mu.RUnlock()
	}
	for j := len(got) - 1; j >= 0; j-- {
		m.clock++
		es[got[j].ID].lastUsed = m.clock
	}
}

func (m *model) compare(t *testing.T, ix *Index, step int) {
	t.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if len(ix.tenants) != len(m.tenants) {
		t.Fatalf("step %d: %d tenants, model %d", step, len(ix.tenants), len(m.tenants))
	}
	for tn, es := range m.tenants {
		it := ix.tenants[tn]
		if it == nil {
			t.Fatalf("step %d: tenant %q missing", step, tn)
		}
		it.mu.RLock()
		n := len(it.byID)
		for id := range es {
			if it.byID[id] == nil {
				it.mu.RUnlock()
				t.Fatalf("step %d: %s/%s missing", step, tn, id)
			}
		}
		it.mu.RUnlock()
		if n != len(es) {
			t.Fatalf("step %d: tenant %q has %d entries, model %d", step, tn, n, len(es))
		}
	}
}
