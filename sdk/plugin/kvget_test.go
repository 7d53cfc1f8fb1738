//go:build !wasip1

package plugin

import (
	"testing"
	"time"
)

// kvHost is classifyHost with a key/value store.
type kvHost struct {
	classifyHost
	kv map[string][]byte
}

func (h *kvHost) KVGet(k string) ([]byte, bool) { v, ok := h.kv[k]; return v, ok }
func (h *kvHost) KVPut(k string, v []byte, _ time.Duration) error {
	h.kv[k] = append([]byte(nil), v...)
	return nil
}

// TestKVGetAppend: the value is appended to the caller's buffer (reusing
// its room), and a missing key leaves the buffer as it was.
func TestKVGetAppend(t *testing.T) {
	SetHost(&kvHost{kv: map[string][]byte{}})
	defer SetHost(nil)
	if err := KVPut("k", []byte("value"), 0); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 64)
	v, ok := KVGetAppend(buf, "k")
	if !ok || string(v) != "value" || &v[:1][0] != &buf[:1][0] {
		t.Fatalf("KVGetAppend = %q, %v (not in the caller's buffer, or wrong)", v, ok)
	}
	v2, ok := KVGetAppend(append(buf[:0], "pre:"...), "k")
	if !ok || string(v2) != "pre:value" {
		t.Fatalf("appended to a non-empty dst: %q, %v", v2, ok)
	}
	v3, ok := KVGetAppend(buf[:0], "missing")
	if ok || len(v3) != 0 {
		t.Fatalf("a missing key: %q, %v", v3, ok)
	}
}
