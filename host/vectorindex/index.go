// Package vectorindex is the per-tenant vector index behind the L2 semantic
// cache: unit vectors with a TTL, tags and an opaque payload, searched by
// cosine similarity, bounded per tenant with expired-first-then-LRU eviction.
//
// Small tenants (at most Config.ExactBelow live entries) are searched by an
// exact scan and carry no graph. Larger tenants are indexed by an HNSW graph
// (internal/hnsw, which keeps the API of github.com/coder/hnsw but fixes the
// recall bugs of its v0.6.1 release; see README.md). Removed entries stay in
// the graph as tombstones, which searches skip, and the graph is rebuilt in
// the background once tombstones reach Config.RebuildFraction of the live
// nodes; the HNSW deletion routine is never used.
//
// Entries whose normalised vectors are bit-identical share one graph node
// (and one copy of the vector): the offline embedder maps texts that differ
// only in numbers to the same vector, and thousands of identical nodes
// wreck an HNSW graph. A search expands a node into its entries.
//
// All methods are safe for concurrent use. Each tenant has its own RWMutex:
// searches of one tenant run in parallel with each other and never wait for
// another tenant.
package vectorindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/viterin/vek/vek32"
)

// Defaults applied by New to zero Config fields.
const (
	// DefaultMaxEntriesPerTenant is the spec's max_entries default.
	DefaultMaxEntriesPerTenant = 10_000
	// DefaultM is the HNSW out-degree above layer 0 (layer 0 uses 2*M).
	DefaultM = 16
	// DefaultEfSearch is the HNSW search beam width.
	DefaultEfSearch = 128
	// DefaultEfConstruction is the HNSW beam width used when inserting.
	DefaultEfConstruction = 128
	// DefaultExactBelow is the live-entry count up to which a tenant is
	// searched by exact scan instead of a graph.
	DefaultExactBelow = 2048
	// DefaultRebuildFraction is the tombstone/live ratio that triggers a
	// graph rebuild.
	DefaultRebuildFraction = 0.25
)

// minTombstones keeps tiny graphs from being rebuilt over a handful of
// removals; a few dead nodes cost a search almost nothing. (Index carries a
// copy so tests can lower it.)
const minTombstones = 64

// catchUpMax bounds the inserts a background rebuild replays while holding
// the tenant's write lock; larger backlogs are replayed without the lock
// first. maxCatchUpRounds stops a rebuild from chasing a sustained insert
// stream for ever: after that many rounds the rest is replayed under the lock.
const (
	catchUpMax       = 64
	maxCatchUpRounds = 8
)

// Errors returned (wrapped) by the Index.
var (
	ErrDimension      = errors.New("vectorindex: wrong vector dimension")
	ErrNotFinite      = errors.New("vectorindex: vector has a NaN or infinite element")
	ErrZeroVector     = errors.New("vectorindex: zero vector has no direction")
	ErrEmptyTenant    = errors.New("vectorindex: empty tenant")
	ErrEmptyID        = errors.New("vectorindex: empty id")
	ErrEmptyTag       = errors.New("vectorindex: empty tag")
	ErrBadTTL         = errors.New("vectorindex: ttl must be positive")
	ErrBadK           = errors.New("vectorindex: k must be positive")
	ErrBadScore       = errors.New("vectorindex: minScore is NaN")
	ErrTooManyTenants = errors.New("vectorindex: tenant limit reached")
	ErrClosed         = errors.New("vectorindex: index closed")
	ErrInternal       = errors.New("vectorindex: internal error")
)

