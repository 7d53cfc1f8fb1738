// Package hnsw is a Hierarchical Navigable Small World graph with the API of
// github.com/coder/hnsw v0.6.1 (Graph, Node, MakeNode, NewGraph, Add, Search,
// Len, Lookup, Dims and the M, Ml, EfSearch, Distance, Rng parameters), from
// which it is derived (CC0-1.0, see LICENSE), with its search and construction
// corrected and its internals made dense.
//
// Why not the upstream module: v0.6.1, still the latest tag, has heap and
// search bugs that collapse recall. Measured on this repository's random
// 100-d unit vectors at 10k nodes: recall@1 0.01–0.11 for random queries and
// 0.20–0.44 even for near-duplicate queries (cosine ≈ 0.96 to their target),
// whatever M, EfSearch and k. Its Delete can leave links to removed nodes and
// then panic (upstream issues #10, #13), and re-adding an existing key always
// panics. Fixes are proposed upstream (PRs #17, #18, #20–#22) but unreleased.
// See PATCHES.md for the full list of differences.
package hnsw

import (
	"cmp"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"time"
)

// Vector is an embedding.
type Vector = []float32

// Node is a node in the graph.
type Node[K cmp.Ordered] struct {
	Key   K
	Value Vector
}

// MakeNode returns a node with the given key and vector.
func MakeNode[K cmp.Ordered](key K, vec Vector) Node[K] {
	return Node[K]{Key: key, Value: vec}
}

// link is a directed edge with its length cached, so pruning an overfull
// neighbor list needs no distance computations.
type link struct {
	id   uint32
	dist float32
}

// Layer-0 adjacency lives in fixed-size chunks of chunkSize nodes, each node
// owning a block of M0+1 links whose first slot holds the degree (in id).
// Compared with upstream's per-node maps (and a first version with a
// per-node struct and slices), a visit then touches one cache-line run for
// the links and one for the vector instead of chasing three pointers;
// search at 100k nodes is memory-bound, so this is most of its cost.
// Chunks never move, so growing the graph copies nothing.
const (
	chunkBits = 10
	chunkSize = 1 << chunkBits
)

// Graph is a Hierarchical Navigable Small World graph. Set the public
// parameters before the first Add.
//
// A Graph is not safe for concurrent use, except that any number of Search,
// Len, Lookup and Dims calls may run together while no Add is in flight.
type Graph[K cmp.Ordered] struct {
	// Distance is the distance function; smaller is nearer.
	Distance DistanceFunc

	// Rng is used for level generation.
	Rng *rand.Rand

	// M is the maximum number of out-edges per node on layers above 0.
	M int

	// M0 is the maximum number of out-edges on layer 0; 0 means 2*M, the
	// value the HNSW paper recommends.
	M0 int

	// Ml is the level generation factor: each layer holds about Ml times
	// the nodes of the one below.
	Ml float64

	// EfSearch is the beam width of a search (raised to k when k is larger).
	EfSearch int

	// EfConstruction is the beam width used to find a new node's neighbors;
	// 0 means EfSearch.
	EfConstruction int

	m0       int        // layer-0 degree bound, fixed by the first Add
	keys     []K        // by node id (ids are dense, in insertion order)
	vecs     []Vector   // by node id; the caller's slices, not copies
	l0       [][]link   // layer-0 adjacency chunks, see chunkSize
	upper    [][][]link // by node id: links on layers 1..level, nil at level 0
	indeg    []uint32   // by node id: layer-0 in-degree (see addLink)
	ids      map[K]uint32
	entry    uint32
	maxLevel int
	scratch  sync.Pool // *scratch
}

// NewGraph returns a new graph with coder/hnsw's default parameters.
func NewGraph[K cmp.Ordered]() *Graph[K] {
	return &Graph[K]{
		M:        16,
		Ml:       0.25,
		Distance: CosineDistance,
		EfSearch: 20,
		Rng:      rand.New(rand.NewSource(time.Now().UnixNano())),
	}
}

