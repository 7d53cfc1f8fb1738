package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/events"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// holds is what a request holds until its answer is written: the cancel of
// its context, its reference to the pipeline, and its settlement. Serve ends
// them when it returns, unless a stream writer took them over with handOff:
// the front runs the writer after Serve returns (fasthttp: on a goroutine of
// its own, started at SetBodyStreamWriter), and it still runs plugins (the
// stream phase) under that context, on that pipeline. (Ended by Serve, they
// raced the writer: most replayed streams lost, their layers' calls
// cancelled.) Whoever ends them settles the request, so it is settled
// exactly once.
type holds struct {
	g       *Gateway
	o       *Outcome
	x       *pipeline.Exchange // nil until the request is decoded and admitted
	p       *pipeline.Pipeline // the request's pipeline, for prices at settlement
	tab     Tab                // the caller's open bill; nil: unbilled
	cancel  context.CancelFunc
	release func()
	began   time.Time
	s       Settlement
	handed  bool
	settled bool
}

// handOff transfers the holds to the caller, who must call the returned
// function once the answer is written; end then does nothing. The caller
// owns h.s until then, and may settle early with closeStream.
func (h *holds) handOff() (done func()) {
	cancel, release := h.cancel, h.release
	h.cancel, h.release, h.handed = nil, nil, true
	h.s.Streamed = true
	h.s.Status = 200
	return func() {
		h.settle() // before release: it prices from the pipeline
		cancel()
		release()
	}
}

// closeStream settles a handed-off stream whose end is about to go out,
// and returns the trailer to write just before its terminal event: the
// figures a client reads there are the ledger's, committed (a client that
// stops at the terminal event still has them). The writer's done then
// only releases.
func (h *holds) closeStream() []byte {
	if h.settled {
		return nil
	}
	h.s.StreamEnd = StreamEnded
	h.settle()
	if h.s.Bill == nil {
		return nil
	}
	return h.s.Bill.Trailer
}

// also adds cancel to what the holds end (a context derived for the answer).
func (h *holds) also(cancel context.CancelFunc) {
	prev := h.cancel
	h.cancel = func() {
		cancel()
		prev()
	}
}

// end releases whatever was not handed off, and settles a request whose
// answer Serve produced itself.
func (h *holds) end() {
	if h.handed {
		return
	}
	h.s.Status = 200
	if h.o != nil && h.o.Err != nil {
		h.s.Status, _ = codecFor(h.s.Dialect).EncodeError(h.o.Err)
	}
	h.settle()
	if h.cancel != nil {
		h.cancel()
	}
	if h.release != nil {
		h.release()
	}
}

// fail marks the request as answered with e.
func (h *holds) fail(e *wire.Error) {
	h.s.Path, h.s.Err = PathError, e
}

// settle is the request's way to the settlement point, once: it prices
// the outcome, closes the caller's tab (which commits the charge and the
// usage record), and, for an answer Serve wrote itself, puts the bill's
// figures on its headers.
func (h *holds) settle() {
	if h.settled {
		return
	}
	h.settled = true
	h.s.Latency = time.Since(h.began)
	if h.x != nil {
		for _, kv := range h.x.Headers {
			if strings.EqualFold(kv.Key, "X-Bardo-Cache") {
				h.s.Cache = kv.Value
			}
		}
		h.s.Degraded = h.x.Degraded
		h.s.Optimizations = optimizations(h.x.Headers)
	}
	price(&h.s, h.p)
	if h.tab != nil {
		b := h.tab.Close(&h.s)
		h.s.Bill = &b
	}
	h.g.settle(&h.s)
	if h.o != nil && !h.handed && h.s.Bill != nil {
		for _, kv := range h.s.Bill.Headers {
			h.o.set(kv.Key, kv.Value)
		}
	}
}

