package plugincheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

func (k *kit) checkLayer(ctx context.Context) {
	d := k.report.Descriptor
	samples, err := dialectSamples()
	if err != nil {
		k.fail("fixtures", "%v", err)
		return
	}
	if d.Phases&wire.PhaseRequest != 0 {
		for _, s := range samples {
			k.layerRequest(ctx, "request/"+s.name, plugin.OpOnRequest, s, false)
		}
		k.unknownFields(ctx)
		if k.p.CanRun() {
			var cases []runCase
			for _, s := range samples {
				wire.EncodeLayerRequest(&k.enc, &s.meta, s.req, d.Reads)
				cases = append(cases, runCase{s.name, slices.Clone(k.enc.Bytes())})
			}
			k.checkRun(ctx, "request/run", plugin.OpOnRequest, cases)
		}
		k.layerRequest(ctx, "request/empty", plugin.OpOnRequest, emptySample(), true)
		k.layerRequest(ctx, "request/huge", plugin.OpOnRequest, hugeSample(), true)
		for i, text := range k.opts.Probes {
			req := withLastUserText(text)
			k.layerRequest(ctx, fmt.Sprintf("request/probe-%d %q", i+1, short(text)), plugin.OpOnRequest,
				sample{"probe", meta(wire.DialectOpenAI, req), req}, false)
		}
	}
	if d.Phases&wire.PhaseFallback != 0 {
		for _, s := range samples {
			k.layerRequest(ctx, "fallback/"+s.name, plugin.OpOnFallback, s, false)
		}
		k.layerRequest(ctx, "fallback/empty", plugin.OpOnFallback, emptySample(), true)
	}
	if d.Phases&wire.PhaseResponse != 0 {
		for _, s := range samples {
			k.layerResponse(ctx, "response/"+s.name, s.meta, responseSample(answerText), false)
		}
		if k.p.CanRunResponses() {
			var cases []runCase
			for _, s := range samples {
				in := wire.LayerResponse{Meta: s.meta, Response: responseSample(answerText)}
				in.Encode(&k.enc)
				cases = append(cases, runCase{s.name, slices.Clone(k.enc.Bytes())})
			}
			k.checkRun(ctx, "response/run", plugin.OpOnResponse, cases)
		}
		k.layerResponse(ctx, "response/empty", wire.Meta{}, wire.Response{}, true)
		k.layerResponse(ctx, "response/huge", samples[0].meta, responseSample(hugeText(1<<20)), true)
		for i, text := range k.opts.Probes {
			k.layerResponse(ctx, fmt.Sprintf("response/probe-%d %q", i+1, short(text)), samples[0].meta, responseSample(text), false)
		}
	}
	if d.Phases&wire.PhaseStream != 0 {
		for _, s := range samples {
			k.layerStream(ctx, "stream/"+s.name, s.meta, streamBatches(answerText), false)
		}
		k.layerStream(ctx, "stream/empty", wire.Meta{}, [][]wire.Event{nil}, true)
		k.layerStream(ctx, "stream/huge", samples[1].meta, streamBatches(hugeText(256<<10)), true)
		for i, text := range k.opts.Probes {
			k.layerStream(ctx, fmt.Sprintf("stream/probe-%d %q", i+1, short(text)), samples[1].meta, streamBatches(text), false)
		}
	}
	k.layerMemory(ctx, samples[0])
}

