package kvstore

import (
	"strconv"
	"testing"
)

// BenchmarkMemoryPutFull: the live shape — a full store, every put of a
// new key evicting the least recently used, a read of another key between.
func BenchmarkMemoryPutFull(b *testing.B) {
	m := NewMemory(4 << 20)
	val := make([]byte, 600)
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "hashcache\x0012:tenant-00001k" + strconv.Itoa(i) + "-0123456789abcdef0123456789abcdef"
	}
	for i := range keys {
		m.Put(keys[i], val, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.Put(keys[i&(len(keys)-1)], append([]byte(nil), val...), 0)
		m.Get(keys[(i*7)&(len(keys)-1)])
	}
}