// answerLocal answers with a response produced inside the gateway (a layer's
// cache hit, a simulator): through the response phase as JSON, or replayed as
// a stream through the stream phase. A replayed stream takes held over.
func (g *Gateway) answerLocal(o *Outcome, rctx context.Context, held *holds, p *pipeline.Pipeline, x *pipeline.Exchange, resp *wire.Response) {
	if resp.Model == "" {
		resp.Model = x.Req.Model
	}
	if x.Meta.Stream {
		evs := events.FromResponse(resp, g.ReplayChunk)
		setHeaders(o, x)
		tab := &held.s
		tab.Usage = &resp.Usage
		done := held.handOff()
		o.Stream = func(w *bufio.Writer) {
			defer done()
			defer func() {
				if g.streamPanicked(w, x, recover()) {
					tab.StreamEnd = StreamBroken
				}
			}()
			tab.StreamEnd = StreamClientGone // until the end is out
			enc := codecFor(x.Meta.Dialect).NewStreamEncoder(x.Req)
			out, werr := p.StreamPhase(rctx, x, evs, true)
			if werr != nil {
				out = []wire.Event{{Type: wire.EventError, Error: werr}}
			}
			pace := replayPacing(replayPace(x.Meta.Annotations), out)
			var buf []byte
			for i := range out {
				if out[i].Type == wire.EventMessageStop {
					buf = append(buf, held.closeStream()...)
				}
				buf = enc.Encode(buf, &out[i])
				// Paced replays flush per content delta, so a cached answer
				// arrives the way a live one would.
				if pace > 0 && out[i].Type == wire.EventDelta {
					if _, err := w.Write(buf); err != nil || w.Flush() != nil {
						return
					}
					if tab.FirstByte == 0 {
						tab.FirstByte = time.Since(held.began)
					}
					buf = buf[:0]
					time.Sleep(pace)
				}
			}
			if _, err := w.Write(buf); err != nil || w.Flush() != nil {
				return
			}
			if tab.FirstByte == 0 {
				tab.FirstByte = time.Since(held.began)
			}
			tab.StreamEnd = StreamEnded
			if werr != nil {
				tab.StreamEnd, tab.Err = StreamBroken, werr
			}
		}
		return
	}
	if werr := p.ResponsePhase(rctx, x, resp); werr != nil {
		g.finishError(o, held, werr)
		return
	}
	g.writeResponse(o, held, resp)
}

func (g *Gateway) writeResponse(o *Outcome, held *holds, resp *wire.Response) {
	x := held.x
	b, err := codecFor(x.Meta.Dialect).EncodeResponse(resp)
	if err != nil {
		g.Log.Error("encoding response", "request_id", x.Meta.RequestID, "err", err)
		g.finishError(o, held, &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "the upstream's answer could not be expressed in the caller's dialect"})
		return
	}
	held.s.Usage, held.s.resp = &resp.Usage, resp
	setHeaders(o, x)
	o.Body = b
}

// answerUpstream answers a buffered upstream response. When the upstream
// speaks the caller's dialect and no layer reads responses, its bytes are
// forwarded as they came.
func (g *Gateway) answerUpstream(o *Outcome, rctx context.Context, held *holds, p *pipeline.Pipeline, pr *pipeline.Provider, route wire.Route, x *pipeline.Exchange, call *wire.UpstreamCall, resp *upstream.Response) {
	if call.ResponseDialect == x.Meta.Dialect && !p.ResponseLayersFor(x) {
		held.s.Path = PathPassthrough
		if u, ok := pricing.BodyUsage(resp.Body); ok {
			held.s.Usage = &u
		}
		setHeaders(o, x)
		o.Body = resp.Body
		return
	}
	held.s.Path = PathUpstream
	var canon *wire.Response
	if call.ResponseDialect != wire.DialectNone {
		r, err := codecFor(call.ResponseDialect).DecodeResponse(resp.Body)
		if err != nil {
			g.finishError(o, held, &wire.Error{Status: 502, Kind: wire.ErrUpstream,
				Message: "upstream " + route.Provider + " returned a response that is not valid " + call.ResponseDialect.String() + ": " + err.Error()})
			return
		}
		canon = r
	} else {
		r, werr := p.Decode(rctx, x, pr, route, resp.Status, resp.Headers, resp.Body)
		if werr != nil {
			g.finishError(o, held, werr)
			return
		}
		canon = r
	}
	// translate.go: the structured-output tool call becomes the JSON text
	// the caller asked for.
	unwrapStructured(x, canon)
	if werr := p.ResponsePhase(rctx, x, canon); werr != nil {
		g.finishError(o, held, werr)
		return
	}
	g.writeResponse(o, held, canon)
}

