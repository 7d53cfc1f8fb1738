package health

import (
	"math"
	"math/bits"
	"time"
)

// The sliding window is a ring of fixed-width time buckets (30 × 10 s for
// the default 5 minutes) plus running sums over the live buckets, so adding
// an outcome and reading the error rate are O(1) and memory per backend is
// fixed. When time moves past a bucket, its counts are subtracted from the
// sums as it is reused; a window that saw nothing for a whole span is simply
// cleared. The error rate therefore covers between Window−Bucket and Window
// of history: the usual price of bucketing, and why Bucket should be small
// next to Window.

// Latency histogram: log-linear buckets, 4 per power of two, over units of
// 64 µs. Estimates are the bucket's midpoint, so within about ±11 % of the
// true value; the top bucket holds everything from about 17 minutes up.
const (
	latUnitShift = 6 // 64 µs
	latBuckets   = 96
)

// latIndex returns the histogram bucket of d.
func latIndex(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	v := uint64(d/time.Microsecond) >> latUnitShift
	if v < 4 {
		return int(v)
	}
	l := bits.Len64(v) // ≥ 3
	i := (l-2)*4 + int((v>>(l-3))&3)
	if i >= latBuckets {
		return latBuckets - 1
	}
	return i
}

// latMid returns the midpoint of histogram bucket i.
func latMid(i int) time.Duration {
	var lo, hi uint64
	if i < 4 {
		lo, hi = uint64(i), uint64(i+1)
	} else {
		l := i/4 + 2
		sub := uint64(i % 4)
		lo, hi = (4+sub)<<(l-3), (5+sub)<<(l-3)
	}
	mid := (lo + hi) << latUnitShift / 2 // µs
	return time.Duration(mid) * time.Microsecond
}

type bucket struct {
	idx   int64 // absolute bucket number (time since origin / width)
	n     uint32
	errs  uint32
	kinds [numKinds]uint32
	latN  uint32
	lat   [latBuckets]uint32
}

type window struct {
	ring  []bucket
	width int64 // bucket width, ns
	head  int64 // newest bucket number seen

	n     uint64
	errs  uint64
	kinds [numKinds]uint64
	latN  uint64
	lat   [latBuckets]uint64
}

func newWindow(span, width time.Duration) window {
	n := int((span + width - 1) / width)
	w := window{ring: make([]bucket, n), width: int64(width)}
	for i := range w.ring {
		w.ring[i].idx = int64(i) - int64(n) // all expired
	}
	w.head = -1
	return w
}

// advance moves the window's head to the bucket of time now (ns since
// origin), expiring buckets that fall out of the span.
func (w *window) advance(now int64) int64 {
	idx := now / w.width
	if idx <= w.head {
		return w.head
	}
	n := int64(len(w.ring))
	if idx-w.head >= n {
		w.clear(idx)
		return idx
	}
	for k := w.head + 1; k <= idx; k++ {
		b := &w.ring[k%n]
		w.expire(b)
		b.idx = k
	}
	w.head = idx
	return idx
}

// expire subtracts b's counts from the sums and zeroes it.
func (w *window) expire(b *bucket) {
	w.n -= uint64(b.n)
	w.errs -= uint64(b.errs)
	for i, c := range b.kinds {
		w.kinds[i] -= uint64(c)
	}
	if b.latN > 0 {
		w.latN -= uint64(b.latN)
		for i, c := range b.lat {
			w.lat[i] -= uint64(c)
		}
	}
	idx := b.idx
	*b = bucket{idx: idx}
}

// clear empties the window and makes idx its head.
func (w *window) clear(idx int64) {
	n := int64(len(w.ring))
	for i := range w.ring {
		w.ring[i] = bucket{}
	}
	for k := idx - n + 1; k <= idx; k++ {
		w.ring[((k%n)+n)%n].idx = k
	}
	w.head = idx
	w.n, w.errs, w.latN = 0, 0, 0
	w.kinds = [numKinds]uint64{}
	w.lat = [latBuckets]uint64{}
}

// add records one outcome at time now. Every kind is kept in the per-kind
// counts; only counted kinds (Kind.Counted) enter the sample count and error
// rate. Latency enters the histogram only for OK outcomes: the percentiles
// describe answers, not how long failures took.
func (w *window) add(now int64, k Kind, latency time.Duration) {
	idx := w.advance(now)
	b := &w.ring[idx%int64(len(w.ring))]
	if k.Counted() {
		b.n++
		w.n++
	}
	b.kinds[k]++
	w.kinds[k]++
	if k.Failure() {
		b.errs++
		w.errs++
	}
	if k == OK {
		i := latIndex(latency)
		b.lat[i]++
		w.lat[i]++
		b.latN++
		w.latN++
	}
}

// rate returns the error rate over the live buckets (0 when empty).
func (w *window) rate() float64 {
	if w.n == 0 {
		return 0
	}
	return float64(w.errs) / float64(w.n)
}

// quantile estimates the q-quantile (0 < q ≤ 1) of OK latencies; 0 when
// there are none.
func (w *window) quantile(q float64) time.Duration {
	if w.latN == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(w.latN)))
	if rank < 1 {
		rank = 1
	}
	var cum uint64
	for i, c := range w.lat {
		cum += c
		if cum >= rank {
			return latMid(i)
		}
	}
	return latMid(latBuckets - 1)
}
