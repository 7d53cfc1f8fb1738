package vectorindex

import (
	"flag"
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// heavy enables the 100k-entry recall runs (minutes of graph building):
// go test ./host/vectorindex -run Recall -args -heavy
var heavy = flag.Bool("heavy", false, "run the 100k-entry recall tests")

// recallData is a named way of generating a tenant's vectors.
type recallData struct {
	name string
	gen  func(r *rand.Rand, n, dim int) [][]float32
}

var recallSets = []recallData{
	{"random", func(r *rand.Rand, n, dim int) [][]float32 {
		out := make([][]float32, n)
		for i := range out {
			out[i] = randUnit(r, dim)
		}
		return out
	}},
	// Like word embeddings: every vector leans one common way (cosine ≈ 0.25
	// between clusters) and sits in a tight topic cluster (cosine 0.9–0.97
	// to its centre). Dense clusters are what left nodes unreachable.
	{"clustered", clusteredVecs},
	// A tenth of the entries repeat one of 50 vectors bit for bit (texts
	// that differ only in numbers), the rest clustered.
	{"identical", func(r *rand.Rand, n, dim int) [][]float32 {
		out := clusteredVecs(r, n, dim)
		for i := range n / 10 {
			out[r.Intn(n)] = out[i%50]
		}
		return out
	}},
}

// TestRecall checks that a graph tenant finds what it stores: every sampled
// stored vector (and one far outlier) is returned for itself with the
// semantic cache's call (k=8, minScore 0.92), by the graph alone and with
// the exact lookup; and recall@1 for near queries matches an exact scan.
// The builds run in the background while searches and inserts interleave,
// as under load.
func TestRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10k-node graphs")
	}
	for _, d := range recallSets {
		t.Run(d.name+"/10k", func(t *testing.T) { testRecall(t, d, 10_000, 1000) })
	}
}

// TestRecall100k is TestRecall at 100k entries (behind -heavy).
func TestRecall100k(t *testing.T) {
	if !*heavy {
		t.Skip("100k builds take minutes; run with -args -heavy")
	}
	for _, d := range recallSets {
		t.Run(d.name+"/100k", func(t *testing.T) { testRecall(t, d, 100_000, 1000) })
	}
}

func testRecall(t *testing.T, d recallData, n, samples int) {
	const dim = 100
	r := rand.New(rand.NewSource(int64(n) + int64(len(d.name))))
	vecs := d.gen(r, n, dim)
	outlier := n / 2
	vecs[outlier] = randUnit(r, dim)
	ix := newIndex(t, Config{Dim: dim, MaxEntriesPerTenant: n, Seed: 5}, false)
	start := time.Now()
	for i, v := range vecs {
		if err := ix.Insert("t", itoa(i), v, hour, nil, nil); err != nil {
			t.Fatal(err)
		}
		if i%97 == 0 { // searches interleaved with inserts, as under load
			if _, err := ix.Search("t", vecs[r.Intn(i+1)], 8, 0.92); err != nil {
				t.Fatal(err)
			}
		}
	}
	waitBuilt(t, ix, "t")
	t.Logf("%d entries in %v", n, time.Since(start))
	checkInvariants(t, ix)

	// Self-recall: the id of a stored vector among its k=8 matches. With
	// identical vectors, up to k ids share a node and the newest win, so
	// the entry only has to be found if it is among its vector's newest.
	owners := map[string][]int{}
	for i, v := range vecs {
		key := fmt.Sprint(v)
		owners[key] = append(owners[key], i)
	}
	sample := []int{outlier}
	for range samples {
		sample = append(sample, r.Intn(n))
	}
	for _, graphOnly := range []bool{true, false} {
		ix.noExactLookup = graphOnly
		missed := 0
		for _, i := range sample {
			m, err := ix.Search("t", vecs[i], 8, 0.92)
			if err != nil {
				t.Fatal(err)
			}
			want := owners[fmt.Sprint(vecs[i])]
			want = want[max(0, len(want)-8):]
			found := false
			for _, x := range m {
				if x.ID == itoa(want[len(want)-1]) && x.Score >= 0.9999 {
					found = true
				}
			}
			if !found {
				missed++
				if i == outlier {
					t.Errorf("graphOnly=%v: the far outlier is not found for itself: %d matches", graphOnly, len(m))
				}
			}
		}
		if missed > 0 {
			t.Errorf("graphOnly=%v: %d of %d stored vectors not found for themselves", graphOnly, missed, len(sample))
		}
	}
	ix.noExactLookup = false

	// Near queries (cosine 0.95–0.99 to a stored vector) against an exact
	// scan of the same vectors.
	hits := 0
	for range samples {
		q := nearby(r, vecs[r.Intn(n)], 0.95+0.04*r.Float64())
		best, bs := -1, float32(-2)
		for i, v := range vecs {
			if s := cosine(q, v); s > bs || (s == bs && i > best) {
				best, bs = i, s
			}
		}
		m, err := ix.Search("t", q, 1, -1)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) == 1 && m[0].Score >= bs {
			hits++ // the best score; ties between identical vectors are equal
		}
	}
	recall := float64(hits) / float64(samples)
	t.Logf("%s %d: near recall@1 %.3f", d.name, n, recall)
	if recall < 0.99 {
		t.Errorf("near recall@1 %.3f < 0.99", recall)
	}
}

// waitBuilt waits (bounded) until tenant's background build is installed.
func waitBuilt(t *testing.T, ix *Index, name string) {
	t.Helper()
	tn := ix.lookup(name)
	for range 6000 {
		tn.mu.RLock()
		done := tn.graph != nil && !tn.rebuilding
		tn.mu.RUnlock()
		if done {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("graph not built in 5 minutes")
}
