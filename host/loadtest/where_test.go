package loadtest_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/loadtest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// BenchmarkWhereTimeGoes splits the shipped pipeline's time under load by
// where it is spent: the wall time inside each plugin's calls (guest code,
// its host calls and the guest's own GC), the calls that queued for an
// instance, and the process's CPU by class (runtime/metrics: user Go code,
// Go GC, and everything else — guest code and ONNX Runtime run as
// "external" code the Go runtime cannot see). Per request, at 1, 16 and 64
// connections, unique prompts so every layer works. The wall time inside a
// call includes the time its thread waited for a CPU: guest code holds its
// goroutine's P and cannot be preempted, so under load the calls' wall time
// adds up to more than the CPU there is.
//
//	go test -run '^$' -bench WhereTimeGoes -benchtime 2000x ./host/loadtest/
func BenchmarkWhereTimeGoes(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	b.Cleanup(fake.Close)
	g := startShipped(b, fake.URL(), nil)
	warm := loadtest.Run(context.Background(), g.URL, loadtest.Mix{Clients: 4, Requests: 200, StreamShare: 0.5, Seed: 9})
	if warm.Errors+warm.Wrong > 0 {
		b.Fatalf("warm-up: %s", warm)
	}
	for _, conns := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			before := sampleWhere(g)
			res := loadtest.Run(context.Background(), g.URL, loadtest.Mix{
				Clients: conns, Requests: b.N, StreamShare: 0.5, Seed: uint64(time.Now().UnixNano()),
			})
			after := sampleWhere(g)
			if res.Errors+res.Wrong > 0 {
				b.Fatalf("%s; failures: %q", res, res.Failures)
			}
			n := float64(res.Requests)
			us := func(s float64) float64 { return s / n * 1e6 }
			b.ReportMetric(res.RPS(), "req/s")
			b.ReportMetric(float64(res.Percentile(50).Microseconds())/1000, "p50-ms")
			b.ReportMetric(us(after.process-before.process), "cpu-µs/req")
			b.ReportMetric(us(after.cpu["/cpu/classes/gc/total:cpu-seconds"]-before.cpu["/cpu/classes/gc/total:cpu-seconds"]), "gogc-µs/req")
			var inPlugins float64
			var rows []string
			for name, s := range after.callSeconds {
				d := s - before.callSeconds[name]
				inPlugins += d
				w := after.waits[name] - before.waits[name]
				if d > 0 || w > 0 {
					rows = append(rows, fmt.Sprintf("%-32s %8.1f µs/req  %6.3f waits/req", name, us(d), w/n))
				}
			}
			sort.Strings(rows)
			b.ReportMetric(us(inPlugins), "in-plugins-µs/req")
			b.ReportMetric((after.calls-before.calls)/n, "plugin-calls/req")
			if b.N == 1 {
				return // the benchmark's first probe
			}
			b.Logf("conns=%d: %s\nwall time inside plugin calls, per request (op summed):\n  %s\nsemcache guard rejects %v, late trusted calls: %s",
				conns, res, strings.Join(rows, "\n  "),
				after.guardRejects-before.guardRejects, lateCalls(g))
			fake.Reset()
		})
	}
}

// whereSample is a snapshot of the counters BenchmarkWhereTimeGoes reads.
type whereSample struct {
	process      float64            // the process's CPU seconds (getrusage)
	cpu          map[string]float64 // runtime/metrics /cpu/classes/…
	callSeconds  map[string]float64 // bardo_sandbox_call_seconds sum, by plugin/op
	calls        float64            // bardo_sandbox_call_seconds count, all plugins
	waits        map[string]float64 // bardo_sandbox_pool_waits_total, by plugin
	guardRejects float64
}

