package trace

import (
	"context"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

type counting struct {
	mu      sync.Mutex
	batches []int
	got     chan struct{}
}

func (c *counting) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	c.mu.Lock()
	c.batches = append(c.batches, len(s))
	c.mu.Unlock()
	select {
	case c.got <- struct{}{}:
	default:
	}
	return nil
}
func (c *counting) Shutdown(context.Context) error { return nil }

func (c *counting) total() (n int, batches int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.batches {
		n += b
	}
	return n, len(c.batches)
}

func endSpans(tp *sdktrace.TracerProvider, n int) {
	t := tp.Tracer("test")
	for range n {
		_, s := t.Start(context.Background(), "s")
		s.End()
	}
}

// A full batch leaves without waiting for the interval; a flush sends the
// rest; spans past the bound are dropped, not queued without end; shutdown
// sends what is left.
func TestBatcher(t *testing.T) {
	exp := &counting{got: make(chan struct{}, 1)}
	b := newBatcher(exp, time.Hour, 4)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b))
	endSpans(tp, 4)
	select {
	case <-exp.got:
	case <-time.After(10 * time.Second):
		t.Fatal("a full batch was not exported")
	}
	endSpans(tp, 3)
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := exp.total(); n != 7 {
		t.Fatalf("%d spans exported after the flush, want 7", n)
	}

	// A batcher whose goroutine never runs (a stalled exporter): what
	// ends only queues, up to 4 × 4.
	stopped := &batcher{exp: exp, interval: time.Hour, max: 4, kick: make(chan struct{}, 1), flushed: make(chan struct{})}
	tp2 := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(stopped))
	endSpans(tp2, 20)
	if len(stopped.queue) != 16 || stopped.lost != 4 {
		t.Fatalf("queued %d, dropped %d; want 16, 4", len(stopped.queue), stopped.lost)
	}

	endSpans(tp, 2)
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n, _ := exp.total(); n != 9 {
		t.Fatalf("%d spans exported after shutdown, want 9", n)
	}
}