// streamer relays an upstream stream to the caller.
type streamer struct {
	g         *Gateway
	p         *pipeline.Pipeline
	pr        *pipeline.Provider
	route     wire.Route
	x         *pipeline.Exchange
	resp      *upstream.Response
	first     *wire.SSE // the stream's first event, read before committing
	upDialect wire.Dialect

	ctx  context.Context
	tab  *Settlement // the request's settlement, the writer's until done
	done func()      // ends the request's holds and settles (holds.handOff)
	// closing settles the request as its end goes out and returns the
	// figures' trailer (holds.closeStream).
	closing func() []byte
	// hideUsage drops the forwarded usage chunk the gateway asked for and
	// the caller did not (streamusage.go).
	hideUsage bool
	broken    bool      // the stream did not finish cleanly: drop the connection
	began     time.Time // the request's arrival, for its time to first byte
	tokens    *tokenTicker
}

func (s *streamer) close() {
	s.tokens.flush()
	if s.broken {
		s.resp.Abort()
	} else {
		s.resp.Close()
	}
	s.done()
}

// run copies events until the upstream ends, fails, or the client goes away
// (a failed flush), in which case closing the upstream response aborts the
// upstream call.
func (s *streamer) run(w *bufio.Writer) {
	defer s.close()
	defer func() {
		if s.g.streamPanicked(w, s.x, recover()) {
			s.broken = true
			s.tab.StreamEnd = StreamBroken
		}
	}()
	passthrough := s.upDialect == s.x.Meta.Dialect && !s.p.StreamLayersFor(s.x)
	s.tokens = newTokenTicker(s.g.Events, s.tab)
	// Until the end is out, a return is the client going away; the other
	// ends say so.
	s.tab.StreamEnd, s.tab.Path = StreamClientGone, PathUpstream
	var (
		usage     wire.Usage
		forwarded pricing.StreamUsage // passthrough: usage read from the bytes as they pass
	)
	if passthrough {
		s.tab.Path = PathPassthrough
	} else {
		s.tab.Usage = &usage
	}
	var (
		dec    streamDecoder
		enc    streamEncoder
		state  []byte
		buf    []byte
		sawEnd bool // passthrough: the upstream's end marker went by
		// translate.go: unwraps the structured-output tool call
		structured = newStructuredStream(s.x)
	)
	if !passthrough {
		enc = codecFor(s.x.Meta.Dialect).NewStreamEncoder(s.x.Req)
		if s.upDialect != wire.DialectNone {
			dec = codecFor(s.upDialect).NewStreamDecoder()
		}
	}
	fail := func(e *wire.Error) {
		s.broken = true
		s.tab.StreamEnd, s.tab.Err = StreamBroken, e
		s.g.Log.Warn("stream failed", "request_id", s.x.Meta.RequestID, "provider", s.route.Provider, "err", e.Message)
		if passthrough {
			// Mid-stream: the upstream's own events began it.
			enc = joined(codecFor(s.x.Meta.Dialect).NewStreamEncoder(s.x.Req))
		}
		buf = enc.Encode(buf[:0], &wire.Event{Type: wire.EventError, Error: e})
		w.Write(buf)
		w.Flush()
	}
	upstreamEvents, stop := s.pump()
	defer stop()
	heartbeat := time.NewTicker(s.g.heartbeat())
	defer heartbeat.Stop()
	var (
		batch      []upstreamEvent
		sses       []wire.SSE
		headersOut bool // the first batch wrote something: the headers are out
	)
	for {
		var next upstreamEvent
		select {
		case next = <-upstreamEvents:
		case <-heartbeat.C:
			// An SSE comment: every client ignores it, and it keeps proxies
			// and load balancers from closing an idle stream while the
			// model thinks.
			if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
				s.broken = true
				return
			}
			continue
		}
		heartbeat.Reset(s.g.heartbeat())
		// The events that arrived behind this one go with it: one plugin
		// call per layer and one flush for the lot, instead of one per
		// event (under load that was most of a stream's cost). Nothing
		// waits for more, so no event is held back.
		batch = gather(append(batch[:0], next), upstreamEvents)
		var (
			readErr error // the upstream failed after the batch's events
			final   bool  // the upstream ended after them
			evs     []wire.Event
			werr    *wire.Error
		)
		buf, sses = buf[:0], sses[:0]
		for _, u := range batch {
			if u.err != nil {
				final, readErr = errors.Is(u.err, io.EOF), u.err
				if final {
					readErr = nil
				}
				break
			}
			ev := u.ev
			switch {
			case passthrough:
				forwarded.Event(ev.Data)
				s.tokens.chunk(ev.Data)
				if got, ok := forwarded.Usage(); ok {
					usage = got
					s.tab.Usage = &usage
				}
				if isEndMarker(ev) && !sawEnd {
					var ok bool
					if buf, ok = s.end(w, buf); !ok {
						return
					}
				}
				sawEnd = sawEnd || isEndMarker(ev)
				if !s.hideUsage || !usageOnlyChunk(ev.Data) {
					buf = appendSSE(buf, ev.Event, ev.Data)
				}
			case dec != nil:
				out, derr := dec.Decode(ev.Event, ev.Data)
				if derr != nil {
					werr = &wire.Error{Status: 502, Kind: wire.ErrUpstream,
						Message: "upstream " + s.route.Provider + " sent a malformed stream event: " + derr.Error()}
				}
				evs = append(evs, out...)
			default:
				sses = append(sses, ev)
			}
			if werr != nil {
				final, readErr = false, nil // what follows the malformed event is not read
				break
			}
		}
		if !passthrough {
			// The events before the end, a failure or a malformed event go
			// out first, as they would have one by one.
			if len(sses) > 0 {
				var derr *wire.Error
				evs, state, derr = s.p.DecodeStream(s.ctx, s.x, s.pr, s.route, s.resp.Headers, sses, state, false)
				if derr != nil {
					fail(derr)
					return
				}
			}
			if final && werr == nil && ended(false, sawEnd, dec) {
				// The end came with this batch: its events and the
				// decoder's last ones cross the layers in one final call.
				if dec != nil {
					evs = append(evs, dec.Finish()...)
				} else {
					var last []wire.Event
					if last, _, werr = s.p.DecodeStream(s.ctx, s.x, s.pr, s.route, s.resp.Headers, nil, state, true); werr != nil {
						// The plugin judged the end a cut: what came
						// before it still goes out first, then the error.
						if len(evs) > 0 && !s.streamOut(w, &buf, enc, structured, &usage, evs, false, fail) {
							return
						}
						if len(buf) > 0 && !s.write(w, buf) {
							return
						}
						fail(werr)
						return
					}
					evs = append(evs, last...)
				}
				if !s.streamOut(w, &buf, enc, structured, &usage, evs, true, fail) {
					return
				}
				if len(buf) > 0 && !s.write(w, buf) {
					return
				}
				s.tab.StreamEnd = StreamEnded
				return
			}
			if len(evs) > 0 {
				if !s.streamOut(w, &buf, enc, structured, &usage, evs, false, fail) {
					return
				}
			}
		}
		if len(buf) > 0 && !s.write(w, buf) {
			return
		}
		if len(buf) == 0 && !headersOut {
			// The first batch said nothing yet (a translated stream's
			// message_start becomes no OpenAI chunk until content): a
			// comment, which every client ignores, takes the status and
			// headers out now rather than with the first token — the
			// transport sends nothing before the body's first bytes.
			if _, err := w.WriteString(": keep-alive\n\n"); err != nil || w.Flush() != nil {
				s.broken = true
				return
			}
		}
		headersOut = true
		switch {
		case werr != nil:
			fail(werr)
			return
		case readErr != nil:
			// The raw error names the upstream's address: the log gets it,
			// the caller a reason.
			s.g.Log.Warn("upstream stream read failed", "request_id", s.x.Meta.RequestID, "provider", s.route.Provider, "err", readErr)
			fail(&wire.Error{Status: 502, Kind: wire.ErrUpstream,
				Message: "upstream " + s.route.Provider + " stream broke off: it " + upstream.Reason(readErr)})
			return
		case !final:
			continue
		case !ended(passthrough, sawEnd, dec):
			fail(&wire.Error{Status: 502, Kind: wire.ErrUpstream,
				Message: "upstream " + s.route.Provider + " stream broke off before its end"})
			return
		}
		// A passthrough's end (a decoded stream's ended above).
		s.tab.StreamEnd = StreamEnded
		return
	}
}

