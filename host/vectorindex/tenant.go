package vectorindex

import (
	"cmp"
	"container/heap"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bardoinference/bardo/host/vectorindex/internal/hnsw"
)

// entry is one cached vector. Everything but lastUsed, lruKey and the heap
// and list positions is immutable once the entry is added, which is what
// lets a background rebuild read key and vec without the tenant lock.
type entry struct {
	id      string
	key     uint64 // graph key, unique within the tenant, never reused
	vec     []float32
	tags    []string
	payload []byte
	expires int64 // unix nanoseconds

	// lastUsed is the LRU clock value of the last insert or search hit;
	// searches store it under the read lock. lruKey is the value the LRU
	// heap is currently ordered by (≤ lastUsed), fixed up at eviction time.
	lastUsed atomic.Uint64
	lruKey   uint64

	lruIdx, expIdx, listIdx int
}

// tenant is one isolated namespace. mu guards every field except clock.
type tenant struct {
	mu sync.RWMutex

	byID  map[string]*entry
	byKey map[uint64]*entry
	list  []*entry // live entries, dense, for exact scans and snapshots
	lru   lruHeap
	exp   expHeap

	clock   atomic.Uint64 // LRU logical clock, advanced under the read lock
	nextKey uint64

	// graph indexes every live entry when non-nil, plus dead tombstones.
	graph *hnsw.Graph[uint64]
	dead  int

	// rebuilding is set while a graph build runs; pending collects the
	// entries added meanwhile, which the build replays before installing.
	rebuilding bool
	pending    []*entry
	// gen changes when the tenant is dropped, telling an in-flight rebuild
	// to discard its work.
	gen uint64
	// removed is set once the tenant left the index map; Insert retries.
	removed bool
}

func newTenant() *tenant {
	return &tenant{byID: make(map[string]*entry), byKey: make(map[uint64]*entry)}
}

// addLocked adds e as the most recently used entry.
func (ix *Index) addLocked(t *tenant, e *entry) {
	e.key = t.nextKey
	t.nextKey++
	stamp := t.clock.Add(1)
	e.lastUsed.Store(stamp)
	e.lruKey = stamp
	t.byID[e.id] = e
	t.byKey[e.key] = e
	e.listIdx = len(t.list)
	t.list = append(t.list, e)
	heap.Push(&t.lru, e)
	heap.Push(&t.exp, e)
	if t.graph != nil {
		t.graph.Add(hnsw.MakeNode(e.key, e.vec))
		ix.graphNodes.Add(1)
	}
	if t.rebuilding {
		t.pending = append(t.pending, e)
	}
	ix.entries.Add(1)
}

// removeLocked removes a live entry; if the tenant has a graph, its node
// becomes a tombstone.
func (ix *Index) removeLocked(t *tenant, e *entry) {
	delete(t.byID, e.id)
	delete(t.byKey, e.key)
	last := t.list[len(t.list)-1]
	t.list[e.listIdx] = last
	last.listIdx = e.listIdx
	t.list[len(t.list)-1] = nil
	t.list = t.list[:len(t.list)-1]
	heap.Remove(&t.lru, e.lruIdx)
	heap.Remove(&t.exp, e.expIdx)
	if t.graph != nil {
		t.dead++
		ix.tombstones.Add(1)
	}
	ix.entries.Add(-1)
}

// expireLocked removes every entry whose TTL has passed at now and returns
// how many. Each entry is popped once, so the cost is amortised O(log n) per
// expiry however often this is called.
func (ix *Index) expireLocked(t *tenant, now int64) int {
	n := 0
	for len(t.exp) > 0 && t.exp[0].expires <= now {
		ix.removeLocked(t, t.exp[0])
		n++
	}
	ix.expirations.Add(uint64(n))
	return n
}

// lruVictim returns the least recently used live entry. Searches only bump
// lastUsed (under the read lock), so heap keys may lag; a stale top is
// re-keyed and sifted down until the top's key is current. Keys never exceed
// the true stamps, so a current top is the true minimum: eviction order is
// exact LRU.
func (t *tenant) lruVictim() *entry {
	for {
		top := t.lru[0]
		if cur := top.lastUsed.Load(); cur != top.lruKey {
			top.lruKey = cur
			heap.Fix(&t.lru, 0)
			continue
		}
		return top
	}
}

