package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Exchange is one request's state as it passes through the pipeline.
type Exchange struct {
	Meta     wire.Meta
	Req      *wire.Request
	Pristine bool      // no layer changed the request: the caller's bytes may be forwarded
	Original []byte    // the caller's body (valid for the request's lifetime)
	Headers  []wire.KV // X-Bardo-* headers collected from layers
	Degraded []string  // what was skipped or approximated (X-Bardo-Degraded)
	// CallerHeaders are protocol headers of the caller an upstream of the
	// caller's dialect may need (anthropic-beta).
	CallerHeaders []wire.KV
	// StructuredTool, when set, names the tool the gateway added to an
	// Anthropic upstream request to serve an OpenAI caller's response_format
	// (see host/gateway/translate.go): the upstream's tool_use of it is
	// turned back into a text answer holding the JSON.
	StructuredTool string
	// CallerKey is the caller's own API key (Authorization bearer,
	// x-api-key or x-goog-api-key), for direct providers only: it is never
	// logged, stored or sent anywhere else.
	CallerKey string
	// ProfileMembers is a JSON object of upstream body members the
	// subsystem's inference profile adds for the provider being tried
	// (reasoning effort, thinking budgets): set on a natively encoded body
	// only where the caller's request has no member of that name.
	ProfileMembers []byte

	streamState [][]byte // per stream-phase layer, its opaque state
	// skip has bit Layer.idx set for the layers that said, in the request
	// phase, that they have nothing to do with this request's answer
	// (wire.LayerResult.SkipAnswer); layers past the 64th are always called.
	skip uint64
	// watch assembles the streamed answer for the watching layers
	// (wire.FlagWatchStream), per stream-phase layer; watchers with no
	// active rewriting layer between them share one.
	watch []*watched
}

// watched is a streamed answer assembled for watching layers.
type watched struct {
	asm  respcache.Assembler
	fed  bool   // this batch's events were added
	done bool   // the answer ended: its message_stop, or the final batch, went by
	now  bool   // done in this batch: the watchers are told in it
	in   []byte // done: the encoded LayerResponse of the answer, once
	ok   bool   // done: the stream ended complete
}

// maxWatched bounds an assembled answer (about its size): the ABI's
// largest value. Past it the watchers are not told the answer.
const maxWatched = 16 << 20

// skipAnswer records a layer's wire.LayerResult.SkipAnswer.
func (x *Exchange) skipAnswer(l *Layer) {
	if l.idx < 64 {
		x.skip |= 1 << l.idx
	}
}

// skips reports whether l sits out this request's answer phases.
func (x *Exchange) skips(l *Layer) bool { return l.idx < 64 && x.skip&(1<<l.idx) != 0 }

var encoders = sync.Pool{New: func() any { return new(wire.Encoder) }}

var requestEncoders = sync.Pool{New: func() any { return new(wire.RequestEncoder) }}

func (x *Exchange) info() sandbox.CallInfo {
	return sandbox.CallInfo{RequestID: x.Meta.RequestID, Tenant: x.Meta.Tenant}
}

// layerFailed applies the layer's on_error policy: fail-open records the skip
// and returns nil; fail-closed returns the error the caller will see.
func (p *Pipeline) layerFailed(x *Exchange, l *Layer, phase string, err error) *wire.Error {
	p.log.Warn("layer failed", "layer", l.Spec.Name, "phase", phase, "request_id", x.Meta.RequestID,
		"on_error", l.Spec.OnError.String(), "err", err)
	if l.Spec.OnError == config.FailOpen {
		x.Degraded = append(x.Degraded, "layer-skipped:"+l.Spec.Name)
		return nil
	}
	kind, status := wire.ErrInternal, int64(503)
	if errors.Is(err, sandbox.ErrTimeout) || errors.Is(err, sandbox.ErrPoolWait) {
		kind = wire.ErrTimeout
	}
	return &wire.Error{Status: status, Kind: kind,
		Message: fmt.Sprintf("pipeline layer %q failed (%s phase) and is configured fail-closed; %s", l.Spec.Name, phase, withheld[phase])}
}

