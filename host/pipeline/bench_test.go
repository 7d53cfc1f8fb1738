package pipeline

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/telemetry"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkRequestPhase runs the shipped layers' request phase (bardo.wasm,
// the default-like pipeline without its local models) on the 4 KB agent
// request, each with a last user turn of its own so no cache answers: what
// the host spends around the guests' calls (encoding the parts each layer
// reads, the calls, decoding their results) is the native part of its
// profile, its allocations are the host's.
func BenchmarkRequestPhase(b *testing.B) {
	files := map[string]string{"bardo.wasm": wasmbuild.Bundle}
	bundled := regexp.MustCompile(`plugin = "([a-z]+)\.wasm"`).ReplaceAllString(defaultLike+providerSim, "plugin = \"bardo.wasm\"\nentry = \"$1\"")
	// Without the local models injection's classifier is out of reach: its
	// call fails, and fail-open lets the rest of the phase run.
	bundled = strings.Replace(bundled, `on_error = "fail-closed"
timeout = "100ms"
trusted = true
[layer.config]
action = "flag"`, `on_error = "fail-open"
timeout = "100ms"
trusted = true
[layer.config]
action = "flag"`, 1)
	e := newEnv(b, files, bundled)
	p, release := e.m.Acquire()
	defer release()
	base := fixtures.AgentRequest()
	last := len(base.Messages) - 1
	run := func(i int) *Exchange {
		req := *base
		req.Messages = append([]wire.Message(nil), base.Messages...)
		req.Messages[last].Content = []wire.Block{{Type: wire.BlockText, Text: "Go ahead with case " + strconv.Itoa(i) + ", and summarize the risk in two sentences at the end."}}
		x := &Exchange{Meta: wire.Meta{RequestID: "r" + strconv.Itoa(i), Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}, Req: &req, Pristine: true}
		if ans, werr := p.RequestPhase(context.Background(), x); werr != nil || ans != nil {
			b.Fatalf("request %d: answer %v, error %v", i, ans, werr)
		}
		return x
	}
	x := run(-1)
	if len(x.Degraded) != 1 || x.Degraded[0] != "layer-skipped:injection" {
		b.Fatalf("degraded %v; want only injection skipped", x.Degraded)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		run(i)
		i++
	}
}

// BenchmarkAnswerPhase runs the shipped layers' response phase on a JSON
// answer to a unique 4 KB agent request with a session (the request phase,
// untimed, makes affinity, semcache and hashcache note a miss): the three
// layers' on_response in one answer run (ABI v1.8), and called one by one
// (BARDO_RESPONSE_RUNS=0). Both pipelines are loaded in one process, so
// -count alternates them.
func BenchmarkAnswerPhase(b *testing.B) {
	bundled := regexp.MustCompile(`plugin = "([a-z]+)\.wasm"`).ReplaceAllString(defaultLike+providerSim, "plugin = \"bardo.wasm\"\nentry = \"$1\"")
	bundled = strings.Replace(bundled, "on_error = \"fail-closed\"\ntimeout = \"100ms\"\ntrusted = true\n[layer.config]\naction = \"flag\"",
		"on_error = \"fail-open\"\ntimeout = \"100ms\"\ntrusted = true\n[layer.config]\naction = \"flag\"", 1)
	regs := map[string]*telemetry.Registry{}
	load := func(runs string) *Pipeline {
		b.Setenv("BARDO_RESPONSE_RUNS", runs)
		reg := telemetry.New()
		e := newEnvWith(b, map[string]string{"bardo.wasm": wasmbuild.Bundle}, bundled, func(d *Deps) { d.Metrics = reg })
		p, release := e.m.Acquire()
		b.Cleanup(release)
		regs[runs] = reg
		return p
	}
	pipelines := map[string]*Pipeline{"runs": load("1"), "calls": load("0")}
	regs["runs"], regs["calls"] = regs["1"], regs["0"]
	base := fixtures.AgentRequest()
	last := len(base.Messages) - 1
	text := strings.Repeat("The rebalance is not worth the gas today. ", 24)
	for _, name := range []string{"runs", "calls"} {
		p := pipelines[name]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			i := 0
			callSeconds(regs[name])
			for b.Loop() {
				b.StopTimer()
				req := *base
				req.Messages = append([]wire.Message(nil), base.Messages...)
				req.Messages[last].Content = []wire.Block{{Type: wire.BlockText, Text: name + " case " + strconv.Itoa(i) + ", and summarize the risk."}}
				x := &Exchange{Meta: wire.Meta{RequestID: "r" + strconv.Itoa(i), Tenant: "bench", Session: "agent-7", Dialect: wire.DialectOpenAI, Model: req.Model}, Req: &req, Pristine: true}
				if ans, werr := p.RequestPhase(ctx, x); werr != nil || ans != nil {
					b.Fatalf("request %d: answer %v, error %v", i, ans, werr)
				}
				x.Meta.Annotations = append(x.Meta.Annotations,
					wire.KV{Key: "bardo.route.provider", Value: "sim"}, wire.KV{Key: "bardo.route.model", Value: req.Model})
				resp := &wire.Response{ID: "a", Model: req.Model, StopReason: wire.StopEndTurn,
					Content: []wire.Block{{Type: wire.BlockText, Text: text}}, Usage: wire.Usage{InputTokens: 900, OutputTokens: 240}}
				i++
				if i == 1 {
					callSeconds(regs[name]) // the first answer's calls are not counted
				}
				b.StartTimer()
				if werr := p.ResponsePhase(ctx, x, resp); werr != nil {
					b.Fatal(werr.Message)
				}
			}
			// The calls as the metrics saw them: each on_response (in a
			// run, the hook's time inside the guest) and the run's call.
			if n := float64(i - 1); n > 0 {
				end := callSeconds(regs[name])
				b.ReportMetric(end["bardo_on_response"]*1e6/n, "hooks-us/op")
				b.ReportMetric(end["bardo_on_response_run"]*1e6/n, "run-us/op")
			}
		})
	}
}

// callSeconds returns, by op, the seconds bardo_sandbox_call_seconds
// recorded since its last call on reg.
func callSeconds(reg *telemetry.Registry) map[string]float64 {
	mfs, _ := reg.Gatherer().Gather()
	now := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "bardo_sandbox_call_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "op" {
					now[l.GetValue()] += m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	seen.Lock()
	defer seen.Unlock()
	d := map[string]float64{}
	for op, v := range now {
		d[op] = v - seen.m[reg][op]
	}
	if seen.m == nil {
		seen.m = map[*telemetry.Registry]map[string]float64{}
	}
	seen.m[reg] = now
	return d
}

var seen struct {
	sync.Mutex
	m map[*telemetry.Registry]map[string]float64
}
