package vectorindex

import (
	"fmt"
	"math/rand"
	"runtime"
	"slices"
	"testing"
	"time"
)

// Benchmarks at 100k entries per tenant. Each index is built once per
// process (outside the timer) and shared by the benchmarks of its
// dimension; run e.g.
//
//	go test ./host/vectorindex -run '^$' -bench . -benchtime 2000x
//
// Build time, live heap and bytes per entry are reported as metrics of the
// search benchmarks.

const benchEntries = 100_000

type benchIndex struct {
	ix         *Index
	bases      [][]float32   // a sample of stored vectors to derive queries from
	build      time.Duration // wall clock
	buildCPU   time.Duration // process CPU time, background build included
	heapBytes  uint64        // HeapAlloc growth: live bytes
	inuseBytes uint64        // HeapInuse growth: spans holding them
}

var benchIndexes = map[int]*benchIndex{}

// heapStats returns live heap bytes and bytes in in-use spans after a full GC.
// The two differ by fragmentation: the benchmark's own query vectors die
// next to the index's copies, leaving free slots in spans the index keeps.
func heapStats() (alloc, inuse uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.HeapInuse
}

// getBenchIndex builds (once) a tenant of 100k random unit vectors through
// the public API with default parameters: exact scan up to 2048 entries,
// then a background graph build that catches up with the inserts.
func getBenchIndex(b *testing.B, dim int) *benchIndex {
	if bi := benchIndexes[dim]; bi != nil {
		return bi
	}
	allocBefore, inuseBefore := heapStats()
	ix, err := New(Config{Dim: dim, MaxEntriesPerTenant: benchEntries, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewSource(int64(dim)))
	bi := &benchIndex{ix: ix}
	start, startCPU := time.Now(), processCPU()
	for i := range benchEntries {
		v := randUnit(r, dim)
		if i%100 == 0 {
			bi.bases = append(bi.bases, v)
		}
		if err := ix.Insert("t", fmt.Sprint("e", i), v, 24*time.Hour, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	ix.wg.Wait()
	bi.build, bi.buildCPU = time.Since(start), processCPU()-startCPU
	allocAfter, inuseAfter := heapStats()
	bi.heapBytes, bi.inuseBytes = allocAfter-allocBefore, inuseAfter-inuseBefore
	if s := ix.Stats(); s.GraphNodes != benchEntries || s.Entries != benchEntries {
		b.Fatalf("unexpected state after build: %+v", s)
	}
	b.Logf("dim %d: built %d entries in %v wall, %v CPU; live heap %.1f MB (%d B/entry), in-use spans %.1f MB",
		dim, benchEntries, bi.build.Round(time.Millisecond), bi.buildCPU.Round(time.Millisecond),
		float64(bi.heapBytes)/1e6, bi.heapBytes/benchEntries, float64(bi.inuseBytes)/1e6)
	benchIndexes[dim] = bi
	return bi
}

func percentile(d []time.Duration, p float64) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[int(p*float64(len(s)-1))].Nanoseconds()) / 1e3
}

// BenchmarkSearch100k measures k=1 lookups at minScore 0.92 (the spec's
// default threshold) against a 100k-entry tenant: "near" queries lie at
// cosine 0.95 to a stored entry (a cache hit; hit-rate is then the graph's
// recall), "random" queries are uniformly random (a miss, the graph's worst
// case). It runs the default beam width and ef=64.
func BenchmarkSearch100k(b *testing.B) {
	for _, dim := range []int{100, 384} {
		for _, kind := range []string{"near", "random"} {
			for _, ef := range []int{64, DefaultEfSearch} {
				b.Run(fmt.Sprintf("dim=%d/%s/ef=%d", dim, kind, ef), func(b *testing.B) {
					bi := getBenchIndex(b, dim)
					bi.ix.efSearch = ef
					defer func() { bi.ix.efSearch = DefaultEfSearch }()
					r := rand.New(rand.NewSource(99))
					queries := make([][]float32, 1000)
					for i := range queries {
						if kind == "near" {
							queries[i] = nearby(r, bi.bases[r.Intn(len(bi.bases))], 0.95)
						} else {
							queries[i] = randUnit(r, dim)
						}
					}
					hits := 0
					lat := measure(b, func(i int) {
						m, err := bi.ix.Search("t", queries[i%len(queries)], 1, 0.92)
						if err != nil {
							b.Fatal(err)
						}
						hits += len(m)
					})
					lat.report(b)
					b.ReportMetric(float64(hits)/float64(len(lat.wall)), "hit-rate")
					b.ReportMetric(bi.build.Seconds(), "build-s")
					b.ReportMetric(bi.buildCPU.Seconds(), "build-cpu-s")
					b.ReportMetric(float64(bi.heapBytes)/1e6, "heap-MB")
					b.ReportMetric(float64(bi.inuseBytes)/1e6, "inuse-MB")
					b.ReportMetric(float64(bi.heapBytes)/benchEntries, "B/entry")
				})
			}
		}
	}
}

// BenchmarkInsertFull100k inserts new entries into the full 100k tenant, so
// every insert also evicts the LRU entry and leaves a tombstone. It runs
// after the search benchmarks because it changes the shared index. The
// background rebuild (after 25k inserts) is not included; its cost is the
// build time above.
func BenchmarkInsertFull100k(b *testing.B) {
	for _, dim := range []int{100, 384} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			bi := getBenchIndex(b, dim)
			r := rand.New(rand.NewSource(5))
			vecs := make([][]float32, 1000)
			for i := range vecs {
				vecs[i] = randUnit(r, dim)
			}
			lat := measure(b, func(i int) {
				if err := bi.ix.Insert("t", fmt.Sprint("new", i), vecs[i%len(vecs)], time.Hour, nil, nil); err != nil {
					b.Fatal(err)
				}
			})
			lat.report(b)
		})
	}
}