// dropLocked empties a tenant that has left the index map and returns how
// many entries it held.
func (ix *Index) dropLocked(t *tenant) int {
	n := len(t.list)
	ix.entries.Add(-int64(n))
	if t.graph != nil {
		ix.graphNodes.Add(-int64(t.graph.Len()))
		ix.tombstones.Add(-int64(t.dead))
	}
	t.byID, t.byKey = map[string]*entry{}, map[uint64]*entry{}
	t.list, t.lru, t.exp = nil, nil, nil
	t.graph, t.dead = nil, 0
	t.rebuilding, t.pending = false, nil
	t.gen++
	t.removed = true
	return n
}

type hit struct {
	e     *entry
	score float32
}

// scan is the exact search: every live entry is scored. It returns the top
// k hits with score ≥ minScore, best first, and the expired entries seen.
func (t *tenant) scan(q []float32, k int, minScore float32, now int64) (hits []hit, expired []*entry) {
	for _, e := range t.list {
		if e.expires <= now {
			expired = append(expired, e)
			continue
		}
		s := cosine(q, e.vec)
		if s < minScore || (len(hits) == k && s <= hits[k-1].score) {
			continue
		}
		// Insertion into a best-first list of at most k; k is small for a
		// cache lookup, and large k only pays a copy per accepted hit.
		i, _ := slices.BinarySearchFunc(hits, s, func(h hit, s float32) int { return cmp.Compare(s, h.score) })
		if len(hits) < k {
			hits = append(hits, hit{})
		}
		copy(hits[i+1:], hits[i:len(hits)-1])
		hits[i] = hit{e, s}
	}
	return hits, expired
}

// searchGraph runs a beam search of width ef (at least 2k, so tombstones
// rarely starve the result), and keeps the first k nodes that are live,
// unexpired and score ≥ minScore. Scores are recomputed exactly (the graph's
// order already follows them, so the first score below minScore ends the
// walk).
func (t *tenant) searchGraph(q []float32, k int, minScore float32, now int64, ef int) (hits []hit, expired []*entry) {
	ef = max(ef, 2*k)
	for _, n := range t.graph.SearchWithEf(q, ef, ef) {
		e := t.byKey[n.Key]
		if e == nil {
			continue // tombstone
		}
		if e.expires <= now {
			expired = append(expired, e)
			continue
		}
		s := cosine(q, e.vec)
		if s < minScore {
			break
		}
		hits = append(hits, hit{e, s})
		if len(hits) == k {
			break
		}
	}
	return hits, expired
}

// maybeRebuildLocked applies the graph policy after a change:
//   - no live entries: drop the graph;
//   - no graph and more than ExactBelow live entries: build one;
//   - a graph but at most ExactBelow/2 live entries: drop it (the half
//     keeps a tenant hovering at the boundary from rebuilding repeatedly);
//   - tombstones ≥ max(64, RebuildFraction × live): rebuild.
func (ix *Index) maybeRebuildLocked(t *tenant) {
	if t.rebuilding || t.removed {
		return
	}
	live := len(t.list)
	switch {
	case live == 0 || (t.graph != nil && ix.exactBelow >= 0 && live <= ix.exactBelow/2):
		if t.graph != nil {
			ix.graphNodes.Add(-int64(t.graph.Len()))
			ix.tombstones.Add(-int64(t.dead))
			t.graph, t.dead = nil, 0
		}
		return
	case t.graph == nil:
		if live <= ix.exactBelow {
			return
		}
	case t.dead < ix.minTombstones || float64(t.dead) < ix.rebuildFraction*float64(live):
		return
	}
	if ix.closed.Load() {
		return
	}

	// Snapshot in insertion order so a seeded index builds the same graph.
	snap := slices.Clone(t.list)
	slices.SortFunc(snap, func(a, b *entry) int { return cmp.Compare(a.key, b.key) })
	t.rebuilding, t.pending = true, nil
	seed := ix.seed + ix.seeds.Add(1)
	if ix.syncRebuild {
		ix.installLocked(t, ix.build(snap, seed))
		return
	}
	ix.wg.Add(1)
	go ix.rebuild(t, t.gen, snap, seed)
}