// Config configures an Index. Zero values select the defaults above.
type Config struct {
	// Dim is the dimension of every vector in the index (required, > 0).
	Dim int
	// MaxEntriesPerTenant bounds each tenant's live entries; inserting
	// beyond it evicts (see Insert). Default DefaultMaxEntriesPerTenant.
	MaxEntriesPerTenant int
	// MaxTenants bounds the number of tenants; 0 means unlimited. A new
	// tenant beyond the limit gets ErrTooManyTenants after expired entries
	// and empty tenants have been reclaimed: evicting another agent's whole
	// cache to admit a newcomer would let one noisy caller wipe everyone.
	MaxTenants int
	// M is the HNSW out-degree (layer 0 uses 2*M). Default DefaultM.
	M int
	// EfSearch is the HNSW search beam width. Default DefaultEfSearch.
	EfSearch int
	// EfConstruction is the HNSW insert beam width. Default
	// DefaultEfConstruction.
	EfConstruction int
	// ExactBelow: tenants with at most this many distinct live vectors are
	// searched exactly and have no graph (entries sharing a vector cost the
	// scan and the graph one vector, so they count once). 0 selects
	// DefaultExactBelow; a negative value builds a graph for every
	// non-empty tenant.
	ExactBelow int
	// RebuildFraction: a tenant's graph is rebuilt once its tombstones reach
	// this fraction of its distinct live vectors (and at least 64). Default
	// DefaultRebuildFraction.
	RebuildFraction float64
	// Now is the clock for TTLs. Default time.Now.
	Now func() time.Time
	// Seed seeds HNSW level generation; 0 seeds from the clock.
	Seed int64
}

// Match is one search result.
type Match struct {
	// ID is the entry's caller-chosen id.
	ID string
	// Score is the cosine similarity between the query and the entry,
	// in [-1, 1].
	Score float32
	// Payload and Tags are copies of what was inserted.
	Payload []byte
	Tags    []string
	// ExpiresAt is when the entry stops being returned.
	ExpiresAt time.Time
}

// Stats is a snapshot of the index counters. Counters are cumulative since
// New.
type Stats struct {
	// Entries counts live entries. Expired entries count until they are
	// removed (by the tenant's next Insert, by a Search that meets them, or
	// by Sweep).
	Entries int
	// Tenants counts tenants holding state (a tenant emptied by Delete stays
	// until Flush, Sweep or tenant-limit reclamation drops it).
	Tenants int
	// GraphNodes counts HNSW nodes over all tenants, tombstones included;
	// Tombstones counts the dead ones. Entries with bit-identical vectors
	// share a node, which dies with its last entry.
	GraphNodes int
	Tombstones int
	// Inserts counts successful Insert calls, Replacements those that
	// replaced an existing id.
	Inserts      uint64
	Replacements uint64
	// Evictions counts live entries removed to make room (LRU),
	// Expirations entries removed because their TTL passed, Deletions
	// entries removed by Delete, DeleteTagged and Flush (invalidations).
	Evictions   uint64
	Expirations uint64
	Deletions   uint64
	// Rebuilds counts completed graph builds (first builds included).
	Rebuilds uint64
	// Panics counts internal errors recovered in a tenant operation; each
	// emptied its tenant (see ErrInternal). Anything but 0 is a bug.
	Panics uint64
}

// Index is a set of per-tenant vector indexes. Create it with New and stop
// it with Close.
type Index struct {
	dim             int
	maxEntries      int
	maxTenants      int
	m               int
	efSearch        int
	efConstruction  int
	exactBelow      int
	rebuildFraction float64
	minTombstones   int
	now             func() time.Time
	seed            int64

	mu      sync.RWMutex
	tenants map[string]*tenant

	// sem bounds concurrent background rebuilds so they leave CPU for
	// requests; closing stops waiting rebuilds; wg tracks them for Close.
	sem       chan struct{}
	closing   chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
	wg        sync.WaitGroup
	// syncRebuild runs rebuilds inline under the tenant lock (tests only:
	// it makes graph state deterministic).
	syncRebuild bool
	// noShare gives every entry its own node even when its vector is
	// identical to another's (tests and benchmarks only: the behaviour
	// before node sharing, for side-by-side measurements).
	noShare bool
	// noExactLookup stops graph searches from looking the query up by
	// hash first (tests only: it shows what the graph alone finds).
	noExactLookup bool
	// hashSeed seeds vecHash.
	hashSeed maphash.Seed

	seeds        atomic.Int64
	entries      atomic.Int64
	graphNodes   atomic.Int64
	tombstones   atomic.Int64
	inserts      atomic.Uint64
	replacements atomic.Uint64
	evictions    atomic.Uint64
	expirations  atomic.Uint64
	deletions    atomic.Uint64
	rebuilds     atomic.Uint64
	panics       atomic.Uint64
}

