package trace

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/bardoinference/bardo/sdk/wire"
)

type headers map[string]string

func (h headers) Peek(k string) []byte { return []byte(h[k]) }

func request() *wire.Request {
	return &wire.Request{Model: "gpt-4o", Stream: false,
		Params:   wire.Params{Set: wire.HasMaxTokens, MaxTokens: 200},
		System:   []wire.Block{{Type: wire.BlockText, Text: "be brief"}},
		Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "my secret question"}}}}}
}

// simulate runs every hook one traced request passes, as the gateway does.
func simulate(t *Tracer, h Header, req *wire.Request, o *Outcome) {
	r := t.Start(h, time.Now(), "req-1", "openai", "/v1/chat/completions", req)
	adm := r.Now()
	r.Admission(adm, nil)
	ctx := r.Context(context.Background())
	for _, l := range []string{"pii", "hashcache"} {
		_, sp := StartLayer(ctx, l, "on_request")
		sp.EndLayer("")
	}
	planned := r.Now()
	r.Route(planned, "explicit", nil)
	_, a := StartAttempt(ctx, "up", "gpt-4o", 1)
	a.EndAttempt(500, wire.ErrUpstream, true)
	actx, a := StartAttempt(ctx, "backup", "gpt-4o", 1)
	// A layer's internal completion inside a layer call: its attempt is
	// the layer's child.
	lctx, sp := StartLayer(actx, "compress", "on_request")
	_, inner := StartAttempt(lctx, "up", "gpt-4o-mini", 1)
	inner.EndAttempt(200, "", false)
	sp.EndLayer("timeout")
	a.EndAttempt(200, "", false)
	r.End(o)
}

// outcome is what the gateway's settlement hands End (built only when the
// request is traced).
func outcome() *Outcome {
	resp := &wire.Response{ID: "chatcmpl-1", Model: "gpt-4o", StopReason: "end_turn",
		Content: []wire.Block{{Type: wire.BlockText, Text: "the secret answer"}}}
	return &Outcome{Status: 200, Path: "upstream", Provider: "backup", Model: "gpt-4o-2024",
		Usage: &wire.Usage{InputTokens: 10, OutputTokens: 5, CacheReadTokens: 3}, Response: resp,
		Tried: []string{"up:500"}, Cache: "miss", Billed: true, CostMicros: 120, ChargeMicros: 138, SavingsMicros: -18}
}

