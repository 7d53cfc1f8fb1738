// Package kvstore holds the key/value stores behind the plugins' kv host
// functions: an in-memory store (the single-box default) and, later, Redis.
package kvstore

import (
	"errors"
	"strings"
	"sync"
	"time"
)

// ErrTooLarge is returned when a single value exceeds the store's capacity.
var ErrTooLarge = errors.New("kvstore: value larger than the store's capacity")

// Memory is an in-memory store with per-key TTL and a byte budget; when the
// budget is exceeded the least recently used keys are evicted. It is safe for
// concurrent use.
type Memory struct {
	mu       sync.Mutex
	capacity int64
	used     int64
	items    map[string]*entry
	lru      entry // the ring's root: lru.next is the most recently used, lru.prev the least
	now      func() time.Time
	// spaces is what each key namespace (the key up to its first NUL: a
	// plugin's name, as the sandbox prefixes every plugin's keys) holds,
	// so the metrics can say which cache fills the store.
	spaces map[string]*SpaceUse
}

// SpaceUse is what one key namespace holds: entries, the bytes accounted
// to them, and how many of its entries were evicted to make room.
type SpaceUse struct {
	Entries, Bytes, Evicted int64
}

// entry is one key's value, linked into the LRU ring itself (no
// container/list element beside it: one allocation a put, not two) and
// holding its namespace's counters (no map lookup when it leaves).
type entry struct {
	key        string
	val        []byte
	expires    time.Time // zero: never
	space      *SpaceUse
	prev, next *entry
}

// NewMemory returns a store holding at most capacity bytes of keys and values.
func NewMemory(capacity int64) *Memory {
	m := &Memory{capacity: capacity, items: make(map[string]*entry), now: time.Now, spaces: map[string]*SpaceUse{}}
	m.lru.next, m.lru.prev = &m.lru, &m.lru
	return m
}

// unlink takes e out of the LRU ring.
func (m *Memory) unlink(e *entry) {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// pushFront links e in as the most recently used.
func (m *Memory) pushFront(e *entry) {
	e.prev, e.next = &m.lru, m.lru.next
	m.lru.next.prev = e
	m.lru.next = e
}

// entryOverhead is what an entry costs the Go heap beyond its key's and
// value's bytes — the map slot, the list element, the entry and the
// allocator's rounding — measured at 160–230 B for values of 16 B–3 KB: the
// capacity bounds the heap the store holds, not just its payload.
const entryOverhead = 192

func size(key string, val []byte) int64 { return int64(len(key)+len(val)) + entryOverhead }

// Get returns a copy-free view of the value; callers must not modify it.
func (m *Memory) Get(key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.items[key]
	if !ok {
		return nil, false
	}
	if !e.expires.IsZero() && !m.now().Before(e.expires) {
		m.remove(e)
		return nil, false
	}
	if m.lru.next != e {
		m.unlink(e)
		m.pushFront(e)
	}
	return e.val, true
}

// Put stores val under key for ttl (0: no expiry). The store keeps val; the
// caller must not modify it afterwards.
func (m *Memory) Put(key string, val []byte, ttl time.Duration) error {
	sz := size(key, val)
	if sz > m.capacity {
		return ErrTooLarge
	}
	var exp time.Time
	if ttl > 0 {
		exp = m.now().Add(ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		m.remove(e)
	}
	for m.used+sz > m.capacity {
		m.evict()
	}
	sp := m.spaces[space(key)]
	if sp == nil {
		sp = &SpaceUse{}
		m.spaces[strings.Clone(space(key))] = sp // not the key's bytes: the space outlives it
	}
	e := &entry{key: key, val: val, expires: exp, space: sp}
	m.pushFront(e)
	m.items[key] = e
	m.used += sz
	sp.Entries++
	sp.Bytes += sz
	return nil
}

// Delete removes key; deleting an absent key is not an error.
func (m *Memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.items[key]; ok {
		m.remove(e)
	}
	return nil
}

// DeletePrefix removes every key that starts with prefix and returns how many
// it removed (expired keys included). It walks the whole store under the lock,
// so it is meant for rare administrative flushes (a plugin's cache for one
// tenant, or for all tenants), not for the request path. An empty prefix
// removes everything.
func (m *Memory) DeletePrefix(prefix string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for key, e := range m.items {
		if strings.HasPrefix(key, prefix) {
			m.remove(e) // deleting the current key while ranging is allowed
			n++
		}
	}
	return n
}

// SetCapacity changes the byte budget (a reload of [server] kv_max_bytes);
// a smaller one evicts the least recently used keys now.
func (m *Memory) SetCapacity(capacity int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = capacity
	for m.used > m.capacity {
		m.evict()
	}
}

// Used reports the bytes accounted to the keys held, and the budget.
func (m *Memory) Used() (used, capacity int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.capacity
}

// Len reports the number of keys held (expired ones included until touched).
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

func (m *Memory) remove(e *entry) {
	m.unlink(e)
	delete(m.items, e.key)
	sz := size(e.key, e.val)
	m.used -= sz
	e.space.Entries--
	e.space.Bytes -= sz
}

// evict removes the least recently used key to make room.
func (m *Memory) evict() {
	e := m.lru.prev
	e.space.Evicted++
	m.remove(e)
}

// space is a key's namespace: the key up to its first NUL ("" if none).
func space(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		return key[:i]
	}
	return ""
}

// Spaces reports what each key namespace holds (a copy). A namespace seen
// once stays listed, with 0 entries once emptied, so its eviction count
// keeps counting.
func (m *Memory) Spaces() map[string]SpaceUse {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]SpaceUse, len(m.spaces))
	for k, v := range m.spaces {
		out[k] = *v
	}
	return out
}