func (ix *Index) newGraph(seed int64) *hnsw.Graph[uint64] {
	g := hnsw.NewGraph[uint64]()
	g.M = ix.m
	g.Ml = 1 / float64(ix.m) // the paper's level distribution (upstream: 0.25)
	g.EfSearch = ix.efSearch
	g.EfConstruction = ix.efConstruction
	g.Distance = hnsw.UnitCosineDistance
	g.Rng = rand.New(rand.NewSource(seed))
	return g
}

func (ix *Index) build(snap []*entry, seed int64) *hnsw.Graph[uint64] {
	g := ix.newGraph(seed)
	for _, e := range snap {
		g.Add(hnsw.MakeNode(e.key, e.vec))
	}
	return g
}

// rebuild builds a graph from snap without holding the tenant lock, replays
// the entries inserted meanwhile and installs it. Searches keep using the
// old graph (or the exact scan) until the swap, so a rebuild never blocks
// them for longer than the final replay of at most catchUpMax inserts.
func (ix *Index) rebuild(t *tenant, gen uint64, snap []*entry, seed int64) {
	defer ix.wg.Done()
	abort := func() {
		t.mu.Lock()
		if t.gen == gen {
			t.rebuilding, t.pending = false, nil
		}
		t.mu.Unlock()
	}
	select {
	case ix.sem <- struct{}{}:
	case <-ix.closing:
		abort()
		return
	}
	defer func() { <-ix.sem }()

	g := ix.newGraph(seed)
	for i, e := range snap {
		if i%256 == 0 && ix.closed.Load() {
			abort()
			return
		}
		g.Add(hnsw.MakeNode(e.key, e.vec))
	}
	for round := 0; ; round++ {
		t.mu.Lock()
		if t.gen != gen {
			t.mu.Unlock() // the tenant was dropped; its state is gone
			return
		}
		if ix.closed.Load() {
			t.rebuilding, t.pending = false, nil
			t.mu.Unlock()
			return
		}
		backlog := t.pending
		t.pending = nil
		if len(backlog) <= catchUpMax || round >= maxCatchUpRounds {
			for _, e := range backlog {
				g.Add(hnsw.MakeNode(e.key, e.vec))
			}
			ix.installLocked(t, g)
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		for _, e := range backlog {
			g.Add(hnsw.MakeNode(e.key, e.vec))
		}
	}
}

// installLocked swaps in a freshly built graph. It holds every entry live at
// snapshot time plus every entry added since, hence every live entry; the
// rest are entries removed meanwhile, now its tombstones.
func (ix *Index) installLocked(t *tenant, g *hnsw.Graph[uint64]) {
	oldNodes := 0
	if t.graph != nil {
		oldNodes = t.graph.Len()
	}
	dead := g.Len() - len(t.list)
	ix.graphNodes.Add(int64(g.Len() - oldNodes))
	ix.tombstones.Add(int64(dead - t.dead))
	t.graph, t.dead = g, dead
	t.rebuilding, t.pending = false, nil
	ix.rebuilds.Add(1)
	ix.maybeRebuildLocked(t)
}

// lruHeap orders entries by lruKey, expHeap by expiry; both track each
// entry's position for O(log n) removal.
type lruHeap []*entry
type expHeap []*entry

func (h lruHeap) Len() int           { return len(h) }
func (h lruHeap) Less(i, j int) bool { return h[i].lruKey < h[j].lruKey }
func (h lruHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].lruIdx, h[j].lruIdx = i, j
}
func (h *lruHeap) Push(x any) {
	e := x.(*entry)
	e.lruIdx = len(*h)
	*h = append(*h, e)
}
func (h *lruHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}

func (h expHeap) Len() int           { return len(h) }
func (h expHeap) Less(i, j int) bool { return h[i].expires < h[j].expires }
func (h expHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].expIdx, h[j].expIdx = i, j
}
func (h *expHeap) Push(x any) {
	e := x.(*entry)
	e.expIdx = len(*h)
	*h = append(*h, e)
}
func (h *expHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