func newTest(t *testing.T, content bool) (*Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(Config{Exporter: exp, SampleRatio: 1, CaptureContent: content})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestRequestSpans(t *testing.T) {
	tr, exp := newTest(t, false)
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	simulate(tr, headers{"traceparent": "00-" + traceID + "-" + parentID + "-01"}, request(), outcome())
	if err := tr.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	root := byName["chat gpt-4o"]
	var req tracetest.SpanStub
	for _, s := range root {
		if s.SpanKind == oteltrace.SpanKindServer {
			req = s
		}
	}
	if req.Name == "" {
		t.Fatalf("no request span in %d spans", len(spans))
	}
	// The caller's trace is continued.
	if req.SpanContext.TraceID().String() != traceID || req.Parent.SpanID().String() != parentID {
		t.Fatalf("not continued: trace %s parent %s", req.SpanContext.TraceID(), req.Parent.SpanID())
	}
	a := attrs(req)
	for k, want := range map[attribute.Key]any{
		GenAIOperationName: "chat", GenAIRequestModel: "gpt-4o", GenAIProviderName: "backup", GenAIResponseModel: "gpt-4o-2024",
		GenAIResponseID: "chatcmpl-1", GenAIUsageInputTokens: int64(10), GenAIUsageOutputTokens: int64(5),
		GenAIUsageCacheReadInputTokens: int64(3), GenAIRequestMaxTokens: int64(200), BardoCache: "miss",
		BardoChargeMicros: int64(138), BardoCostMicros: int64(120), BardoRequestID: "req-1",
	} {
		if got := a[k].AsInterface(); got != want {
			t.Errorf("%s = %v, want %v", k, got, want)
		}
	}
	if got := a[BardoLayers].AsStringSlice(); strings.Join(got, ",") != "pii,hashcache,compress" {
		t.Errorf("layers %v", got)
	}
	if got := a[GenAIResponseFinishReasons].AsStringSlice(); len(got) != 1 || got[0] != "end_turn" {
		t.Errorf("finish reasons %v", got)
	}
	if _, ok := a[GenAIInputMessages]; ok {
		t.Error("prompt captured with capture_content off")
	}
	// Children: admission, route, two layers, two attempts; the internal
	// completion's attempt under its layer, which is under the attempt
	// whose context it ran in.
	parentOf := func(s tracetest.SpanStub) string { return s.Parent.SpanID().String() }
	reqID := req.SpanContext.SpanID().String()
	for _, n := range []string{"bardo.admission", "bardo.route", "bardo.layer pii", "bardo.layer hashcache"} {
		if len(byName[n]) != 1 || parentOf(byName[n][0]) != reqID {
			t.Errorf("%s: %d spans, not the request's child", n, len(byName[n]))
		}
	}
	var attempts []tracetest.SpanStub
	for _, s := range spans {
		if s.SpanKind == oteltrace.SpanKindClient && parentOf(s) == reqID {
			attempts = append(attempts, s)
		}
	}
	if len(attempts) != 2 || attrs(attempts[0])[attribute.Key("http.response.status_code")].AsInt64() != 500 ||
		attrs(attempts[0])[attribute.Key("error.type")].AsString() != wire.ErrUpstream || attrs(attempts[1])[GenAIProviderName].AsString() != "backup" {
		t.Errorf("attempts: %+v", attempts)
	}
	comp := byName["bardo.layer compress"]
	if len(comp) != 1 || parentOf(comp[0]) != attempts[1].SpanContext.SpanID().String() || attrs(comp[0])["error.type"].AsString() != "timeout" {
		t.Errorf("compress: %+v", comp)
	}
	inner := byName["chat gpt-4o-mini"]
	if len(inner) != 1 || parentOf(inner[0]) != comp[0].SpanContext.SpanID().String() {
		t.Errorf("internal completion attempt: %+v", inner)
	}
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != traceID {
			t.Errorf("%s: in trace %s", s.Name, s.SpanContext.TraceID())
		}
	}
}

func TestCaptureContent(t *testing.T) {
	tr, exp := newTest(t, true)
	simulate(tr, headers{}, request(), outcome())
	tr.Flush(context.Background())
	for _, s := range exp.GetSpans() {
		if s.SpanKind != oteltrace.SpanKindServer {
			continue
		}
		a := attrs(s)
		in, out := a[GenAIInputMessages].AsString(), a[GenAIOutputMessages].AsString()
		if !strings.Contains(in, `"role":"system"`) || !strings.Contains(in, "my secret question") ||
			!strings.Contains(out, "the secret answer") || !strings.Contains(out, `"finish_reason":"end_turn"`) {
			t.Fatalf("content: %s / %s", in, out)
		}
		return
	}
	t.Fatal("no request span")
}

// An unsampled request is not traced at all: no span, no child.
func TestNotSampled(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tr, err := New(Config{Exporter: exp, SampleRatio: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	if r := tr.Start(headers{}, time.Now(), "r", "openai", "/v1/chat/completions", request()); r != nil {
		t.Fatal("traced at ratio 0")
	}
	// A caller's sampled flag wins over the ratio (parent-based).
	h := headers{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if r := tr.Start(h, time.Now(), "r", "openai", "/v1/chat/completions", request()); r == nil {
		t.Fatal("the caller's sampled trace was dropped")
	}
}

// Off, the hooks allocate nothing (the brief's and the issue's "free when
// disabled").
func TestOffAllocatesNothing(t *testing.T) {
	var tr *Tracer
	req, h, o := request(), headers{}, outcome()
	if n := testing.AllocsPerRun(100, func() { simulate(tr, h, req, o) }); n != 0 {
		t.Fatalf("%v allocations per untraced request", n)
	}
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
