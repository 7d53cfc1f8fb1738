package kvstore

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The key layout the sandbox uses (host/sandbox namespacedKey, sharedKey):
// "<plugin>\x00<len(tenant)>:<tenant><key>" and "<plugin>\x00*<key>".
func tenantKey(plugin, tenant, key string) string {
	return plugin + "\x00" + strconv.Itoa(len(tenant)) + ":" + tenant + key
}

func sharedKey(plugin, key string) string { return plugin + "\x00*" + key }

func mustGet(t *testing.T, m *Memory, key string, want bool) {
	t.Helper()
	if _, ok := m.Get(key); ok != want {
		t.Fatalf("Get(%q) present = %v, want %v", key, ok, want)
	}
}

func TestMemoryGetPutTTL(t *testing.T) {
	m := NewMemory(1 << 20)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	if err := m.Put("a", []byte("1"), time.Second); err != nil {
		t.Fatal(err)
	}
	if err := m.Put("b", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if v, ok := m.Get("a"); !ok || string(v) != "1" {
		t.Fatalf("a = %q %v", v, ok)
	}
	now = now.Add(time.Second)
	mustGet(t, m, "a", false) // expires exactly at its deadline
	mustGet(t, m, "b", true)  // no TTL: never expires
	if err := m.Delete("b"); err != nil {
		t.Fatal(err)
	}
	mustGet(t, m, "b", false)
	if err := m.Delete("absent"); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryEvictsLeastRecentlyUsed(t *testing.T) {
	m := NewMemory(3 * size("k0", make([]byte, 10)))
	for i := range 3 {
		m.Put("k"+strconv.Itoa(i), make([]byte, 10), 0)
	}
	m.Get("k0") // k1 is now the least recently used
	m.Put("k3", make([]byte, 10), 0)
	mustGet(t, m, "k1", false)
	for _, k := range []string{"k0", "k2", "k3"} {
		mustGet(t, m, k, true)
	}
	if err := m.Put("huge", make([]byte, 1000), 0); err != ErrTooLarge {
		t.Fatalf("oversized value: %v", err)
	}
}

func TestMemoryDeletePrefix(t *testing.T) {
	m := NewMemory(1 << 20)
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	keys := []string{
		tenantKey("hashcache", "acme", "r:1"),
		tenantKey("hashcache", "acme", "r:2"),
		tenantKey("hashcache", "acme2", "r:1"), // a tenant whose name extends "acme"
		tenantKey("hashcache", "ac", "mer:1"),  // forged to look like acme's keys without the length prefix
		tenantKey("hashcache", "", "r:1"),      // the empty tenant (plugin init)
		sharedKey("hashcache", "r:1"),
		tenantKey("hashcache2", "acme", "r:1"), // another plugin whose name extends "hashcache"
		tenantKey("promptcache", "acme", "s:x"),
	}
	for _, k := range keys {
		if err := m.Put(k, []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	// One expired key under the prefix: counted and removed as well.
	m.Put(tenantKey("hashcache", "acme", "r:old"), []byte("v"), time.Second)
	now = now.Add(2 * time.Second)
	used := m.used

	// One tenant of one plugin.
	if n := m.DeletePrefix(tenantKey("hashcache", "acme", "")); n != 3 {
		t.Fatalf("tenant flush removed %d keys, want 3", n)
	}
	mustGet(t, m, keys[0], false)
	mustGet(t, m, keys[1], false)
	for _, k := range keys[2:] {
		mustGet(t, m, k, true)
	}
	freed := size(keys[0], []byte("v")) + size(keys[1], []byte("v")) + size(tenantKey("hashcache", "acme", "r:old"), []byte("v"))
	if want := used - freed; m.used != want {
		t.Fatalf("used = %d after the flush, want %d (freed bytes must be returned to the budget)", m.used, want)
	}

	// The shared space of one plugin.
	if n := m.DeletePrefix(sharedKey("hashcache", "")); n != 1 {
		t.Fatalf("shared flush removed %d", n)
	}
	mustGet(t, m, keys[5], false)

	// Everything of one plugin (every tenant and the shared space), not
	// another plugin whose name merely starts the same way.
	if n := m.DeletePrefix("hashcache\x00"); n != 3 {
		t.Fatalf("plugin flush removed %d, want 3", n)
	}
	mustGet(t, m, keys[6], true)
	mustGet(t, m, keys[7], true)
	if m.Len() != 2 {
		t.Fatalf("Len = %d", m.Len())
	}

	// Nothing matches: nothing removed.
	if n := m.DeletePrefix("nope\x00"); n != 0 {
		t.Fatalf("removed %d", n)
	}
	// The empty prefix empties the store and its byte budget.
	if n := m.DeletePrefix(""); n != 2 || m.Len() != 0 || m.used != 0 || ringLen(t, m) != 0 {
		t.Fatalf("removed %d, Len %d, used %d, lru %d", n, m.Len(), m.used, ringLen(t, m))
	}
}

// DeletePrefix runs concurrently with readers and writers (go test -race).
func TestMemoryDeletePrefixConcurrent(t *testing.T) {
	m := NewMemory(1 << 20)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := tenantKey("p", fmt.Sprint("t", w), strconv.Itoa(i))
				m.Put(k, []byte("v"), time.Minute)
				m.Get(k)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			m.DeletePrefix(tenantKey("p", "t1", ""))
		}
	}()
	wg.Wait()
	m.DeletePrefix(tenantKey("p", "t1", ""))
	for i := range 500 {
		mustGet(t, m, tenantKey("p", "t1", strconv.Itoa(i)), false)
		mustGet(t, m, tenantKey("p", "t0", strconv.Itoa(i)), true)
	}
}

// TestMemorySetCapacity: a smaller budget (a reload of [server]
// kv_max_bytes) evicts the least recently used keys at once.
func TestMemorySetCapacity(t *testing.T) {
	one := size("k0", make([]byte, 100))
	m := NewMemory(10 * one)
	for i := range 10 {
		if err := m.Put(fmt.Sprintf("k%d", i), make([]byte, 100), 0); err != nil {
			t.Fatal(err)
		}
	}
	mustGet(t, m, "k0", true) // k0 is now the most recently used
	m.SetCapacity(3 * one)
	if used, capacity := m.Used(); used != 3*one || capacity != 3*one || m.Len() != 3 {
		t.Fatalf("used %d of %d, %d keys; want 3 keys, %d", used, capacity, m.Len(), 3*one)
	}
	mustGet(t, m, "k0", true)
	mustGet(t, m, "k9", true)
	mustGet(t, m, "k8", true)
	mustGet(t, m, "k1", false)
}

// Each plugin's namespace is accounted apart — entries, bytes, evictions —
// and the sums are the store's: what the kv metrics report per plugin.
func TestSpacesAccounting(t *testing.T) {
	m := NewMemory(10 * (entryOverhead + 20))
	for i := 0; i < 6; i++ {
		if err := m.Put(fmt.Sprintf("hashcache\x00t\x00k%d", i), make([]byte, 6), 0); err != nil {
			t.Fatal(err)
		}
	}
	m.Put("semcache\x00*\x00q", make([]byte, 5), 0)
	m.Put("plain", make([]byte, 15), 0)
	m.Put("hashcache\x00t\x00k0", make([]byte, 6), 0) // replaced, not added
	m.Delete("hashcache\x00t\x00k1")
	for i := 0; i < 6; i++ { // 4 more fit; the rest evict the oldest
		m.Put(fmt.Sprintf("affinity\x00t\x00s%d", i), make([]byte, 5), 0)
	}
	sp := m.Spaces()
	var entries, bytes int64
	for _, u := range sp {
		entries += u.Entries
		bytes += u.Bytes
	}
	used, _ := m.Used()
	if entries != int64(m.Len()) || bytes != used {
		t.Fatalf("spaces sum to %d entries, %d bytes; the store holds %d, %d: %+v", entries, bytes, m.Len(), used, sp)
	}
	// 15 puts, one a replacement, one key deleted: the rest were evicted,
	// the oldest first — hashcache's.
	evicted := sp["hashcache"].Evicted + sp["semcache"].Evicted + sp[""].Evicted + sp["affinity"].Evicted
	if sp["affinity"].Entries != 6 || evicted == 0 || evicted != int64(13-m.Len()) || sp["hashcache"].Evicted != evicted {
		t.Fatalf("after %d evictions: %+v", evicted, sp)
	}
	if got := testutil.CollectAndCount(m.Collector()); got != 3*len(sp)+1 {
		t.Fatalf("%d series for %d spaces", got, len(sp))
	}
}

// ringLen walks the LRU ring both ways, checking each link and that the
// ring holds exactly the map's entries, and returns its length.
func ringLen(t *testing.T, m *Memory) int {
	t.Helper()
	n := 0
	for e := m.lru.next; e != &m.lru; e = e.next {
		if e.next.prev != e || e.prev.next != e {
			t.Fatalf("broken link at %q", e.key)
		}
		if m.items[e.key] != e {
			t.Fatalf("ring entry %q is not the map's", e.key)
		}
		n++
		if n > len(m.items) {
			t.Fatalf("the ring holds more than the map's %d entries", len(m.items))
		}
	}
	back := 0
	for e := m.lru.prev; e != &m.lru; e = e.prev {
		back++
		if back > n {
			t.Fatal("the ring is longer backwards than forwards")
		}
	}
	if back != n || n != len(m.items) {
		t.Fatalf("ring %d forwards, %d backwards, map %d", n, back, len(m.items))
	}
	return n
}

// TestMemoryRing: after a mix of puts, replacements, reads, deletes and
// evictions, the ring is intact and in recency order.
func TestMemoryRing(t *testing.T) {
	m := NewMemory(8 * (entryOverhead + 10))
	for i := range 20 {
		k := fmt.Sprintf("p\x00k%03d", i%11)
		mustPut(t, m, k, []byte("v"))
		if i%3 == 0 {
			m.Get(fmt.Sprintf("p\x00k%03d", (i+5)%11))
		}
		if i%7 == 0 {
			m.Delete(fmt.Sprintf("p\x00k%03d", (i+2)%11))
		}
		ringLen(t, m)
	}
	// Most recent first: a read moves a key to the front, and the
	// least recent is the next to go.
	m = NewMemory(3 * (entryOverhead + 3))
	for _, k := range []string{"a", "b", "c"} {
		mustPut(t, m, k, []byte("v"))
	}
	m.Get("a")
	mustPut(t, m, "d", []byte("v")) // evicts b, the least recent
	mustGet(t, m, "b", false)
	var order []string
	for e := m.lru.next; e != &m.lru; e = e.next {
		order = append(order, e.key)
	}
	if fmt.Sprint(order) != "[d a c]" {
		t.Fatalf("recency order %v, want [d a c]", order)
	}
}

func mustPut(t *testing.T, m *Memory, key string, val []byte) {
	t.Helper()
	if err := m.Put(key, val, 0); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}