// streamOut runs decoded events through the layers' stream phase and
// encodes what comes out into buf; false: the stream failed (fail was
// called).
func (s *streamer) streamOut(w *bufio.Writer, buf *[]byte, enc streamEncoder, structured *structuredStream, usage *wire.Usage,
	evs []wire.Event, final bool, fail func(*wire.Error)) bool {
	evs = structured.events(evs) // translate.go
	evs, werr := s.p.StreamPhase(s.ctx, s.x, evs, final)
	if werr != nil {
		fail(werr)
		return false
	}
	for i := range evs {
		addUsage(usage, &evs[i])
		traceEvent(s.tab, &evs[i]) // tracing.go
		s.tokens.event(&evs[i])
		if evs[i].Type == wire.EventMessageStop {
			var ok bool
			if *buf, ok = s.end(w, *buf); !ok {
				return false
			}
		}
		*buf = enc.Encode(*buf, &evs[i])
	}
	return true
}

// end appends the stream's closing figures to buf (the settlement). The
// settlement records the time to first byte: when nothing went out yet (the
// whole stream came in one batch), what comes before the end is sent first,
// so that figure is the real one. false: the caller went away.
func (s *streamer) end(w *bufio.Writer, buf []byte) ([]byte, bool) {
	if s.tab.FirstByte == 0 && len(buf) > 0 {
		if !s.write(w, buf) {
			return buf, false
		}
		buf = buf[:0]
	}
	s.tokens.flush()
	return append(buf, s.closing()...), true
}