// New validates cfg, applies defaults and returns an empty Index.
func New(cfg Config) (*Index, error) {
	if cfg.Dim <= 0 {
		return nil, fmt.Errorf("vectorindex: config: Dim must be positive, got %d", cfg.Dim)
	}
	if cfg.MaxEntriesPerTenant < 0 || cfg.MaxTenants < 0 || cfg.M < 0 ||
		cfg.EfSearch < 0 || cfg.EfConstruction < 0 {
		return nil, fmt.Errorf("vectorindex: config: negative size or HNSW parameter")
	}
	if cfg.M == 1 {
		return nil, fmt.Errorf("vectorindex: config: M must be at least 2")
	}
	if math.IsNaN(cfg.RebuildFraction) || cfg.RebuildFraction < 0 {
		return nil, fmt.Errorf("vectorindex: config: RebuildFraction must be >= 0, got %v", cfg.RebuildFraction)
	}
	ix := &Index{
		dim:             cfg.Dim,
		maxEntries:      orDefault(cfg.MaxEntriesPerTenant, DefaultMaxEntriesPerTenant),
		maxTenants:      cfg.MaxTenants,
		m:               orDefault(cfg.M, DefaultM),
		efSearch:        orDefault(cfg.EfSearch, DefaultEfSearch),
		efConstruction:  orDefault(cfg.EfConstruction, DefaultEfConstruction),
		exactBelow:      orDefault(cfg.ExactBelow, DefaultExactBelow),
		rebuildFraction: cfg.RebuildFraction,
		minTombstones:   minTombstones,
		now:             cfg.Now,
		seed:            cfg.Seed,
		tenants:         make(map[string]*tenant),
		hashSeed:        maphash.MakeSeed(),
		sem:             make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
		closing:         make(chan struct{}),
	}
	if ix.rebuildFraction == 0 {
		ix.rebuildFraction = DefaultRebuildFraction
	}
	if ix.now == nil {
		ix.now = time.Now
	}
	if ix.seed == 0 {
		ix.seed = time.Now().UnixNano()
	}
	return ix, nil
}

