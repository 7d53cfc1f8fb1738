// Package batch merges concurrent callers' work into micro-batches.
//
// Local models run far more efficiently on one [batch, ...] tensor than on
// many single-row calls, but a lone request must not pay for batching. A
// Batcher therefore never delays a caller when it has no reason to expect
// company: one goroutine runs batches one after another, and a batch is made
// of
//
//   - everything already queued when the runner becomes free (requests that
//     arrived while the previous batch ran ride together for free), plus
//   - if the previous batch had more callers than are queued now, whatever
//     arrives within maxWait — concurrent callers that just got their results
//     usually come straight back, and waiting a little for them keeps batches
//     full instead of alternating half-empty ones. The wait ends early as
//     soon as that many callers (or maxBatch items) are in.
//
// So a single caller on an idle Batcher runs at once, and under load a
// request waits at most maxWait for company, on top of any time spent
// queued behind the batch that is running.
package batch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Func runs one batch. It must return exactly one output per item, in order.
// The context it receives is cancelled when the Batcher is closed; it carries
// no caller's deadline, because a batch serves several callers.
type Func[In, Out any] func(ctx context.Context, items []In) ([]Out, error)

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("batch: batcher closed")

// Stats counts what a Batcher has run, for tests, benchmarks and metrics.
type Stats struct {
	Batches int64 // calls of Func
	Items   int64 // items passed to Func
	Calls   int64 // caller requests (chunks of Do calls) served by those batches
}

// Request states, moved by CAS so a caller that gives up and the runner that
// takes its request agree on who owns it.
const (
	stateQueued int32 = iota
	stateRunning
	stateCancelled
)

type request[In, Out any] struct {
	items []In
	out   []Out
	err   error
	state atomic.Int32
	done  chan struct{}
}

// Batcher merges concurrent Do calls into batches for one Func. It is safe
// for concurrent use.
type Batcher[In, Out any] struct {
	fn       Func[In, Out]
	maxBatch int
	maxWait  time.Duration

	mu     sync.RWMutex // guards closed against sends on queue
	closed bool
	queue  chan *request[In, Out]
	stop   chan struct{}
	exited chan struct{}
	ctx    context.Context
	cancel context.CancelFunc

	batches, items, calls atomic.Int64
}