// write sends buf to the caller and flushes it; false: the caller went
// away (the stream is broken).
func (s *streamer) write(w *bufio.Writer, buf []byte) bool {
	if _, err := w.Write(buf); err != nil {
		s.broken = true
		return false
	}
	if s.tab.FirstByte == 0 {
		s.tab.FirstByte = time.Since(s.began)
	}
	if err := w.Flush(); err != nil {
		s.broken = true
		s.g.Log.Info("client went away mid-stream; upstream call aborted", "request_id", s.x.Meta.RequestID)
		return false
	}
	return true
}

// maxStreamBatch bounds how many upstream events one pass through the
// layers carries.
const maxStreamBatch = 64

// gather appends to batch the events already waiting on ch, without
// blocking, up to maxStreamBatch and through the first error (the
// stream's end or failure: nothing comes after it).
func gather(batch []upstreamEvent, ch <-chan upstreamEvent) []upstreamEvent {
	for len(batch) < maxStreamBatch && batch[len(batch)-1].err == nil {
		select {
		case u := <-ch:
			batch = append(batch, u)
		default:
			return batch
		}
	}
	return batch
}

// streamPanicked contains a panic (r, from recover) in a stream writer:
// fasthttp runs writers on goroutines of their own, outside the server's
// recover, where a panic would end the process. The caller gets an error
// event; it reports whether there was a panic.
func (g *Gateway) streamPanicked(w *bufio.Writer, x *pipeline.Exchange, r any) bool {
	if r == nil {
		return false
	}
	g.Log.Error("panic writing a stream", "request_id", x.Meta.RequestID, "panic", r, "stack", string(debug.Stack()))
	ev := wire.Event{Type: wire.EventError, Error: &wire.Error{Status: 500, Kind: wire.ErrInternal,
		Message: "the gateway hit an internal error writing this stream; it has been logged"}}
	w.Write(joined(codecFor(x.Meta.Dialect).NewStreamEncoder(x.Req)).Encode(nil, &ev))
	w.Flush()
	return true
}