// maxLevel returns an upper bound on the number of levels for a graph of
// numNodes nodes (as upstream).
func maxLevel(ml float64, numNodes int) int {
	if ml <= 0 || ml >= 1 {
		panic("hnsw: Ml must be in (0, 1)")
	}
	if numNodes == 0 {
		return 1
	}
	l := math.Log(float64(numNodes)) / math.Log(1/ml)
	return int(math.Round(l)) + 1
}

// randomLevel draws a level for a new node: level L with probability
// Ml^L·(1-Ml), capped by maxLevel (as upstream).
func (g *Graph[K]) randomLevel() int {
	top := maxLevel(g.Ml, len(g.keys))
	if g.Rng == nil {
		g.Rng = rand.New(rand.NewSource(time.Now().UnixNano()))
	}
	for level := 0; level < top; level++ {
		if g.Rng.Float64() > g.Ml {
			return level
		}
	}
	return top
}

// Dims returns the number of dimensions in the graph, or 0 if it is empty.
func (g *Graph[K]) Dims() int {
	if len(g.vecs) == 0 {
		return 0
	}
	return len(g.vecs[0])
}

func (g *Graph[K]) assertDims(v Vector) {
	if d := g.Dims(); d != 0 && d != len(v) {
		panic(fmt.Sprint("hnsw: embedding dimension mismatch: ", d, " != ", len(v)))
	}
}

func (g *Graph[K]) maxLinks(level int) int {
	if level > 0 {
		return g.M
	}
	return g.m0
}

// block0 returns node id's layer-0 block: slot 0 holds the degree.
func (g *Graph[K]) block0(id uint32) []link {
	c := g.l0[id>>chunkBits]
	off := int(id&(chunkSize-1)) * (g.m0 + 1)
	return c[off : off+g.m0+1 : off+g.m0+1]
}

// links returns node id's out-edges on layer l.
func (g *Graph[K]) links(id uint32, l int) []link {
	if l == 0 {
		b := g.block0(id)
		return b[1 : 1+b[0].id]
	}
	return g.upper[id][l-1]
}

// Len returns the number of nodes in the graph.
func (g *Graph[K]) Len() int { return len(g.keys) }

// Lookup returns the vector stored under key.
func (g *Graph[K]) Lookup(key K) (Vector, bool) {
	id, ok := g.ids[key]
	if !ok {
		return nil, false
	}
	return g.vecs[id], true
}

// Add inserts nodes into the graph. Keys must be new: unlike upstream there
// is no replace (upstream's replace path always panicked) and no Delete; a
// caller that needs removal keeps tombstones and rebuilds. The graph keeps a
// reference to each Value, which the caller must not modify afterwards.
func (g *Graph[K]) Add(nodes ...Node[K]) {
	if g.Distance == nil {
		panic("hnsw: (*Graph).Distance must be set")
	}
	if g.M < 2 {
		panic("hnsw: (*Graph).M must be at least 2")
	}
	if g.ids == nil {
		g.ids = make(map[K]uint32)
	}
	for _, n := range nodes {
		g.add(n)
	}
}

func (g *Graph[K]) add(n Node[K]) {
	g.assertDims(n.Value)
	if _, dup := g.ids[n.Key]; dup {
		panic(fmt.Sprint("hnsw: duplicate key ", n.Key))
	}
	if len(g.keys) >= math.MaxUint32 {
		panic("hnsw: graph full")
	}
	if g.m0 == 0 {
		g.m0 = g.M0
		if g.m0 <= 0 {
			g.m0 = 2 * g.M
		}
	}
	level := g.randomLevel()
	id := uint32(len(g.keys))
	if int(id)&(chunkSize-1) == 0 {
		g.l0 = append(g.l0, make([]link, chunkSize*(g.m0+1)))
	}
	g.keys = append(g.keys, n.Key)
	g.vecs = append(g.vecs, n.Value)
	var up [][]link
	if level > 0 {
		up = make([][]link, level)
	}
	g.upper = append(g.upper, up)
	g.indeg = append(g.indeg, 0)
	g.ids[n.Key] = id
	if id == 0 {
		g.entry, g.maxLevel = id, level
		return
	}

	efc := g.EfConstruction
	if efc <= 0 {
		efc = g.EfSearch
	}
	s := g.getScratch()
	defer g.scratch.Put(s)

	cur := g.entry
	curDist := g.Distance(n.Value, g.vecs[cur])
	for l := g.maxLevel; l > level; l-- {
		cur, curDist = g.greedy(cur, curDist, n.Value, l)
	}
	for l := min(level, g.maxLevel); l >= 0; l-- {
		// The new node has no links yet, so searches cannot reach it.
		found := g.searchLayer(s, cur, curDist, n.Value, max(efc, 1), l)
		m := g.maxLinks(l)
		chosen := g.selectNeighbors(found, m)
		if l == 0 {
			b := g.block0(id)
			b[0].id = uint32(copy(b[1:], chosen))
			for _, nb := range chosen {
				g.indeg[nb.id]++
			}
		} else {
			up[l-1] = chosen
		}
		// Nearest first: the nearest neighbor is the one that must keep a
		// link back while the new node has none (see addLink).
		for _, nb := range chosen {
			g.addLink(s, nb.id, l, link{id: id, dist: nb.dist}, m)
		}
		cur, curDist = found[0].id, found[0].dist
	}
	if level > g.maxLevel {
		g.entry, g.maxLevel = id, level
	}
}

