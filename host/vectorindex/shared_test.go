package vectorindex

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// Entries with bit-identical vectors share one graph node (see node in
// tenant.go). These tests pin what that must not change: recall for the
// other entries, every duplicate findable, results ranked by score then
// newest first, and delete/expiry/eviction/rebuild accounting.

// ids returns the match ids in order.
func ids(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// TestSharedVectorRecall is TestRecallAgainstBruteForce with 5k of 15k
// entries sharing one vector, inserted interleaved with 10k distinct ones.
// Without sharing (noShare, the old behaviour) the duplicates cut the graph
// apart: recall@1 measured 0.35 (random) and 0.42 (near-duplicate queries),
// logged below. With sharing the
// distinct vectors' recall must meet the same floors as the duplicate-free
// test, and every duplicate must be findable.
func TestSharedVectorRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 10k-node graphs")
	}
	const n, dups, dim, queries = 10_000, 5_000, 100, 1000
	for _, share := range []bool{true, false} {
		t.Run(fmt.Sprintf("share=%v", share), func(t *testing.T) {
			r := rand.New(rand.NewSource(7))
			ix := newIndex(t, Config{Dim: dim, MaxEntriesPerTenant: n + dups, ExactBelow: -1, Seed: 11}, true)
			ix.noShare = !share
			dup := randUnit(r, dim)
			vecs := make([][]float32, n)
			for i := range vecs {
				vecs[i] = randUnit(r, dim)
				must(t, ix.Insert("t", itoa(i), vecs[i], hour, nil, nil))
				if i%2 == 1 {
					must(t, ix.Insert("t", "d"+itoa(i/2), dup, hour, []string{"dup"}, []byte(itoa(i/2))))
				}
			}
			checkInvariants(t, ix)
			wantNodes := n + 1
			if !share {
				wantNodes = n + dups
			}
			if s := ix.Stats(); s.Entries != n+dups || s.GraphNodes != wantNodes {
				t.Fatalf("stats %+v, want %d entries in %d nodes", s, n+dups, wantNodes)
			}

			// Brute force over the distinct vectors and the shared one: a
			// result is right if its score is the best score (any duplicate
			// is right when the shared vector is nearest).
			best := func(q []float32) float32 {
				b := cosine(q, dup)
				for _, v := range vecs {
					b = max(b, cosine(q, v))
				}
				return b
			}
			recall := func(mk func() []float32) float64 {
				hits := 0
				for range queries {
					q := mk()
					m, err := ix.Search("t", q, 1, -1)
					if err != nil {
						t.Fatal(err)
					}
					if len(m) == 1 && m[0].Score >= best(q) {
						hits++
					}
				}
				return float64(hits) / queries
			}
			random := recall(func() []float32 { return randUnit(r, dim) })
			near := recall(func() []float32 { return nearby(r, vecs[r.Intn(n)], 0.9) })
			t.Logf("recall@1: random queries %.3f, near-duplicate queries %.3f", random, near)
			if !share {
				return // the old behaviour, logged for comparison
			}
			if random < 0.95 {
				t.Errorf("recall@1 on random queries %.3f < 0.95", random)
			}
			if near < 0.99 {
				t.Errorf("recall@1 on near-duplicate queries %.3f < 0.99", near)
			}

			// Every duplicate is findable, newest first, with its own payload.
			m, err := ix.Search("t", dup, dups+10, 0.99)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) != dups {
				t.Fatalf("k=%d over the shared vector returned %d of %d duplicates", dups+10, len(m), dups)
			}
			for j, x := range m {
				want := dups - 1 - j
				if x.ID != "d"+itoa(want) || string(x.Payload) != itoa(want) || x.Score < 0.9999 || !slices.Equal(x.Tags, []string{"dup"}) {
					t.Fatalf("match %d: %+v, want d%d", j, x, want)
				}
			}
			// The cache's k=4 gets the four newest.
			m, _ = ix.Search("t", dup, 4, 0.99)
			if got := ids(m); !slices.Equal(got, []string{"d4999", "d4998", "d4997", "d4996"}) {
				t.Fatalf("k=4: %v", got)
			}
		})
	}
}

