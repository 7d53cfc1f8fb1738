package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/wire"
)

// answerRunEnv loads testdata/answerrun's three layers (one, two, three:
// the answer phases call them three, two, one) from one module, with
// answer runs on or off (BARDO_RESPONSE_RUNS), every layer fail-open but
// two, whose on_error is twoOnError, and policy (trusted, or a timeout)
// for each.
func answerRunEnv(t *testing.T, runs bool, twoOnError, policy string) (*Pipeline, *telemetry.Registry, *recordingKV) {
	t.Helper()
	t.Setenv("BARDO_RESPONSE_RUNS", map[bool]string{true: "1", false: "0"}[runs])
	var toml strings.Builder
	for _, l := range []string{"one", "two", "three"} {
		onError := "fail-open"
		if l == "two" {
			onError = twoOnError
		}
		fmt.Fprintf(&toml, "\n[[layer]]\nname = %q\nplugin = \"answerrun.wasm\"\nentry = %q\non_error = %q\n%s\n", l, l, onError, policy)
	}
	reg, kv := telemetry.New(), &recordingKV{m: map[string][]byte{}}
	e := newEnvWith(t, map[string]string{"answerrun.wasm": "host/pipeline/testdata/answerrun", "sim.wasm": "plugins/providers/sim"},
		toml.String()+providerSim, func(d *Deps) { d.Metrics, d.KV = reg, kv })
	p, release := e.m.Acquire()
	t.Cleanup(release)
	for _, l := range p.Layers {
		if l.answerRun != runs {
			t.Fatalf("layer %s: answerRun %v with runs %v", l.Spec.Name, l.answerRun, runs)
		}
	}
	return p, reg, kv
}

// answered runs x's request phase on p and then its answer (text), as a
// JSON response or streamed in three batches; it returns what the caller
// gets and what the layers left.
func answered(t *testing.T, p *Pipeline, kv *recordingKV, x *Exchange, text string, stream bool) string {
	t.Helper()
	ctx := context.Background()
	if _, werr := p.RequestPhase(ctx, x); werr != nil {
		t.Fatal(werr.Message)
	}
	x.Meta.Annotations = append(x.Meta.Annotations, wire.KV{Key: "bardo.route.provider", Value: "sim"})
	var b strings.Builder
	if !stream {
		resp := wire.Response{ID: "a1", Model: "m", StopReason: wire.StopEndTurn,
			Content: []wire.Block{{Type: wire.BlockText, Text: text}}}
		werr := p.ResponsePhase(ctx, x, &resp)
		fmt.Fprintf(&b, "error %+v\nresponse %+v\n", werr, resp)
	} else {
		bs := [][]wire.Event{
			{{Type: wire.EventMessageStart, ID: "a1", Model: "m"}, {Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockText}}},
			{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: text}},
			{{Type: wire.EventBlockStop}, {Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn}, {Type: wire.EventMessageStop}},
		}
		for i, batch := range bs {
			out, werr := p.StreamPhase(ctx, x, batch, i == len(bs)-1)
			fmt.Fprintf(&b, "batch %d: error %+v events %+v\n", i, werr, out)
			if werr != nil {
				break
			}
		}
	}
	kv.mu.Lock()
	defer kv.mu.Unlock()
	fmt.Fprintf(&b, "headers %v\ndegraded %v\nkv %v\n", x.Headers, x.Degraded, kv.m)
	return b.String()
}

// An answer run returns what the layers called one by one return, JSON
// or streamed: the same headers, replacements (a replacement ends the run
// and the next layer sees it), hook errors with their layer's on_error,
// layers that skip the answer left out, every layer's calls counted as
// its own.
func TestAnswerRunMatchesCalls(t *testing.T) {
	for _, twoOnError := range []string{"fail-open", "fail-closed"} {
		t.Run(twoOnError, func(t *testing.T) {
			solo, regs, kvs := answerRunEnv(t, false, twoOnError, "trusted = true")
			run, reg, kvr := answerRunEnv(t, true, twoOnError, "trusted = true")
			cases := []struct{ req, answer string }{
				{"hi", "fine"},
				{"hi", "replace-three"},                // three replaces: two and one see it
				{"hi", "replace-two then fail-one"},    // two's replacement is what one sees (and fails on)
				{"hi", "fail-two"},                     // two's error, its on_error
				{"hi", "fail-three replace-one"},       // an error ends the run; the rest go on
				{"skip-two", "fine"},                   // two sits out: one run of three and one
				{"skip-three skip-one", "replace-two"}, // one layer left: no run
				{"hi", "fine"},
			}
			for _, stream := range []bool{false, true} {
				for i, c := range cases {
					name := fmt.Sprintf("case %d (stream %v)", i, stream)
					a := answered(t, solo, kvs, exchange(c.req), c.answer, stream)
					b := answered(t, run, kvr, exchange(c.req), c.answer, stream)
					if a != b {
						t.Errorf("%s: one by one (-), in a run (+):\n%s", name, diff(a, b))
					}
				}
			}
			// Per answer: "fine" twice, "replace-two …", "fail-two" and
			// skip-two make one run; "replace-three" and "fail-three …"
			// stop after their first hook and the other two make a
			// second; a replacement or an error with one layer left, or
			// a single layer, make none: 9, streamed as JSON (the guest
			// stops at a replacement there too).
			if got := reg.Value("bardo_sandbox_call_seconds", "plugin", "answerrun.wasm", "op", "bardo_on_response_run"); got != 18 {
				t.Errorf("%v runs, want 18", got)
			}
			// Every hook is counted as its layer's call, as one by one.
			for _, l := range []string{"one", "two", "three"} {
				a, b := calls(regs, l, "on_response"), calls(reg, l, "on_response")
				fa := regs.Value("bardo_sandbox_call_failures_total", "plugin", l, "op", "bardo_on_response", "kind", "error")
				fb := reg.Value("bardo_sandbox_call_failures_total", "plugin", l, "op", "bardo_on_response", "kind", "error")
				if a != b || a == 0 || fa != fb {
					t.Errorf("%s: %v calls, %v errors one by one; %v, %v in runs", l, a, fa, b, fb)
				}
			}
			for _, l := range []string{"one", "two", "three"} {
				if n := calls(reg, l, "on_stream"); n != 0 {
					t.Errorf("%s: %v on_stream calls", l, n)
				}
			}
		})
	}
}

