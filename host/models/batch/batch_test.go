package batch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder is a batch Func that doubles its inputs, records every batch it
// sees and can be held at a gate so tests decide what queues up meanwhile.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	gate    chan struct{} // if non-nil, each call waits for a receive
	entered chan struct{} // signalled when a call starts
	failOn  int           // an item with this value fails its batch
}

func (r *recorder) fn(ctx context.Context, items []int) ([]int, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(items))
	r.mu.Unlock()
	if r.entered != nil {
		r.entered <- struct{}{}
	}
	if r.gate != nil {
		<-r.gate
	}
	out := make([]int, len(items))
	for i, v := range items {
		if r.failOn != 0 && v == r.failOn {
			return nil, fmt.Errorf("bad item %d", v)
		}
		out[i] = 2 * v
	}
	return out, nil
}

func (r *recorder) seen() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// waitQueued blocks until n requests sit in the queue, so the next batch's
// contents are known without sleeping.
func waitQueued[In, Out any](t *testing.T, b *Batcher[In, Out], n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(b.queue) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests queued", len(b.queue), n)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestSingleCaller(t *testing.T) {
	r := &recorder{}
	b := New(r.fn, 8, time.Millisecond)
	defer b.Close()
	out, err := b.Do(context.Background(), []int{1, 2, 3})
	if err != nil || !slices.Equal(out, []int{2, 4, 6}) {
		t.Fatalf("Do = %v, %v", out, err)
	}
	if out, err := b.Do(context.Background(), nil); err != nil || len(out) != 0 {
		t.Fatalf("Do(nil) = %v, %v", out, err)
	}
	if s := b.Stats(); s.Batches != 1 || s.Items != 3 || s.Calls != 1 {
		t.Errorf("Stats = %+v", s)
	}
}

// A lone caller on an idle batcher must run at once, however long maxWait
// is: the wait is only for callers expected from the previous batch.
func TestLoneCallerNotDelayed(t *testing.T) {
	r := &recorder{}
	b := New(r.fn, 8, time.Hour)
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 3 {
		if _, err := b.Do(ctx, []int{i}); err != nil {
			t.Fatalf("call %d: %v (a lone caller waited for company)", i, err)
		}
	}
}

// Callers that queue while a batch runs are merged into the next batch, and
// every caller gets exactly its own outputs back.
func TestConcurrentCallersShareABatch(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 100)}
	b := New(r.fn, 64, 0)
	defer b.Close()
	first := make(chan error, 1)
	go func() { _, err := b.Do(context.Background(), []int{1000}); first <- err }()
	<-r.entered // the runner is now busy with the first batch

	const callers = 10
	var wg sync.WaitGroup
	results := make([][]int, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { results[i], errs[i] = b.Do(context.Background(), []int{i*10 + 1, i*10 + 2}) })
	}
	waitQueued(t, b, callers)
	r.gate <- struct{}{} // finish batch 1
	<-r.entered
	r.gate <- struct{}{} // finish batch 2
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := range callers {
		if errs[i] != nil || !slices.Equal(results[i], []int{2 * (i*10 + 1), 2 * (i*10 + 2)}) {
			t.Errorf("caller %d: %v, %v", i, results[i], errs[i])
		}
	}
	seen := r.seen()
	if len(seen) != 2 || len(seen[1]) != 2*callers {
		t.Fatalf("batches = %v, want the 10 queued callers in one second batch", seen)
	}
	if s := b.Stats(); s.Batches != 2 || s.Calls != callers+1 || s.Items != 2*callers+1 {
		t.Errorf("Stats = %+v", s)
	}
}

// After a batch with several callers, the runner waits (up to maxWait) for
// as many callers before starting the next batch, so callers that arrive one
// by one shortly after each other still share a batch.
func TestWaitsForExpectedCallers(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 100)}
	b := New(r.fn, 64, time.Hour) // the wait ends when 3 callers are in, not by the timer
	defer b.Close()
	do := func(v int, wg *sync.WaitGroup) {
		wg.Go(func() {
			if _, err := b.Do(context.Background(), []int{v}); err != nil {
				t.Error(err)
			}
		})
	}
	var wg sync.WaitGroup
	do(1, &wg)
	<-r.entered
	do(2, &wg)
	do(3, &wg)
	do(4, &wg)
	waitQueued(t, b, 3)
	r.gate <- struct{}{}
	<-r.entered // batch {2,3,4}: 3 callers
	r.gate <- struct{}{}
	wg.Wait()

	r.gate = nil
	for v := 5; v <= 7; v++ {
		do(v, &wg)
		time.Sleep(2 * time.Millisecond) // arrive one by one
	}
	<-r.entered // the merged batch
	wg.Wait()
	seen := r.seen()
	if len(seen) != 3 {
		t.Fatalf("batches = %v, want [1] [2 3 4] [5 6 7]", seen)
	}
	last := slices.Sorted(slices.Values(seen[2]))
	if !slices.Equal(last, []int{5, 6, 7}) {
		t.Errorf("third batch = %v, want 5,6,7 together", seen[2])
	}
}