// selectNeighbors applies the HNSW paper's neighbor-selection heuristic
// (Algorithm 4) to candidates sorted nearest first: a candidate is kept only
// if it is nearer to the new node than to every neighbor already kept, which
// keeps links spread over directions so clusters of near-duplicates stay
// connected to the rest of the graph (upstream kept the m nearest).
// Rejected candidates fill any remaining slots, nearest first, so a node is
// never left with fewer links than the candidates allow.
func (g *Graph[K]) selectNeighbors(cands []link, m int) []link {
	out := make([]link, 0, m)
	if len(cands) <= m {
		return append(out, cands...)
	}
	var rejected []link
	for _, c := range cands {
		if len(out) == m {
			break
		}
		keep := true
		cv := g.vecs[c.id]
		for _, kept := range out {
			if g.Distance(cv, g.vecs[kept.id]) < c.dist {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		} else {
			rejected = append(rejected, c)
		}
	}
	for _, r := range rejected {
		if len(out) == m {
			break
		}
		out = append(out, r)
	}
	return out
}

// addLink adds an out-edge from node id on layer l. A full list is pruned
// with the paper's neighbor selection heuristic (Algorithm 4), over its m
// links and e, as hnswlib does: a candidate nearer to another, nearer
// candidate than to the list's owner is reachable through that one and
// goes. On layer 0 the list keeps only the heuristic's choice (so the next
// few additions need no pruning), plus any link that is its target's only
// in-edge (in-degrees are tracked), then the farthest are dropped down to
// m if need be — never an only in-edge while another choice exists. Upper
// layers, which only guide the descent, drop one link: the farthest
// rejected one, else the farthest.
//
// Why: the first version dropped the longest link, and a node far from its
// neighbors (an outlier, or a point at the edge of a tight cluster) was
// then dropped by every neighbor as they filled up, leaving it with no
// in-edge, unreachable by any search. Measured on 10k clustered 100-d
// vectors (TestEveryNodeReachable): 648 nodes with in-degree 0 and 19 %
// of stored vectors not found by a search for themselves
// (host/vectorindex/README.md, "Reachability").
func (g *Graph[K]) addLink(s *scratch, id uint32, l int, e link, m int) {
	if l > 0 {
		ls := g.upper[id][l-1]
		if len(ls) < m {
			g.upper[id][l-1] = append(ls, e)
			return
		}
		kept, rejected := g.classify(s, ls, e)
		v := kept[len(kept)-1]
		if len(rejected) > 0 {
			v = rejected[len(rejected)-1]
		}
		if int(v) < len(ls) {
			ls[v] = e
		}
		return
	}

	b := g.block0(id)
	n := int(b[0].id)
	if n < m {
		b[1+n] = e
		b[0].id++
		g.indeg[e.id]++
		return
	}
	ls := b[1 : 1+n]
	at := func(i int32) link {
		if int(i) == len(ls) {
			return e
		}
		return ls[i]
	}
	// soleIn reports whether candidate i must stay for its target to keep
	// an in-edge: an existing link that is the only one, or e while its
	// target (the node being added) has none yet.
	soleIn := func(i int32) bool {
		if int(i) == len(ls) {
			return g.indeg[e.id] == 0
		}
		return g.indeg[ls[i].id] == 1
	}
	kept, rejected := g.classify(s, ls, e)
	keep := s.links[:0]
	for _, i := range kept {
		keep = append(keep, at(i))
	}
	for _, i := range rejected {
		if soleIn(i) {
			keep = append(keep, at(i))
		}
	}
	for len(keep) > m {
		// Drop the farthest link whose target keeps another in-edge (or,
		// if there is none, the farthest).
		w, far := -1, len(keep)-1
		for j, k := range keep {
			if k.dist > keep[far].dist {
				far = j
			}
			sole := (k.id == e.id && g.indeg[e.id] == 0) || (k.id != e.id && g.indeg[k.id] == 1)
			if !sole && (w < 0 || k.dist > keep[w].dist) {
				w = j
			}
		}
		if w < 0 {
			w = far
		}
		keep = append(keep[:w], keep[w+1:]...)
	}
	s.links = keep
	for _, o := range ls {
		g.indeg[o.id]--
	}
	b[0].id = uint32(copy(b[1:], keep))
	for _, k := range keep {
		g.indeg[k.id]++
	}
}

// classify runs the neighbor selection heuristic over a full list ls and a
// new link e (all carrying their distance to the list's owner) and returns
// candidate indexes (len(ls) stands for e), each group nearest first: kept
// ones are nearer to the owner than to every nearer kept one. The slices
// are s's buffers.
func (g *Graph[K]) classify(s *scratch, ls []link, e link) (kept, rejected []int32) {
	at := func(i int32) link {
		if int(i) == len(ls) {
			return e
		}
		return ls[i]
	}
	c := append(s.prune[:0], make([]int32, len(ls)+1)...)
	for i := range c {
		c[i] = int32(i)
	}
	// Ties by id, so builds are deterministic.
	slices.SortFunc(c, func(a, b int32) int {
		la, lb := at(a), at(b)
		if x := cmp.Compare(la.dist, lb.dist); x != 0 {
			return x
		}
		return cmp.Compare(la.id, lb.id)
	})
	kept, rejected = s.kept[:0], s.rejected[:0]
	for _, i := range c {
		li := at(i)
		vi := g.vecs[li.id]
		keep := true
		for _, k := range kept {
			if g.Distance(vi, g.vecs[at(k).id]) < li.dist {
				keep = false
				break
			}
		}
		if keep {
			kept = append(kept, i)
		} else {
			rejected = append(rejected, i)
		}
	}
	s.prune, s.kept, s.rejected = c, kept, rejected
	return kept, rejected
}

// greedy walks layer l from cur towards q, one best neighbor at a time
// (the paper's search with ef = 1, used above the target layer).
func (g *Graph[K]) greedy(cur uint32, curDist float32, q Vector, l int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		for _, e := range g.links(cur, l) {
			if d := g.Distance(q, g.vecs[e.id]); d < curDist {
				cur, curDist, changed = e.id, d, true
			}
		}
	}
	return cur, curDist
}