// withheld says what a fail-closed failure kept from the caller in each
// phase. Only the request phase runs before the upstream; the others also
// carry answers the gateway made itself (cache replays, the simulator).
var withheld = map[string]string{
	"request":  "the request was not sent upstream",
	"response": "the answer was withheld",
	"stream":   "the rest of the answer was withheld",
}

// RequestPhase runs the request through the layers in order. It returns an
// answer when a layer answered (a cache hit), or an error when a layer
// rejected the request or failed closed.
//
// A run of consecutive layers bundled in one module (Layer.run) is called
// once (ABI v1.7): the guest runs their hooks in order and stops after one
// that answers, rejects, patches or fails; each result is applied as a
// lone call's would be (requestResult), and the phase goes on from the
// next layer with a new run. A run that traps or times out is called
// again layer by layer, so the failure is its layer's and its on_error
// applies; a layer whose hook ran before the failing one's in that run
// runs twice for the request (docs/abi.md).
func (p *Pipeline) RequestPhase(ctx context.Context, x *Exchange) (*wire.Response, *wire.Error) {
	if len(p.request) == 0 {
		return nil, nil
	}
	// Each part of the request is encoded once for all the layers, and
	// again only after a layer replaced it; each call's input is copied
	// from those parts straight into the guest.
	enc := requestEncoders.Get().(*wire.RequestEncoder)
	enc.Reset(x.Req)
	defer func() {
		enc.Reset(nil) // a pooled encoder keeps no request alive
		requestEncoders.Put(enc)
	}()
	var runs [8]sandbox.RunResult
	solo := 0 // layers before it are called one by one (a failed run's)
	for i := 0; i < len(p.request); {
		l := p.request[i]
		if n := l.run; n > 1 && i >= solo {
			ls := p.request[i : i+n]
			reads := wire.Part(0)
			for _, r := range ls {
				reads |= r.Desc.Reads
			}
			enc.Prepare(&x.Meta, reads)
			rs, err := x.callRun(ctx, ls, enc, runs[:0])
			if err != nil {
				// A trap or a timeout: no layer of the run is answered
				// for; each is called again on its own, so the failure
				// is its layer's and its on_error applies.
				p.log.Debug("request run failed; calling its layers one by one", "layer", l.Spec.Name,
					"request_id", x.Meta.RequestID, "err", err)
				solo = i + n
				continue
			}
			for _, r := range rs {
				degraded := len(x.Degraded)
				resp, e, stop := p.requestResult(x, ls[0], r.Out, r.Err, enc)
				if stop {
					return resp, e
				}
				ls, i = ls[1:], i+1
				if len(x.Degraded) > degraded {
					// The host refused a result the guest went on from
					// (undecodable, an undeclared patch): the hooks after
					// it saw its annotations. They run again, in a new run.
					break
				}
			}
			continue
		}
		enc.Prepare(&x.Meta, l.Desc.Reads)
		out, err := x.callInput(ctx, l, plugin.OpOnRequest, enc)
		if resp, e, stop := p.requestResult(x, l, out, err, enc); stop {
			return resp, e
		}
		i++
	}
	return nil, nil
}

// requestResult applies layer l's request-phase result (out, or the call's
// error err) to x, the same whether l was called on its own or in a run:
// stop is true when the request phase ends here, with an answer or an
// error for the caller.
func (p *Pipeline) requestResult(x *Exchange, l *Layer, out []byte, err error, enc *wire.RequestEncoder) (_ *wire.Response, _ *wire.Error, stop bool) {
	if err != nil {
		e := p.layerFailed(x, l, "request", err)
		return nil, e, e != nil
	}
	var res wire.LayerResult
	if err := res.Decode(out); err != nil {
		e := p.layerFailed(x, l, "request", fmt.Errorf("undecodable result: %w", err))
		return nil, e, e != nil
	}
	if bad := res.Patched &^ l.Desc.Writes; bad != 0 {
		e := p.layerFailed(x, l, "request", fmt.Errorf("patched undeclared parts %b", bad))
		return nil, e, e != nil
	}
	x.addHeaders(res.Headers)
	if x.Meta.Annotations == nil && len(res.Annotations) > 0 {
		// Most shipped layers note one: room for them at once.
		x.Meta.Annotations = make([]wire.KV, 0, len(p.request))
	}
	x.Meta.Annotations = append(x.Meta.Annotations, res.Annotations...)
	if res.SkipAnswer {
		x.skipAnswer(l)
	}
	switch res.Action {
	case wire.ActionAnswer:
		if res.Answer == nil {
			e := p.layerFailed(x, l, "request", errors.New("answer action without an answer"))
			return nil, e, e != nil
		}
		return res.Answer, nil, true
	case wire.ActionReject:
		e := res.Error
		if e == nil {
			e = &wire.Error{Message: "rejected by layer " + l.Spec.Name}
		}
		if e.Status < 400 || e.Status > 599 {
			e.Status = 400
		}
		if e.Kind == "" {
			e.Kind = wire.ErrInvalidRequest
		}
		return nil, e, true
	}
	if res.Patched != 0 {
		applyPatch(x.Req, &res.Request, res.Patched)
		enc.Changed(res.Patched)
		x.Pristine = false
	}
	return nil, nil, false
}

