package trace

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/bardoinference/bardo/sdk/wire"
)

// builder turns settled requests' records into finished spans and hands
// them to the batcher, on the Tracer's goroutine only (its scratch is
// reused from one request to the next).
//
// The spans are made as sdktrace.ReadOnlySpan values (tracetest.SpanStub's
// Snapshot, the SDK's own constructor of one), not started and ended
// through a Tracer: the sampler already decided at Start, the ids and
// times are the record's, and the SDK's live-span machinery (a mutex, an
// attribute map, limits, a processor call per span) would cost ~4× the CPU
// for the same exported bytes. What it did that matters is done here: the
// sampled flag and the parent's tracestate on every span, the resource
// (environment merged), the instrumentation scope, the child counts.
type builder struct {
	spare    []*Request
	children []int // per r.spans index, then the request's at the end
}

var scope = instrumentation.Scope{Name: ScopeName}

// build hands r's spans, children first, to the batcher.
func (b *builder) build(t *Tracer, r *Request) {
	flags := r.parent.TraceFlags() | oteltrace.FlagsSampled
	ts := r.parent.TraceState()
	sc := func(id oteltrace.SpanID) oteltrace.SpanContext {
		return oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: r.traceID, SpanID: id, TraceFlags: flags, TraceState: ts})
	}
	rootSC := sc(r.root.id)
	b.children = b.children[:0]
	for range len(r.spans) + 1 {
		b.children = append(b.children, 0)
	}
	rootIdx := len(r.spans)
	for _, s := range r.spans {
		if s.parent == nil || s.parent == &r.root {
			b.children[rootIdx]++
		} else {
			b.children[s.parent.idx]++
		}
	}
	for _, s := range r.spans {
		parent := rootSC
		if s.parent != nil && s.parent != &r.root {
			parent = sc(s.parent.id)
		}
		stub := b.child(r, s)
		stub.SpanContext, stub.Parent = sc(s.id), parent
		stub.ChildSpanCount = b.children[s.idx]
		stub.Resource, stub.InstrumentationScope = t.res, scope
		t.bat.OnEnd(stub.Snapshot())
	}
	stub := b.request(r)
	stub.SpanContext, stub.Parent = rootSC, r.parent
	stub.ChildSpanCount = b.children[rootIdx]
	stub.Resource, stub.InstrumentationScope = t.res, scope
	t.bat.OnEnd(stub.Snapshot())
}

// child is one child span's name, kind, times, attributes and status.
func (b *builder) child(r *Request, s *span) tracetest.SpanStub {
	end := s.end
	if !s.closed {
		end = r.root.end // still running at the settlement: it ends with the request
	}
	st := tracetest.SpanStub{SpanKind: oteltrace.SpanKindInternal, StartTime: r.began.Add(s.start), EndTime: r.began.Add(end)}
	var attrs []attribute.KeyValue
	switch s.kind {
	case kindAdmission, kindRoute:
		st.Name = "bardo.admission"
		if s.kind == kindRoute {
			st.Name = "bardo.route"
			attrs = append(make([]attribute.KeyValue, 0, 3), BardoRouteMode.String(s.op))
		}
		if s.failed {
			attrs = append(attrs, attribute.Int64("http.response.status_code", s.status), attribute.String("error.type", s.failure))
			st.Status = sdktrace.Status{Code: codes.Error, Description: s.failure}
		}
	case kindLayer:
		st.Name = "bardo.layer " + s.name
		attrs = append(make([]attribute.KeyValue, 0, 3), BardoLayerName.String(s.name), BardoLayerOp.String(s.op))
		if s.failure != "" {
			attrs = append(attrs, attribute.String("error.type", s.failure))
			st.Status = sdktrace.Status{Code: codes.Error, Description: s.failure}
		}
	default: // kindAttempt
		st.Name, st.SpanKind = "chat "+s.name, oteltrace.SpanKindClient
		attrs = append(make([]attribute.KeyValue, 0, 7), GenAIOperationName.String("chat"), GenAIProviderName.String(s.provider),
			GenAIRequestModel.String(s.name), BardoAttemptTry.Int(int(s.try)))
		if s.status != 0 {
			attrs = append(attrs, attribute.Int64("http.response.status_code", s.status))
		}
		if s.failure != "" {
			attrs = append(attrs, attribute.String("error.type", s.failure), BardoAttemptTransient.Bool(s.transient))
			st.Status = sdktrace.Status{Code: codes.Error, Description: s.failure}
		}
	}
	st.Attributes = attrs
	return st
}