// BenchmarkSmallTenant compares the exact scan with the graph around the
// default ExactBelow boundary (2048 entries) at dim 384 with random queries,
// which is how that default was chosen.
func BenchmarkSmallTenant(b *testing.B) {
	const dim = 384
	for _, n := range []int{1024, 2048, 4096} {
		for _, mode := range []string{"exact", "graph"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode), func(b *testing.B) {
				exactBelow := n
				if mode == "graph" {
					exactBelow = -1
				}
				ix := newIndex(b, Config{Dim: dim, ExactBelow: exactBelow, Seed: 1}, true)
				r := rand.New(rand.NewSource(1))
				for i := range n {
					if err := ix.Insert("t", fmt.Sprint(i), randUnit(r, dim), time.Hour, nil, nil); err != nil {
						b.Fatal(err)
					}
				}
				queries := make([][]float32, 256)
				for i := range queries {
					queries[i] = randUnit(r, dim)
				}
				lat := measure(b, func(i int) {
					if _, err := ix.Search("t", queries[i%len(queries)], 1, 0.92); err != nil {
						b.Fatal(err)
					}
				})
				lat.report(b)
			})
		}
	}
}

// latencies holds per-operation wall-clock and thread CPU times.
type latencies struct{ wall, cpu []time.Duration }

// measure runs op in a b.Loop, timing each call. The goroutine is pinned to
// its OS thread so the thread's CPU time is the operation's own.
func measure(b *testing.B, op func(i int)) latencies {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var l latencies
	for i := 0; b.Loop(); i++ {
		t0, c0 := time.Now(), threadCPU()
		op(i)
		l.cpu = append(l.cpu, threadCPU()-c0)
		l.wall = append(l.wall, time.Since(t0))
	}
	return l
}

func (l latencies) report(b *testing.B) {
	b.ReportMetric(percentile(l.wall, 0.5), "p50-µs")
	b.ReportMetric(percentile(l.wall, 0.99), "p99-µs")
	b.ReportMetric(percentile(l.cpu, 0.5), "cpu-p50-µs")
	b.ReportMetric(percentile(l.cpu, 0.99), "cpu-p99-µs")
}

// dupBench is a 10k-entry tenant in which half the entries share one vector,
// as the offline embedder produces for texts that differ only in numbers.
type dupBench struct {
	ix       *Index
	normals  [][]float32 // the 5k distinct vectors, by index (id "n<i>")
	dup      []float32   // the shared vector (ids "d<i>")
	build    time.Duration
	nodes    int
	heap     uint64 // live heap growth: the index's bytes
	variants int
}

const dupEntries, dupDim = 10_000, 100