// A run that traps or times out answers for none of its layers: they are
// called again one by one, so the failure is its own layer's, with its
// on_error; a layer whose hook ran before it in the failed run runs
// twice (documented, as for request runs). JSON and streamed.
func TestAnswerRunFailureFallsBack(t *testing.T) {
	for _, c := range []struct{ onError, policy, answer, kind string }{
		{"fail-open", "trusted = true", "trap-two", "trap"},
		{"fail-closed", "trusted = true", "trap-two", "trap"},
		{"fail-open", "timeout = \"100ms\"", "spin-two", "timeout"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/stream=%v", c.kind, c.onError, stream), func(t *testing.T) {
				p, reg, kv := answerRunEnv(t, true, c.onError, c.policy)
				x := exchange("hi")
				got := answered(t, p, kv, x, c.answer, stream)
				failed := strings.Contains(got, "error &{") // the caller saw two's failure
				switch c.onError {
				case "fail-open":
					if failed || len(x.Degraded) != 1 || x.Degraded[0] != "layer-skipped:two" {
						t.Fatalf("want two skipped, the answer kept:\n%s", got)
					}
				case "fail-closed":
					if !failed || !strings.Contains(got, `"two" failed`) {
						t.Fatalf("want two's fail-closed error:\n%s", got)
					}
				}
				if n := reg.Value("bardo_sandbox_call_failures_total", "plugin", "two", "op", "bardo_on_response", "kind", c.kind); n != 1 {
					t.Errorf("two: %v %s failures counted, want 1", n, c.kind)
				}
				if n := reg.Value("bardo_sandbox_call_failures_total", "plugin", "answerrun.wasm", "op", "bardo_on_response_run", "kind", c.kind); n != 1 {
					t.Errorf("%v failed runs counted, want 1", n)
				}
				// three ran in the failed run and again alone (its kv
				// counter says 2; only the second call is counted, the
				// failed run's records are not read); one ran alone
				// after two, unless two failed closed.
				wantOne := map[string]float64{"fail-open": 1, "fail-closed": 0}[c.onError]
				if n3, n1 := calls(reg, "three", "on_response"), calls(reg, "one", "on_response"); n3 != 1 || n1 != wantOne {
					t.Errorf("three counted %v calls, one %v; want 1 and %v", n3, n1, wantOne)
				}
				if v, _ := kv.Get(sandbox.TenantPrefix("three", "") + "calls"); string(v) != "2" {
					t.Errorf("three ran %q times, want 2", v)
				}
				// The next answer runs on a new instance, in one run.
				runs := reg.Value("bardo_sandbox_call_seconds", "plugin", "answerrun.wasm", "op", "bardo_on_response_run")
				x = exchange("hi")
				if got := answered(t, p, kv, x, "fine", stream); strings.Contains(got, "error &{") || len(x.Degraded) != 0 {
					t.Errorf("after the failure:\n%s", got)
				}
				if n := reg.Value("bardo_sandbox_call_seconds", "plugin", "answerrun.wasm", "op", "bardo_on_response_run"); n != runs+1 {
					t.Errorf("the next answer made %v runs, want 1", n-runs)
				}
			})
		}
	}
}

