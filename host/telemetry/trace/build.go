package trace

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/bardoinference/bardo/sdk/wire"
)

// builder turns settled requests' records into SDK spans, on the Tracer's
// goroutine only: its scratch is reused from one request to the next.
type builder struct {
	spare []*Request
	ids   *presetID
	base  context.Context  // carries ids
	built []oteltrace.Span // r.spans' SDK spans, by index
}

// presetID is the ids the next span the builder starts takes: the ones
// drawn on the request path.
type presetID struct {
	trace oteltrace.TraceID
	span  oteltrace.SpanID
}

type presetKey struct{}

// presetIDs is the provider's sdktrace.IDGenerator: the ids the builder
// preset in the context, else random ones (as the SDK's default).
type presetIDs struct{}

func (presetIDs) NewIDs(ctx context.Context) (oteltrace.TraceID, oteltrace.SpanID) {
	if p, _ := ctx.Value(presetKey{}).(*presetID); p != nil && p.trace.IsValid() && p.span.IsValid() {
		return p.trace, p.span
	}
	return newTraceID(), newSpanID()
}

func (presetIDs) NewSpanID(ctx context.Context, _ oteltrace.TraceID) oteltrace.SpanID {
	if p, _ := ctx.Value(presetKey{}).(*presetID); p != nil && p.span.IsValid() {
		return p.span
	}
	return newSpanID()
}

// build starts and ends r's spans through the SDK, with r's ids and times.
func (b *builder) build(t *Tracer, r *Request) {
	if b.ids == nil {
		b.ids = &presetID{}
		b.base = context.WithValue(context.Background(), presetKey{}, b.ids)
	}
	b.ids.trace, b.ids.span = r.traceID, r.root.id
	ctx := b.base
	if r.parent.IsValid() {
		ctx = oteltrace.ContextWithRemoteSpanContext(ctx, r.parent)
	}
	attrs := make([]attribute.KeyValue, 0, 12)
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
	_, root := t.tracer.Start(ctx, "chat "+r.model, oteltrace.WithSpanKind(oteltrace.SpanKindServer),
		oteltrace.WithTimestamp(r.began), oteltrace.WithAttributes(attrs...))
	if !root.IsRecording() {
		return
	}
	b.built = b.built[:0]
	for _, s := range r.spans {
		parent := root
		if s.parent != nil && s.parent != &r.root {
			parent = b.built[s.parent.idx] // a parent starts, and is recorded, before its children
		}
		b.ids.span = s.id
		b.built = append(b.built, b.child(t, oteltrace.ContextWithSpan(b.base, parent), r, s))
	}
	clear(b.built) // no SDK span outlives its export through the scratch
	b.endRequest(t, r, root)
}

// child starts and ends one child span.
func (b *builder) child(t *Tracer, ctx context.Context, r *Request, s *span) oteltrace.Span {
	started := oteltrace.WithTimestamp(r.began.Add(s.start))
	var sp oteltrace.Span
	switch s.kind {
	case kindAdmission:
		_, sp = t.tracer.Start(ctx, "bardo.admission", started)
	case kindRoute:
		_, sp = t.tracer.Start(ctx, "bardo.route", started, oteltrace.WithAttributes(BardoRouteMode.String(s.op)))
	case kindLayer:
		_, sp = t.tracer.Start(ctx, "bardo.layer "+s.name, started,
			oteltrace.WithAttributes(BardoLayerName.String(s.name), BardoLayerOp.String(s.op)))
	default: // kindAttempt
		_, sp = t.tracer.Start(ctx, "chat "+s.name, started, oteltrace.WithSpanKind(oteltrace.SpanKindClient),
			oteltrace.WithAttributes(GenAIOperationName.String("chat"), GenAIProviderName.String(s.provider),
				GenAIRequestModel.String(s.name), BardoAttemptTry.Int(int(s.try))))
	}
	switch s.kind {
	case kindAdmission, kindRoute:
		if s.failed {
			sp.SetAttributes(attribute.Int64("http.response.status_code", s.status), attribute.String("error.type", s.failure))
			sp.SetStatus(codes.Error, s.failure)
		}
	case kindLayer:
		if s.failure != "" {
			sp.SetAttributes(attribute.String("error.type", s.failure))
			sp.SetStatus(codes.Error, s.failure)
		}
	case kindAttempt:
		if s.status != 0 {
			sp.SetAttributes(attribute.Int64("http.response.status_code", s.status))
		}
		if s.failure != "" {
			sp.SetAttributes(attribute.String("error.type", s.failure), BardoAttemptTransient.Bool(s.transient))
			sp.SetStatus(codes.Error, s.failure)
		}
	}
	end := s.end
	if !s.closed {
		end = r.root.end // still running at the settlement: it ends with the request
	}
	sp.End(oteltrace.WithTimestamp(r.began.Add(end)))
	return sp
}

// endRequest sets the request span's outcome and ends it.
func (b *builder) endRequest(t *Tracer, r *Request, sp oteltrace.Span) {
	o := &r.out
	attrs := make([]attribute.KeyValue, 0, 24)
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
	sp.SetAttributes(attrs...)
	if o.Err != nil {
		// The kind, not the message: an upstream's text may quote the
		// caller's prompt.
		sp.SetAttributes(attribute.String("error.type", errorType(o.Err)))
		sp.SetStatus(codes.Error, errorType(o.Err))
	} else if o.Streamed && o.StreamEnd != "" && o.StreamEnd != "ended" {
		sp.SetStatus(codes.Error, "stream "+o.StreamEnd)
	}
	sp.End(oteltrace.WithTimestamp(r.began.Add(r.root.end)))
}