// TestSharedVectorLifecycle runs one scenario on the exact scan and on the
// graph: entries sharing a vector are returned newest first, each with its
// own payload, tags and expiry, within k and minScore; deleting, expiring
// and evicting them removes the shared node only with its last entry.
func TestSharedVectorLifecycle(t *testing.T) {
	for _, exactBelow := range []int{0, -1} {
		t.Run(fmt.Sprintf("exactBelow=%d", exactBelow), func(t *testing.T) {
			const d = 8
			clk := newFakeClock()
			ix := newIndex(t, Config{Dim: d, MaxEntriesPerTenant: 8, ExactBelow: exactBelow, Now: clk.Now, Seed: 1}, true)
			graph := exactBelow < 0
			v := basis(d, 0)
			scaled := []float32{3, 0, 0, 0, 0, 0, 0, 0} // normalises to v's bits
			must(t, ix.Insert("a", "s1", v, time.Second, []string{"x"}, []byte("p1")))
			must(t, ix.Insert("a", "s2", scaled, hour, []string{"y"}, []byte("p2")))
			must(t, ix.Insert("a", "s3", v, hour, nil, []byte("p3")))
			must(t, ix.Insert("a", "s4", v, 2*hour, []string{"x", "z"}, []byte("p4")))
			must(t, ix.Insert("a", "o1", basis(d, 1), hour, nil, nil))
			must(t, ix.Insert("a", "o2", basis(d, 2), hour, nil, nil))
			checkInvariants(t, ix)
			nodes := func() int { return len(ix.tenants["a"].nodes) }
			if nodes() != 3 || ix.Len("a") != 6 {
				t.Fatalf("%d nodes for %d entries, want 3", nodes(), ix.Len("a"))
			}
			if s := ix.Stats(); graph && (s.GraphNodes != 3 || s.Tombstones != 0) {
				t.Fatalf("stats %+v", s)
			}

			// Newest first, each with its own payload, tags and expiry.
			m, _ := ix.Search("a", v, 10, 0.5)
			if got := ids(m); !slices.Equal(got, []string{"s4", "s3", "s2", "s1"}) {
				t.Fatalf("order %v", got)
			}
			if string(m[0].Payload) != "p4" || !slices.Equal(m[0].Tags, []string{"x", "z"}) ||
				!m[0].ExpiresAt.Equal(clk.Now().Add(2*hour)) || m[3].Score != 1 || string(m[2].Payload) != "p2" {
				t.Fatalf("per-entry data lost: %+v", m)
			}
			// k bounds; minScore filters the shared score as one.
			if m, _ = ix.Search("a", v, 2, 0.5); !slices.Equal(ids(m), []string{"s4", "s3"}) {
				t.Fatalf("k=2: %v", ids(m))
			}
			q := nearby(rand.New(rand.NewSource(1)), v, 0.9)
			if m, _ = ix.Search("a", q, 10, 0.95); len(m) != 0 {
				t.Fatalf("minScore above the shared score: %v", ids(m))
			}
			if m, _ = ix.Search("a", q, 10, 0.85); !slices.Equal(ids(m), []string{"s4", "s3", "s2", "s1"}) {
				t.Fatalf("minScore below the shared score: %v", ids(m))
			}

			// Expiry of one sharer (lazy, on search) keeps the node.
			clk.Advance(time.Second)
			if m, _ = ix.Search("a", v, 10, 0.5); !slices.Equal(ids(m), []string{"s4", "s3", "s2"}) {
				t.Fatalf("after s1 expired: %v", ids(m))
			}
			if s := ix.Stats(); s.Expirations != 1 || s.Entries != 5 || nodes() != 3 {
				t.Fatalf("after expiry %+v, %d nodes", s, nodes())
			}
			// Delete and tag delete of sharers keep it too.
			if !ix.Delete("a", "s3") || ix.DeleteTagged("a", "y") != 1 {
				t.Fatal("delete failed")
			}
			if m, _ = ix.Search("a", v, 10, 0.5); !slices.Equal(ids(m), []string{"s4"}) || nodes() != 3 {
				t.Fatalf("after deletes: %v, %d nodes", ids(m), nodes())
			}
			if s := ix.Stats(); s.Tombstones != 0 {
				t.Fatalf("a shared node died early: %+v", s)
			}
			checkInvariants(t, ix)

			// Replacing the last sharer by another vector removes the node
			// (a tombstone on the graph); re-adding the vector makes a new one.
			must(t, ix.Insert("a", "s4", basis(d, 3), hour, nil, nil))
			if nodes() != 3 {
				t.Fatalf("%d nodes after replace", nodes())
			}
			if s := ix.Stats(); graph && (s.Tombstones != 1 || s.GraphNodes != 4) {
				t.Fatalf("after the last sharer went: %+v", s)
			}
			if m, _ = ix.Search("a", v, 10, 0.5); len(m) != 0 {
				t.Fatalf("dead node returned %v", ids(m))
			}
			must(t, ix.Insert("a", "s5", v, hour, nil, nil))
			if m, _ = ix.Search("a", v, 10, 0.5); !slices.Equal(ids(m), []string{"s5"}) {
				t.Fatalf("re-added: %v", ids(m))
			}
			checkInvariants(t, ix)

			// Eviction: fill the tenant (max 8) with sharers; LRU order
			// holds per entry, so the shared node stays while any is left.
			for i := 6; i <= 9; i++ {
				must(t, ix.Insert("a", "s"+itoa(i), v, hour, nil, nil))
			}
			// Live: o1 o2 s4 s5..s9 = 8. Touch o1, so s4 is the LRU, then s5.
			if m, _ = ix.Search("a", basis(d, 1), 1, 0.5); len(m) != 1 || m[0].ID != "o1" {
				t.Fatalf("touch o1: %v", ids(m))
			}
			must(t, ix.Insert("a", "n1", basis(d, 4), hour, nil, nil)) // evicts o2 (oldest)
			must(t, ix.Insert("a", "n2", basis(d, 5), hour, nil, nil)) // evicts s4
			must(t, ix.Insert("a", "n3", basis(d, 6), hour, nil, nil)) // evicts s5
			if m, _ = ix.Search("a", v, 10, 0.5); !slices.Equal(ids(m), []string{"s9", "s8", "s7", "s6"}) {
				t.Fatalf("after evictions: %v", ids(m))
			}
			if s := ix.Stats(); s.Evictions != 3 || s.Entries != 8 {
				t.Fatalf("eviction stats %+v", s)
			}
			checkInvariants(t, ix)
			// Searching the shared vector touched s6..s9, so inserting four
			// more evicts o1, n1, n2, n3 before any sharer.
			for i := 4; i < 8; i++ {
				must(t, ix.Insert("a", "m"+itoa(i), basis(d, i), hour, nil, nil))
			}
			if m, _ = ix.Search("a", v, 10, 0.5); len(m) != 4 {
				t.Fatalf("sharers evicted before older entries: %v", ids(m))
			}
			for _, id := range []string{"o1", "n1", "n2", "n3"} {
				if ix.tenants["a"].byID[id] != nil {
					t.Fatalf("%s survived", id)
				}
			}
			checkInvariants(t, ix)
		})
	}
}