func orDefault(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// Close stops background rebuilds and waits for them. Afterwards Insert and
// Search return ErrClosed and the other methods do nothing.
func (ix *Index) Close() error {
	ix.closeOnce.Do(func() {
		ix.closed.Store(true)
		close(ix.closing)
	})
	ix.wg.Wait()
	return nil
}

// Insert stores vec under (tenant, id), replacing any entry with that id.
// The vector is copied and normalised to unit length, so callers need not
// normalise; tags and payload are copied too. The entry expires ttl after
// the configured clock's now.
//
// If the tenant is full, Insert first removes every expired entry of the
// tenant (it does so on every call anyway), then evicts live entries in
// least-recently-used order until there is room. "Used" means inserted or
// returned by Search; the order is exact, not sampled.
func (ix *Index) Insert(tenant, id string, vec []float32, ttl time.Duration, tags []string, payload []byte) error {
	if ix.closed.Load() {
		return ErrClosed
	}
	switch {
	case tenant == "":
		return fmt.Errorf("vectorindex: insert: %w", ErrEmptyTenant)
	case id == "":
		return fmt.Errorf("vectorindex: insert into %q: %w", tenant, ErrEmptyID)
	case ttl <= 0:
		return fmt.Errorf("vectorindex: insert %q into %q: %w (got %v)", id, tenant, ErrBadTTL, ttl)
	}
	for i, tag := range tags {
		if tag == "" {
			return fmt.Errorf("vectorindex: insert %q into %q: tag %d: %w", id, tenant, i, ErrEmptyTag)
		}
	}
	unit, err := ix.unit(vec)
	if err != nil {
		return fmt.Errorf("vectorindex: insert %q into %q: %w", id, tenant, err)
	}
	e := &entry{
		id:      id,
		tags:    slices.Clone(tags),
		payload: slices.Clone(payload),
	}

	for {
		t, err := ix.tenantFor(tenant)
		if err != nil {
			return fmt.Errorf("vectorindex: insert %q: %w", id, err)
		}
		removed := false
		err = ix.write(t, func() {
			if t.removed {
				// Flushed or reclaimed between lookup and lock: use the new one.
				removed = true
				return
			}
			now := ix.now().UnixNano()
			e.expires = now + int64(ttl)
			if e.expires < now { // a ttl of centuries overflows: never expire
				e.expires = math.MaxInt64
			}
			ix.expireLocked(t, now)
			if old := t.byID[id]; old != nil {
				ix.removeLocked(t, old)
				ix.replacements.Add(1)
			}
			for len(t.byID) >= ix.maxEntries {
				ix.removeLocked(t, t.lruVictim())
				ix.evictions.Add(1)
			}
			ix.addLocked(t, e, unit)
			ix.maybeRebuildLocked(t)
		})
		if removed {
			continue
		}
		if err != nil {
			return fmt.Errorf("vectorindex: insert %q into %q: %w", id, tenant, err)
		}
		ix.inserts.Add(1)
		return nil
	}
}

// write runs f under t's write lock. The lock is released however f ends:
// a panic must never leave a tenant locked (every later request would
// wait for it for ever, as a lost unlock once made the semantic cache hang
// every request while the gateway looked alive). A panic in f is a bug
// that may have left the tenant half-updated, so its entries are dropped
// (a cache may always forget) and the panic comes back as an error wrapping
// ErrInternal.
func (ix *Index) write(t *tenant, f func()) (err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			ix.resetLocked(t)
			ix.panics.Add(1)
			err = fmt.Errorf("%w: %v (the tenant's entries were dropped)", ErrInternal, r)
		}
	}()
	f()
	return nil
}

// Search returns up to k live, unexpired entries of tenant whose cosine
// similarity to vec is at least minScore, best first; among equal scores
// (every entry of a shared vector ties) the most recently inserted comes
// first. vec is normalised like an inserted vector. Returned entries count
// as used for LRU eviction. An unknown tenant yields no matches and no
// error.
//
// Tenants with at most ExactBelow distinct live vectors are scanned
// exactly; larger ones are searched approximately through their graph (see
// README.md for measured recall), and may return fewer than k matches when
// tombstones crowd the beam. A query bit-identical to a stored vector
// always finds that vector's entries (looked up by hash, not the graph).
func (ix *Index) Search(tenant string, vec []float32, k int, minScore float32) ([]Match, error) {
	if ix.closed.Load() {
		return nil, ErrClosed
	}
	if k <= 0 {
		return nil, fmt.Errorf("vectorindex: search %q: %w (got %d)", tenant, ErrBadK, k)
	}
	if math.IsNaN(float64(minScore)) {
		return nil, fmt.Errorf("vectorindex: search %q: %w", tenant, ErrBadScore)
	}
	q, err := ix.unit(vec)
	if err != nil {
		return nil, fmt.Errorf("vectorindex: search %q: %w", tenant, err)
	}
	t := ix.lookup(tenant)
	if t == nil {
		return nil, nil
	}
	now := ix.now().UnixNano()

	out, expired := ix.read(t, q, k, minScore, now)
	if len(expired) > 0 {
		// Lazy expiry: the read lock cannot remove, so retake it for writing
		// and re-check, since another caller may have replaced the entries.
		err := ix.write(t, func() {
			for _, e := range expired {
				if t.byID[e.id] == e && e.expires <= now {
					ix.removeLocked(t, e)
					ix.expirations.Add(1)
				}
			}
			ix.maybeRebuildLocked(t)
		})
		if err != nil {
			return nil, fmt.Errorf("vectorindex: search %q: %w", tenant, err)
		}
	}
	return out, nil
}