func TestLargeCallIsSplit(t *testing.T) {
	r := &recorder{}
	b := New(r.fn, 4, 0)
	defer b.Close()
	in := make([]int, 10)
	for i := range in {
		in[i] = i + 1
	}
	out, err := b.Do(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out {
		if v != 2*in[i] {
			t.Fatalf("out = %v", out)
		}
	}
	for _, batch := range r.seen() {
		if len(batch) > 4 {
			t.Errorf("batch of %d items exceeds maxBatch 4", len(batch))
		}
	}
}

// Requests that would overflow maxBatch start a new batch instead.
func TestBatchesRespectMaxBatch(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 100)}
	b := New(r.fn, 5, 0)
	defer b.Close()
	var wg sync.WaitGroup
	wg.Go(func() { b.Do(context.Background(), []int{1}) })
	<-r.entered
	for i := range 4 {
		wg.Go(func() { b.Do(context.Background(), []int{10 * i, 10*i + 1, 10*i + 2}) })
	}
	waitQueued(t, b, 4)
	go func() {
		for range r.entered {
		}
	}()
	close(r.gate)
	wg.Wait()
	total := 0
	for _, batch := range r.seen() {
		if len(batch) > 5 {
			t.Errorf("batch %v exceeds maxBatch 5", batch)
		}
		total += len(batch)
	}
	if total != 13 {
		t.Errorf("ran %d items, want 13", total)
	}
}

func TestErrorReachesEveryCallerOfTheBatch(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 100), failOn: 7}
	b := New(r.fn, 64, 0)
	defer b.Close()
	go b.Do(context.Background(), []int{1})
	<-r.entered
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, v := range []int{5, 7, 9} {
		wg.Go(func() { _, errs[i] = b.Do(context.Background(), []int{v}) })
	}
	waitQueued(t, b, 3)
	r.gate <- struct{}{}
	<-r.entered
	r.gate <- struct{}{}
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "bad item 7") {
			t.Errorf("caller %d: err = %v, want the batch's error", i, err)
		}
	}
	// The batcher still works afterwards.
	r.gate, r.entered = nil, nil
	if out, err := b.Do(context.Background(), []int{3}); err != nil || out[0] != 6 {
		t.Errorf("after an error: %v, %v", out, err)
	}
}

func TestCancelWhileQueued(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 100)}
	b := New(r.fn, 64, 0)
	defer b.Close()
	go b.Do(context.Background(), []int{1})
	<-r.entered
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := b.Do(ctx, []int{666}); done <- err }()
	waitQueued(t, b, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Do = %v", err)
	}
	// The next batch must not run the abandoned item.
	var wg sync.WaitGroup
	wg.Go(func() { b.Do(context.Background(), []int{2}) })
	waitQueued(t, b, 1)
	r.gate <- struct{}{}
	<-r.entered
	r.gate <- struct{}{}
	wg.Wait()
	for _, batch := range r.seen() {
		if slices.Contains(batch, 666) {
			t.Errorf("cancelled item ran in batch %v", batch)
		}
	}
	if _, err := b.Do(ctx, []int{3}); !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a done ctx = %v", err)
	}
}

func TestPanicBecomesError(t *testing.T) {
	calls := 0
	b := New(func(ctx context.Context, items []string) ([]int, error) {
		calls++
		if items[0] == "boom" {
			panic("kaboom")
		}
		return []int{len(items[0])}, nil
	}, 4, 0)
	defer b.Close()
	if _, err := b.Do(context.Background(), []string{"boom"}); err == nil || !strings.Contains(err.Error(), "kaboom") {
		t.Errorf("err = %v", err)
	}
	if out, err := b.Do(context.Background(), []string{"four"}); err != nil || out[0] != 4 {
		t.Errorf("after panic: %v, %v", out, err)
	}
}

func TestWrongOutputCount(t *testing.T) {
	b := New(func(ctx context.Context, items []int) ([]int, error) { return []int{1}, nil }, 4, 0)
	defer b.Close()
	if _, err := b.Do(context.Background(), []int{1, 2}); err == nil || !strings.Contains(err.Error(), "returned 1 outputs for 2 items") {
		t.Errorf("err = %v", err)
	}
}

func TestClose(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), entered: make(chan struct{}, 100)}
	b := New(r.fn, 64, 0)
	running := make(chan error, 1)
	go func() { _, err := b.Do(context.Background(), []int{1}); running <- err }()
	<-r.entered
	queued := make(chan error, 1)
	go func() { _, err := b.Do(context.Background(), []int{2}); queued <- err }()
	waitQueued(t, b, 1)
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	// Close cancels the running batch's context and waits for it.
	deadline := time.Now().Add(10 * time.Second)
	for b.ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
	if b.ctx.Err() == nil {
		t.Fatal("Close did not cancel the batch context")
	}
	r.gate <- struct{}{}
	<-closed
	if err := <-running; err != nil {
		t.Errorf("running batch: %v", err)
	}
	if err := <-queued; !errors.Is(err, ErrClosed) {
		t.Errorf("queued request: %v, want ErrClosed", err)
	}
	if _, err := b.Do(context.Background(), []int{3}); !errors.Is(err, ErrClosed) {
		t.Errorf("Do after Close: %v", err)
	}
	b.Close() // idempotent
}

// Many goroutines hammering the batcher must each get their own results.
func TestStress(t *testing.T) {
	b := New(func(ctx context.Context, items []int) ([]int, error) {
		out := make([]int, len(items))
		for i, v := range items {
			out[i] = v * 3
		}
		return out, nil
	}, 16, 200*time.Microsecond)
	defer b.Close()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				n := 1 + (g+i)%5
				in := make([]int, n)
				for j := range in {
					in[j] = g*100000 + i*10 + j
				}
				out, err := b.Do(context.Background(), in)
				if err != nil {
					t.Error(err)
					return
				}
				for j := range in {
					if out[j] != 3*in[j] {
						t.Errorf("goroutine %d call %d: got %v for %v", g, i, out, in)
						return
					}
				}
				_ = append(out, -1) // writes past len(out): must not clobber another caller's results
			}
		})
	}
	wg.Wait()
	s := b.Stats()
	if s.Calls != 16*200 {
		t.Errorf("Calls = %d, want %d", s.Calls, 16*200)
	}
	t.Logf("stats: %+v (%.1f calls per batch)", s, float64(s.Calls)/float64(s.Batches))
}