// searchLayer is the paper's SEARCH-LAYER (Algorithm 2): a best-first beam
// search of width ef on layer l. It returns up to ef nodes, nearest first;
// the slice is owned by the caller.
//
// Upstream bounded the result set by k instead of ef, stopped as soon as one
// expansion failed to improve the best result, and evicted arbitrary heap
// elements because its Max/PopLast took the last array slot of a min-heap.
func (g *Graph[K]) searchLayer(s *scratch, ep uint32, epDist float32, q Vector, ef, l int) []link {
	s.reset(len(g.keys))
	s.visit(ep)
	cands := minHeap(s.cands[:0])
	res := maxHeap(s.res[:0])
	cands.push(link{ep, epDist})
	res.push(link{ep, epDist})

	for len(cands) > 0 {
		c := cands.pop()
		if len(res) >= ef && c.dist > res[0].dist {
			break
		}
		for _, e := range g.links(c.id, l) {
			if !s.visit(e.id) {
				continue
			}
			d := g.Distance(q, g.vecs[e.id])
			if len(res) < ef || d < res[0].dist {
				cands.push(link{e.id, d})
				res.push(link{e.id, d})
				if len(res) > ef {
					res.pop()
				}
			}
		}
	}
	s.cands, s.res = cands, res

	out := make([]link, len(res))
	copy(out, res)
	slices.SortFunc(out, func(a, b link) int { return cmp.Compare(a.dist, b.dist) })
	return out
}