func applyPatch(dst, src *wire.Request, parts wire.Part) {
	keepExtras(dst, src, parts) // see patch.go
	if parts&wire.PartModel != 0 {
		dst.Model = src.Model
	}
	if parts&wire.PartSystem != 0 {
		dst.System = src.System
	}
	if parts&wire.PartMessages != 0 {
		dst.Messages = src.Messages
	}
	if parts&wire.PartTools != 0 {
		dst.Tools, dst.ToolChoice = src.Tools, src.ToolChoice
	}
	if parts&wire.PartParams != 0 {
		dst.Params = src.Params
	}
	if parts&wire.PartExtra != 0 {
		dst.Extra = src.Extra
	}
}

// fallbackTimeout bounds the whole fallback phase. It runs on its own
// deadline: the request's may be spent on the failed attempts, and a
// cached answer is worth a few more milliseconds.
const fallbackTimeout = 2 * time.Second

// FallbackPhase asks the layers that keep answers (wire.PhaseFallback), in
// order, for one to serve now that every provider failed: a cache may offer
// an entry past its freshness but within its stale-if-error window. The
// first answer wins; its layer's headers and annotations join the exchange
// (the annotations keep caches from storing the answer again). A layer that
// fails here is skipped whatever its on_error says: the request has failed
// already, and this is its last chance. nil: nothing to offer.
func (p *Pipeline) FallbackPhase(ctx context.Context, x *Exchange) *wire.Response {
	if len(p.fallback) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fallbackTimeout)
	defer cancel()
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	for _, l := range p.fallback {
		wire.EncodeLayerRequest(enc, &x.Meta, x.Req, l.Desc.Reads)
		out, err := x.call(ctx, l, plugin.OpOnFallback, enc.Bytes())
		var res wire.LayerResult
		if err == nil {
			err = res.Decode(out)
		}
		if err != nil {
			p.log.Warn("layer failed in the fallback phase; skipped", "layer", l.Spec.Name, "request_id", x.Meta.RequestID, "err", err)
			continue
		}
		if res.Action != wire.ActionAnswer || res.Answer == nil {
			continue
		}
		x.addHeaders(res.Headers)
		x.Meta.Annotations = append(x.Meta.Annotations, res.Annotations...)
		return res.Answer
	}
	return nil
}

// addHeaders keeps only X-Bardo-* headers with printable values: a plugin
// cannot set arbitrary response headers or split them.
func (x *Exchange) addHeaders(hs []wire.KV) {
	for _, h := range hs {
		if len(h.Key) <= len("X-Bardo-") || !strings.EqualFold(h.Key[:8], "X-Bardo-") || !headerSafe(h.Key, h.Value) {
			continue
		}
		if x.Headers == nil {
			// The shipped layers add a dozen or so: one allocation for
			// the request rather than one per doubling.
			x.Headers = make([]wire.KV, 0, 16)
		}
		x.Headers = append(x.Headers, h)
	}
}

// headerSafe reports whether a header can go out as it is: no space or
// colon in its name, no line break in either.
func headerSafe(key, value string) bool {
	for i := range len(key) {
		switch key[i] {
		case ' ', ':', '\r', '\n':
			return false
		}
	}
	for i := range len(value) {
		if c := value[i]; c == '\r' || c == '\n' {
			return false
		}
	}
	return true
}