// read is Search's part under the read lock (released by defer: a panic in
// the graph search must not leave writers waiting for ever).
func (ix *Index) read(t *tenant, q []float32, k int, minScore float32, now int64) ([]Match, []*entry) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var hits []hit
	var expired []*entry
	if t.graph == nil || (ix.exactBelow >= 0 && len(t.nodes) <= ix.exactBelow) {
		hits, expired = t.scan(q, k, minScore, now)
	} else {
		var exact *node
		if n := t.byVec[ix.vecHash(q)]; n != nil && !ix.noExactLookup && slices.Equal(n.vec, q) {
			exact = n
		}
		hits, expired = t.searchGraph(q, k, minScore, now, ix.efSearch, exact)
	}
	out := make([]Match, len(hits))
	// Stamp the best match last so it is the most recently used.
	for i := len(hits) - 1; i >= 0; i-- {
		e := hits[i].e
		e.lastUsed.Store(t.clock.Add(1))
		out[i] = Match{
			ID:        e.id,
			Score:     hits[i].score,
			Payload:   slices.Clone(e.payload),
			Tags:      slices.Clone(e.tags),
			ExpiresAt: time.Unix(0, e.expires),
		}
	}
	return out, expired
}

// Delete removes (tenant, id) and reports whether it existed.
func (ix *Index) Delete(tenant, id string) bool {
	if ix.closed.Load() {
		return false
	}
	t := ix.lookup(tenant)
	if t == nil {
		return false
	}
	found := false
	_ = ix.write(t, func() { // an internal error empties the tenant: deleted too
		e := t.byID[id]
		if e == nil {
			return
		}
		found = true
		ix.removeLocked(t, e)
		ix.deletions.Add(1)
		ix.maybeRebuildLocked(t)
	})
	return found
}

// DeleteTagged removes every entry of tenant carrying tag and returns how
// many it removed; tenant "" means every tenant (a market regime change
// invalidates all "market-analysis" entries). It scans the tenant's entries:
// invalidations are rare and a scan costs no per-entry index memory.
func (ix *Index) DeleteTagged(tenant, tag string) int {
	if ix.closed.Load() {
		return 0
	}
	n := 0
	for _, t := range ix.selectTenants(tenant) {
		_ = ix.write(t, func() { // an internal error empties the tenant: invalidated too
			var doomed []*entry
			for _, e := range t.byID {
				if slices.Contains(e.tags, tag) {
					doomed = append(doomed, e)
				}
			}
			for _, e := range doomed {
				ix.removeLocked(t, e)
			}
			ix.maybeRebuildLocked(t)
			n += len(doomed)
		})
	}
	ix.deletions.Add(uint64(n))
	return n
}

// Flush drops every entry of the named tenant, and the tenant itself,
// returning how many entries it removed; name "" flushes every tenant.
func (ix *Index) Flush(name string) int {
	if ix.closed.Load() {
		return 0
	}
	var doomed []*tenant
	ix.mu.Lock()
	if name == "" {
		for n, t := range ix.tenants {
			doomed = append(doomed, t)
			delete(ix.tenants, n)
		}
	} else if t := ix.tenants[name]; t != nil {
		doomed = append(doomed, t)
		delete(ix.tenants, name)
	}
	ix.mu.Unlock()
	n := 0
	for _, t := range doomed {
		_ = ix.write(t, func() { n += ix.dropLocked(t) })
	}
	ix.deletions.Add(uint64(n))
	return n
}