// TestSharedTiesAcrossVectors: distinct vectors at the same score also rank
// newest first, on both paths.
func TestSharedTiesAcrossVectors(t *testing.T) {
	for _, exactBelow := range []int{0, -1} {
		ix := newIndex(t, Config{Dim: 4, ExactBelow: exactBelow, Seed: 1}, true)
		must(t, ix.Insert("a", "x1", []float32{1, 0, 0, 0}, hour, nil, nil))
		must(t, ix.Insert("a", "y1", []float32{0, 1, 0, 0}, hour, nil, nil))
		must(t, ix.Insert("a", "x2", []float32{1, 0, 0, 0}, hour, nil, nil))
		must(t, ix.Insert("a", "z", []float32{0, 0, 1, 0}, hour, nil, nil))
		m, _ := ix.Search("a", []float32{1, 1, 0, 0}, 3, 0.5)
		if got := ids(m); !slices.Equal(got, []string{"x2", "y1", "x1"}) || m[0].Score != m[2].Score {
			t.Fatalf("exactBelow %d: %v %+v", exactBelow, got, m)
		}
		m, _ = ix.Search("a", []float32{1, 1, 0, 0}, 2, 0.5)
		if got := ids(m); !slices.Equal(got, []string{"x2", "y1"}) {
			t.Fatalf("exactBelow %d, k=2: %v", exactBelow, got)
		}
	}
}