// ResponsePhase runs a complete response through the layers in reverse
// order, but those that skip this request's answer (SkipAnswer).
//
// Consecutive layers called for the answer that are entries of one module
// exporting bardo_on_response_run (ABI v1.8) are called once: the guest
// runs their hooks in order and stops after one that replaces the answer
// or fails; each result is applied as a lone call's (responseResult) and
// the phase goes on from the next layer. A run that traps or times out is
// called again layer by layer, as a request run is.
func (p *Pipeline) ResponsePhase(ctx context.Context, x *Exchange, resp *wire.Response) *wire.Error {
	if len(p.response) == 0 {
		return nil
	}
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	encoded := false // enc holds the response as it stands
	var (
		runs [maxAnswerRun]sandbox.RunResult
		ls   [maxAnswerRun]*Layer
		pos  [maxAnswerRun]int
	)
	solo := 0 // layers before it are called one by one (a failed run's)
	for i := 0; i < len(p.response); {
		l := p.response[i]
		if x.skips(l) {
			i++
			continue
		}
		if !encoded {
			in := wire.LayerResponse{Meta: x.Meta, Response: *resp}
			in.Encode(enc)
			encoded = true
		}
		if i >= solo {
			if run, at := x.answerRunOf(p.response, i, nil, nil, ls[:0], pos[:0]); len(run) > 1 {
				rs, err := x.callAnswerRun(ctx, run, enc.Bytes(), runs[:0])
				if err != nil {
					p.log.Debug("response run failed; calling its layers one by one", "layer", l.Spec.Name,
						"request_id", x.Meta.RequestID, "err", err)
					solo = at[len(at)-1] + 1
					continue
				}
				for k, r := range rs {
					replaced, e := p.responseResult(x, run[k], r.Out, r.Err, resp)
					if e != nil {
						return e
					}
					encoded = encoded && !replaced
				}
				i = at[len(rs)-1] + 1
				continue
			}
		}
		out, err := x.call(ctx, l, plugin.OpOnResponse, enc.Bytes())
		replaced, e := p.responseResult(x, l, out, err, resp)
		if e != nil {
			return e
		}
		encoded = encoded && !replaced
		i++
	}
	return nil
}

// responseResult applies layer l's response-phase result (out, or the
// call's error err) to resp and x, the same whether l was called on its
// own or in a run: replaced when the layer replaced the answer, an error
// when it failed closed.
func (p *Pipeline) responseResult(x *Exchange, l *Layer, out []byte, err error, resp *wire.Response) (replaced bool, _ *wire.Error) {
	var res wire.LayerResponseResult
	if err == nil {
		err = res.Decode(out)
	}
	if err != nil {
		return false, p.layerFailed(x, l, "response", err)
	}
	x.addHeaders(res.Headers)
	if res.Replaced {
		*resp = res.Response
		return true, nil
	}
	return false, nil
}

// maxAnswerRun bounds the layers of one answer run (the arrays the
// phases keep them in); a longer row is called as several runs.
const maxAnswerRun = 8

// answerRunOf gathers into ls (and their positions in from into pos) the
// layers from from[i] on that x's answer can call in one run with from[i]:
// those that do not skip the answer, up to the first that cannot join —
// not a layer of from[i]'s module with answer runs, or, when watch is set
// (the stream phase's watchers), not a watcher of w. Fewer than two: no
// run.
func (x *Exchange) answerRunOf(from []*Layer, i int, watch []*watched, w *watched, ls []*Layer, pos []int) ([]*Layer, []int) {
	first := from[i]
	if !first.answerRun {
		return ls, pos
	}
	for j := i; j < len(from) && len(ls) < cap(ls); j++ {
		l := from[j]
		if x.skips(l) {
			continue
		}
		if !l.answerRun || !l.Plugin.SharesPool(first.Plugin) || (watch != nil && watch[j] != w) {
			break
		}
		ls, pos = append(ls, l), append(pos, j)
	}
	return ls, pos
}

// HasStreamLayers reports whether stream events pass through any layer.
func (p *Pipeline) HasStreamLayers() bool { return len(p.stream) > 0 }

