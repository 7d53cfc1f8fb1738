package vectorindex

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injectable clock for TTL tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// newIndex builds an index; syncRebuild makes graph builds happen inline so
// graph state is deterministic.
func newIndex(tb testing.TB, cfg Config, syncRebuild bool) *Index {
	tb.Helper()
	ix, err := New(cfg)
	if err != nil {
		tb.Fatalf("New: %v", err)
	}
	ix.syncRebuild = syncRebuild
	tb.Cleanup(func() { _ = ix.Close() })
	return ix
}

func randUnit(r *rand.Rand, d int) []float32 {
	v := make([]float32, d)
	var s float64
	for i := range v {
		x := r.NormFloat64()
		v[i] = float32(x)
		s += x * x
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// nearby returns a unit vector at roughly the given cosine to base.
func nearby(r *rand.Rand, base []float32, cos float64) []float32 {
	noise := randUnit(r, len(base))
	// Remove noise's component along base so the mix has a known angle.
	var dot float64
	for i := range base {
		dot += float64(base[i]) * float64(noise[i])
	}
	var n2 float64
	for i := range noise {
		noise[i] -= float32(dot) * base[i]
		n2 += float64(noise[i]) * float64(noise[i])
	}
	sin := math.Sqrt(1 - cos*cos)
	out := make([]float32, len(base))
	for i := range out {
		out[i] = float32(cos*float64(base[i]) + sin*float64(noise[i])/math.Sqrt(n2))
	}
	return out
}

func basis(d, i int) []float32 {
	v := make([]float32, d)
	v[i] = 1
	return v
}

// checkInvariants verifies every tenant's internal structures agree.
func checkInvariants(tb testing.TB, ix *Index) {
	tb.Helper()
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	total, graphNodes, dead := 0, 0, 0
	for name, t := range ix.tenants {
		t.mu.RLock()
		err := tenantInvariants(ix, t)
		total += len(t.byID)
		if t.graph != nil {
			graphNodes += t.graph.Len()
			dead += t.dead
		}
		t.mu.RUnlock()
		if err != nil {
			tb.Fatalf("tenant %q: %v", name, err)
		}
	}
	if s := ix.Stats(); s.Entries != total || s.GraphNodes != graphNodes || s.Tombstones != dead {
		tb.Fatalf("stats %+v disagree with tenants: entries %d graph nodes %d tombstones %d", s, total, graphNodes, dead)
	}
}

func tenantInvariants(ix *Index, t *tenant) error {
	n := len(t.byID)
	if n > ix.maxEntries {
		return fmt.Errorf("%d entries > max %d", n, ix.maxEntries)
	}
	if len(t.lru) != n || len(t.exp) != n {
		return fmt.Errorf("sizes byID %d lru %d exp %d", n, len(t.lru), len(t.exp))
	}
	if len(t.byKey) != len(t.nodes) {
		return fmt.Errorf("%d nodes, %d graph keys", len(t.nodes), len(t.byKey))
	}
	for id, e := range t.byID {
		switch {
		case e.id != id:
			return fmt.Errorf("entry %q under id %q", e.id, id)
		case t.lru[e.lruIdx] != e || t.exp[e.expIdx] != e:
			return fmt.Errorf("entry %q heap index wrong", e.id)
		case e.lruKey > e.lastUsed.Load():
			return fmt.Errorf("entry %q lru key ahead of last use", e.id)
		case e.node == nil || e.nodeIdx >= len(e.node.entries) || e.node.entries[e.nodeIdx] != e:
			return fmt.Errorf("entry %q not in its node", e.id)
		case e.node.live == 0 || int(e.node.listIdx) >= len(t.nodes) || t.nodes[e.node.listIdx] != e.node:
			return fmt.Errorf("entry %q's node is not live", e.id)
		}
	}
	total := 0
	for i, nd := range t.nodes {
		if int(nd.listIdx) != i || t.byKey[nd.key] != nd {
			return fmt.Errorf("node %d (key %d) misplaced", i, nd.key)
		}
		if nd.hash != ix.vecHash(nd.vec) {
			return fmt.Errorf("node %d hash stale", nd.key)
		}
		if o := t.byVec[nd.hash]; !ix.noShare && (o == nil || (o != nd && slices.Equal(o.vec, nd.vec))) {
			// Two live nodes with one vector, or one no insert can find:
			// a missed share (hash collisions aside, which tests never hit).
			return fmt.Errorf("node %d not shared through byVec", nd.key)
		}
		live := 0
		var prev uint64
		for j, e := range nd.entries {
			if e == nil {
				continue
			}
			if e.node != nd || e.nodeIdx != j || t.byID[e.id] != e {
				return fmt.Errorf("node %d entry %q misplaced", nd.key, e.id)
			}
			if live > 0 && e.seq <= prev {
				return fmt.Errorf("node %d entries out of insertion order", nd.key)
			}
			if e.expires < nd.minExpires {
				return fmt.Errorf("node %d minExpires above entry %q's expiry", nd.key, e.id)
			}
			prev = e.seq
			live++
		}
		if live != int(nd.live) || live == 0 {
			return fmt.Errorf("node %d counts %d live entries, holds %d", nd.key, nd.live, live)
		}
		if len(nd.entries) > 2*live || nd.entries[len(nd.entries)-1] == nil {
			return fmt.Errorf("node %d not compacted: %d slots for %d entries", nd.key, len(nd.entries), live)
		}
		total += live
		if t.graph != nil {
			if _, ok := t.graph.Lookup(nd.key); !ok {
				return fmt.Errorf("live node %d missing from graph", nd.key)
			}
		}
	}
	if total != n {
		return fmt.Errorf("nodes hold %d entries, byID %d", total, n)
	}
	for h, nd := range t.byVec {
		if nd.hash != h || int(nd.listIdx) >= len(t.nodes) || t.nodes[nd.listIdx] != nd {
			return fmt.Errorf("byVec holds a dead or misfiled node %d", nd.key)
		}
	}
	if !heapOK(&t.lru) || !heapOK(&t.exp) {
		return fmt.Errorf("heap order violated")
	}
	if t.graph != nil && t.graph.Len()-len(t.nodes) != t.dead {
		return fmt.Errorf("graph %d nodes, %d live, dead count %d", t.graph.Len(), len(t.nodes), t.dead)
	}
	if t.graph == nil && t.dead != 0 {
		return fmt.Errorf("dead %d without graph", t.dead)
	}
	return nil
}

func heapOK(h heap.Interface) bool {
	for i := 1; i < h.Len(); i++ {
		if h.Less(i, (i-1)/2) {
			return false
		}
	}
	return true
}
