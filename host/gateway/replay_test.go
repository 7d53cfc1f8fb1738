package gateway

import (
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

// A paced replay keeps its pace while the pauses stay within
// maxReplayPacing, and is paced more finely past it: an agent's long cached
// answer must not replay many times slower than it was first streamed.
func TestReplayPacing(t *testing.T) {
	deltas := func(n int) []wire.Event {
		out := []wire.Event{{Type: wire.EventMessageStart}}
		for range n {
			out = append(out, wire.Event{Type: wire.EventDelta})
		}
		return append(out, wire.Event{Type: wire.EventMessageStop})
	}
	for _, tc := range []struct {
		pace   time.Duration
		deltas int
		want   time.Duration
	}{
		{0, 10, 0},
		{30 * time.Millisecond, 0, 30 * time.Millisecond},
		{30 * time.Millisecond, 10, 30 * time.Millisecond},
		{30 * time.Millisecond, 33, 30 * time.Millisecond},
		{30 * time.Millisecond, 700, maxReplayPacing / 700},
		{time.Second, 4, maxReplayPacing / 4},
	} {
		got := replayPacing(tc.pace, deltas(tc.deltas))
		if got != tc.want {
			t.Errorf("pace %v over %d deltas = %v, want %v", tc.pace, tc.deltas, got, tc.want)
		}
		if total := got * time.Duration(tc.deltas); total > maxReplayPacing {
			t.Errorf("pace %v over %d deltas pauses %v in all, over %v", tc.pace, tc.deltas, total, maxReplayPacing)
		}
	}
}
