package vectorindex

import (
	"cmp"
	"container/heap"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/bardoinference/bardo/host/vectorindex/internal/hnsw"
)

// entry is one cached vector. Everything but lastUsed, lruKey and the heap
// and node positions is immutable once the entry is added.
type entry struct {
	id      string
	seq     uint64 // insertion order within the tenant, never reused
	node    *node  // the vector, shared with every entry bit-identical to it
	tags    []string
	payload []byte
	expires int64 // unix nanoseconds

	// lastUsed is the LRU clock value of the last insert or search hit;
	// searches store it under the read lock. lruKey is the value the LRU
	// heap is currently ordered by (≤ lastUsed), fixed up at eviction time.
	lastUsed atomic.Uint64
	lruKey   uint64

	lruIdx, expIdx, nodeIdx int
}

// node is one distinct vector of a tenant and its graph node. Entries whose
// normalised vectors are bit-identical share one: the offline embedder maps
// texts that differ only in numbers to the same vector, and thousands of
// identical graph nodes (distance 0 to each other) fill each other's
// neighbour lists and cut the cluster off from the rest of the graph, which
// collapsed recall (README.md, "Identical vectors"). key and vec are
// immutable, which lets a background rebuild read them without the tenant
// lock; the other fields are guarded by it.
type node struct {
	key  uint64    // graph key, unique within the tenant, never reused
	vec  []float32 // unit vector
	hash uint64    // vecHash(vec), its byVec key
	// entries holds the node's live entries in insertion order, oldest
	// first, with nil holes left by removals (compacted once the holes
	// outnumber the live entries, so removal is amortised O(1) and keeps
	// the order); live counts the non-nil ones.
	entries []*entry
	// minExpires is at most the earliest expiry among entries (removals do
	// not raise it; compaction recomputes it), so a scan can skip the
	// entries of a node that does not match when none of them is due.
	minExpires int64
	live       int32
	listIdx    int32 // position in tenant.nodes
}

// tenant is one isolated namespace. mu guards every field except clock.
type tenant struct {
	mu sync.RWMutex

	byID  map[string]*entry
	nodes []*node          // live nodes (≥ 1 live entry), dense, for scans and snapshots
	byKey map[uint64]*node // graph key → live node
	byVec map[uint64]*node // vecHash → live node, for sharing
	lru   lruHeap
	exp   expHeap

	clock   atomic.Uint64 // LRU logical clock, advanced under the read lock
	nextSeq uint64
	nextKey uint64

	// graph indexes every live node when non-nil, plus dead ones (nodes
	// whose last entry went): the tombstones, counted by dead.
	graph *hnsw.Graph[uint64]
	dead  int

	// rebuilding is set while a graph build runs; pending collects the
	// nodes added meanwhile, which the build replays before installing.
	rebuilding bool
	pending    []*node
	// gen changes when the tenant is dropped, telling an in-flight rebuild
	// to discard its work.
	gen uint64
	// removed is set once the tenant left the index map; Insert retries.
	removed bool
}

func newTenant() *tenant {
	return &tenant{
		byID:  make(map[string]*entry),
		byKey: make(map[uint64]*node),
		byVec: make(map[uint64]*node),
	}
}

