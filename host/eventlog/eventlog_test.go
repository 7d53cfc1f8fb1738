package eventlog

import (
	"context"
	"testing"
	"time"
)

func TestSinceAndWrap(t *testing.T) {
	l := New(4, nil)
	if evs, next, missed := l.Since(0, 0); len(evs) != 0 || next != 0 || missed != 0 {
		t.Fatalf("empty: %v %d %d", evs, next, missed)
	}
	for i := range 6 {
		l.Emit(ProviderResolved, "req", map[string]any{"i": i})
	}
	// Events 1..6 were emitted; the ring keeps 3..6.
	evs, next, missed := l.Since(0, 0)
	if missed != 2 || len(evs) != 4 || evs[0].Seq != 3 || evs[3].Seq != 6 || next != 6 {
		t.Fatalf("after wrap: missed %d, %d events from %d, next %d", missed, len(evs), evs[0].Seq, next)
	}
	if evs[0].Data["i"] != 2 || evs[0].Type != ProviderResolved || evs[0].Time.IsZero() {
		t.Fatalf("event 3: %+v", evs[0])
	}
	evs, next, missed = l.Since(4, 1)
	if missed != 0 || len(evs) != 1 || evs[0].Seq != 5 || next != 5 {
		t.Fatalf("limit 1 after 4: %v next %d missed %d", evs, next, missed)
	}
	if evs, next, _ := l.Since(6, 0); len(evs) != 0 || next != 6 {
		t.Fatalf("caught up: %v next %d", evs, next)
	}
	if l.Last() != 6 {
		t.Fatalf("last %d", l.Last())
	}
	var nilLog *Log
	nilLog.Emit(ProviderFallback, "", nil) // a nil log ignores events
}

func TestWait(t *testing.T) {
	l := New(8, nil)
	done := make(chan []Event)
	go func() {
		evs, _, _ := l.Wait(context.Background(), 0, 0)
		done <- evs
	}()
	time.Sleep(10 * time.Millisecond)
	l.Emit(CacheStaleServed, "r1", nil)
	select {
	case evs := <-done:
		if len(evs) != 1 || evs[0].RequestID != "r1" {
			t.Fatalf("woke with %v", evs)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not wake on Emit")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if evs, next, _ := l.Wait(ctx, 1, 0); len(evs) != 0 || next != 1 {
		t.Fatalf("timed-out wait: %v next %d", evs, next)
	}
}
