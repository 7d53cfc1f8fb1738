package hnsw

import (
	"math"
	"math/rand"
	"slices"
	"sort"
	"testing"

	upstream "github.com/coder/hnsw"
)

func randUnit(r *rand.Rand, d int) []float32 {
	v := make([]float32, d)
	var s float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		s += x * x
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(s))
	}
	return v
}

// nearby returns base plus noise of relative size 0.3, normalised: a query
// at cosine ≈ 0.96 to base, the kind of query a semantic cache answers.
func nearby(r *rand.Rand, base []float32) []float32 {
	n := randUnit(r, len(base))
	out := make([]float32, len(base))
	var s float64
	for i := range out {
		out[i] = base[i] + 0.3*n[i]
		s += float64(out[i]) * float64(out[i])
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / math.Sqrt(s))
	}
	return out
}

func bruteForce(vecs [][]float32, q []float32, k int) []int {
	idx := make([]int, len(vecs))
	for i := range idx {
		idx[i] = i
	}
	d := make([]float32, len(vecs))
	for i, v := range vecs {
		d[i] = UnitCosineDistance(q, v)
	}
	sort.SliceStable(idx, func(a, b int) bool { return d[idx[a]] < d[idx[b]] })
	return idx[:k]
}

func newTestGraph(seed int64) *Graph[int] {
	g := NewGraph[int]()
	g.Distance = UnitCosineDistance
	g.M = 16
	g.EfSearch = 64
	g.EfConstruction = 128
	g.Rng = rand.New(rand.NewSource(seed))
	return g
}

func TestSmallGraphIsExact(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	g := newTestGraph(2)
	g.EfSearch = 512 // beam wider than the graph: search is exhaustive
	var vecs [][]float32
	for i := range 300 {
		vecs = append(vecs, randUnit(r, 24))
		g.Add(MakeNode(i, vecs[i]))
	}
	if g.Len() != 300 || g.Dims() != 24 {
		t.Fatalf("len %d dims %d", g.Len(), g.Dims())
	}
	for range 50 {
		q := randUnit(r, 24)
		want := bruteForce(vecs, q, 5)
		got := g.Search(q, 5)
		var keys []int
		for _, n := range got {
			keys = append(keys, n.Key)
		}
		if !slices.Equal(keys, want) {
			t.Fatalf("got %v want %v", keys, want)
		}
	}
	if v, ok := g.Lookup(7); !ok || !slices.Equal(v, vecs[7]) {
		t.Fatal("lookup")
	}
	if _, ok := g.Lookup(1000); ok {
		t.Fatal("lookup of missing key")
	}
}

func TestEmptyAndEdgeCases(t *testing.T) {
	g := newTestGraph(1)
	if g.Search([]float32{1, 0}, 3) != nil || g.Len() != 0 || g.Dims() != 0 {
		t.Fatal("empty graph")
	}
	g.Add(MakeNode(1, []float32{1, 0}))
	if got := g.Search([]float32{0, 1}, 3); len(got) != 1 || got[0].Key != 1 {
		t.Fatalf("single node: %+v", got)
	}
	if g.Search([]float32{0, 1}, 0) != nil {
		t.Fatal("k=0")
	}
	mustPanic(t, "duplicate key", func() { g.Add(MakeNode(1, []float32{0, 1})) })
	mustPanic(t, "dimension", func() { g.Add(MakeNode(2, []float32{0, 1, 0})) })
	mustPanic(t, "search dimension", func() { g.Search([]float32{1}, 1) })
}

func mustPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	f()
}

func TestHeaps(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var mn minHeap
	var mx maxHeap
	var all []float32
	for i := range 500 {
		d := r.Float32()
		all = append(all, d)
		mn.push(link{uint32(i), d})
		mx.push(link{uint32(i), d})
	}
	slices.Sort(all)
	for i := range all {
		if a, b := mn.pop().dist, mx.pop().dist; a != all[i] || b != all[len(all)-1-i] {
			t.Fatalf("pop %d: min %v max %v", i, a, b)
		}
	}
}

// TestRecallAgainstUpstream measures recall@1 of this graph and of the
// upstream coder/hnsw v0.6.1 on the same data (5k random 64-d unit
// vectors): near-duplicate queries and uniformly random ones. It asserts
// floors only for this package; upstream's numbers are logged as the
// evidence for not using it (and to notice if a future version is fixed).
func TestRecallAgainstUpstream(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 5k-node graphs")
	}
	const n, dim, queries = 5000, 64, 300
	r := rand.New(rand.NewSource(4))
	vecs := make([][]float32, n)
	ours := newTestGraph(5)
	theirs := upstream.NewGraph[int]()
	theirs.M, theirs.EfSearch = 16, 64
	theirs.Rng = rand.New(rand.NewSource(5))
	for i := range vecs {
		vecs[i] = randUnit(r, dim)
		ours.Add(MakeNode(i, vecs[i]))
		theirs.Add(upstream.MakeNode(i, vecs[i]))
	}
	type searcher func(q []float32) int
	recall := func(s searcher, near bool) float64 {
		rr := rand.New(rand.NewSource(6))
		hits := 0
		for range queries {
			q := randUnit(rr, dim)
			if near {
				q = nearby(rr, vecs[rr.Intn(n)])
			}
			if s(q) == bruteForce(vecs, q, 1)[0] {
				hits++
			}
		}
		return float64(hits) / queries
	}
	oursS := func(q []float32) int { return ours.Search(q, 1)[0].Key }
	theirsS := func(q []float32) int {
		// Best of upstream's top 64, rescored exactly: as generous as we
		// can be to it.
		best, bd := -1, float32(math.Inf(1))
		for _, nd := range theirs.Search(q, 64) {
			if d := UnitCosineDistance(q, nd.Value); d < bd {
				best, bd = nd.Key, d
			}
		}
		return best
	}
	on, or := recall(oursS, true), recall(oursS, false)
	tn, tr := recall(theirsS, true), recall(theirsS, false)
	t.Logf("recall@1 near-duplicate queries: this package %.3f, coder/hnsw v0.6.1 %.3f", on, tn)
	t.Logf("recall@1 random queries:         this package %.3f, coder/hnsw v0.6.1 %.3f", or, tr)
	if on < 0.99 || or < 0.95 {
		t.Errorf("recall too low: near %.3f random %.3f", on, or)
	}
}