// addLocked adds e, whose unit vector is vec, as the most recently used
// entry. An entry with a bit-identical vector joins that vector's node;
// otherwise a node is created (and added to the graph, if any).
func (ix *Index) addLocked(t *tenant, e *entry, vec []float32) {
	e.seq = t.nextSeq
	t.nextSeq++
	stamp := t.clock.Add(1)
	e.lastUsed.Store(stamp)
	e.lruKey = stamp
	t.byID[e.id] = e
	heap.Push(&t.lru, e)
	heap.Push(&t.exp, e)

	h := ix.vecHash(vec)
	n := t.byVec[h]
	if n == nil || ix.noShare || !slices.Equal(n.vec, vec) {
		// slices.Equal is bit equality here: unit() leaves no NaN and no -0.
		n = &node{key: t.nextKey, vec: vec, hash: h, minExpires: math.MaxInt64, listIdx: int32(len(t.nodes))}
		t.nextKey++
		if t.byVec[h] == nil {
			// On a hash collision the newcomer is simply not shared: that
			// costs a graph node, never a wrong result.
			t.byVec[h] = n
		}
		t.byKey[n.key] = n
		t.nodes = append(t.nodes, n)
		if t.graph != nil {
			t.graph.Add(hnsw.MakeNode(n.key, n.vec))
			ix.graphNodes.Add(1)
		}
		if t.rebuilding {
			t.pending = append(t.pending, n)
		}
	}
	e.node = n
	e.nodeIdx = len(n.entries)
	n.entries = append(n.entries, e)
	n.live++
	n.minExpires = min(n.minExpires, e.expires)
	ix.entries.Add(1)
}

// removeLocked removes a live entry. A node goes with its last entry; if the
// tenant has a graph, the node becomes a tombstone.
func (ix *Index) removeLocked(t *tenant, e *entry) {
	// An entry that is not where it says is a bug (a double removal, say):
	// removing by its stale positions would take another entry's heap slot
	// and corrupt the tenant silently. Fail loudly instead; Index.write
	// recovers by emptying the tenant.
	if t.byID[e.id] != e || !inHeap(t.lru, e.lruIdx, e) || !inHeap(t.exp, e.expIdx, e) {
		panic(fmt.Sprintf("vectorindex: removing entry %q that is not live (lru %d/%d, exp %d/%d)",
			e.id, e.lruIdx, len(t.lru), e.expIdx, len(t.exp)))
	}
	delete(t.byID, e.id)
	heap.Remove(&t.lru, e.lruIdx)
	heap.Remove(&t.exp, e.expIdx)
	ix.entries.Add(-1)

	n := e.node
	n.entries[e.nodeIdx] = nil
	n.live--
	if n.live > 0 {
		n.trim()
		return
	}
	n.entries = nil
	delete(t.byKey, n.key)
	if t.byVec[n.hash] == n {
		delete(t.byVec, n.hash)
	}
	last := t.nodes[len(t.nodes)-1]
	t.nodes[n.listIdx] = last
	last.listIdx = n.listIdx
	t.nodes[len(t.nodes)-1] = nil
	t.nodes = t.nodes[:len(t.nodes)-1]
	if t.graph != nil {
		t.dead++
		ix.tombstones.Add(1)
	}
}

func inHeap(h []*entry, i int, e *entry) bool { return i >= 0 && i < len(h) && h[i] == e }

// resetLocked empties a tenant whose state can no longer be trusted (a
// panic interrupted an update) and leaves it usable; a rebuild in flight
// sees the generation change and discards its work.
func (ix *Index) resetLocked(t *tenant) {
	removed := t.removed
	ix.dropLocked(t)
	t.removed = removed
}