// variants > 1 stores the shared vector in that many bit-distinct versions a
// few ulps apart, as the embedder's micro-batcher produces (3 versions over
// 300 embeddings of one text in varied batches, measured with the GloVe
// model); sharing merges only bit-identical vectors, so each version is a
// node. share=false is the behaviour before sharing (one node per entry).
// variants == 0 stores no shared entries at all: the 5k distinct vectors
// alone, the reference for what a correct search of that graph costs.
func newDupBench(b *testing.B, variants int, share bool) *dupBench {
	b.Helper()
	r := rand.New(rand.NewSource(21))
	heapBefore, _ := heapStats()
	// Built once per variant and shared by the sub-benchmarks, so closed by
	// the caller rather than by newIndex's per-benchmark cleanup.
	ix, err := New(Config{Dim: dupDim, MaxEntriesPerTenant: dupEntries, Seed: 3})
	if err != nil {
		b.Fatal(err)
	}
	ix.noShare = !share
	db := &dupBench{ix: ix, dup: randUnit(r, dupDim), variants: variants}
	versions := make([][]float32, max(variants, 1))
	for v := range versions {
		versions[v] = slices.Clone(db.dup)
		if v > 0 {
			for j := range versions[v] {
				// A relative error of a few ulps, like a different summation
				// order; the index's normalisation keeps the versions apart.
				versions[v][j] *= 1 + float32(r.Intn(7)-3)*6e-8
			}
		}
	}
	start := time.Now()
	for i := range dupEntries {
		// Interleaved: the duplicates arrive over the tenant's lifetime.
		if i%2 == 0 {
			v := randUnit(r, dupDim)
			db.normals = append(db.normals, v)
			if err := ix.Insert("t", fmt.Sprint("n", i/2), v, 24*time.Hour, nil, nil); err != nil {
				b.Fatal(err)
			}
		} else if variants == 0 {
			continue
		} else if err := ix.Insert("t", fmt.Sprint("d", i/2), versions[(i/2)%variants], 24*time.Hour, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	ix.wg.Wait()
	db.build = time.Since(start)
	db.nodes = ix.Stats().GraphNodes
	heapAfter, _ := heapStats()
	// The normals are the benchmark's, not the index's, but they are the
	// same in every variant, so differences are the index's.
	db.heap = heapAfter - heapBefore
	return db
}

// bestScore is the brute-force top-1 score of q over the tenant.
func (db *dupBench) bestScore(q []float32) float32 {
	u, _ := db.ix.unit(q)
	best := float32(-1)
	if db.variants > 0 {
		best = cosine(u, db.dup)
	}
	for _, v := range db.normals {
		best = max(best, cosine(u, v))
	}
	return best
}

// BenchmarkDuplicates measures search latency and recall@1 on a 10k-entry
// tenant (dim 100, defaults) of which 5k entries share one vector, with node
// sharing on and off (off = one node per entry, as before sharing): "near"
// queries lie at cosine 0.95 to one of the 5k distinct vectors, "random" ones
// are uniformly random, "dup" asks for the 4 best matches of the shared
// vector (the semantic cache's k). Recall counts a result whose score equals
// the brute-force best (ties among the duplicates are all correct).
func BenchmarkDuplicates(b *testing.B) {
	for _, share := range []bool{false, true} {
		for _, variants := range []int{0, 1, 8} {
			if variants == 0 && !share {
				continue // nothing to share: one reference run
			}
			var db *dupBench
			defer func() {
				if db != nil {
					_ = db.ix.Close()
				}
			}()
			for _, kind := range []string{"near", "random", "dup"} {
				if variants == 0 && kind == "dup" {
					continue
				}
				b.Run(fmt.Sprintf("share=%v/versions=%d/%s", share, variants, kind), func(b *testing.B) {
					if db == nil {
						db = newDupBench(b, variants, share)
					}
					r := rand.New(rand.NewSource(99))
					queries := make([][]float32, 1000)
					for i := range queries {
						switch kind {
						case "near":
							queries[i] = nearby(r, db.normals[r.Intn(len(db.normals))], 0.95)
						case "random":
							queries[i] = randUnit(r, dupDim)
						default:
							queries[i] = db.dup
						}
					}
					want := make([]float32, len(queries))
					for i, q := range queries {
						want[i] = db.bestScore(q)
					}
					k := 1
					if kind == "dup" {
						k = 4
					}
					hits, full := 0, 0
					lat := measure(b, func(i int) {
						m, err := db.ix.Search("t", queries[i%len(queries)], k, -1)
						if err != nil {
							b.Fatal(err)
						}
						if len(m) > 0 && m[0].Score >= want[i%len(queries)]-1e-6 {
							hits++
						}
						if len(m) == k {
							full++
						}
					})
					lat.report(b)
					b.ReportMetric(float64(hits)/float64(len(lat.wall)), "recall@1")
					b.ReportMetric(float64(full)/float64(len(lat.wall)), "k-filled")
					b.ReportMetric(db.build.Seconds(), "build-s")
					b.ReportMetric(float64(db.nodes), "graph-nodes")
					b.ReportMetric(float64(db.heap)/1e6, "heap-MB")
				})
			}
		}
	}
}