// TestSharedSignedZero: -0 and +0 normalise to the same bits, so vectors
// that compare equal share a node.
func TestSharedSignedZero(t *testing.T) {
	ix := newIndex(t, Config{Dim: 3}, true)
	must(t, ix.Insert("a", "p", []float32{1, 0, 0}, hour, nil, nil))
	must(t, ix.Insert("a", "n", []float32{1, float32(math.Copysign(0, -1)), 0}, hour, nil, nil))
	if n := len(ix.tenants["a"].nodes); n != 1 {
		t.Fatalf("%d nodes", n)
	}
}

// TestSharedRebuild: tombstones and rebuilds count nodes, not entries, and
// a background rebuild replays nodes created meanwhile while sharers keep
// joining existing ones.
func TestSharedRebuild(t *testing.T) {
	const dim = 16
	r := rand.New(rand.NewSource(3))
	ix := newIndex(t, Config{Dim: dim, ExactBelow: 100, Seed: 5}, true)
	dup := randUnit(r, dim)
	vecs := map[string][]float32{}
	for i := range 300 {
		id := itoa(i)
		vecs[id] = randUnit(r, dim)
		must(t, ix.Insert("a", id, vecs[id], hour, nil, nil))
		must(t, ix.Insert("a", "d"+id, dup, hour, nil, nil))
	}
	// 301 nodes > ExactBelow: one graph build; 600 entries.
	if s := ix.Stats(); s.Rebuilds != 1 || s.GraphNodes != 301 || s.Entries != 600 {
		t.Fatalf("after growth %+v", s)
	}
	// Deleting 299 of 300 sharers leaves no tombstone.
	for i := range 299 {
		ix.Delete("a", "d"+itoa(i))
	}
	if s := ix.Stats(); s.Tombstones != 0 || s.GraphNodes != 301 {
		t.Fatalf("sharer deletes made tombstones: %+v", s)
	}
	if m, _ := ix.Search("a", dup, 5, 0.99); !slices.Equal(ids(m), []string{"d299"}) {
		t.Fatalf("last sharer: %v", ids(m))
	}
	// 64 node deaths (d299 and 63 others): 64 ≥ max(64, 0.25×237) rebuilds.
	ix.Delete("a", "d299")
	for i := range 63 {
		ix.Delete("a", itoa(i))
		delete(vecs, itoa(i))
	}
	if s := ix.Stats(); s.Rebuilds != 2 || s.Tombstones != 0 || s.GraphNodes != 237 {
		t.Fatalf("after node deaths %+v", s)
	}
	checkInvariants(t, ix)

	// Background: sharers and new vectors arrive while graphs build.
	ix.syncRebuild = false
	ix.minTombstones, ix.rebuildFraction = 1, 0.01
	const from, to = 63, 150
	for i := from; i < to; i++ {
		ix.Delete("a", itoa(i)) // a node death: a background rebuild every few
		delete(vecs, itoa(i))
		id := "n" + itoa(i)
		vecs[id] = randUnit(r, dim)
		must(t, ix.Insert("a", id, vecs[id], hour, nil, nil))
		must(t, ix.Insert("a", "e"+itoa(i), dup, hour, nil, nil))
	}
	ix.wg.Wait()
	checkInvariants(t, ix)
	if s := ix.Stats(); s.Rebuilds < 4 {
		t.Fatalf("expected background rebuilds: %+v", s)
	}
	for id, v := range vecs {
		if m, _ := ix.Search("a", v, 1, 0.99); len(m) != 1 || m[0].ID != id {
			t.Fatalf("%s not found after background rebuilds: %v", id, ids(m))
		}
	}
	if m, _ := ix.Search("a", dup, 200, 0.99); len(m) != to-from || m[0].ID != "e"+itoa(to-1) || m[len(m)-1].ID != "e"+itoa(from) {
		t.Fatalf("sharers after background rebuilds: %d, %v", len(m), ids(m))
	}
	if n := len(ix.tenants["a"].nodes); n != len(vecs)+1 {
		t.Fatalf("%d nodes for %d vectors", n, len(vecs)+1)
	}
}