// unknownFields sends one request twice, with and without members no API
// has (at the top, in a message, a content part, a tool): the layer must
// treat both alike — the gateway keeps such members and forwards them, so a
// layer that refuses or answers differently breaks clients newer than it.
func (k *kit) unknownFields(ctx context.Context) {
	const name = "request/unknown-fields"
	s, err := unknownFieldsSample()
	if err != nil {
		k.fail(name, "%v", err)
		return
	}
	d := k.report.Descriptor
	run := func(req *wire.Request) (*wire.LayerResult, error) {
		wire.EncodeLayerRequest(&k.enc, &s.meta, req, d.Reads)
		out, err := k.call(ctx, plugin.OpOnRequest, k.enc.Bytes())
		if err != nil {
			return nil, err
		}
		var res wire.LayerResult
		if err := res.Decode(out); err != nil {
			return nil, fmt.Errorf("result does not decode: %w", err)
		}
		return &res, nil
	}
	plain, err := run(withoutExtras(s.req))
	if err != nil {
		k.fail(name, "without the unknown members: %s", k.explain(err))
		return
	}
	res, err := run(s.req)
	if err != nil {
		k.fail(name, "%s", k.explain(err))
		return
	}
	if why := checkLayerResult(res, d.Writes); why != "" {
		k.fail(name, "%s", why)
		return
	}
	if res.Action != plain.Action || res.Patched != plain.Patched {
		k.fail(name, "with unknown members: %s; without them: %s — a layer must pass members it does not know", describeResult(res), describeResult(plain))
		return
	}
	k.pass(name, "%s, as without them", describeResult(res))
}

// bytesInput is an encoded input for sandbox.RunRequest.
type bytesInput []byte

func (b bytesInput) Len() int       { return len(b) }
func (b bytesInput) Put(dst []byte) { copy(dst, b) }

// runCase is one input a run check sends: the encoded LayerRequest or
// LayerResponse.
type runCase struct {
	name string
	in   bytesInput
}

// checkRun checks a bundle's run export for this entry's phase op
// (bardo_on_request_run, ABI v1.7; bardo_on_response_run, v1.8): a host
// runs that phase of a bundle's consecutive entries in one call through
// it, so run alone it must give, byte for byte, what the entry's own op
// gives for the same input — an SDK other than ours that gets the run's
// records wrong would otherwise pass every check above and still
// misbehave in a pipeline. A layer may remember what it saw (promptcache
// says whether the session's prefix matched the last one, affinity keeps
// who answered), so each input is sent first to warm that state, and the
// run is compared with the calls either side of it; when those differ from
// each other too, the layer's results change call by call and only their
// outcome (action and patches, or whether the answer was replaced) is
// compared.
func (k *kit) checkRun(ctx context.Context, name string, op plugin.Op, cases []runCase) {
	info := sandbox.CallInfo{RequestID: "kit", Tenant: "kit"}
	opName, runName := "on_request", "bardo_on_request_run"
	run, outcome := sandbox.RunRequest, requestOutcome
	if op == plugin.OpOnResponse {
		opName, runName = "on_response", "bardo_on_response_run"
		run = func(ctx context.Context, ps []*sandbox.Plugin, in sandbox.Input, info sandbox.CallInfo, dst []sandbox.RunResult) ([]sandbox.RunResult, error) {
			return sandbox.RunResponse(ctx, ps, in.(bytesInput), info, dst)
		}
		outcome = responseOutcome
	}
	single := func(in []byte) ([]byte, error) {
		out, err := k.call(ctx, op, in)
		return slices.Clone(out), err
	}
	changing := 0
	for _, c := range cases {
		var before, after []byte
		_, err := single(c.in)
		if err == nil {
			before, err = single(c.in)
		}
		if err != nil {
			k.fail(name, "%s: %s: %s", c.name, opName, k.explain(err))
			return
		}
		k.out.reset()
		rs, err := run(ctx, []*sandbox.Plugin{k.p}, c.in, info, nil)
		switch {
		case err != nil:
			k.fail(name, "%s: %s: %s", c.name, runName, k.explain(err))
			return
		case len(rs) != 1:
			k.fail(name, "%s: %s returned %d results for one entry", c.name, runName, len(rs))
			return
		case rs[0].Err != nil:
			k.fail(name, "%s: %s: the hook failed where %s did not: %s", c.name, runName, opName, k.explain(rs[0].Err))
			return
		}
		if after, err = single(c.in); err != nil {
			k.fail(name, "%s: %s after the run: %s", c.name, opName, k.explain(err))
			return
		}
		got := rs[0].Out
		if bytes.Equal(got, before) || bytes.Equal(got, after) {
			continue
		}
		want, _ := outcome(before)
		have, ok := outcome(got)
		if !ok {
			k.fail(name, "%s: %s's result does not decode", c.name, runName)
			return
		}
		if !bytes.Equal(before, after) && have == want {
			changing++
			continue
		}
		k.fail(name, "%s: %s's result differs from %s's (%s, against %s)", c.name, runName, opName, have, want)
		return
	}
	note := ""
	if changing > 0 {
		note = fmt.Sprintf(" (%d whose results change call by call: by outcome)", changing)
	}
	k.pass(name, "one-entry runs give %s's results, in %d dialects%s", opName, len(cases), note)
}

