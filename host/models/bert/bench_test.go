package bert

import (
	"context"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/models/bertgen"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// The benchmarks run the minilm-shaped generated models (6 layers, hidden
// 384, random weights): the latency of a MiniLM-class encoder on this machine,
// not the quality of any model. BARDO_BENCH_INTRA_OP sets onnxruntime's
// intra-op thread count for the run (default 1, the host's default).

// Texts of about 20 and 128 WordPiece tokens ([CLS]/[SEP] included); the
// benchmarks report the exact count.
const (
	text20  = "Summarise the attached quarterly report and list the three biggest risks for the sales team."
	text128 = "You are a helpful assistant for an online bookshop. A customer writes: I ordered two novels and a cookbook " +
		"last Tuesday, paid for express shipping, and the tracking page has said 'label created' for five days. " +
		"The cookbook is a birthday present for my mother, whose birthday is this Saturday, so I need to know today " +
		"whether it will arrive in time or whether I should buy it locally instead. If it cannot arrive, please " +
		"cancel only the cookbook, refund the express shipping, and keep the two novels on the order. Reply politely, " +
		"and thank them for their patience with this order."
)

var bench struct {
	once     sync.Once
	tmp      string
	enc, cls string
	err      error

	mu       sync.Mutex
	encoders map[int]*Encoder // by MaxBatch
}

// TestMain removes the generated benchmark models and closes loaded ones.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, e := range bench.encoders {
		e.Close()
	}
	if bench.tmp != "" {
		os.RemoveAll(bench.tmp)
	}
	os.Exit(code)
}

// minilmDirs generates the minilm-shaped encoder and classifier once per
// test binary (about 90 MB each, so not once per benchmark).
func minilmDirs(b *testing.B) (enc, cls string) {
	b.Helper()
	requireDeps(b)
	bench.once.Do(func() {
		if bench.tmp, bench.err = os.MkdirTemp("", "bardo-bert-bench-"); bench.err != nil {
			return
		}
		bench.enc, bench.cls = bench.tmp+"/encoder", bench.tmp+"/classifier"
		if bench.err = bertgen.Generate("minilm-shaped", bench.enc, 1); bench.err != nil {
			return
		}
		bench.err = bertgen.GenerateClassifier("minilm-shaped", bench.cls, 2)
	})
	if bench.err != nil {
		b.Fatal(bench.err)
	}
	return bench.enc, bench.cls
}

func benchOptions() Options {
	var o Options
	if n, err := strconv.Atoi(os.Getenv("BARDO_BENCH_INTRA_OP")); err == nil {
		o.Runtime = onnxrt.Options{IntraOpThreads: n}
	}
	return o
}

// benchEncoder loads the minilm-shaped encoder once per test binary and
// batch size; the benchmark framework calls a benchmark several times while
// it sizes b.N. maxBatch 1 disables batching.
func benchEncoder(b *testing.B, maxBatch int) *Encoder {
	enc, _ := minilmDirs(b)
	bench.mu.Lock()
	defer bench.mu.Unlock()
	if e := bench.encoders[maxBatch]; e != nil {
		return e
	}
	opts := benchOptions()
	opts.MaxBatch = maxBatch
	if maxBatch == 1 {
		opts.MaxWait = -1
	}
	e, err := LoadEncoder(enc, opts)
	if err != nil {
		b.Fatal(err)
	}
	if bench.encoders == nil {
		bench.encoders = map[int]*Encoder{}
	}
	bench.encoders[maxBatch] = e
	return e
}

// reportLatency runs fn under b.Loop and reports the median and 99th
// percentile of its durations in microseconds, plus the input's token count
// (metrics reported before b.Loop would be reset by it).
func reportLatency(b *testing.B, tokens int, fn func() error) {
	for range 5 { // warm-up: first runs allocate onnxruntime's arenas
		if err := fn(); err != nil {
			b.Fatal(err)
		}
	}
	var durs []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	slices.Sort(durs)
	at := func(q float64) float64 {
		return float64(durs[min(len(durs)-1, int(q*float64(len(durs))))].Microseconds())
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(float64(tokens), "tokens")
}

func BenchmarkEncoderSingle(b *testing.B) {
	for _, c := range []struct{ name, text string }{{"tokens=20", text20}, {"tokens=128", text128}} {
		b.Run(c.name, func(b *testing.B) {
			e := benchEncoder(b, DefaultMaxBatch)
			ctx := context.Background()
			reportLatency(b, e.s.tok.Encode(c.text, e.MaxLength()).Len(), func() error {
				_, err := e.Embed(ctx, []string{c.text})
				return err
			})
		})
	}
}

// BenchmarkEncoderConcurrent has 16 concurrent callers (8 per core) each
// embedding one ~20-token text at a time, so requests meet in the batcher;
// it reports texts per second and the average batch size, with batching and
// (for comparison) without.
func BenchmarkEncoderConcurrent(b *testing.B) {
	b.Run("batched", func(b *testing.B) { benchConcurrent(b, benchEncoder(b, DefaultMaxBatch)) })
	b.Run("unbatched", func(b *testing.B) { benchConcurrent(b, benchEncoder(b, 1)) })
}

func benchConcurrent(b *testing.B, e *Encoder) {
	ctx := context.Background()
	if _, err := e.Embed(ctx, []string{text20}); err != nil {
		b.Fatal(err)
	}
	before := e.Stats()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := e.Embed(ctx, []string{text20}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	after := e.Stats()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
	if n := after.Batches - before.Batches; n > 0 {
		b.ReportMetric(float64(after.Items-before.Items)/float64(n), "texts/batch")
	}
}

func BenchmarkClassifierSingle(b *testing.B) {
	_, cls := minilmDirs(b)
	c, err := LoadClassifier(cls, benchOptions())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	reportLatency(b, c.s.tok.Encode(text20, c.MaxLength()).Len(), func() error {
		_, err := c.Classify(ctx, []string{text20})
		return err
	})
}
