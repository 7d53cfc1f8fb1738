// Package trace exports the gateway's OpenTelemetry traces over OTLP/HTTP:
// one span per inference request under the GenAI semantic conventions,
// with child spans for admission, each layer call, the routing decision
// and each upstream attempt. It is off unless [telemetry] configures it
// (host/config); off, every hook is a nil check and allocates nothing.
//
// On, the request path only records: each hook takes a timestamp and
// writes a few typed fields into the request's Request (ids are drawn
// there, as the SDK would draw them). The OpenTelemetry spans are built
// from those records after the request settles, on the Tracer's
// goroutine (build.go), through the SDK (its sampler, resource, limits
// and processor) with the recorded ids and timestamps — the SDK's
// allocations and attribute handling cost CPU there, not latency here.
//
// The request's record rides its context (Context), so the hooks deeper
// in (host/pipeline's layer calls, host/gateway's failover loop, a layer's
// internal completion) find their parent there without a new parameter.
package trace

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Batching: spans leave every batchInterval, or as soon as batchSize have
// ended (the SDK's defaults: 5 s, 512); at most 4 × batchSize wait.
// Settled requests wait for the builder at most buildInterval, or until
// buildBatch of them are waiting; past maxPending more are dropped.
const (
	batchInterval = 5 * time.Second
	batchSize     = 512
	buildInterval = time.Second
	buildBatch    = 64
	maxPending    = 1024
)

// ScopeName is the instrumentation scope of the gateway's spans.
const ScopeName = "github.com/bardoinference/bardo/host/telemetry/trace"

// Config says where and how spans are exported.
type Config struct {
	// Endpoint is the OTLP/HTTP base URL; spans are posted to its
	// /v1/traces unless it names another path.
	Endpoint string
	// Headers go with every export (resolved secrets: never logged).
	Headers map[string]string
	// SampleRatio is the share of new traces kept (0..1); a caller's
	// sampled flag decides for a trace it continues.
	SampleRatio    float64
	ServiceName    string
	ServiceVersion string
	// CaptureContent puts the prompt and the answer on the request span.
	CaptureContent bool
	// Exporter replaces the OTLP/HTTP exporter (benchmarks, tests).
	Exporter sdktrace.SpanExporter
	// Dropped, when set, is told of spans dropped because the queues
	// were full (a collector too slow or down); it must not block.
	Dropped func(spans int)
}

// Tracer starts the spans of requests; a nil *Tracer traces nothing.
type Tracer struct {
	bat     *batcher
	res     *resource.Resource
	sampler sdktrace.Sampler
	prop    propagation.TraceContext
	content bool
	dropped func(int)

	mu      sync.Mutex
	pending []*Request // settled, waiting to be built

	kick     chan struct{}      // buildBatch requests wait
	flush    chan chan struct{} // build now, then close the channel
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// New builds a Tracer exporting in batches, in the background.
func New(cfg Config) (*Tracer, error) {
	t, err := newTracer(cfg)
	if err != nil {
		return nil, err
	}
	go t.run()
	return t, nil
}

// newTracer is New without the builder's goroutine (tests and benchmarks
// build in their own).
func newTracer(cfg Config) (*Tracer, error) {
	exp := cfg.Exporter
	if exp == nil {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, errors.New("trace: the endpoint must be an http(s) URL")
		}
		if u.Path == "" || u.Path == "/" {
			u.Path = "/v1/traces"
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(u.String())}
		if len(cfg.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
		}
		// New does not connect: a collector that is down costs dropped
		// batches (the SDK reports them through otel.Handle), never a
		// failed start or a slower request.
		if exp, err = otlptracehttp.New(context.Background(), opts...); err != nil {
			return nil, err
		}
	}
	name := cfg.ServiceName
	if name == "" {
		name = "bardo"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	sampler := sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))
	bat := newBatcher(exp, batchInterval, batchSize)
	bat.dropped = cfg.Dropped
	// As sdktrace.WithResource makes it: OTEL_RESOURCE_ATTRIBUTES and
	// OTEL_SERVICE_NAME under ours. NewSchemaless: no schema URL to
	// disagree with the environment's, which would fail the merge.
	res, err := resource.Merge(resource.Environment(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, fmt.Errorf("trace: resource: %w", err)
	}
	t := &Tracer{bat: bat, res: res, sampler: sampler, content: cfg.CaptureContent, dropped: cfg.Dropped,
		pending: make([]*Request, 0, buildBatch), kick: make(chan struct{}, 1), flush: make(chan chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}
	return t, nil
}

// Flush builds and exports every settled request's spans now.
func (t *Tracer) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	built := make(chan struct{})
	select {
	case t.flush <- built:
		select {
		case <-built:
		case <-ctx.Done():
			return ctx.Err()
		}
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return t.bat.ForceFlush(ctx)
}

// Shutdown builds what has settled, flushes and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.stopOnce.Do(func() { close(t.stop) })
	select {
	case <-t.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return t.bat.Shutdown(ctx)
}

// settled queues r for the builder; it never blocks, and wakes the builder
// only when a batch is waiting (a wake-up per request would cost the
// loaded machine more than the building, as the batcher found for spans).
func (t *Tracer) settled(r *Request) {
	t.mu.Lock()
	if len(t.pending) >= maxPending {
		t.mu.Unlock()
		t.drop(r.spanCount())
		return
	}
	t.pending = append(t.pending, r)
	full := len(t.pending) == buildBatch
	t.mu.Unlock()
	if full {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
}

func (t *Tracer) drop(spans int) {
	if t.dropped != nil && spans > 0 {
		t.dropped(spans)
	}
}

// run is the builder: it turns settled requests into spans every
// buildInterval, when a batch waits, on a flush, and at the stop.
func (t *Tracer) run() {
	defer close(t.done)
	tick := time.NewTicker(buildInterval)
	defer tick.Stop()
	var b builder
	for {
		select {
		case <-t.stop:
			t.buildPending(&b)
			return
		case built := <-t.flush:
			t.buildPending(&b)
			close(built)
		case <-tick.C:
			t.buildPending(&b)
		case <-t.kick:
			t.buildPending(&b)
		}
	}
}

func (t *Tracer) buildPending(b *builder) {
	t.mu.Lock()
	rs := t.pending
	t.pending = b.spare[:0] // two buffers, swapped: no allocation per round
	t.mu.Unlock()
	for i, r := range rs {
		b.build(t, r)
		rs[i] = nil
	}
	b.spare = rs[:0]
}