// trim drops trailing holes and compacts the entries into a fresh array
// once holes outnumber live entries, or the array is over four times the
// live count (a node of thousands that shrank by its newest entries keeps
// no large array). A compaction costs the live count and follows at least
// as many removals, so removal stays amortised O(1). The node must still
// have a live entry.
func (n *node) trim() {
	for n.entries[len(n.entries)-1] == nil {
		n.entries = n.entries[:len(n.entries)-1]
	}
	live := int(n.live)
	if len(n.entries) <= 2*live && cap(n.entries) <= 4*live+8 {
		return
	}
	out := make([]*entry, 0, live)
	n.minExpires = math.MaxInt64
	for _, e := range n.entries {
		if e != nil {
			e.nodeIdx = len(out)
			out = append(out, e)
			n.minExpires = min(n.minExpires, e.expires)
		}
	}
	n.entries = out
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
	n := len(t.byID)
	ix.entries.Add(-int64(n))
	if t.graph != nil {
		ix.graphNodes.Add(-int64(t.graph.Len()))
		ix.tombstones.Add(-int64(t.dead))
	}
	t.byID, t.byKey, t.byVec = map[string]*entry{}, map[uint64]*node{}, map[uint64]*node{}
	t.nodes, t.lru, t.exp = nil, nil, nil
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

// before reports whether h ranks ahead of o in search results: higher score
// first and, among equal scores (every entry of a shared vector ties), the
// most recently inserted first — for a cache the newest answer to the same
// question is the one to try first.
func (h hit) before(o hit) bool {
	return h.score > o.score || (h.score == o.score && h.e.seq > o.e.seq)
}

// scan is the exact search: every live node is scored once and its entries
// share the score. It returns the top k hits with score ≥ minScore in
// (score, recency) order, and every expired entry of the tenant.
func (t *tenant) scan(q []float32, k int, minScore float32, now int64) (hits []hit, expired []*entry) {
	for _, n := range t.nodes {
		s := cosine(q, n.vec)
		match := s >= minScore && (len(hits) < k || s >= hits[k-1].score)
		if !match && n.minExpires > now {
			continue
		}
		// Newest first, so the first entry that cannot enter the top k
		// means no older entry of this node can.
		for i := len(n.entries) - 1; i >= 0; i-- {
			e := n.entries[i]
			if e == nil {
				continue
			}
			if e.expires <= now {
				expired = append(expired, e)
				continue
			}
			if !match {
				continue
			}
			h := hit{e, s}
			if len(hits) == k && !h.before(hits[k-1]) {
				if n.minExpires > now {
					break // and none of the rest is due
				}
				match = false // keep walking only to collect expired ones
				continue
			}
			// Insertion into a ranked list of at most k; k is small for a
			// cache lookup, and large k only pays a copy per accepted hit.
			j, _ := slices.BinarySearchFunc(hits, h, func(x, h hit) int {
				if x.before(h) {
					return -1
				}
				return 1
			})
			if len(hits) < k {
				hits = append(hits, hit{})
			}
			copy(hits[j+1:], hits[j:len(hits)-1])
			hits[j] = h
		}
	}
	return hits, expired
}

// searchGraph runs a beam search of width ef (at least 2k, so tombstones
// rarely starve the result) and expands the nodes it finds, nearest first,
// into their live, unexpired entries, newest first, until k hits. Scores are
// recomputed exactly (the graph's order already follows them, so the first
// node below minScore ends the walk). Nodes tying with the k-th hit are
// expanded too and the hits ranked like scan's, so ties between distinct
// vectors also come out most recent first.
//
// exact, if not nil, is the live node bit-identical to the query (found by
// hash): it is expanded first whatever the graph returns. A cache asked
// the same question twice must answer, and an approximate graph cannot
// promise that on its own.
func (t *tenant) searchGraph(q []float32, k int, minScore float32, now int64, ef int, exact *node) (hits []hit, expired []*entry) {
	ef = max(ef, 2*k)
	var kth float32 // the k-th hit's score, once there are k
	expand := func(n *node) bool {
		s := cosine(q, n.vec)
		if s < minScore || (len(hits) >= k && s < kth) {
			return false
		}
		for i, took := len(n.entries)-1, 0; i >= 0 && took < k; i-- {
			e := n.entries[i]
			if e == nil {
				continue
			}
			if e.expires <= now {
				expired = append(expired, e)
				continue
			}
			hits = append(hits, hit{e, s})
			took++
			if len(hits) == k {
				kth = s
			}
		}
		return true
	}
	if exact != nil {
		expand(exact)
	}
	for _, gn := range t.graph.SearchWithEf(q, ef, ef) {
		n := t.byKey[gn.Key]
		if n == nil || n == exact {
			continue // tombstone, or done above
		}
		if !expand(n) {
			break
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if a.before(b) {
			return -1
		}
		return 1
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits, expired
}

// maybeRebuildLocked applies the graph policy after a change. "Live" counts
// distinct vectors (live nodes), since that is what the graph and the scan
// cost, not entries:
//   - no live entries: drop the graph;
//   - no graph and more than ExactBelow live nodes: build one;
//   - a graph but at most ExactBelow/2 live nodes: drop it (the half keeps
//     a tenant hovering at the boundary from rebuilding repeatedly);
//   - tombstones ≥ max(64, RebuildFraction × live nodes): rebuild.
func (ix *Index) maybeRebuildLocked(t *tenant) {
	if t.rebuilding || t.removed {
		return
	}
	live := len(t.nodes)
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
	snap := slices.Clone(t.nodes)
	slices.SortFunc(snap, func(a, b *node) int { return cmp.Compare(a.key, b.key) })
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

func (ix *Index) build(snap []*node, seed int64) *hnsw.Graph[uint64] {
	g := ix.newGraph(seed)
	for _, n := range snap {
		g.Add(hnsw.MakeNode(n.key, n.vec))
	}
	return g
}

// rebuild builds a graph from snap without holding the tenant lock, replays
// the nodes added meanwhile and installs it. Searches keep using the
// old graph (or the exact scan) until the swap, so a rebuild never blocks
// them for longer than the final replay of at most catchUpMax inserts.
func (ix *Index) rebuild(t *tenant, gen uint64, snap []*node, seed int64) {
	defer ix.wg.Done()
	abort := func() {
		_ = ix.write(t, func() {
			if t.gen == gen {
				t.rebuilding, t.pending = false, nil
			}
		})
	}
	// A panic here would take the process down: count it, keep the old
	// graph (or the exact scan) and let a later change retry.
	defer func() {
		if r := recover(); r != nil {
			ix.panics.Add(1)
			abort()
		}
	}()
	select {
	case ix.sem <- struct{}{}:
	case <-ix.closing:
		abort()
		return
	}
	defer func() { <-ix.sem }()

	g := ix.newGraph(seed)
	for i, n := range snap {
		if i%256 == 0 && ix.closed.Load() {
			abort()
			return
		}
		g.Add(hnsw.MakeNode(n.key, n.vec))
	}
	for round := 0; ; round++ {
		var backlog []*node
		done := false
		err := ix.write(t, func() {
			if t.gen != gen {
				done = true // the tenant was dropped; its state is gone
				return
			}
			if ix.closed.Load() {
				t.rebuilding, t.pending = false, nil
				done = true
				return
			}
			// Nodes whose last entry already went need no place in the new
			// graph (they would only be its tombstones): a tenant churning
			// through short-lived entries otherwise replays its whole insert
			// stream, the last of it under this lock.
			backlog = t.pending[:0]
			for _, n := range t.pending {
				if t.byKey[n.key] == n {
					backlog = append(backlog, n)
				}
			}
			t.pending = nil
			if len(backlog) <= catchUpMax || round >= maxCatchUpRounds {
				for _, n := range backlog {
					g.Add(hnsw.MakeNode(n.key, n.vec))
				}
				ix.installLocked(t, g)
				done = true
			}
		})
		if done || err != nil {
			return
		}
		for _, n := range backlog {
			g.Add(hnsw.MakeNode(n.key, n.vec))
		}
	}
}

// installLocked swaps in a freshly built graph. It holds every node live at
// snapshot time plus every node added since that was still live when
// replayed (nodes never come back), hence every live node; the rest are
// snapshot nodes whose last entry went meanwhile, now its tombstones.
func (ix *Index) installLocked(t *tenant, g *hnsw.Graph[uint64]) {
	oldNodes := 0
	if t.graph != nil {
		oldNodes = t.graph.Len()
	}
	dead := g.Len() - len(t.nodes)
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
	e.lruIdx = -1
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
	e.expIdx = -1
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return e
}
