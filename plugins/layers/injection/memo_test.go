//go:build !wasip1

package main_test

import (
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// countingKV counts the kv reads a layer makes.
type countingKV struct {
	sandbox.KV
	mu   sync.Mutex
	gets int
}

func (k *countingKV) Get(key string) ([]byte, bool) {
	k.mu.Lock()
	k.gets++
	k.mu.Unlock()
	return k.KV.Get(key)
}

func (k *countingKV) take() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := k.gets
	k.gets = 0
	return n
}

// A conversation resent by the same tenant is scored from the instance's
// memo, with no kv read; another tenant's identical texts are not (its own
// kv is read), and once score_ttl has passed the memo is forgotten.
func TestMemo(t *testing.T) {
	kv := &countingKV{KV: kvstore.NewMemory(1 << 20)}
	p := layertest.Load(t, "plugins/layers/injection", sandbox.Options{Trusted: true,
		KV: kv, Services: modeltest.Services(t), Config: []byte(`{"action":"flag","score_ttl":"50ms"}`)})
	var enc wire.Encoder
	a := wire.Meta{RequestID: "req_a", Tenant: "tenant-a", Dialect: wire.DialectOpenAI}
	b := wire.Meta{RequestID: "req_b", Tenant: "tenant-b", Dialect: wire.DialectOpenAI}
	pieces := 4 // three user texts and a tool result
	score := func(meta *wire.Meta) string {
		res := layertest.OnRequest(t, p, &enc, meta, fixtures.AgentRequest())
		for _, h := range res.Headers {
			if h.Key == "X-Bardo-Injection" {
				return h.Value
			}
		}
		t.Fatal("no score header")
		return ""
	}
	first := score(&a)
	if n := kv.take(); n != pieces {
		t.Fatalf("first request: %d kv reads, want %d", n, pieces)
	}
	if s := score(&a); s != first {
		t.Errorf("resent: score %s, first %s", s, first)
	}
	if n := kv.take(); n != 0 {
		t.Errorf("resent by the same tenant: %d kv reads, want 0 (the memo)", n)
	}
	if s := score(&b); s != first {
		t.Errorf("another tenant: score %s, first %s", s, first)
	}
	if n := kv.take(); n != pieces {
		t.Errorf("another tenant: %d kv reads, want %d (no other tenant's memo)", n, pieces)
	}
	time.Sleep(60 * time.Millisecond) // past score_ttl
	score(&a)
	if n := kv.take(); n != pieces {
		t.Errorf("after score_ttl: %d kv reads, want %d (the memo forgotten)", n, pieces)
	}
}