// requestOutcome describes an encoded LayerResult by what the host does
// with it.
func requestOutcome(b []byte) (string, bool) {
	var r wire.LayerResult
	if r.Decode(b) != nil {
		return "", false
	}
	return describeResult(&r), true
}

// responseOutcome describes an encoded LayerResponseResult likewise.
func responseOutcome(b []byte) (string, bool) {
	var r wire.LayerResponseResult
	if r.Decode(b) != nil {
		return "", false
	}
	if r.Replaced {
		return "replaced", true
	}
	return "kept", true
}

// withoutExtras copies req without its unknown members at every level.
func withoutExtras(req *wire.Request) *wire.Request {
	c := *req
	c.Extra = nil
	c.Messages = slices.Clone(req.Messages)
	for i := range c.Messages {
		m := &c.Messages[i]
		m.Extra = nil
		m.Content = slices.Clone(m.Content)
		for j := range m.Content {
			m.Content[j].Extra = nil
		}
	}
	c.Tools = slices.Clone(req.Tools)
	for i := range c.Tools {
		c.Tools[i].Extra = nil
	}
	return &c
}

// failure is how a call's outcome fails a check: onlyTraps accepts a
// plugin-reported error (the host applies on_error; refusing an empty or
// oversized input is the plugin's right) and fails only traps and timeouts.
func (k *kit) failure(err error, onlyTraps bool) (string, bool) {
	if err == nil {
		return "", false
	}
	var ce *sandbox.CallError
	if onlyTraps && errors.As(err, &ce) {
		return "", false
	}
	return k.explain(err), true
}

// layerRequest runs the request (or fallback) phase the way the host does:
// only the declared parts cross, and the result must be one the host
// accepts as it is.
func (k *kit) layerRequest(ctx context.Context, name string, op plugin.Op, s sample, onlyTraps bool) {
	d := k.report.Descriptor
	wire.EncodeLayerRequest(&k.enc, &s.meta, s.req, d.Reads)
	t0 := time.Now()
	out, err := k.call(ctx, op, k.enc.Bytes())
	took := time.Since(t0)
	if why, failed := k.failure(err, onlyTraps); failed {
		k.fail(name, "%s", why)
		return
	} else if err != nil {
		k.pass(name, "no trap (%s)", k.explain(err))
		return
	}
	var res wire.LayerResult
	if err := res.Decode(out); err != nil {
		k.fail(name, "result does not decode: %v", err)
		return
	}
	if why := checkLayerResult(&res, d.Writes); why != "" {
		k.fail(name, "%s", why)
		return
	}
	k.pass(name, "%s in %s", describeResult(&res), took.Round(time.Microsecond))
}

// checkLayerResult is what host/pipeline refuses or silently drops.
func checkLayerResult(res *wire.LayerResult, writes wire.Part) string {
	if bad := res.Patched &^ writes; bad != 0 {
		return fmt.Sprintf("patched %s, which it did not declare in writes (%s): the host refuses the result", partNames(bad), partNames(writes))
	}
	switch res.Action {
	case wire.ActionContinue:
	case wire.ActionAnswer:
		if res.Answer == nil {
			return "action answer without an answer: the host refuses the result"
		}
	case wire.ActionReject:
		if res.Error != nil && (res.Error.Status < 400 || res.Error.Status > 599) {
			return fmt.Sprintf("rejected with status %d, not 400–599 (the host sends 400 instead)", res.Error.Status)
		}
	default:
		return fmt.Sprintf("unknown action %d: the host refuses the result", res.Action)
	}
	return checkHeaders(res.Headers)
}

