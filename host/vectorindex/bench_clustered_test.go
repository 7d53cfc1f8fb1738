package vectorindex

import (
	"fmt"
	"math/rand"
	"testing"
	"time"
)

// clusteredVecs generates vectors shaped like word embeddings: every vector
// leans one common way (cosine ≈ 0.25 between topic centres) and sits in a
// tight topic cluster (cosine 0.9–0.97 to its centre, ≈ 200 per cluster).
// Dense clusters are what left nodes unreachable (README.md,
// "Reachability"); uniformly random vectors never showed it.
func clusteredVecs(r *rand.Rand, n, dim int) [][]float32 {
	common := randUnit(r, dim)
	cents := make([][]float32, max(1, n/200))
	for i := range cents {
		cents[i] = nearby(r, common, 0.5)
	}
	out := make([][]float32, n)
	for i := range out {
		out[i] = nearby(r, cents[r.Intn(len(cents))], 0.9+0.07*r.Float64())
	}
	return out
}

type clusteredBench struct {
	ix       *Index
	vecs     [][]float32
	buildCPU time.Duration
}

var clusteredBenches = map[int]*clusteredBench{}

// getClusteredBench builds (once per size) a tenant of n clustered 100-d
// vectors, the middle one a far outlier, through the public API with the
// default parameters and the background graph build.
func getClusteredBench(b *testing.B, n int) *clusteredBench {
	if cb := clusteredBenches[n]; cb != nil {
		return cb
	}
	r := rand.New(rand.NewSource(int64(n)))
	vecs := clusteredVecs(r, n, 100)
	vecs[n/2] = randUnit(r, 100)
	ix, err := New(Config{Dim: 100, MaxEntriesPerTenant: n, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c0 := processCPU()
	for i, v := range vecs {
		if err := ix.Insert("t", fmt.Sprint(i), v, 24*time.Hour, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	ix.wg.Wait()
	cb := &clusteredBench{ix: ix, vecs: vecs, buildCPU: processCPU() - c0}
	b.Logf("n=%d: built in %v CPU (%.0f µs/insert)", n, cb.buildCPU.Round(time.Millisecond),
		float64(cb.buildCPU.Microseconds())/float64(n))
	clusteredBenches[n] = cb
	return cb
}

// BenchmarkClustered measures, on clustered data at 10k and 100k entries:
// "self" searches for stored vectors with the semantic cache's call (k=8,
// minScore 0.92; the metric is the share found), "near" k=1 lookups at
// cosine 0.95 to a stored vector (recall@1 against an exact scan), and
// inserts into the full tenant (each evicts and leaves a tombstone). Run
// with -benchtime 1000x.
func BenchmarkClustered(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("n=%d/self", n), func(b *testing.B) {
			cb := getClusteredBench(b, n)
			r := rand.New(rand.NewSource(3))
			qs := []int{n / 2} // the outlier first
			for range 999 {
				qs = append(qs, r.Intn(n))
			}
			found := 0
			lat := measure(b, func(i int) {
				q := qs[i%len(qs)]
				m, err := cb.ix.Search("t", cb.vecs[q], 8, 0.92)
				if err != nil {
					b.Fatal(err)
				}
				for _, x := range m {
					if x.ID == fmt.Sprint(q) {
						found++
						break
					}
				}
			})
			lat.report(b)
			b.ReportMetric(float64(found)/float64(len(lat.cpu)), "self-recall")
			b.ReportMetric(float64(cb.buildCPU.Microseconds())/float64(n), "build-cpu-µs/insert")
		})
		b.Run(fmt.Sprintf("n=%d/near", n), func(b *testing.B) {
			cb := getClusteredBench(b, n)
			r := rand.New(rand.NewSource(4))
			qs := make([][]float32, 300)
			best := make([]float32, len(qs))
			for i := range qs {
				qs[i] = nearby(r, cb.vecs[r.Intn(n)], 0.95)
				best[i] = -2
				for _, v := range cb.vecs {
					best[i] = max(best[i], cosine(qs[i], v))
				}
			}
			ok := 0
			lat := measure(b, func(i int) {
				j := i % len(qs)
				m, err := cb.ix.Search("t", qs[j], 1, 0.92)
				if err != nil {
					b.Fatal(err)
				}
				if len(m) == 1 && m[0].Score >= best[j] {
					ok++
				}
			})
			lat.report(b)
			b.ReportMetric(float64(ok)/float64(len(lat.cpu)), "recall@1")
		})
		b.Run(fmt.Sprintf("n=%d/insert", n), func(b *testing.B) {
			cb := getClusteredBench(b, n)
			r := rand.New(rand.NewSource(5))
			vecs := clusteredVecs(r, 1000, 100)
			lat := measure(b, func(i int) {
				if err := cb.ix.Insert("t", fmt.Sprint("new", i), vecs[i%len(vecs)], time.Hour, nil, nil); err != nil {
					b.Fatal(err)
				}
			})
			lat.report(b)
		})
	}
}
