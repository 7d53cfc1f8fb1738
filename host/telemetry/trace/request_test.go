package trace

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// The request path only records: a request of the shipped pipeline's
// shape (16 spans) allocates its record, its contexts and the caller's
// parsed traceparent — not the SDK's spans (168 allocations when they
// were started live).
func TestRecordAllocations(t *testing.T) {
	tr, err := newTracer(Config{Exporter: discard{}, SampleRatio: 1}) // no builder: nothing else allocates
	if err != nil {
		t.Fatal(err)
	}
	defer tr.bat.Shutdown(context.Background())
	req, o := request(), outcome()
	h := headers{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	n := testing.AllocsPerRun(200, func() {
		simulateShipped(tr, h, req, o)
		tr.pending = tr.pending[:0]
	})
	if n > 24 {
		t.Fatalf("%v allocations per traced request, want at most 24", n)
	}
}

func builtSpans(t *testing.T, tr *Tracer, exp *tracetest.InMemoryExporter) map[string]tracetest.SpanStub {
	t.Helper()
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		m[s.Name] = s
	}
	return m
}

// The spans carry the times and ids recorded on the request path, not the
// time they were built.
func TestBuiltFromRecord(t *testing.T) {
	tr, exp := newTest(t, false)
	began := time.Now().Add(-time.Second)
	r := tr.Start(headers{}, began, "req-1", "openai", "/v1/chat/completions", request())
	admitted := began.Add(10 * time.Millisecond)
	r.Admission(admitted, nil)
	ctx := r.Context(context.Background())
	_, sp := StartLayer(ctx, "pii", "on_request")
	sp.EndLayer("")
	sc := r.SpanContext()
	r.End(outcome())
	time.Sleep(5 * time.Millisecond) // built later: its timestamps must not move
	spans := builtSpans(t, tr, exp)

	root := spans["chat gpt-4o"]
	if root.SpanContext.TraceID() != sc.TraceID() || root.SpanContext.SpanID() != sc.SpanID() {
		t.Fatalf("request span %s/%s, Start said %s/%s", root.SpanContext.TraceID(), root.SpanContext.SpanID(), sc.TraceID(), sc.SpanID())
	}
	if v, _ := root.Resource.Set().Value("service.name"); v.AsString() != "bardo" || root.InstrumentationScope.Name != ScopeName ||
		root.ChildSpanCount != 2 || !root.SpanContext.IsSampled() {
		t.Errorf("resource %v, scope %q, %d children, sampled %v", root.Resource, root.InstrumentationScope.Name,
			root.ChildSpanCount, root.SpanContext.IsSampled())
	}
	if !root.StartTime.Equal(began) {
		t.Errorf("request span starts %v, began %v", root.StartTime, began)
	}
	if adm := spans["bardo.admission"]; !adm.StartTime.Equal(admitted) || adm.EndTime.After(root.EndTime) ||
		adm.Parent.SpanID() != sc.SpanID() {
		t.Errorf("admission %v..%v under %s; request %v..%v", adm.StartTime, adm.EndTime, adm.Parent.SpanID(), root.StartTime, root.EndTime)
	}
	pii := spans["bardo.layer pii"]
	if pii.StartTime.Before(admitted) || pii.EndTime.Before(pii.StartTime) || pii.EndTime.After(root.EndTime) {
		t.Errorf("layer %v..%v; request %v..%v", pii.StartTime, pii.EndTime, root.StartTime, root.EndTime)
	}
	if root.EndTime.After(time.Now().Add(-5 * time.Millisecond)) {
		t.Errorf("request span ends %v: when built, not when it settled", root.EndTime)
	}
}

// A span open at the settlement ends with the request; one started after
// it (a context that outlived the request) is not recorded; hooks on two
// goroutines at once are safe (run with -race).
func TestLateAndConcurrentHooks(t *testing.T) {
	tr, exp := newTest(t, false)
	r := tr.Start(headers{}, time.Now(), "req-1", "openai", "/v1/chat/completions", request())
	ctx := r.Context(context.Background())
	var wg sync.WaitGroup
	for _, l := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				_, sp := StartLayer(ctx, l, "on_stream")
				sp.EndLayer("")
			}
		}()
	}
	wg.Wait()
	_, open := StartLayer(ctx, "open", "on_response")
	r.End(outcome())
	open.EndLayer("late")
	if _, late := StartLayer(ctx, "late", "on_response"); late.s != nil {
		t.Fatal("a span started after the settlement was recorded")
	}
	got := builtSpans(t, tr, exp)
	if _, ok := got["bardo.layer late"]; ok {
		t.Error("late span exported")
	}
	o, root := got["bardo.layer open"], got["chat gpt-4o"]
	if !o.EndTime.Equal(root.EndTime) || o.Status.Description != "" {
		t.Errorf("open span ends %v (%q), request %v", o.EndTime, o.Status.Description, root.EndTime)
	}
	if n := len(exp.GetSpans()); n != 1+40+1 {
		t.Errorf("%d spans, want 42", n)
	}
}

// Past the builder's bound a settled request's spans are dropped and
// counted (bardo_trace_spans_dropped_total), as are spans past the
// batcher's.
func TestDroppedCounted(t *testing.T) {
	var mu sync.Mutex
	dropped := 0
	count := func(n int) { mu.Lock(); dropped += n; mu.Unlock() }
	tr, err := newTracer(Config{Exporter: discard{}, SampleRatio: 1, Dropped: count}) // no builder: nothing drains
	if err != nil {
		t.Fatal(err)
	}
	defer tr.bat.Shutdown(context.Background())
	req, o := request(), outcome()
	for range maxPending + 2 {
		simulateShipped(tr, headers{}, req, o) // 16 spans each
	}
	if len(tr.pending) != maxPending || dropped != 2*16 {
		t.Fatalf("pending %d, dropped %d spans; want %d, 32", len(tr.pending), dropped, maxPending)
	}

	stalled := &batcher{exp: discard{}, interval: time.Hour, max: 1, kick: make(chan struct{}, 1), flushed: make(chan struct{}), dropped: count}
	stub := tracetest.SpanStub{SpanContext: oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
		TraceID: newTraceID(), SpanID: newSpanID(), TraceFlags: oteltrace.FlagsSampled})}
	for range 5 {
		stalled.OnEnd(stub.Snapshot())
	}
	if dropped != 2*16+1 {
		t.Fatalf("dropped %d after the batcher's bound, want 33", dropped)
	}
}