// checkHeaders: the host keeps only X-Bardo-* headers with a clean name and
// a value without line breaks (host/pipeline addHeaders); anything else is
// dropped without a word, which is a bug in the plugin.
func checkHeaders(hs []wire.KV) string {
	for _, h := range hs {
		if len(h.Key) <= len("X-Bardo-") || !strings.EqualFold(h.Key[:8], "X-Bardo-") {
			return fmt.Sprintf("header %q is dropped by the host: only X-Bardo-* names are kept", h.Key)
		}
		if strings.ContainsAny(h.Key, " :\r\n") || strings.ContainsAny(h.Value, "\r\n") {
			return fmt.Sprintf("header %q is dropped by the host: its name or value holds a space, colon or line break", h.Key)
		}
	}
	return ""
}

func describeResult(res *wire.LayerResult) string {
	var s []string
	switch res.Action {
	case wire.ActionAnswer:
		s = append(s, "answered")
	case wire.ActionReject:
		msg := ""
		if res.Error != nil {
			msg = ": " + short(res.Error.Message)
		}
		s = append(s, "rejected"+msg)
	default:
		s = append(s, "continued")
	}
	if res.Patched != 0 {
		s = append(s, "patched "+partNames(res.Patched))
	}
	if len(res.Headers) > 0 {
		s = append(s, strconv.Itoa(len(res.Headers))+" headers")
	}
	return strings.Join(s, ", ")
}

func (k *kit) layerResponse(ctx context.Context, name string, m wire.Meta, resp wire.Response, onlyTraps bool) {
	in := wire.LayerResponse{Meta: m, Response: resp}
	in.Encode(&k.enc)
	out, err := k.call(ctx, plugin.OpOnResponse, k.enc.Bytes())
	if why, failed := k.failure(err, onlyTraps); failed {
		k.fail(name, "%s", why)
		return
	} else if err != nil {
		k.pass(name, "no trap (%s)", k.explain(err))
		return
	}
	var res wire.LayerResponseResult
	if err := res.Decode(out); err != nil {
		k.fail(name, "result does not decode: %v", err)
		return
	}
	if why := checkHeaders(res.Headers); why != "" {
		k.fail(name, "%s", why)
		return
	}
	what := "kept"
	if res.Replaced {
		what = "replaced"
	}
	k.pass(name, "response %s", what)
}

// layerStream runs the batches of one stream, the layer's state round
// tripped between them as the host does; the stream must still end.
func (k *kit) layerStream(ctx context.Context, name string, m wire.Meta, batches [][]wire.Event, onlyTraps bool) {
	var state []byte
	var stops, events int
	inStops := 0
	for i, batch := range batches {
		for _, e := range batch {
			if e.Type == wire.EventMessageStop {
				inStops++
			}
		}
		in := wire.LayerStream{Meta: m, Events: batch, State: state, Final: i == len(batches)-1}
		in.Encode(&k.enc)
		out, err := k.call(ctx, plugin.OpOnStream, k.enc.Bytes())
		if why, failed := k.failure(err, onlyTraps); failed {
			k.fail(name, "batch %d: %s", i+1, why)
			return
		} else if err != nil {
			k.pass(name, "no trap (%s)", k.explain(err))
			return
		}
		var res wire.LayerStreamResult
		if err := res.Decode(out); err != nil {
			k.fail(name, "batch %d: result does not decode: %v", i+1, err)
			return
		}
		state = res.State
		events += len(res.Events)
		for _, e := range res.Events {
			if e.Type == wire.EventMessageStop {
				stops++
			}
		}
	}
	if stops != inStops {
		k.fail(name, "the stream had %d message_stop events and the layer passed on %d: the caller's stream would not end", inStops, stops)
		return
	}
	k.pass(name, "%d batches in, %d events out, state %d bytes", len(batches), events, len(state))
}