// request is the request span: what was asked, at Start, then what it
// came to, at End.
func (b *builder) request(r *Request) tracetest.SpanStub {
	attrs := make([]attribute.KeyValue, 0, 32)
	attrs = append(attrs,
		GenAIOperationName.String("chat"),
		GenAIRequestModel.String(r.model),
		BardoRequestID.String(r.requestID),
		BardoDialect.String(r.dialect),
		attribute.String("url.path", r.endpoint),
		BardoStream.Bool(r.stream),
	)
	ps := &r.params
	if ps.Set&wire.HasMaxTokens != 0 {
		attrs = append(attrs, GenAIRequestMaxTokens.Int64(ps.MaxTokens))
	}
	if ps.Set&wire.HasTemperature != 0 {
		attrs = append(attrs, GenAIRequestTemperature.Float64(ps.Temperature))
	}
	if ps.Set&wire.HasTopP != 0 {
		attrs = append(attrs, GenAIRequestTopP.Float64(ps.TopP))
	}
	o := &r.out
	attrs = append(attrs, attribute.Int("http.response.status_code", o.Status), BardoPath.String(o.Path))
	if o.Provider != "" {
		attrs = append(attrs, GenAIProviderName.String(o.Provider))
	}
	if o.Model != "" {
		attrs = append(attrs, GenAIResponseModel.String(o.Model))
	}
	if r.hasUsage {
		u := &r.usage
		attrs = append(attrs, GenAIUsageInputTokens.Int64(u.InputTokens), GenAIUsageOutputTokens.Int64(u.OutputTokens))
		if u.CacheReadTokens != 0 {
			attrs = append(attrs, GenAIUsageCacheReadInputTokens.Int64(u.CacheReadTokens))
		}
		if u.CacheWriteTokens != 0 {
			attrs = append(attrs, GenAIUsageCacheCreationInputTokens.Int64(u.CacheWriteTokens))
		}
	}
	if o.ResponseID != "" {
		attrs = append(attrs, GenAIResponseID.String(o.ResponseID))
	}
	if o.FinishReason != "" {
		attrs = append(attrs, GenAIResponseFinishReasons.StringSlice([]string{o.FinishReason}))
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
	if len(r.tried) > 0 {
		attrs = append(attrs, BardoFailover.StringSlice(r.tried))
	}
	if len(r.degraded) > 0 {
		attrs = append(attrs, BardoDegraded.StringSlice(r.degraded))
	}
	if o.Billed {
		attrs = append(attrs, BardoCostMicros.Int64(o.CostMicros), BardoChargeMicros.Int64(o.ChargeMicros),
			BardoSavingsMicros.Int64(o.SavingsMicros))
	}
	if len(r.layers) > 0 {
		attrs = append(attrs, BardoLayers.StringSlice(r.layers))
	}
	if r.inMessages != "" {
		attrs = append(attrs, GenAIInputMessages.String(r.inMessages))
	}
	if r.outMessages != "" {
		attrs = append(attrs, GenAIOutputMessages.String(r.outMessages))
	}
	st := tracetest.SpanStub{Name: "chat " + r.model, SpanKind: oteltrace.SpanKindServer,
		StartTime: r.began, EndTime: r.began.Add(r.root.end)}
	if o.Err != nil {
		// The kind, not the message: an upstream's text may quote the
		// caller's prompt.
		attrs = append(attrs, attribute.String("error.type", errorType(o.Err)))
		st.Status = sdktrace.Status{Code: codes.Error, Description: errorType(o.Err)}
	} else if o.Streamed && o.StreamEnd != "" && o.StreamEnd != "ended" {
		st.Status = sdktrace.Status{Code: codes.Error, Description: "stream " + o.StreamEnd}
	}
	st.Attributes = attrs
	return st
}
