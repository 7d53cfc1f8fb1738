package trace

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/bardoinference/bardo/sdk/wire"
)

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
//
// The request's trace and span ids are drawn here (as the SDK's default
// generator draws them) and the sampler decides here, so both are known
// for the whole request; the spans themselves are built after it settles.
func (t *Tracer) Start(h Header, began time.Time, requestID, dialect, endpoint string, req *wire.Request) *Request {
	if t == nil {
		return nil
	}
	ctx := context.Background()
	if h != nil {
		ctx = t.prop.Extract(ctx, carrier{h})
	}
	parent := oteltrace.SpanContextFromContext(ctx)
	tid := parent.TraceID()
	if !tid.IsValid() {
		tid = newTraceID()
	}
	res := t.sampler.ShouldSample(sdktrace.SamplingParameters{ParentContext: ctx, TraceID: tid, Kind: oteltrace.SpanKindServer})
	if res.Decision != sdktrace.RecordAndSample {
		return nil // only sampled spans are exported (the batcher's rule)
	}
	r := &Request{t: t, began: began, traceID: tid, parent: parent,
		model: req.Model, requestID: requestID, dialect: dialect, endpoint: endpoint, stream: req.Stream, params: req.Params}
	r.root = span{r: r, id: newSpanID(), kind: kindRequest}
	r.req = req
	r.layers = r.layerBuf[:0]
	r.spans = r.spanBuf[:0]
	return r
}

// Request is one traced request's record, written by its hooks and read by
// the builder once the request has settled (End). Every method of a nil
// *Request does nothing.
//
// It is not pooled: a context carrying one of its spans may outlive the
// request (a layer's background work), and a recycled record would take
// that late span into another request's trace. One allocation of ~4 KB
// per traced request is the price.
type Request struct {
	t       *Tracer
	began   time.Time
	traceID oteltrace.TraceID
	parent  oteltrace.SpanContext // the caller's (remote), when continued
	root    span                  // the request's span

	// At Start (the model as asked: a budget downgrade changes req.Model
	// later).
	model, requestID, dialect, endpoint string
	stream                              bool
	params                              wire.Params

	req *wire.Request // what went upstream, by the end (layers patch it in place)

	mu       sync.Mutex // the hooks may run on a stream's writer too
	ended    bool       // settled: later hooks record nothing
	spans    []*span    // child spans, in start order (a parent before its children)
	spanBuf  [16]*span
	arena    [16]span // the first children's storage: no allocation for them
	layers   []string // layer calls' names, in order, each once
	layerBuf [12]string

	// At End.
	out         Outcome
	usage       wire.Usage
	hasUsage    bool
	inMessages  string // capture_content: built at End, the request may be reused after
	outMessages string
	tried       []string
	degraded    []string
}

// span kinds.
const (
	kindRequest uint8 = iota
	kindAdmission
	kindRoute
	kindLayer
	kindAttempt
)

// span is one span's record: its id, parent, times (since the request
// began, monotonic) and the few fields its kind carries.
type span struct {
	r          *Request
	id         oteltrace.SpanID
	parent     *span // nil: the request's span
	idx        int32 // in r.spans
	kind       uint8
	closed     bool
	failed     bool // admission refused, or no route
	transient  bool
	try        int32
	status     int64         // http.response.status_code (0: none)
	start, end time.Duration // since r.began
	name       string        // a layer's name; an attempt's model
	op         string        // a layer's op; the route's mode
	provider   string        // an attempt's
	failure    string        // error.type ("": none)
}

type requestKey struct{}

// Context returns parent carrying r's span (for the layers' and the
// failover loop's child spans); parent itself when r is nil.
func (r *Request) Context(parent context.Context) context.Context {
	if r == nil {
		return parent
	}
	return context.WithValue(parent, requestKey{}, &r.root)
}

func fromContext(ctx context.Context) *span {
	s, _ := ctx.Value(requestKey{}).(*span)
	return s
}

// child records the start of a span under parent; nil once the request
// has settled. Called with r.mu held.
func (r *Request) child(parent *span, kind uint8, start time.Duration) *span {
	if r.ended {
		return nil
	}
	var s *span
	if n := len(r.spans); n < len(r.arena) {
		s = &r.arena[n]
	} else {
		s = new(span)
	}
	*s = span{r: r, id: newSpanID(), idx: int32(len(r.spans)), parent: parent, kind: kind, start: start}
	r.spans = append(r.spans, s)
	return s
}

// Admission records the caller's admission, from began until now: the
// tenant is not recorded (an account id is the operator's business, not
// the trace backend's); a refusal's status and kind are.
func (r *Request) Admission(began time.Time, refused *wire.Error) {
	r.closed(kindAdmission, began, "", refused)
}

// Route records the routing decision, from began until now: how the
// request is routed (explicit: the model's providers in file order;
// otherwise the intent's source) and, when none can serve, why.
func (r *Request) Route(began time.Time, mode string, failed *wire.Error) {
	r.closed(kindRoute, began, mode, failed)
}

