package pipeline

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/sdk/wire"
)

// recordingKV keeps every value put, by its namespaced key.
type recordingKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *recordingKV) Get(key string) ([]byte, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok
}

func (k *recordingKV) Put(key string, val []byte, _ time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.m[key] = append([]byte(nil), val...)
	return nil
}

func (k *recordingKV) Delete(key string) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, key)
	return nil
}

// suffixed returns the value of the one key ending with suffix.
func (k *recordingKV) suffixed(suffix string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, v := range k.m {
		if strings.HasSuffix(key, suffix) {
			return string(v)
		}
	}
	return ""
}

func (k *recordingKV) reset() {
	k.mu.Lock()
	clear(k.m)
	k.mu.Unlock()
}

// watchEnv loads the entries of testdata/watch named by layers, in that
// (pipeline) order, every one fail-closed; it returns the pipeline, the
// metrics (calls per plugin and op) and the kv the layers write.
func watchEnv(t *testing.T, layers ...string) (*Pipeline, *telemetry.Registry, *recordingKV) {
	t.Helper()
	var toml strings.Builder
	for _, l := range layers {
		toml.WriteString("\n[[layer]]\nname = \"" + l + "\"\nplugin = \"watch.wasm\"\nentry = \"" + l + "\"\ntrusted = true\n")
	}
	reg, kv := telemetry.New(), &recordingKV{m: map[string][]byte{}}
	e := newEnvWith(t, map[string]string{"watch.wasm": "host/pipeline/testdata/watch", "sim.wasm": "plugins/providers/sim"},
		toml.String()+providerSim, func(d *Deps) { d.Metrics, d.KV = reg, kv })
	p, release := e.m.Acquire()
	t.Cleanup(release)
	return p, reg, kv
}

func calls(reg *telemetry.Registry, layer, op string) float64 {
	return reg.Value("bardo_sandbox_call_seconds", "plugin", layer, "op", "bardo_"+op)
}

// streamed is an answer in three batches: "hello " then "world", then its end.
func streamed() [][]wire.Event {
	return [][]wire.Event{
		{{Type: wire.EventMessageStart, ID: "m1", Model: "m"}, {Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockText}},
			{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "hello "}},
		{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "world"}},
		{{Type: wire.EventBlockStop}, {Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn}, {Type: wire.EventMessageStop}},
	}
}

// A layer that only watches (wire.FlagWatchStream) is never called per
// batch: its on_response gets the whole streamed answer once, as the
// layers before it in the stream phase left it, and only when the stream
// ended complete. A layer that said SkipAnswer in the request phase is in
// neither answer phase of that request.
func TestWatchStream(t *testing.T) {
	// Stream order is the reverse: keep, upper, skip, watch.
	p, reg, kv := watchEnv(t, "watch", "skip", "upper", "keep")
	ctx := context.Background()

	x := exchange("hi")
	if _, werr := p.RequestPhase(ctx, x); werr != nil {
		t.Fatal(werr)
	}
	var text string
	bs := streamed()
	for i, b := range bs {
		out, werr := p.StreamPhase(ctx, x, b, i == len(bs)-1)
		if werr != nil {
			t.Fatalf("batch %d: %v", i, werr.Message)
		}
		for _, ev := range out {
			text += ev.Text
		}
	}
	if text != "HELLO WORLD" {
		t.Errorf("the caller got %q; want the upper layer's HELLO WORLD", text)
	}
	if got := kv.suffixed("answer"); got != "HELLO WORLD|end_turn" {
		t.Errorf("the watcher saw %q; want the whole answer as upper left it, HELLO WORLD|end_turn", got)
	}
	if n := calls(reg, "watch", "on_stream"); n != 0 {
		t.Errorf("watch: %v on_stream calls; want none", n)
	}
	if n := calls(reg, "watch", "on_response"); n != 1 {
		t.Errorf("watch: %v on_response calls; want 1", n)
	}
	if n := calls(reg, "upper", "on_stream"); n != 3 {
		t.Errorf("upper: %v on_stream calls; want one per batch", n)
	}
	for _, op := range []string{"on_stream", "on_response"} {
		if n := calls(reg, "skip", op); n != 0 {
			t.Errorf("skip: %v %s calls; want none", n, op)
		}
	}
	for _, h := range x.Headers {
		if h.Key == "X-Bardo-Watched" {
			t.Error("a watcher's headers on a streamed answer were kept")
		}
	}

	// A stream that broke off (no message_stop) or ended in an error is
	// no answer: the watcher is not told.
	for _, end := range [][]wire.Event{
		{{Type: wire.EventBlockStop}},
		{{Type: wire.EventError, Error: &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "cut"}}},
	} {
		kv.reset()
		x = exchange("hi")
		if _, werr := p.RequestPhase(ctx, x); werr != nil {
			t.Fatal(werr)
		}
		bs = streamed()
		bs[2] = end
		for i, b := range bs {
			if _, werr := p.StreamPhase(ctx, x, b, i == len(bs)-1); werr != nil {
				t.Fatalf("batch %d: %v", i, werr.Message)
			}
		}
		if n := calls(reg, "watch", "on_response"); n != 1 || kv.suffixed("answer") != "" {
			t.Errorf("an incomplete stream (%v) reached the watcher: %v on_response calls", end[0].Type, n)
		}
	}

	// A complete response: the watcher is an ordinary response layer, and
	// the skipping one sits it out.
	x = exchange("hi")
	if _, werr := p.RequestPhase(ctx, x); werr != nil {
		t.Fatal(werr)
	}
	resp := wire.Response{Content: []wire.Block{{Type: wire.BlockText, Text: "plain"}}, StopReason: wire.StopEndTurn}
	if werr := p.ResponsePhase(ctx, x, &resp); werr != nil {
		t.Fatal(werr.Message)
	}
	if got := kv.suffixed("answer"); got != "plain|end_turn" || header(x, "X-Bardo-Watched") != "1" {
		t.Errorf("response phase: watcher saw %q, headers %v", got, x.Headers)
	}
	if n := calls(reg, "skip", "on_response"); n != 0 {
		t.Errorf("skip: %v on_response calls; want none", n)
	}
	if p.ResponseLayersFor(x) != true || p.StreamLayersFor(x) != true {
		t.Error("the watcher's answer phases were not counted")
	}
}