// New starts a Batcher whose batches hold at most maxBatch items (values
// below 1 mean 1) and which waits at most maxWait (negative means 0) for
// more callers before starting a batch. Close it to stop its goroutine.
func New[In, Out any](fn Func[In, Out], maxBatch int, maxWait time.Duration) *Batcher[In, Out] {
	if maxBatch < 1 {
		maxBatch = 1
	}
	if maxWait < 0 {
		maxWait = 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &Batcher[In, Out]{
		fn:       fn,
		maxBatch: maxBatch,
		maxWait:  maxWait,
		// Room for a few batches' worth of callers, so producers rarely block
		// on the channel while a batch runs.
		queue:  make(chan *request[In, Out], 4*maxBatch+64),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
		ctx:    ctx,
		cancel: cancel,
	}
	go b.run()
	return b
}

// Do runs items as part of one or more batches and returns their outputs in
// order. Items beyond maxBatch are split into several requests, so one large
// call never exceeds the batch size the model was sized for. Do returns
// ctx.Err() as soon as ctx is done, whether the request is still queued
// (it is then dropped from its batch) or already running (its result is
// discarded). An error from Func is returned to every caller of that batch.
func (b *Batcher[In, Out]) Do(ctx context.Context, items []In) ([]Out, error) {
	if len(items) == 0 {
		return []Out{}, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reqs := make([]*request[In, Out], 0, (len(items)+b.maxBatch-1)/b.maxBatch)
	for start := 0; start < len(items); start += b.maxBatch {
		end := min(start+b.maxBatch, len(items))
		r := &request[In, Out]{items: items[start:end], done: make(chan struct{})}
		if err := b.enqueue(ctx, r); err != nil {
			cancelAll(reqs)
			return nil, err
		}
		reqs = append(reqs, r)
	}
	out := make([]Out, 0, len(items))
	for i, r := range reqs {
		select {
		case <-r.done:
		case <-ctx.Done():
			cancelAll(reqs[i:])
			return nil, ctx.Err()
		}
		if r.err != nil {
			cancelAll(reqs[i+1:])
			return nil, r.err
		}
		out = append(out, r.out...)
	}
	return out, nil
}

func cancelAll[In, Out any](reqs []*request[In, Out]) {
	for _, r := range reqs {
		r.state.CompareAndSwap(stateQueued, stateCancelled)
	}
}

func (b *Batcher[In, Out]) enqueue(ctx context.Context, r *request[In, Out]) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return ErrClosed
	}
	select {
	case b.queue <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close stops the Batcher: later Do calls get ErrClosed, requests still
// queued get ErrClosed, and a running batch's Func sees its context
// cancelled. Close waits for the runner goroutine to exit and may be called
// more than once.
func (b *Batcher[In, Out]) Close() {
	b.mu.Lock()
	already := b.closed
	b.closed = true
	b.mu.Unlock()
	if !already {
		b.cancel()
		close(b.stop)
	}
	<-b.exited
}

// Stats returns counters of the batches run so far.
func (b *Batcher[In, Out]) Stats() Stats {
	return Stats{Batches: b.batches.Load(), Items: b.items.Load(), Calls: b.calls.Load()}
}

func (b *Batcher[In, Out]) run() {
	defer close(b.exited)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	expect := 1 // callers in the previous batch: how many to wait for
	var pending []*request[In, Out]
	for {
		pending = pending[:0]
		n := 0
		// A closed Batcher runs nothing more, even if requests are queued
		// (a select with both ready would pick at random).
		select {
		case <-b.stop:
			b.drain()
			return
		default:
		}
		// Block for the first request of the batch.
		select {
		case r := <-b.queue:
			pending, n = append(pending, r), len(r.items)
		case <-b.stop:
			b.drain()
			return
		}
		// Take what is already queued.
	drain:
		for n < b.maxBatch {
			select {
			case r := <-b.queue:
				if n+len(r.items) > b.maxBatch {
					b.runBatch(pending)
					pending, n = append(pending[:0], r), len(r.items)
					continue
				}
				pending, n = append(pending, r), n+len(r.items)
			default:
				break drain
			}
		}
		// Under concurrent load, wait briefly for the callers of the last
		// batch to come back.
		if len(pending) < expect && n < b.maxBatch && b.maxWait > 0 {
			timer.Reset(b.maxWait)
		wait:
			for len(pending) < expect && n < b.maxBatch {
				select {
				case r := <-b.queue:
					if n+len(r.items) > b.maxBatch {
						b.runBatch(pending)
						pending, n = append(pending[:0], r), len(r.items)
						continue
					}
					pending, n = append(pending, r), n+len(r.items)
				case <-timer.C:
					break wait
				case <-b.stop:
					timer.Stop()
					fail(pending, ErrClosed)
					b.drain()
					return
				}
			}
			timer.Stop()
		}
		select {
		case <-b.stop:
			fail(pending, ErrClosed)
			b.drain()
			return
		default:
		}
		expect = max(1, b.runBatch(pending))
	}
}

// runBatch calls Func for the live requests of pending and delivers the
// results; it returns how many callers it served.
func (b *Batcher[In, Out]) runBatch(pending []*request[In, Out]) int {
	live := make([]*request[In, Out], 0, len(pending))
	total := 0
	for _, r := range pending {
		if r.state.CompareAndSwap(stateQueued, stateRunning) {
			live = append(live, r)
			total += len(r.items)
		}
	}
	if len(live) == 0 {
		return 0
	}
	items := live[0].items
	if len(live) > 1 {
		items = make([]In, 0, total)
		for _, r := range live {
			items = append(items, r.items...)
		}
	}
	out, err := b.call(items)
	if err == nil && len(out) != len(items) {
		err = fmt.Errorf("batch: function returned %d outputs for %d items", len(out), len(items))
	}
	b.batches.Add(1)
	b.items.Add(int64(total))
	b.calls.Add(int64(len(live)))
	off := 0
	for _, r := range live {
		if err != nil {
			r.err = err
		} else {
			// Full slice expression: a caller appending to its result must
			// not overwrite the next caller's outputs.
			r.out = out[off : off+len(r.items) : off+len(r.items)]
		}
		off += len(r.items)
		close(r.done)
	}
	return len(live)
}

// call runs Func, turning a panic into an error for the batch's callers so
// one bad input cannot kill the runner goroutine and hang every later call.
func (b *Batcher[In, Out]) call(items []In) (out []Out, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("batch: function panicked: %v", p)
		}
	}()
	return b.fn(b.ctx, items)
}

func fail[In, Out any](reqs []*request[In, Out], err error) {
	for _, r := range reqs {
		if r.state.CompareAndSwap(stateQueued, stateRunning) {
			r.err = err
			close(r.done)
		}
	}
}

// drain fails everything still queued; after Close no new sends happen, so
// this empties the queue for good.
func (b *Batcher[In, Out]) drain() {
	for {
		select {
		case r := <-b.queue:
			fail([]*request[In, Out]{r}, ErrClosed)
		default:
			return
		}
	}
}