// HasResponseLayers reports whether complete responses pass through any layer.
func (p *Pipeline) HasResponseLayers() bool { return len(p.response) > 0 }

// StreamLayersFor reports whether x's stream passes through any layer: not
// when every stream-phase layer skips its answer.
func (p *Pipeline) StreamLayersFor(x *Exchange) bool { return p.anyActive(p.stream, x) }

// ResponseLayersFor reports whether x's complete response passes through
// any layer: not when every response-phase layer skips its answer.
func (p *Pipeline) ResponseLayersFor(x *Exchange) bool { return p.anyActive(p.response, x) }

func (p *Pipeline) anyActive(ls []*Layer, x *Exchange) bool {
	for _, l := range ls {
		if !x.skips(l) {
			return true
		}
	}
	return false
}

// StreamPhase runs one batch of stream events through the layers in reverse
// order; final marks the stream's last batch. A fail-closed failure returns
// an error, which the caller turns into an error event.
//
// Layers that skip this request's answer are not called. Watching layers
// (wire.FlagWatchStream) are not called per batch: the events as they
// reach a watcher are assembled, and in the batch that carries the
// answer's message_stop (or the final batch), when the stream ended
// complete, its on_response gets the whole answer once (the result's
// headers and replacement are ignored: the answer is on its way out). A
// rewriting layer that says its batch is unchanged costs no decoding.
func (p *Pipeline) StreamPhase(ctx context.Context, x *Exchange, events []wire.Event, final bool) ([]wire.Event, *wire.Error) {
	if len(p.stream) == 0 {
		return events, nil
	}
	if x.streamState == nil {
		x.streamState = make([][]byte, len(p.stream))
		x.watch = p.watchersOf(x)
	}
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	for _, w := range x.watch {
		if w != nil {
			w.fed, w.now = false, false
		}
	}
	for i := 0; i < len(p.stream); i++ {
		l := p.stream[i]
		if x.skips(l) {
			continue
		}
		if w := x.watch[i]; w != nil {
			last, e := p.watchBatch(ctx, x, i, w, enc, events, final)
			if e != nil {
				return nil, e
			}
			i = last
			continue
		}
		in := wire.LayerStream{Meta: x.Meta, Events: events, State: x.streamState[i], Final: final, UnchangedOK: true}
		in.Encode(enc)
		out, err := x.call(ctx, l, plugin.OpOnStream, enc.Bytes())
		var res wire.LayerStreamResult
		if err == nil {
			err = res.Decode(out)
		}
		if err != nil {
			if e := p.layerFailed(x, l, "stream", err); e != nil {
				return nil, e
			}
			continue
		}
		if !res.Unchanged {
			events = res.Events
		}
		x.streamState[i] = res.State
	}
	return events, nil
}

// watchersOf gives each watching stream-phase layer of x the assembler of
// the events that reach it: one shared by watchers that no active
// rewriting layer separates (they see the same events), nil for the rest.
func (p *Pipeline) watchersOf(x *Exchange) []*watched {
	var (
		ws   []*watched
		last *watched // the assembler the events reaching here also fed
	)
	for i, l := range p.stream {
		switch {
		case x.skips(l):
		case l.watch:
			if last == nil {
				last = &watched{asm: respcache.Assembler{Max: maxWatched}}
			}
			if ws == nil {
				ws = make([]*watched, len(p.stream))
			}
			ws[i] = last
		default:
			last = nil // it may rewrite the events
		}
	}
	if ws == nil {
		ws = make([]*watched, len(p.stream))
	}
	return ws
}