// TestSharedNodeCompaction: removing sharers in any order keeps the node's
// entry list compact and ordered (checkInvariants) and the rest findable.
func TestSharedNodeCompaction(t *testing.T) {
	ix := newIndex(t, Config{Dim: 4, MaxEntriesPerTenant: 1000}, true)
	v := []float32{1, 2, 3, 4}
	for i := range 200 {
		must(t, ix.Insert("a", itoa(i), v, hour, nil, nil))
	}
	r := rand.New(rand.NewSource(1))
	left := make([]int, 200)
	for i := range left {
		left[i] = i
	}
	r.Shuffle(len(left), func(i, j int) { left[i], left[j] = left[j], left[i] })
	for len(left) > 1 {
		ix.Delete("a", itoa(left[0]))
		left = left[1:]
		checkInvariants(t, ix)
		if len(left)%37 == 0 {
			want := slices.Clone(left)
			slices.Sort(want)
			slices.Reverse(want)
			m, _ := ix.Search("a", v, 1000, 0.99)
			if len(m) != len(want) {
				t.Fatalf("%d of %d found", len(m), len(want))
			}
			for j := range want {
				if m[j].ID != itoa(want[j]) {
					t.Fatalf("order %v, want %v", ids(m), want)
				}
			}
		}
	}
	if e := ix.tenants["a"].nodes[0].entries; len(e) > 2 {
		t.Fatalf("one sharer left in %d slots", len(e))
	}
}

// TestSharedScanMeetsExpired: the exact scan still removes every expired
// entry of the tenant (the README's lazy expiry), including older sharers of
// a node whose newer entries filled k.
func TestSharedScanMeetsExpired(t *testing.T) {
	clk := newFakeClock()
	ix := newIndex(t, Config{Dim: 4, Now: clk.Now}, true)
	v := []float32{1, 2, 3, 4}
	must(t, ix.Insert("a", "old1", v, time.Second, nil, nil))
	must(t, ix.Insert("a", "old2", v, time.Second, nil, nil))
	must(t, ix.Insert("a", "new1", v, hour, nil, nil))
	must(t, ix.Insert("a", "new2", v, hour, nil, nil))
	must(t, ix.Insert("a", "other", []float32{-1, 0, 0, 0}, time.Second, nil, nil))
	clk.Advance(time.Second)
	m, _ := ix.Search("a", v, 1, 0.5)
	if !slices.Equal(ids(m), []string{"new2"}) {
		t.Fatalf("got %v", ids(m))
	}
	if n, s := ix.Len("a"), ix.Stats(); n != 2 || s.Expirations != 3 {
		t.Fatalf("scan left expired entries: len %d, %+v", n, s)
	}
	checkInvariants(t, ix)
}