// The shipped layers (bardo.wasm) give the same answer phases in runs as
// one by one: both dialects, JSON and streamed, affinity with and without
// a session, a pii mask restored in the answer (pii replaces it: the run
// ends there), and a cache hit on the next identical request (the
// caches stored the answer the same way).
func TestAnswerRunMatchesCallsShipped(t *testing.T) {
	solo, run, reg := shippedBundles(t, "BARDO_RESPONSE_RUNS")
	base := fixtures.AgentRequest()
	last := len(base.Messages) - 1
	req := func(i int, text, session string, dialect wire.Dialect, stream bool) *Exchange {
		r := *base
		r.Stream = stream
		r.Messages = append([]wire.Message(nil), base.Messages...)
		r.Messages[last].Content = []wire.Block{{Type: wire.BlockText, Text: text}}
		return &Exchange{Meta: wire.Meta{RequestID: "r" + strconv.Itoa(i), Tenant: "t", Session: session, Dialect: dialect, Model: r.Model},
			Req: &r, Pristine: true}
	}
	// answer is the upstream's answer to x: its last turn as the request
	// phase left it (pii's placeholders in it), then a long text.
	answer := func(x *Exchange) wire.Response {
		m := x.Req.Messages[len(x.Req.Messages)-1]
		return wire.Response{ID: "a", Model: x.Req.Model, StopReason: wire.StopEndTurn,
			Content: []wire.Block{{Type: wire.BlockText, Text: "You said: " + m.Content[len(m.Content)-1].Text + " " +
				strings.Repeat("The rebalance is not worth the gas today. ", 8)}},
			Usage: wire.Usage{InputTokens: 900, OutputTokens: 80}}
	}
	ctx := context.Background()
	phases := func(p *Pipeline, x *Exchange) string {
		var b strings.Builder
		ans, werr := p.RequestPhase(ctx, x)
		fmt.Fprintf(&b, "request phase: answer %v error %v\n", ans != nil, werr)
		if ans != nil || werr != nil {
			return b.String()
		}
		x.Meta.Annotations = append(x.Meta.Annotations,
			wire.KV{Key: "bardo.route.provider", Value: "sim"}, wire.KV{Key: "bardo.route.model", Value: x.Req.Model})
		resp := answer(x)
		if !x.Req.Stream {
			werr := p.ResponsePhase(ctx, x, &resp)
			fmt.Fprintf(&b, "response phase: error %v\nanswer %+v\n", werr, resp)
		} else {
			bs := [][]wire.Event{
				{{Type: wire.EventMessageStart, ID: resp.ID, Model: resp.Model}, {Type: wire.EventBlockStart, Block: wire.Block{Type: wire.BlockText}}},
				{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: resp.Content[0].Text}},
				{{Type: wire.EventBlockStop}, {Type: wire.EventMessageDelta, StopReason: wire.StopEndTurn, Usage: resp.Usage}, {Type: wire.EventMessageStop}},
			}
			for i, batch := range bs {
				out, werr := p.StreamPhase(ctx, x, batch, i == len(bs)-1)
				fmt.Fprintf(&b, "batch %d: error %v events %+v\n", i, werr, out)
			}
		}
		fmt.Fprintf(&b, "headers %v\ndegraded %v\n", x.Headers, x.Degraded)
		return b.String()
	}
	cases := []struct {
		text, session string
		dialect       wire.Dialect
		stream        bool
	}{
		{"Go ahead with case 1 and summarize the risk.", "agent-7", wire.DialectOpenAI, false},
		{"Go ahead with case 1 and summarize the risk.", "agent-7", wire.DialectOpenAI, false}, // a hit
		{"Mail the report to jane.doe@example.com and call +1 415 555 0100.", "", wire.DialectAnthropic, false},
		{"Mail the report to jane.doe@example.com please, case 3.", "agent-8", wire.DialectAnthropic, true},
		{"Go ahead with case 2.", "", wire.DialectAnthropic, true},
		{"Go ahead with case 2.", "", wire.DialectAnthropic, true}, // a hit
		{"Go ahead with case 4.", "agent-7", wire.DialectOpenAI, true},
		{"Go ahead with case 4.", "agent-7", wire.DialectOpenAI, false}, // a hit for the JSON caller too
	}
	hits, restored := 0, 0
	for i, c := range cases {
		xs, xr := req(i, c.text, c.session, c.dialect, c.stream), req(i, c.text, c.session, c.dialect, c.stream)
		a, b := phases(solo, xs), phases(run, xr)
		if a != b {
			t.Errorf("case %d: one by one (-), in a run (+):\n%s", i, diff(a, b))
		}
		if strings.Contains(b, "answer true") {
			hits++
		}
		if strings.Contains(b, "You said: Mail the report to jane.doe@example.com") {
			restored++
		}
	}
	if hits != 3 || restored != 2 {
		t.Errorf("%d cache hits, %d answers with pii restored; want 3 and 2", hits, restored)
	}
	if got := reg.Value("bardo_sandbox_call_seconds", "plugin", "bardo.wasm", "op", "bardo_on_response_run"); got < 4 {
		t.Errorf("%v answer runs for %d answers", got, len(cases)-hits)
	}
}
