// Package kvstore holds the key/value stores behind the plugins' kv host
// functions: an in-memory store (the single-box default) and, later, Redis.
package kvstore

import (
	"container/list"
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
	items    map[string]*list.Element
	lru      list.List // front = most recently used
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

type entry struct {
	key     string
	val     []byte
	expires time.Time // zero: never
}

// NewMemory returns a store holding at most capacity bytes of keys and values.
func NewMemory(capacity int64) *Memory {
	return &Memory{capacity: capacity, items: make(map[string]*list.Element), now: time.Now, spaces: map[string]*SpaceUse{}}
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
	el, ok := m.items[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if !e.expires.IsZero() && !m.now().Before(e.expires) {
		m.remove(el)
		return nil, false
	}
	m.lru.MoveToFront(el)
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
	if el, ok := m.items[key]; ok {
		m.remove(el)
	}
	for m.used+sz > m.capacity {
		m.evict()
	}
	m.items[key] = m.lru.PushFront(&entry{key: key, val: val, expires: exp})
	m.used += sz
	sp := m.spaces[space(key)]
	if sp == nil {
		sp = &SpaceUse{}
		m.spaces[strings.Clone(space(key))] = sp // not the key's bytes: the space outlives it
	}
	sp.Entries++
	sp.Bytes += sz
	return nil
}

// Delete removes key; deleting an absent key is not an error.
func (m *Memory) Delete(key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if el, ok := m.items[key]; ok {
		m.remove(el)
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
	for key, el := range m.items {
		if strings.HasPrefix(key, prefix) {
			m.remove(el) // deleting the current key while ranging is allowed
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

func (m *Memory) remove(el *list.Element) {
	e := el.Value.(*entry)
	m.lru.Remove(el)
	delete(m.items, e.key)
	sz := size(e.key, e.val)
	m.used -= sz
	if sp := m.spaces[space(e.key)]; sp != nil {
		sp.Entries--
		sp.Bytes -= sz
	}
}

// evict removes the least recently used key to make room.
func (m *Memory) evict() {
	el := m.lru.Back()
	if sp := m.spaces[space(el.Value.(*entry).key)]; sp != nil {
		sp.Evicted++
	}
	m.remove(el)
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
