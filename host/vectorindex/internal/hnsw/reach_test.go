package hnsw

import (
	"math/rand"
	"testing"
)

// TestEveryNodeReachable builds a graph of tight clusters plus one far
// outlier and checks that every node keeps an in-edge on layer 0 and is
// found by a search for its own vector. Dropping the longest link of a full
// list (the first version) left 648 of these 10k nodes without an in-edge
// and 1917 (the outlier among them) unfindable.
func TestEveryNodeReachable(t *testing.T) {
	n := 10_000
	if testing.Short() {
		n = 3000
	}
	r := rand.New(rand.NewSource(7))
	cents := make([][]float32, n/200)
	for i := range cents {
		cents[i] = randUnit(r, 100)
	}
	vecs := make([][]float32, n)
	for i := range vecs {
		vecs[i] = nearby(r, cents[r.Intn(len(cents))])
	}
	outlier := n / 2
	vecs[outlier] = randUnit(r, 100)

	g := newTestGraph(3)
	g.EfSearch = 128
	g.Ml = 1.0 / 16
	for i, v := range vecs {
		g.Add(MakeNode(i, v))
	}
	indeg := make([]int, n)
	for id := range g.keys {
		for _, e := range g.links(uint32(id), 0) {
			indeg[e.id]++
		}
	}
	orphans := 0
	for id, d := range indeg {
		if d != int(g.indeg[id]) {
			t.Fatalf("node %d: in-degree %d, tracked %d", id, d, g.indeg[id])
		}
		if d == 0 {
			orphans++
		}
	}
	missed := 0
	for i, v := range vecs {
		found := false
		for _, m := range g.Search(v, 8) {
			found = found || m.Key == i
		}
		if !found {
			missed++
		}
	}
	t.Logf("%d nodes: %d without in-edge, %d not found for themselves, outlier in-degree %d",
		n, orphans, missed, indeg[g.ids[outlier]])
	if orphans > 0 || missed > 0 || indeg[g.ids[outlier]] == 0 {
		t.Errorf("%d nodes without in-edge, %d not found for themselves (outlier in-degree %d)",
			orphans, missed, indeg[g.ids[outlier]])
	}
}
