package memo

import (
	"testing"
	"unsafe"
)

// A key inserted from a buffer the next call overwrites must still be found
// under its original tenant, and never under the bytes that replaced it.
func TestPutCopiesKey(t *testing.T) {
	tab := Table[int]{Max: 10}
	buf := []byte("tenant-a")
	tenant := unsafe.String(&buf[0], len(buf)) // as the wire decoder aliases it
	tab.Put(Key{Tenant: tenant, Sum: [32]byte{1}}, 7, 1)
	copy(buf, "tenant-b")
	if _, ok := tab.Get(Key{Tenant: "tenant-b", Sum: [32]byte{1}}); ok {
		t.Fatal("an entry moved to the tenant whose bytes overwrote its key")
	}
	if v, ok := tab.Get(Key{Tenant: "tenant-a", Sum: [32]byte{1}}); !ok || v != 7 || tab.Hits != 1 {
		t.Fatalf("entry lost: %d %v hits %d", v, ok, tab.Hits)
	}
}

// Past Max the table starts over; tenants and parts partition it.
func TestBoundAndPartition(t *testing.T) {
	tab := Table[string]{Max: 3}
	tab.Put(Key{Tenant: "a", Part: "x"}, "ax", 2)
	tab.Put(Key{Tenant: "b", Part: "x"}, "bx", 1)
	if tab.Len() != 2 {
		t.Fatalf("len %d", tab.Len())
	}
	if _, ok := tab.Get(Key{Tenant: "a", Part: "y"}); ok {
		t.Fatal("another part answered")
	}
	tab.Put(Key{Tenant: "c"}, "c", 1) // 4 > 3: starts over
	if tab.Len() != 1 {
		t.Fatalf("after the bound: len %d", tab.Len())
	}
	if _, ok := tab.Get(Key{Tenant: "a", Part: "x"}); ok {
		t.Fatal("an entry survived the reset")
	}
}
