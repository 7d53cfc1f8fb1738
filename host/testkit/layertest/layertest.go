// Package layertest runs a layer plugin under the real runtime for tests and
// benchmarks: compile it, load it with the defaults every runtime test uses,
// call its phases, and report per-call latency percentiles (the targets are
// stated as p50).
package layertest

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Load compiles the plugin package pkg (e.g. "plugins/layers/pii") and loads
// it. Unset options default to: the package's last element as Name, 64 MiB of
// memory, a pool of one, a one-second timeout and an empty config. The
// plugin is closed when tb ends.
func Load(tb testing.TB, pkg string, opts sandbox.Options) *sandbox.Plugin {
	tb.Helper()
	opts.Path = wasmbuild.MustBuild(tb, pkg)
	if opts.Name == "" {
		opts.Name = path.Base(pkg)
	}
	if opts.MemoryLimit == 0 {
		opts.MemoryLimit = 64 << 20
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = 1
	}
	if opts.Timeout == 0 {
		opts.Timeout = time.Second
	}
	if opts.Config == nil {
		opts.Config = []byte(`{}`)
	}
	p, err := sandbox.Load(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	return p
}

// Call runs one op for the request meta describes and fails tb on error.
func Call(tb testing.TB, p *sandbox.Plugin, op plugin.Op, in []byte, meta *wire.Meta) []byte {
	tb.Helper()
	out, err := p.Call(context.Background(), op, in, sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// OnRequest runs the request phase the way the host does: only the parts
// the layer declared it reads cross the boundary.
func OnRequest(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta *wire.Meta, req *wire.Request) wire.LayerResult {
	tb.Helper()
	wire.EncodeLayerRequest(enc, meta, req, p.Descriptor().Reads)
	var res wire.LayerResult
	if err := res.Decode(Call(tb, p, plugin.OpOnRequest, enc.Bytes(), meta)); err != nil {
		tb.Fatal(err)
	}
	return res
}

// OnResponse runs the response phase on a complete response.
func OnResponse(tb testing.TB, p *sandbox.Plugin, enc *wire.Encoder, meta wire.Meta, resp wire.Response) wire.LayerResponseResult {
	tb.Helper()
	in := wire.LayerResponse{Meta: meta, Response: resp}
	in.Encode(enc)
	var res wire.LayerResponseResult
	if err := res.Decode(Call(tb, p, plugin.OpOnResponse, enc.Bytes(), &meta)); err != nil {
		tb.Fatal(err)
	}
	return res
}

// Latencies collects per-operation durations.
type Latencies []time.Duration

// Add records one duration.
func (l *Latencies) Add(d time.Duration) { *l = append(*l, d) }

// Report adds p50-µs and p99-µs to b's results.
func (l Latencies) Report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// Measure runs f b.N times (b.Loop) and reports allocations and p50/p99.
func Measure(b *testing.B, f func()) {
	var lat Latencies
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		f()
		lat.Add(time.Since(t0))
	}
	lat.Report(b)
}