// layerMemory makes opts.Calls calls of the layer's first phase, each with
// another prompt, on one instance, and checks that its linear memory stops
// growing; the same calls give the time per call.
func (k *kit) layerMemory(ctx context.Context, s sample) {
	d := k.report.Descriptor
	req := *s.req
	req.Messages = slices.Clone(req.Messages)
	last := &req.Messages[len(req.Messages)-1]
	last.Content = slices.Clone(last.Content)
	base := last.Content[0].Text
	var (
		op    plugin.Op
		opN   string
		input func(i int) []byte
	)
	switch {
	case d.Phases&wire.PhaseRequest != 0:
		op, opN = plugin.OpOnRequest, "request"
		input = func(i int) []byte {
			last.Content[0].Text = base + " (request " + strconv.Itoa(i) + ")"
			wire.EncodeLayerRequest(&k.enc, &s.meta, &req, d.Reads)
			return k.enc.Bytes()
		}
	case d.Phases&wire.PhaseResponse != 0:
		op, opN = plugin.OpOnResponse, "response"
		input = func(i int) []byte {
			in := wire.LayerResponse{Meta: s.meta, Response: responseSample(answerText + " #" + strconv.Itoa(i))}
			in.Encode(&k.enc)
			return k.enc.Bytes()
		}
	case d.Phases&wire.PhaseStream != 0:
		op, opN = plugin.OpOnStream, "stream"
		input = func(i int) []byte {
			var evs []wire.Event
			for _, b := range streamBatches(answerText + " #" + strconv.Itoa(i)) {
				evs = append(evs, b...)
			}
			in := wire.LayerStream{Meta: s.meta, Events: evs, Final: true}
			in.Encode(&k.enc)
			return k.enc.Bytes()
		}
	case d.Phases&wire.PhaseFallback != 0:
		op, opN = plugin.OpOnFallback, "fallback"
		input = func(i int) []byte {
			last.Content[0].Text = base + " (request " + strconv.Itoa(i) + ")"
			wire.EncodeLayerRequest(&k.enc, &s.meta, &req, d.Reads)
			return k.enc.Bytes()
		}
	default:
		return
	}
	k.measure(ctx, opN, op, input)
}

// measure is the memory and time checks over opts.Calls calls of op.
func (k *kit) measure(ctx context.Context, opName string, op plugin.Op, input func(i int) []byte) {
	n := k.opts.Calls
	lat := make([]time.Duration, 0, n)
	warm, half := max(n/10, 1), max(n/2, 1)
	var atWarm, atHalf uint64
	_, discarded0 := k.p.Stats()
	for i := range n {
		in := input(i)
		t0 := time.Now()
		_, err := k.call(ctx, op, in)
		lat = append(lat, time.Since(t0))
		if err != nil {
			k.fail("memory", "call %d of %d (%s, another prompt each): %s", i+1, n, opName, k.explain(err))
			return
		}
		switch i + 1 {
		case warm:
			_, atWarm = k.p.MemoryBytes()
		case half:
			_, atHalf = k.p.MemoryBytes()
		}
	}
	_, atEnd := k.p.MemoryBytes()
	if _, discarded := k.p.Stats(); discarded > discarded0 {
		k.fail("memory", "%d instances were discarded during the calls", discarded-discarded0)
		return
	}
	growth := int64(atEnd) - int64(atHalf)
	detail := fmt.Sprintf("%d %s calls, another prompt each: linear memory %s after %d, %s after %d, %s after %d",
		n, opName, mib(atWarm), warm, mib(atHalf), half, mib(atEnd), n)
	if growth > k.opts.MaxGrowth {
		k.fail("memory", "%s: grew %s over the last %d calls (more than %s): something is kept per call", detail, mib(uint64(growth)), n-half, mib(uint64(k.opts.MaxGrowth)))
	} else {
		k.pass("memory", "%s", detail)
	}
	slices.Sort(lat)
	k.report.P50, k.report.P99 = lat[len(lat)/2], lat[len(lat)*99/100]
	k.pass("time", "%s p50 %s, p99 %s per call (untrusted: interruptible code, slower than trusted)",
		opName, k.report.P50.Round(100*time.Nanosecond), k.report.P99.Round(100*time.Nanosecond))
}

func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func short(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