func sampleWhere(g *testgateway.Gateway) whereSample {
	s := whereSample{cpu: map[string]float64{}, callSeconds: map[string]float64{}, waits: map[string]float64{}}
	var ms []metrics.Sample
	for _, d := range metrics.All() {
		if strings.HasPrefix(d.Name, "/cpu/classes/") {
			ms = append(ms, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(ms)
	for _, m := range ms {
		s.cpu[m.Name] = m.Value.Float64()
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.process = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	mfs, _ := g.Metrics.Gatherer().Gather()
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch mf.GetName() {
			case "bardo_sandbox_call_seconds":
				s.callSeconds[label(m, "plugin")+"/"+label(m, "op")] += m.GetHistogram().GetSampleSum()
				s.calls += float64(m.GetHistogram().GetSampleCount())
			case "bardo_sandbox_pool_waits_total":
				s.waits[label(m, "plugin")+"/"] += m.GetCounter().GetValue()
			}
		}
	}
	// Pool waits are per plugin; show them on its busiest op's row.
	for k, w := range s.waits {
		delete(s.waits, k)
		for name := range s.callSeconds {
			if strings.HasPrefix(name, k) && (strings.HasSuffix(name, "bardo_on_request") || strings.HasSuffix(name, "bardo_decode_stream")) {
				s.waits[name] = w
			}
		}
	}
	s.guardRejects = g.Metrics.Value("bardo_plugin_semcache_guard_rejects_total", "plugin", "semcache")
	return s
}

// TestRSSUnderLoad reports the process's resident memory with the shipped
// pipeline: idle after the first answers, split into its parts, then every
// few seconds while 100 clients (half streaming, 30 % repeats) load it, and
// after the load. The gateway runs in the test's process, so the clients'
// own memory (small) is inside the figures. BARDO_LOAD_RSS_DURATION sets the
// load's length (default 6s; the run is 60s). It reports, it does not
// judge: RSS depends on the machine.
func TestRSSUnderLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	dur := envDuration(t, "BARDO_LOAD_RSS_DURATION", 6*time.Second)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	g := startShipped(t, fake.URL(), nil)
	first := loadtest.Run(context.Background(), g.URL, loadtest.Mix{Clients: 2, Requests: 20, StreamShare: 0.5, Seed: 4})
	if first.Errors+first.Wrong > 0 {
		t.Fatalf("first answers: %s", first)
	}
	runtime.GC()
	debug.FreeOSMemory()
	t.Logf("idle after the first answers:\n%s", memoryParts(g))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go forget(ctx, fake)
	done := make(chan *loadtest.Result, 1)
	go func() {
		done <- loadtest.Run(ctx, g.URL, loadtest.Mix{Clients: 100, Duration: dur, StreamShare: 0.5, RepeatShare: 0.3, Seed: 5})
	}()
	every := max(dur/12, time.Second)
	tick := time.NewTicker(every)
	defer tick.Stop()
	var line []string
	var res *loadtest.Result
	for began := time.Now(); res == nil; {
		select {
		case res = <-done:
		case <-tick.C:
			line = append(line, fmt.Sprintf("%4.0fs %4.0f MiB", time.Since(began).Seconds(), mib(rss())))
		}
	}
	t.Logf("RSS under load (100 clients), every %v:\n  %s", every, strings.Join(line, "\n  "))
	t.Logf("%s", res)
	t.Logf("after the load:\n%s", memoryParts(g))
	if path := os.Getenv("BARDO_LOAD_HEAPPROFILE"); path != "" {
		runtime.GC()
		if f, err := os.Create(path); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	if res.Errors+res.Wrong > 0 {
		t.Fatalf("under load: %d errors, %d wrong: %q", res.Errors, res.Wrong, res.Failures)
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// rss is the process's resident set (smaps_rollup's Rss).
func rss() uint64 {
	b, _ := os.ReadFile("/proc/self/smaps_rollup")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Rss:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// memoryParts splits the resident set: by mapping kind from /proc/self/smaps
// (anonymous executable mappings are wazero's compiled guest code; shared
// objects are ONNX Runtime and libc), the Go heap from runtime/metrics, and
// inside the heap the idle plugin instances' linear memory.
func memoryParts(g *testgateway.Gateway) string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	parts := map[string]uint64{}
	kind := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		fields := bytes.Fields(line)
		if len(fields) >= 5 && bytes.Count(fields[0], []byte("-")) == 1 && len(fields[1]) == 4 {
			perms, path := string(fields[1]), ""
			if len(fields) >= 6 {
				path = string(fields[5])
			}
			switch {
			case path == "" && perms[2] == 'x':
				kind = "anonymous executable (compiled guest code)"
			case strings.Contains(path, ".so"):
				kind = "shared objects (ONNX Runtime, libc)"
			case path == "" || path == "[heap]":
				kind = "anonymous data (Go heap, C heap)"
			case strings.HasPrefix(path, "["):
				kind = "other " + path
			default:
				kind = "mapped files (the test binary, models)"
			}
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("Rss:")); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(string(v)), "kB")), 10, 64)
			parts[kind] += kb << 10
		}
	}
	ms := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
	}
	metrics.Read(ms)
	var instances int
	var linear uint64
	var perPlugin []string
	if p := g.Manager.Peek(); p != nil {
		for _, l := range p.Layers {
			n, b := l.Plugin.MemoryBytes()
			instances += n
			linear += b
			perPlugin = append(perPlugin, fmt.Sprintf("%s %d×%.1f", l.Spec.Name, n, mib(b)/float64(max(n, 1))))
		}
		for _, pr := range p.Providers {
			if pr.Plugin != nil {
				n, b := pr.Plugin.MemoryBytes()
				instances += n
				linear += b
			}
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "  RSS %.0f MiB\n", mib(rss()))
	keys := make([]string, 0, len(parts))
	for k := range parts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&out, "    %-46s %6.1f MiB\n", k, mib(parts[k]))
	}
	fmt.Fprintf(&out, "  Go runtime: mapped %.1f MiB, live objects %.1f MiB, free spans %.1f MiB, released %.1f MiB\n",
		mib(ms[0].Value.Uint64()), mib(ms[1].Value.Uint64()), mib(ms[2].Value.Uint64()+ms[4].Value.Uint64()), mib(ms[3].Value.Uint64()))
	fmt.Fprintf(&out, "  idle plugin instances (Go heap): %d, linear memory %.1f MiB (layers: %s)",
		instances, mib(linear), strings.Join(perPlugin, ", "))
	return out.String()
}
