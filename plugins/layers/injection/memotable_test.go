//go:build !wasip1

package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestScoreMemoTable: a text is found only for the tenant that sent it,
// with the score it was given, through the table's growth; texts that
// share a sampled hash (differing only between memo.Spread's samples) are
// told apart; the bound starts the memo over; one text twice is one entry.
func TestScoreMemoTable(t *testing.T) {
	saved := cfg
	defer func() { cfg, scored = saved, scoreMemo{} }()
	cfg.memoBytes = 1 << 20
	m := &scoreMemo{}
	ta, tb := tenantHash("tenant-a"), tenantHash("tenant-b")
	if _, ok := m.get(ta, "tenant-a", "x"); ok {
		t.Fatal("an empty memo found a text")
	}
	// Long texts that differ in one byte the spread does not sample.
	long := strings.Repeat("the pool's utilisation rose after the rate change. ", 40)
	twin := []byte(long)
	twin[100] ^= 1
	texts := []string{long, string(twin)}
	for i := range 5000 {
		texts = append(texts, "turn "+strconv.Itoa(i))
	}
	for i, s := range texts {
		m.put(ta, "tenant-a", s, float32(i), 1)
	}
	m.put(ta, "tenant-a", "turn 7", 99, 1) // already there: kept as it was
	if m.len() != len(texts) {
		t.Fatalf("%d entries, want %d", m.len(), len(texts))
	}
	if 2*m.len() > len(m.slots) {
		t.Fatalf("%d entries in %d slots: more than half full", m.len(), len(m.slots))
	}
	for i, s := range texts {
		if v, ok := m.get(ta, "tenant-a", s); !ok || v != float32(i) {
			t.Fatalf("text %d: %v %v, want %d", i, v, ok, i)
		}
		if _, ok := m.get(tb, "tenant-b", s); ok {
			t.Fatalf("text %d found for another tenant", i)
		}
	}
	if _, ok := m.get(ta, "tenant-a", "turn 5000"); ok {
		t.Fatal("a text never put was found")
	}
	// Past memo_bytes it starts over, with the new text in it.
	cfg.memoBytes = m.bytes + 100
	m.put(tb, "tenant-b", strings.Repeat("y", 200), 0.5, 2)
	if m.len() != 1 || m.since != 2 {
		t.Fatalf("past the bound: %d entries since %d, want 1 since 2", m.len(), m.since)
	}
	if v, ok := m.get(tb, "tenant-b", strings.Repeat("y", 200)); !ok || v != 0.5 {
		t.Fatalf("after starting over: %v %v", v, ok)
	}
	// A text larger than the bound is not kept (nor does it clear the memo).
	m.put(tb, "tenant-b", strings.Repeat("z", cfg.memoBytes), 0.5, 3)
	if m.len() != 1 {
		t.Fatalf("a text past the bound changed the memo: %d entries", m.len())
	}
}

// TestSeenRequestAllocs: a request whose texts the memo holds allocates
// nothing in the layer, only the test host's metric call (inside wasm each allocation is ~1 µs): no memo
// key, no score string, no header slice (the result's headers were
// appended to a new slice every request).
func TestSeenRequestAllocs(t *testing.T) {
	plugintest.New(t, `{"action":"flag"}`)
	req := wire.LayerRequest{Meta: wire.Meta{RequestID: "r", Tenant: "t"}, Request: *fixtures.AgentRequest()}
	th := tenantHash("t")
	for _, p := range pieces(&req.Request, &cfg) {
		scored.put(th, "t", p.text, 0.1234, plugin.Now().UnixNano())
	}
	var res wire.LayerResult
	if err := onRequest(&req, &res); err != nil || len(res.Headers) != 3 || res.Headers[0].Value != "0.123" {
		t.Fatalf("onRequest: %v %+v", err, res)
	}
	n := testing.AllocsPerRun(100, func() {
		res = wire.LayerResult{}
		if err := onRequest(&req, &res); err != nil {
			t.Fatal(err)
		}
	})
	// The native test host's own: it copies a metric's name.
	host := testing.AllocsPerRun(100, func() { plugin.CounterAdd(metricCached, 1) })
	if n > host {
		t.Errorf("a seen request: %v allocations, the host's %v", n, host)
	}
}
