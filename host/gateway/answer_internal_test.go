package gateway

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/wire"
)

// A panic while a replayed stream is written must cost that stream, not the
// process: fasthttp runs stream writers on goroutines of their own, outside
// the server's recover. The caller gets an error event and the request's
// holds are released. (A nil pipeline makes the stream phase panic.)
func TestStreamWriterPanicIsContained(t *testing.T) {
	var logged strings.Builder
	g := &Gateway{Log: slog.New(slog.NewTextHandler(&logged, nil))}
	var ctx fasthttp.RequestCtx
	o := &Outcome{}
	x := &pipeline.Exchange{Meta: wire.Meta{RequestID: "req_panic", Dialect: wire.DialectOpenAI, Stream: true}, Req: &wire.Request{Model: "m"}}
	cancelled, released := false, false
	held := &holds{g: g, o: o, x: x, cancel: func() { cancelled = true }, release: func() { released = true }}
	var settled []Settlement
	g.SetObserver(observerFunc(func(s Settlement) { settled = append(settled, s) }))
	resp := &wire.Response{Content: []wire.Block{{Type: wire.BlockText, Text: "a cached answer"}}}
	g.answerLocal(o, context.Background(), held, nil, x, resp)
	writeOutcome(&ctx, x.Meta.Dialect, o)
	body, err := io.ReadAll(ctx.Response.BodyStream())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body), "internal error") || !cancelled || !released {
		t.Fatalf("body %q, holds cancelled=%v released=%v", body, cancelled, released)
	}
	if len(settled) != 1 || settled[0].StreamEnd != StreamBroken {
		t.Fatalf("settled %+v", settled)
	}
	if !strings.Contains(logged.String(), "panic writing a stream") {
		t.Fatalf("the panic was not logged: %s", logged.String())
	}
}

type observerFunc func(Settlement)

func (f observerFunc) Settled(s Settlement) { f(s) }