// A stream's message_stop often comes a batch before the final one (an
// OpenAI stream's [DONE], the upstream's EOF). The gateway settles the
// request, and ends its trace, at message_stop, so the watchers are told
// in the batch that carries it — once, not again in the final batch.
func TestWatchersToldAtMessageStop(t *testing.T) {
	p, reg, kv := watchEnv(t, "watch", "upper")
	ctx := context.Background()
	x := exchange("hi")
	if _, werr := p.RequestPhase(ctx, x); werr != nil {
		t.Fatal(werr)
	}
	bs := streamed()
	for i, b := range bs {
		if _, werr := p.StreamPhase(ctx, x, b, false); werr != nil {
			t.Fatalf("batch %d: %v", i, werr.Message)
		}
	}
	if n := calls(reg, "watch", "on_response"); n != 1 || kv.suffixed("answer") != "HELLO WORLD|end_turn" {
		t.Fatalf("after message_stop: %v on_response calls, the watcher saw %q; want 1 and the whole answer", n, kv.suffixed("answer"))
	}
	if _, werr := p.StreamPhase(ctx, x, nil, true); werr != nil {
		t.Fatal(werr.Message)
	}
	if n := calls(reg, "watch", "on_response"); n != 1 {
		t.Errorf("the final batch told the watcher again: %v on_response calls", n)
	}
}

// When every answer-phase layer skips a request, none is in its way (the
// gateway then forwards an upstream's bytes as they came).
func TestSkipAnswerLeavesNoLayers(t *testing.T) {
	p, reg, _ := watchEnv(t, "skip")
	x := exchange("hi")
	if _, werr := p.RequestPhase(context.Background(), x); werr != nil {
		t.Fatal(werr)
	}
	if p.ResponseLayersFor(x) || p.StreamLayersFor(x) {
		t.Fatal("a request every answer layer skips still has answer layers")
	}
	resp := wire.Response{Content: []wire.Block{{Type: wire.BlockText, Text: "x"}}}
	if werr := p.ResponsePhase(context.Background(), x, &resp); werr != nil {
		t.Fatal(werr.Message)
	}
	if _, werr := p.StreamPhase(context.Background(), x, streamed()[0], false); werr != nil {
		t.Fatal(werr.Message)
	}
	if n := calls(reg, "skip", "on_response") + calls(reg, "skip", "on_stream"); n != 0 {
		t.Fatalf("%v answer-phase calls; want none", n)
	}
	// Another request, whose layer did not skip, still has them.
	if !p.ResponseLayersFor(exchange("hi")) {
		t.Fatal("a request that ran no request phase has no response layers")
	}
}

// A batch a layer hands back untouched is not sent back nor decoded: the
// host keeps its own events (the same slice); one edited in place comes
// back changed.
func TestUnchangedEventsKept(t *testing.T) {
	p, _, _ := watchEnv(t, "keep")
	x := exchange("hi")
	in := streamed()[0]
	out, werr := p.StreamPhase(context.Background(), x, in, false)
	if werr != nil {
		t.Fatal(werr.Message)
	}
	if len(out) != len(in) || &out[0] != &in[0] {
		t.Fatal("an unchanged batch was decoded into new events")
	}

	p, _, _ = watchEnv(t, "upper")
	x = exchange("hi")
	out, werr = p.StreamPhase(context.Background(), x, streamed()[0], false)
	if werr != nil {
		t.Fatal(werr.Message)
	}
	if len(out) != 3 || out[2].Text != "HELLO " {
		t.Fatalf("an edit in place was lost: %+v", out)
	}
}
