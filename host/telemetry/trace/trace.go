// Package trace exports the gateway's OpenTelemetry traces over OTLP/HTTP:
// one span per inference request under the GenAI semantic conventions,
// with child spans for admission, each layer call, the routing decision
// and each upstream attempt. It is off unless [telemetry] configures it
// (host/config); off, every hook is a nil check and allocates nothing.
//
// The request's span rides its context (Context), so the hooks deeper in
// (host/pipeline's layer calls, host/gateway's failover loop, a layer's
// internal completion) find their parent there without a new parameter.
package trace

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Batching: spans leave every batchInterval, or as soon as batchSize have
// ended (the SDK's defaults: 5 s, 512); at most 4 × batchSize wait.
const (
	batchInterval = 5 * time.Second
	batchSize     = 512
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
}

// Tracer starts the spans of requests; a nil *Tracer traces nothing.
type Tracer struct {
	tp      *sdktrace.TracerProvider
	tracer  oteltrace.Tracer
	prop    propagation.TraceContext
	content bool
}

// New builds a Tracer exporting in batches, in the background.
func New(cfg Config) (*Tracer, error) {
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
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSpanProcessor(newBatcher(exp, batchInterval, batchSize)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
		// NewSchemaless: no schema URL to disagree with the SDK's default
		// resource, which would fail the merge.
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	return &Tracer{tp: tp, tracer: tp.Tracer(ScopeName), content: cfg.CaptureContent}, nil
}

// Flush exports every ended span now.
func (t *Tracer) Flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// Shutdown flushes and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Header reads a caller's request headers (gateway.Header fits).
type Header interface {
	Peek(name string) []byte
}

// carrier reads the W3C trace context from a caller's headers.
type carrier struct{ h Header }

func (c carrier) Get(key string) string { return string(c.h.Peek(key)) }
func (c carrier) Set(string, string)    {}
func (c carrier) Keys() []string        { return []string{"traceparent", "tracestate"} }

// Start is the moment a request is known to the engine: the caller's
// traceparent is continued, else a trace begins. began is when the front
// took the request. nil: not traced (tracing off, or not sampled).
func (t *Tracer) Start(h Header, began time.Time, requestID, dialect, endpoint string, req *wire.Request) *Request {
	if t == nil {
		return nil
	}
	ctx := context.Background()
	if h != nil {
		ctx = t.prop.Extract(ctx, carrier{h})
	}
	attrs := make([]attribute.KeyValue, 0, 12)
	attrs = append(attrs,
		GenAIOperationName.String("chat"),
		GenAIRequestModel.String(req.Model),
		BardoRequestID.String(requestID),
		BardoDialect.String(dialect),
		attribute.String("url.path", endpoint),
		BardoStream.Bool(req.Stream),
	)
	ps := &req.Params
	if ps.Set&wire.HasMaxTokens != 0 {
		attrs = append(attrs, GenAIRequestMaxTokens.Int64(ps.MaxTokens))
	}
	if ps.Set&wire.HasTemperature != 0 {
		attrs = append(attrs, GenAIRequestTemperature.Float64(ps.Temperature))
	}
	if ps.Set&wire.HasTopP != 0 {
		attrs = append(attrs, GenAIRequestTopP.Float64(ps.TopP))
	}
	ctx, span := t.tracer.Start(ctx, "chat "+req.Model, oteltrace.WithSpanKind(oteltrace.SpanKindServer),
		oteltrace.WithTimestamp(began), oteltrace.WithAttributes(attrs...))
	if !span.IsRecording() {
		return nil
	}
	r := &Request{t: t, span: span, req: req}
	r.ctx = context.WithValue(ctx, requestKey{}, r)
	return r
}

// Request is one traced request; every method of a nil *Request does
// nothing.
type Request struct {
	t    *Tracer
	span oteltrace.Span
	ctx  context.Context // the span and r, for child spans
	req  *wire.Request   // what went upstream, by the end (layers patch it in place)

	mu     sync.Mutex
	layers []string // layer calls' names, in order, each once
}

type requestKey struct{}

// Context returns parent carrying r's span (for the layers' and the
// failover loop's child spans); parent itself when r is nil.
func (r *Request) Context(parent context.Context) context.Context {
	if r == nil {
		return parent
	}
	return context.WithValue(oteltrace.ContextWithSpan(parent, r.span), requestKey{}, r)
}

func fromContext(ctx context.Context) *Request {
	r, _ := ctx.Value(requestKey{}).(*Request)
	return r
}

// Admission records the caller's admission, from began until now: the
// tenant is not recorded (an account id is the operator's business, not
// the trace backend's); a refusal's status and kind are.
func (r *Request) Admission(began time.Time, refused *wire.Error) {
	if r == nil {
		return
	}
	_, sp := r.t.tracer.Start(r.ctx, "bardo.admission", oteltrace.WithTimestamp(began))
	if refused != nil {
		sp.SetAttributes(attribute.Int64("http.response.status_code", refused.Status), attribute.String("error.type", refused.Kind))
		sp.SetStatus(codes.Error, refused.Kind)
	}
	sp.End()
}

// Route records the routing decision, from began until now: how the
// request is routed (explicit: the model's providers in file order;
// otherwise the intent's source) and, when none can serve, why.
func (r *Request) Route(began time.Time, mode string, failed *wire.Error) {
	if r == nil {
		return
	}
	_, sp := r.t.tracer.Start(r.ctx, "bardo.route", oteltrace.WithTimestamp(began),
		oteltrace.WithAttributes(BardoRouteMode.String(mode)))
	if failed != nil {
		sp.SetAttributes(attribute.Int64("http.response.status_code", failed.Status), attribute.String("error.type", failed.Kind))
		sp.SetStatus(codes.Error, failed.Kind)
	}
	sp.End()
}

// Span is a child span in progress; the zero Span (not traced) does
// nothing.
type Span struct {
	s oteltrace.Span
}

// StartLayer starts the span of one call into a layer plugin, when ctx
// belongs to a traced request. op is the plugin export (on_request, …).
func StartLayer(ctx context.Context, layer, op string) (context.Context, Span) {
	r := fromContext(ctx)
	if r == nil {
		return ctx, Span{}
	}
	r.mu.Lock()
	if !containsString(r.layers, layer) {
		r.layers = append(r.layers, layer)
	}
	r.mu.Unlock()
	ctx, sp := r.t.tracer.Start(ctx, "bardo.layer "+layer,
		oteltrace.WithAttributes(BardoLayerName.String(layer), BardoLayerOp.String(op)))
	return ctx, Span{sp}
}

// EndLayer ends a layer call's span; failure is "" or what went wrong
// (error, timeout, trap, …), never the plugin's message.
func (s Span) EndLayer(failure string) {
	if s.s == nil {
		return
	}
	if failure != "" {
		s.s.SetAttributes(attribute.String("error.type", failure))
		s.s.SetStatus(codes.Error, failure)
	}
	s.s.End()
}

// StartAttempt starts the span of one upstream attempt (try counts from
// 1), a client span under the GenAI conventions.
func StartAttempt(ctx context.Context, provider, model string, try int) (context.Context, Span) {
	r := fromContext(ctx)
	if r == nil {
		return ctx, Span{}
	}
	ctx, sp := r.t.tracer.Start(ctx, "chat "+model, oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(GenAIOperationName.String("chat"), GenAIProviderName.String(provider),
			GenAIRequestModel.String(model), BardoAttemptTry.Int(try)))
	return ctx, Span{sp}
}

// EndAttempt ends an attempt's span: status is the upstream's HTTP status
// (0: none, the connection failed or the adapter answered itself), and a
// failure its canonical kind and whether another try may succeed.
func (s Span) EndAttempt(status int, failure string, transient bool) {
	if s.s == nil {
		return
	}
	if status != 0 {
		s.s.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if failure != "" {
		s.s.SetAttributes(attribute.String("error.type", failure), BardoAttemptTransient.Bool(transient))
		s.s.SetStatus(codes.Error, failure)
	}
	s.s.End()
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// Outcome is what a request came to, at its settlement.
type Outcome struct {
	Status    int
	Path      string // upstream, passthrough, layer, local, stale, error
	Provider  string
	Model     string
	Cache     string // X-Bardo-Cache
	Streamed  bool
	StreamEnd string
	Usage     *wire.Usage
	Response  *wire.Response // a decoded answer (id, finish reason, content), nil otherwise
	// A decoded stream's id and finish reason (Response is nil).
	ResponseID, FinishReason string
	Err                      *wire.Error
	Tried                    []string // failed attempts (X-Bardo-Fallback)
	Degraded                 []string // X-Bardo-Degraded
	// Billed: the tab closed with these figures, in micro-USD.
	Billed             bool
	CostMicros         int64
	ChargeMicros       int64
	SavingsMicros      int64
	FirstByte, Latency time.Duration
}

// End ends the request's span with its outcome; a stream's at its
// settlement. Calling it again does nothing.
func (r *Request) End(o *Outcome) {
	if r == nil || !r.span.IsRecording() {
		return
	}
	sp := r.span
	attrs := make([]attribute.KeyValue, 0, 24)
	attrs = append(attrs, attribute.Int("http.response.status_code", o.Status), BardoPath.String(o.Path))
	if o.Provider != "" {
		attrs = append(attrs, GenAIProviderName.String(o.Provider))
	}
	if o.Model != "" {
		attrs = append(attrs, GenAIResponseModel.String(o.Model))
	}
	if u := o.Usage; u != nil {
		attrs = append(attrs, GenAIUsageInputTokens.Int64(u.InputTokens), GenAIUsageOutputTokens.Int64(u.OutputTokens))
		if u.CacheReadTokens != 0 {
			attrs = append(attrs, GenAIUsageCacheReadInputTokens.Int64(u.CacheReadTokens))
		}
		if u.CacheWriteTokens != 0 {
			attrs = append(attrs, GenAIUsageCacheCreationInputTokens.Int64(u.CacheWriteTokens))
		}
	}
	id, finish := o.ResponseID, o.FinishReason
	if resp := o.Response; resp != nil {
		id, finish = resp.ID, resp.StopReason
	}
	if id != "" {
		attrs = append(attrs, GenAIResponseID.String(id))
	}
	if finish != "" {
		attrs = append(attrs, GenAIResponseFinishReasons.StringSlice([]string{finish}))
	}
	if o.Cache != "" {
		attrs = append(attrs, BardoCache.String(o.Cache))
	}
	if o.Streamed {
		attrs = append(attrs, BardoStreamEnd.String(o.StreamEnd))
		if o.FirstByte > 0 {
			attrs = append(attrs, BardoFirstByteMs.Float64(float64(o.FirstByte.Microseconds())/1000))
		}
	}
	if len(o.Tried) > 0 {
		attrs = append(attrs, BardoFailover.StringSlice(o.Tried))
	}
	if len(o.Degraded) > 0 {
		attrs = append(attrs, BardoDegraded.StringSlice(o.Degraded))
	}
	if o.Billed {
		attrs = append(attrs, BardoCostMicros.Int64(o.CostMicros), BardoChargeMicros.Int64(o.ChargeMicros),
			BardoSavingsMicros.Int64(o.SavingsMicros))
	}
	r.mu.Lock()
	if len(r.layers) > 0 {
		attrs = append(attrs, BardoLayers.StringSlice(r.layers))
	}
	r.mu.Unlock()
	if r.t.content {
		if r.req != nil {
			attrs = append(attrs, GenAIInputMessages.String(inputMessages(r.req)))
		}
		if o.Response != nil {
			attrs = append(attrs, GenAIOutputMessages.String(outputMessages(o.Response)))
		}
	}
	sp.SetAttributes(attrs...)
	if o.Err != nil {
		// The kind, not the message: an upstream's text may quote the
		// caller's prompt.
		sp.SetAttributes(attribute.String("error.type", errorType(o.Err)))
		sp.SetStatus(codes.Error, errorType(o.Err))
	} else if o.Streamed && o.StreamEnd != "" && o.StreamEnd != "ended" {
		sp.SetStatus(codes.Error, "stream "+o.StreamEnd)
	}
	sp.End()
}

func errorType(e *wire.Error) string {
	if e.Kind != "" {
		return e.Kind
	}
	return "http_" + strconv.FormatInt(e.Status, 10)
}

// Now is the time, for a child span's start; the zero time when r is nil
// (an untraced request does not read the clock for it).
func (r *Request) Now() time.Time {
	if r == nil {
		return time.Time{}
	}
	return time.Now()
}
