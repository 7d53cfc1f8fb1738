package vectorindex

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand"
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
		total += len(t.list)
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
	n := len(t.list)
	if n > ix.maxEntries {
		return fmt.Errorf("%d entries > max %d", n, ix.maxEntries)
	}
	if len(t.byID) != n || len(t.byKey) != n || len(t.lru) != n || len(t.exp) != n {
		return fmt.Errorf("sizes list %d byID %d byKey %d lru %d exp %d", n, len(t.byID), len(t.byKey), len(t.lru), len(t.exp))
	}
	for i, e := range t.list {
		switch {
		case e.listIdx != i:
			return fmt.Errorf("entry %q listIdx %d at %d", e.id, e.listIdx, i)
		case t.byID[e.id] != e || t.byKey[e.key] != e:
			return fmt.Errorf("entry %q missing from maps", e.id)
		case t.lru[e.lruIdx] != e || t.exp[e.expIdx] != e:
			return fmt.Errorf("entry %q heap index wrong", e.id)
		case e.lruKey > e.lastUsed.Load():
			return fmt.Errorf("entry %q lru key ahead of last use", e.id)
		}
		if t.graph != nil {
			if _, ok := t.graph.Lookup(e.key); !ok {
				return fmt.Errorf("live entry %q missing from graph", e.id)
			}
		}
	}
	if !heapOK(&t.lru) || !heapOK(&t.exp) {
		return fmt.Errorf("heap order violated")
	}
	if t.graph != nil && t.graph.Len()-n != t.dead {
		return fmt.Errorf("graph %d nodes, %d live, dead count %d", t.graph.Len(), n, t.dead)
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
