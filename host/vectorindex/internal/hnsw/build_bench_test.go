package hnsw

import (
	"math/rand"
	"testing"
)

// BenchmarkBuild10k reports the cost of building a 10k-node graph (M=16,
// EfConstruction=128, dim 100) per inserted node, on random and on
// clustered vectors.
func BenchmarkBuild10k(b *testing.B) {
	const n, dim = 10_000, 100
	r := rand.New(rand.NewSource(1))
	random := make([][]float32, n)
	for i := range random {
		random[i] = randUnit(r, dim)
	}
	cents := make([][]float32, n/200)
	for i := range cents {
		cents[i] = randUnit(r, dim)
	}
	clustered := make([][]float32, n)
	for i := range clustered {
		clustered[i] = nearby(r, cents[r.Intn(len(cents))])
	}
	for _, tc := range []struct {
		name string
		vecs [][]float32
	}{{"random", random}, {"clustered", clustered}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				g := newTestGraph(3)
				g.Ml = 1.0 / 16
				for i, v := range tc.vecs {
					g.Add(MakeNode(i, v))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n)/1e3, "µs/add")
		})
	}
}
