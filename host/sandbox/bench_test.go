package sandbox_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BenchmarkLayerCall measures one request-phase call on the typical 4 KB agent
// request (host encode of the declared parts, boundary crossing, guest decode,
// hook, guest encode, host copy-out and decode), per plugin shape, trusted and
// untrusted side by side.
func BenchmarkLayerCall(b *testing.B) {
	req := fixtures.AgentRequest()
	meta := wire.Meta{RequestID: "req_bench", Tenant: "bench", Dialect: wire.DialectOpenAI, Model: req.Model}
	for _, pkg := range []string{"noop", "touch", "hostcalls"} {
		for _, trusted := range []bool{true, false} {
			name := pkg + map[bool]string{true: "/trusted", false: "/untrusted"}[trusted]
			b.Run(name, func(b *testing.B) {
				p, err := sandbox.Load(context.Background(), sandbox.Options{
					Name: pkg, Path: wasmbuild.MustBuild(b, "testplugins/"+pkg), Trusted: trusted,
					MemoryLimit: 64 << 20, PoolSize: 1, Timeout: time.Second,
					KV: kvstore.NewMemory(1 << 20),
				})
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				info := sandbox.CallInfo{RequestID: meta.RequestID, Tenant: meta.Tenant}
				var enc wire.Encoder
				var res wire.LayerResult
				var lat latencies
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					t0 := time.Now()
					wire.EncodeLayerRequest(&enc, &meta, req, p.Descriptor().Reads)
					out, err := p.Call(context.Background(), plugin.OpOnRequest, enc.Bytes(), info)
					if err != nil {
						b.Fatal(err)
					}
					if err := res.Decode(out); err != nil {
						b.Fatal(err)
					}
					lat.Add(time.Since(t0))
				}
				lat.Report(b)
			})
		}
	}
}

type latencies = layertest.Latencies

// BenchmarkInstantiate measures making one more instance of a plugin (what a
// pool pays after a trap, or when it grows) and the linear memory an idle
// instance holds.
func BenchmarkInstantiate(b *testing.B) {
	for _, pkg := range []string{"testplugins/noop", "plugins/providers/sim"} {
		b.Run(pkg[strings.LastIndex(pkg, "/")+1:], func(b *testing.B) {
			p, err := sandbox.Load(context.Background(), sandbox.Options{
				Name: "x", Path: wasmbuild.MustBuild(b, pkg), Trusted: true, PoolSize: 1,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			var lat latencies
			for b.Loop() {
				t0 := time.Now()
				closeInstance, err := p.NewInstanceForTest(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				lat.Add(time.Since(t0))
				closeInstance()
			}
			lat.Report(b)
			_, mem := p.MemoryBytes()
			b.ReportMetric(float64(mem)/(1<<20), "instance-MiB")
		})
	}
}

// BenchmarkLoadPhases splits what loading one shipped plugin costs with a
// warm compilation cache (the state of every start after the first): wazero
// decoding and validating the module and finding its compiled code in the
// cache (compile-cached), instantiating it and running the Go runtime's
// _initialize, and a whole sandbox.Load (both, plus descriptor, host
// module and Init). Each op builds a fresh runtime, as every plugin load
// does.
func BenchmarkLoadPhases(b *testing.B) {
	path := wasmbuild.MustBuild(b, "plugins/layers/hashcache")
	code, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	cache, err := wazero.NewCompilationCacheWithDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	newRuntime := func() wazero.Runtime {
		rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigCompiler().WithCompilationCache(cache))
		wasi_snapshot_preview1.MustInstantiate(ctx, rt)
		return rt
	}
	warm := newRuntime()
	if _, err := warm.CompileModule(ctx, code); err != nil { // fills the cache
		b.Fatal(err)
	}
	warm.Close(ctx)

	b.Run("compile-cached", func(b *testing.B) {
		for b.Loop() {
			rt := newRuntime()
			if _, err := rt.CompileModule(ctx, code); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			rt.Close(ctx)
			b.StartTimer()
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			p, err := sandbox.Load(ctx, sandbox.Options{Name: "hashcache", Path: path, Trusted: true,
				MemoryLimit: 64 << 20, PoolSize: 1, Timeout: 2 * time.Second, Cache: cache,
				KV: kvstore.NewMemory(1 << 20)})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			p.Close()
			b.StartTimer()
		}
	})
}
