package pipeline

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

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