type upstreamEvent struct {
	ev  wire.SSE
	err error
}

// pump reads upstream events on a goroutine of its own, so the writer can
// send heartbeats while the upstream is silent. A slow client blocks the
// writer, the pump's small buffer (one batch of events) fills, and reading
// from the upstream stops: backpressure reaches the upstream through TCP.
// stop ends the pump.
func (s *streamer) pump() (<-chan upstreamEvent, func()) {
	out := make(chan upstreamEvent, maxStreamBatch)
	done := make(chan struct{})
	go func() {
		if s.first != nil {
			select {
			case out <- upstreamEvent{ev: *s.first}:
			case <-done:
				return
			}
		}
		for {
			ev, err := s.resp.Next()
			select {
			case out <- upstreamEvent{ev, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return out, func() { close(done) }
}

// appendSSE frames one event the way it arrived.
func appendSSE(dst []byte, event string, data []byte) []byte {
	if event != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, event...)
		dst = append(dst, '\n')
	}
	start := 0
	for i := 0; i <= len(data); i++ {
		if i == len(data) || data[i] == '\n' {
			dst = append(dst, "data: "...)
			dst = append(dst, data[start:i]...)
			dst = append(dst, '\n')
			start = i + 1
		}
	}
	return append(dst, '\n')
}

// ended reports whether a stream that reached EOF had finished properly. A
// plugin-decoded stream is judged by its plugin (on the final batch).
func ended(passthrough, sawEnd bool, dec streamDecoder) bool {
	switch {
	case passthrough:
		return sawEnd
	case dec != nil:
		return dec.Done()
	}
	return true
}

// isEndMarker recognizes the last event of an OpenAI Chat, Anthropic or
// OpenAI Responses stream (which ends at its terminal response event,
// without [DONE]).
func isEndMarker(ev wire.SSE) bool {
	switch ev.Event {
	case "message_stop", "response.completed", "response.incomplete", "response.failed":
		return true
	}
	return string(ev.Data) == "[DONE]"
}

// AnnotationReplayPace is the annotation a layer sets, with a number of
// milliseconds, to have its answer replayed as a stream with that pause
// between content chunks (L3 and L2 cache hits: ~30 ms by default).
const AnnotationReplayPace = respcache.AnnotationReplayPace

// maxReplayPacing bounds the pauses of one paced replay in all: a long
// cached answer (an agent's 9 KB reply is ~700 chunks) paced at 30 ms a chunk
// took 20 s to replay, far slower than the stream it copies, so a long answer
// is paced more finely instead.
const maxReplayPacing = time.Second

// replayPacing is the pause after each content delta of out: pace, or less
// when the pauses would add up to more than maxReplayPacing.
func replayPacing(pace time.Duration, out []wire.Event) time.Duration {
	if pace <= 0 {
		return 0
	}
	deltas := 0
	for i := range out {
		if out[i].Type == wire.EventDelta {
			deltas++
		}
	}
	if deltas > 0 && pace*time.Duration(deltas) > maxReplayPacing {
		pace = maxReplayPacing / time.Duration(deltas)
	}
	return pace
}

// replayPace reads the last replay pace annotation; at most one second.
func replayPace(anns []wire.KV) time.Duration {
	for i := len(anns) - 1; i >= 0; i-- {
		if anns[i].Key == AnnotationReplayPace {
			ms, err := strconv.Atoi(anns[i].Value)
			if err != nil || ms <= 0 {
				return 0
			}
			return time.Duration(min(ms, 1000)) * time.Millisecond
		}
	}
	return 0
}

// joined marks a fresh stream encoder as writing into a stream already
// under way, for the encoders that would otherwise begin it again (the
// Responses API's lifecycle events name the response).
func joined(e streamEncoder) streamEncoder {
	if j, ok := e.(interface{ Joined() }); ok {
		j.Joined()
	}
	return e
}
