package sandbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/sandbox"
)

// TestShrink: after a burst every instance keeps the memory it grew to;
// Shrink closes the idle ones beyond keep and replaces a grown kept one
// with a fresh one, without counting either as a discard, and the pool
// grows again on demand.
func TestShrink(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		t.Run(map[bool]string{true: "trusted", false: "untrusted"}[trusted], func(t *testing.T) {
			o := faultOptions(t, "leak")
			o.PoolSize, o.Trusted = 3, trusted
			p := loadFault(t, o)
			_, fresh := p.MemoryBytes()
			ctx := context.Background()
			if err := p.FillPoolForTest(ctx); err != nil {
				t.Fatal(err)
			}
			// Sequential calls take the idle instances in turn: each
			// grows (the leak plugin keeps every text).
			big := strings.Repeat("x", 1<<20)
			for i := range 12 {
				if _, err := callText(ctx, p, big+string(rune('a'+i))); err != nil {
					t.Fatal(err)
				}
			}
			n, grown := p.MemoryBytes()
			if n != 3 || grown <= 3*fresh {
				t.Fatalf("after the burst: %d instances, %d bytes; want 3 grown past %d each", n, grown, fresh)
			}
			_, discarded := p.Stats()

			if got := p.Shrink(ctx, 1); got != 3 {
				t.Fatalf("Shrink closed or replaced %d instances, want 3 (2 closed, 1 replaced)", got)
			}
			idle, closedIdle, slots := p.PoolState()
			if idle != 1 || slots != 1 || closedIdle != 0 {
				t.Fatalf("pool after Shrink: idle %d, slots %d, closed idle %d; want 1 open instance", idle, slots, closedIdle)
			}
			if n, b := p.MemoryBytes(); n != 1 || b != fresh {
				t.Fatalf("after Shrink: %d instances, %d bytes; want one fresh instance of %d", n, b, fresh)
			}
			if _, d := p.Stats(); d != discarded || p.Shrunk() != 3 {
				t.Fatalf("discarded %d -> %d, shrunk %d: shrinking is not a discard", discarded, d, p.Shrunk())
			}
			// Nothing left to do: a second Shrink is a no-op.
			if got := p.Shrink(ctx, 1); got != 0 {
				t.Fatalf("second Shrink: %d, want 0", got)
			}
			// The pool serves and grows again.
			if err := p.FillPoolForTest(ctx); err != nil {
				t.Fatal(err)
			}
			if idle, _, slots := p.PoolState(); idle != 3 || slots != 3 {
				t.Fatalf("refilled pool: idle %d, slots %d", idle, slots)
			}
			mustGoodLeak(t, p)
			p.Close()
			if got := p.Shrink(ctx, 1); got != 0 {
				t.Fatalf("Shrink after Close: %d", got)
			}
		})
	}
}

func mustGoodLeak(t *testing.T, p *sandbox.Plugin) {
	t.Helper()
	res, err := callText(context.Background(), p, "after")
	if err != nil || len(res.Annotations) != 1 || res.Annotations[0].Key != "leak" {
		t.Fatalf("call after Shrink: %+v, %v", res, err)
	}
}