// Sweep removes every expired entry of every tenant, then drops tenants left
// empty, and returns how many entries expired. Inserts and searches already
// expire entries lazily; Sweep is for reclaiming memory of idle tenants from
// a caller-owned ticker, so the index needs no goroutine of its own.
func (ix *Index) Sweep() int {
	if ix.closed.Load() {
		return 0
	}
	now := ix.now().UnixNano()
	n := 0
	for _, t := range ix.selectTenants("") {
		_ = ix.write(t, func() {
			n += ix.expireLocked(t, now)
			ix.maybeRebuildLocked(t)
		})
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.dropEmptyTenantsLocked()
	return n
}

// Len returns the number of live entries of tenant (expired ones not yet
// removed included).
func (ix *Index) Len(tenant string) int {
	t := ix.lookup(tenant)
	if t == nil {
		return 0
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byID)
}

// Stats returns a snapshot of the counters.
func (ix *Index) Stats() Stats {
	ix.mu.RLock()
	tenants := len(ix.tenants)
	ix.mu.RUnlock()
	return Stats{
		Entries:      int(ix.entries.Load()),
		Tenants:      tenants,
		GraphNodes:   int(ix.graphNodes.Load()),
		Tombstones:   int(ix.tombstones.Load()),
		Inserts:      ix.inserts.Load(),
		Replacements: ix.replacements.Load(),
		Evictions:    ix.evictions.Load(),
		Expirations:  ix.expirations.Load(),
		Deletions:    ix.deletions.Load(),
		Rebuilds:     ix.rebuilds.Load(),
		Panics:       ix.panics.Load(),
	}
}

// unit validates vec and returns a unit-length copy.
func (ix *Index) unit(vec []float32) ([]float32, error) {
	if len(vec) != ix.dim {
		return nil, fmt.Errorf("%w: got %d, want %d", ErrDimension, len(vec), ix.dim)
	}
	var ss float64
	for i, x := range vec {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%w: element %d is %v", ErrNotFinite, i, x)
		}
		ss += f * f
	}
	if ss == 0 {
		return nil, ErrZeroVector
	}
	inv := 1 / math.Sqrt(ss)
	out := make([]float32, len(vec))
	for i, x := range vec {
		out[i] = float32(float64(x) * inv)
		if out[i] == 0 {
			// -0 (or an underflow to it) becomes +0, so vectors that compare
			// equal are also bit-identical and share a node (see addLocked).
			out[i] = 0
		}
	}
	return out, nil
}

// vecHash hashes a unit vector's bits: the key under which identical
// vectors find their shared node. The seed is per Index, so colliding
// vectors cannot be crafted in advance (a collision would only cost a
// missed share anyway).
func (ix *Index) vecHash(v []float32) uint64 {
	var h maphash.Hash
	h.SetSeed(ix.hashSeed)
	var buf [256]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/4)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		_, _ = h.Write(buf[:4*n]) // never fails
		v = v[n:]
	}
	return h.Sum64()
}

// cosine is the dot product of unit vectors, clamped against rounding.
func cosine(a, b []float32) float32 {
	return min(max(vek32.Dot(a, b), -1), 1)
}

func (ix *Index) lookup(name string) *tenant {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.tenants[name]
}

// selectTenants returns the named tenant, or all tenants for "".
func (ix *Index) selectTenants(name string) []*tenant {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if name != "" {
		if t := ix.tenants[name]; t != nil {
			return []*tenant{t}
		}
		return nil
	}
	out := make([]*tenant, 0, len(ix.tenants))
	for _, t := range ix.tenants {
		out = append(out, t)
	}
	return out
}

// tenantFor returns the tenant, creating it if the tenant limit allows.
func (ix *Index) tenantFor(name string) (*tenant, error) {
	if t := ix.lookup(name); t != nil {
		return t, nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if t := ix.tenants[name]; t != nil {
		return t, nil
	}
	if ix.maxTenants > 0 && len(ix.tenants) >= ix.maxTenants {
		now := ix.now().UnixNano()
		for _, t := range ix.tenants {
			_ = ix.write(t, func() { ix.expireLocked(t, now) })
		}
		ix.dropEmptyTenantsLocked()
		if len(ix.tenants) >= ix.maxTenants {
			return nil, fmt.Errorf("tenant %q: %w (%d)", name, ErrTooManyTenants, ix.maxTenants)
		}
	}
	t := newTenant()
	ix.tenants[name] = t
	return t, nil
}

// dropEmptyTenantsLocked removes tenants with no entries and no rebuild in
// flight. ix.mu must be held for writing.
func (ix *Index) dropEmptyTenantsLocked() {
	for name, t := range ix.tenants {
		_ = ix.write(t, func() {
			if len(t.byID) == 0 && !t.rebuilding {
				delete(ix.tenants, name)
				ix.dropLocked(t)
			}
		})
	}
}