// watchBatch adds a batch to the assembled answer of watcher p.stream[i]
// and, in the batch that ends a stream that ended complete, calls its
// on_response with it: with the watchers after it that share w, in one
// run when their module runs answers (ABI v1.8; a failed run is called
// again layer by layer). It returns the position of the last layer it
// handled.
func (p *Pipeline) watchBatch(ctx context.Context, x *Exchange, i int, w *watched, enc *wire.Encoder, events []wire.Event, final bool) (int, *wire.Error) {
	if !w.fed {
		w.asm.Add(events)
		w.fed = true
		// The answer is complete at its message_stop, which may come a
		// batch before the final one (an OpenAI stream's [DONE], the
		// upstream's EOF): the watchers are told in the batch that carries
		// it, before the gateway settles the request and ends its trace
		// (it settles at message_stop), so their calls are in it.
		if !w.done && (final || stops(events)) {
			w.done, w.now = true, true
			var resp wire.Response
			if resp, w.ok = w.asm.Response(); w.ok {
				in := wire.LayerResponse{Meta: x.Meta, Response: resp}
				in.Encode(enc)
				w.in = append(w.in[:0], enc.Bytes()...)
			}
		}
	}
	if !w.now || !w.ok {
		return i, nil
	}
	var (
		runs [maxAnswerRun]sandbox.RunResult
		ls   [maxAnswerRun]*Layer
		pos  [maxAnswerRun]int
	)
	if run, at := x.answerRunOf(p.stream, i, x.watch, w, ls[:0], pos[:0]); len(run) > 1 {
		rs, err := x.callAnswerRun(ctx, run, w.in, runs[:0])
		if err == nil {
			for k, r := range rs {
				if e := p.watchResult(x, run[k], r.Out, r.Err); e != nil {
					return at[k], e
				}
			}
			return at[len(rs)-1], nil
		}
		// A trap or a timeout: each watcher of the run is told on its
		// own, so the failure is its layer's.
		p.log.Debug("response run failed; calling its layers one by one", "layer", p.stream[i].Spec.Name,
			"request_id", x.Meta.RequestID, "err", err)
		for k, l := range run {
			out, err := x.call(ctx, l, plugin.OpOnResponse, w.in)
			if e := p.watchResult(x, l, out, err); e != nil {
				return at[k], e
			}
		}
		return at[len(at)-1], nil
	}
	l := p.stream[i]
	out, err := x.call(ctx, l, plugin.OpOnResponse, w.in)
	return i, p.watchResult(x, l, out, err)
}

// watchResult checks watcher l's on_response result on a streamed answer
// (out, or the call's error err): only for garbage and failures, as its
// headers and replacement come too late (the answer has gone out).
func (p *Pipeline) watchResult(x *Exchange, l *Layer, out []byte, err error) *wire.Error {
	if err == nil {
		var res wire.LayerResponseResult
		err = res.Decode(out)
	}
	if err != nil {
		return p.layerFailed(x, l, "stream", err)
	}
	return nil
}

// stops reports whether events carry the answer's end (message_stop).
func stops(events []wire.Event) bool {
	for i := range events {
		if events[i].Type == wire.EventMessageStop {
			return true
		}
	}
	return false
}

// linkRuns finds the runs of consecutive request-phase layers that are
// entries of one module exporting bardo_on_request_run: RequestPhase calls
// each run once instead of once per layer. BARDO_REQUEST_RUNS=0 turns
// runs off (every layer is called on its own, as before ABI v1.7). It
// also marks the layers that may join an answer run (ABI v1.8).
func (p *Pipeline) linkRuns() {
	off := os.Getenv("BARDO_REQUEST_RUNS") == "0"
	for i := len(p.request) - 1; i >= 0; i-- {
		l := p.request[i]
		l.run, l.runPlugins = 1, nil
		if off || !l.Plugin.CanRun() {
			continue
		}
		if i+1 < len(p.request) {
			if next := p.request[i+1]; next.Plugin.SharesPool(l.Plugin) && next.Plugin.CanRun() {
				l.run = next.run + 1
			}
		}
		if l.run > 1 {
			l.runPlugins = make([]*sandbox.Plugin, l.run)
			for j := range l.run {
				l.runPlugins[j] = p.request[i+j].Plugin
			}
		}
	}
	// Answer runs are found per request (answerRunOf): which layers are
	// called for an answer depends on its request (SkipAnswer).
	// BARDO_RESPONSE_RUNS=0 turns them off.
	offAnswers := os.Getenv("BARDO_RESPONSE_RUNS") == "0"
	for _, l := range p.Layers {
		l.answerRun = !offAnswers && l.Desc.Phases&wire.PhaseResponse != 0 && l.Plugin.CanRunResponses()
	}
}