// Search returns up to k nodes nearest to near, nearest first. The beam
// width is max(EfSearch, k).
func (g *Graph[K]) Search(near Vector, k int) []Node[K] {
	return g.SearchWithEf(near, k, g.EfSearch)
}

// SearchWithEf is Search with the beam width given per call (raised to k if
// smaller), so one graph can serve callers with different recall/latency
// needs. It is an addition to the upstream API.
func (g *Graph[K]) SearchWithEf(near Vector, k, ef int) []Node[K] {
	g.assertDims(near)
	if len(g.keys) == 0 || k <= 0 {
		return nil
	}
	s := g.getScratch()
	defer g.scratch.Put(s)

	cur := g.entry
	curDist := g.Distance(near, g.vecs[cur])
	for l := g.maxLevel; l > 0; l-- {
		cur, curDist = g.greedy(cur, curDist, near, l)
	}
	found := g.searchLayer(s, cur, curDist, near, max(ef, k, 1), 0)
	if len(found) > k {
		found = found[:k]
	}
	out := make([]Node[K], len(found))
	for i, f := range found {
		out[i] = Node[K]{Key: g.keys[f.id], Value: g.vecs[f.id]}
	}
	return out
}

// scratch holds per-search buffers; pooled so concurrent searches do not
// share them and steady-state searches do not allocate.
type scratch struct {
	// visited is a bitset over node ids, cleared per search: at 100k nodes
	// it is 12.5 KB, which stays in cache where a per-node epoch array
	// (400 KB) would not.
	visited []uint64
	cands   []link
	res     []link
	// prune, kept, rejected and links are addLink's buffers.
	prune, kept, rejected []int32
	links                 []link
}

func (g *Graph[K]) getScratch() *scratch {
	if s, ok := g.scratch.Get().(*scratch); ok {
		return s
	}
	return &scratch{}
}

func (s *scratch) reset(n int) {
	words := (n + 63) / 64
	if len(s.visited) < words {
		// Headroom so a growing graph does not reallocate on every search.
		s.visited = make([]uint64, words+words/4+1)
		return
	}
	clear(s.visited[:words])
}

// visit marks id and reports whether it was unvisited.
func (s *scratch) visit(id uint32) bool {
	w, bit := id>>6, uint64(1)<<(id&63)
	if s.visited[w]&bit != 0 {
		return false
	}
	s.visited[w] |= bit
	return true
}

// minHeap and maxHeap are binary heaps of links ordered by distance.
type minHeap []link
type maxHeap []link

func (h *minHeap) push(e link) { *h = append(*h, e); siftUp(*h, len(*h)-1, lessDist) }
func (h *minHeap) pop() link   { return popHeap((*[]link)(h), lessDist) }
func (h *maxHeap) push(e link) { *h = append(*h, e); siftUp(*h, len(*h)-1, moreDist) }
func (h *maxHeap) pop() link   { return popHeap((*[]link)(h), moreDist) }

func lessDist(a, b link) bool { return a.dist < b.dist }
func moreDist(a, b link) bool { return a.dist > b.dist }

func siftUp(h []link, i int, before func(a, b link) bool) {
	for i > 0 {
		p := (i - 1) / 2
		if !before(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func popHeap(hp *[]link, before func(a, b link) bool) link {
	h := *hp
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, r, best := 2*i+1, 2*i+2, i
		if l < last && before(h[l], h[best]) {
			best = l
		}
		if r < last && before(h[r], h[best]) {
			best = r
		}
		if best == i {
			break
		}
		h[i], h[best] = h[best], h[i]
		i = best
	}
	*hp = h
	return top
}