func (r *Request) closed(kind uint8, began time.Time, op string, failed *wire.Error) {
	if r == nil {
		return
	}
	end := time.Since(r.began)
	r.mu.Lock()
	if s := r.child(&r.root, kind, began.Sub(r.began)); s != nil {
		s.end, s.closed, s.op = end, true, op
		if failed != nil {
			s.failed, s.status, s.failure = true, failed.Status, failed.Kind
		}
	}
	r.mu.Unlock()
}

// Span is a child span in progress; the zero Span (not traced) does
// nothing.
type Span struct {
	s *span
}

// StartLayer starts the span of one call into a layer plugin, when ctx
// belongs to a traced request. op is the plugin export (on_request, …).
func StartLayer(ctx context.Context, layer, op string) (context.Context, Span) {
	p := fromContext(ctx)
	if p == nil {
		return ctx, Span{}
	}
	r := p.r
	at := time.Since(r.began)
	r.mu.Lock()
	s := r.child(p, kindLayer, at)
	if s != nil {
		s.name, s.op = layer, op
		if !containsString(r.layers, layer) {
			r.layers = append(r.layers, layer)
		}
	}
	r.mu.Unlock()
	if s == nil {
		return ctx, Span{}
	}
	return context.WithValue(ctx, requestKey{}, s), Span{s}
}

// EndLayer ends a layer call's span; failure is "" or what went wrong
// (error, timeout, trap, …), never the plugin's message.
func (s Span) EndLayer(failure string) {
	s.end(0, failure, false)
}

// StartAttempt starts the span of one upstream attempt (try counts from
// 1), a client span under the GenAI conventions.
func StartAttempt(ctx context.Context, provider, model string, try int) (context.Context, Span) {
	p := fromContext(ctx)
	if p == nil {
		return ctx, Span{}
	}
	r := p.r
	at := time.Since(r.began)
	r.mu.Lock()
	s := r.child(p, kindAttempt, at)
	if s != nil {
		s.provider, s.name, s.try = provider, model, int32(try)
	}
	r.mu.Unlock()
	if s == nil {
		return ctx, Span{}
	}
	return context.WithValue(ctx, requestKey{}, s), Span{s}
}

// EndAttempt ends an attempt's span: status is the upstream's HTTP status
// (0: none, the connection failed or the adapter answered itself), and a
// failure its canonical kind and whether another try may succeed.
func (s Span) EndAttempt(status int, failure string, transient bool) {
	s.end(int64(status), failure, transient)
}

func (s Span) end(status int64, failure string, transient bool) {
	if s.s == nil {
		return
	}
	r := s.s.r
	at := time.Since(r.began)
	r.mu.Lock()
	if !r.ended { // after the settlement the builder owns the record
		s.s.end, s.s.closed, s.s.status, s.s.failure, s.s.transient = at, true, status, failure, transient
	}
	r.mu.Unlock()
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

// End ends the request's span with its outcome (a stream's at its
// settlement) and hands the record to the builder. Calling it again does
// nothing. What o points at is copied: the caller may reuse it.
func (r *Request) End(o *Outcome) {
	if r == nil {
		return
	}
	end := time.Since(r.began)
	var in, out string
	if r.t.content {
		// Opt-in, and the request and answer may be reused once settled:
		// their JSON is made now.
		if r.req != nil {
			in = inputMessages(r.req)
		}
		if o.Response != nil {
			out = outputMessages(o.Response)
		}
	}
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return
	}
	r.ended = true
	r.root.end, r.root.closed = end, true
	r.out = *o
	if o.Usage != nil {
		r.usage, r.hasUsage = *o.Usage, true
	}
	if resp := o.Response; resp != nil {
		r.out.ResponseID, r.out.FinishReason = resp.ID, resp.StopReason
	}
	r.out.Usage, r.out.Response, r.req = nil, nil, nil
	if o.Err != nil {
		r.out.Err = &wire.Error{Status: o.Err.Status, Kind: o.Err.Kind} // the kind only, never the message
	}
	r.tried = append([]string(nil), o.Tried...)
	r.degraded = append([]string(nil), o.Degraded...)
	r.out.Tried, r.out.Degraded = nil, nil
	r.inMessages, r.outMessages = in, out
	r.mu.Unlock()
	r.t.settled(r)
}

// spanCount is how many spans r makes.
func (r *Request) spanCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return 1 + len(r.spans)
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

// newTraceID and newSpanID draw ids as the SDK's default generator does:
// random (math/rand/v2's per-thread ChaCha8), never all zero.
func newTraceID() (tid oteltrace.TraceID) {
	for !tid.IsValid() {
		binary.NativeEndian.PutUint64(tid[:8], rand.Uint64())
		binary.NativeEndian.PutUint64(tid[8:], rand.Uint64())
	}
	return tid
}

func newSpanID() (sid oteltrace.SpanID) {
	for !sid.IsValid() {
		binary.NativeEndian.PutUint64(sid[:], rand.Uint64())
	}
	return sid
}

// SpanContext is the request span's trace and span ids, known from Start
// (for a response header or a log line); the zero SpanContext when r is
// nil.
func (r *Request) SpanContext() oteltrace.SpanContext {
	if r == nil {
		return oteltrace.SpanContext{}
	}
	return oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: r.traceID, SpanID: r.root.id,
		TraceFlags: oteltrace.FlagsSampled, TraceState: r.parent.TraceState()})
}
