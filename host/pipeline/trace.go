package pipeline

import (
	"context"
	"errors"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/telemetry/trace"
	"github.com/bardoinference/bardo/sdk/plugin"
)

// call runs one export of layer l: every layer call of every phase passes
// here, so a traced request (host/telemetry/trace; its span rides ctx) gets
// one child span per call. Untraced, it is the plugin call alone.
func (x *Exchange) call(ctx context.Context, l *Layer, op plugin.Op, in []byte) ([]byte, error) {
	ctx, sp := trace.StartLayer(ctx, l.Spec.Name, opName(op))
	out, err := l.Plugin.Call(ctx, op, in, x.info())
	sp.EndLayer(callFailure(err))
	return out, err
}

// callInput is call with an input written into the guest in place.
func (x *Exchange) callInput(ctx context.Context, l *Layer, op plugin.Op, in sandbox.Input) ([]byte, error) {
	ctx, sp := trace.StartLayer(ctx, l.Spec.Name, opName(op))
	out, err := l.Plugin.CallInput(ctx, op, in, x.info())
	sp.EndLayer(callFailure(err))
	return out, err
}

// callRun runs the request phase of the layers ls (entries of one module,
// Layer.run) in one call (sandbox.RunRequest). A traced request still gets
// one span per layer; as the host sees no boundary between the hooks of a
// run, each span covers the whole run, and a layer's own time is its
// bardo_sandbox_call_seconds (measured by the guest). A failed run marks
// no span failed: its layers are called again one by one, each in a span
// of its own.
func (x *Exchange) callRun(ctx context.Context, ls []*Layer, in sandbox.Input, dst []sandbox.RunResult) ([]sandbox.RunResult, error) {
	var spans [16]trace.Span // untraced, each is the zero Span
	for i, l := range ls[:min(len(ls), len(spans))] {
		_, spans[i] = trace.StartLayer(ctx, l.Spec.Name, "on_request")
	}
	rs, err := sandbox.RunRequest(ctx, ls[0].runPlugins, in, x.info(), dst)
	endRunSpans(spans[:min(len(ls), len(spans))], rs, err)
	return rs, err
}

// callAnswerRun runs the on_response of the layers ls (entries of one
// module, answerRunOf) on the encoded LayerResponse in, in one call
// (sandbox.RunResponse), with spans as callRun's.
func (x *Exchange) callAnswerRun(ctx context.Context, ls []*Layer, in []byte, dst []sandbox.RunResult) ([]sandbox.RunResult, error) {
	var (
		spans [maxAnswerRun]trace.Span
		ps    = make([]*sandbox.Plugin, len(ls)) // the instance holds it during the call
	)
	for i, l := range ls {
		_, spans[i] = trace.StartLayer(ctx, l.Spec.Name, "on_response")
		ps[i] = l.Plugin
	}
	rs, err := sandbox.RunResponse(ctx, ps, in, x.info(), dst)
	endRunSpans(spans[:len(ls)], rs, err)
	return rs, err
}

// endRunSpans ends a run's spans: a hook's error marks its own.
func endRunSpans(spans []trace.Span, rs []sandbox.RunResult, err error) {
	for i := range spans {
		f := ""
		if err == nil && i < len(rs) {
			f = callFailure(rs[i].Err)
		}
		spans[i].EndLayer(f)
	}
}

// opName is a layer export's name (the ABI's on_* functions).
func opName(op plugin.Op) string {
	switch op {
	case plugin.OpOnRequest:
		return "on_request"
	case plugin.OpOnResponse:
		return "on_response"
	case plugin.OpOnStream:
		return "on_stream"
	case plugin.OpOnFallback:
		return "on_fallback"
	}
	return "other"
}

// callFailure names what went wrong with a plugin call, for its span; the
// plugin's own message stays in the log.
func callFailure(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, sandbox.ErrTimeout):
		return "timeout"
	case errors.Is(err, sandbox.ErrTrap):
		return "trap"
	case errors.Is(err, sandbox.ErrPoolWait):
		return "pool_wait"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	return "error"
}
