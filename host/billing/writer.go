package billing

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bardoinference/bardo/host/store"
)

// posting is one closed tab on its way to the ledger.
type posting struct {
	u       store.Usage
	a       *account
	charged int64         // what the meter counted in a.pending
	done    chan struct{} // closed once committed (res set)
	res     store.Posted
	seg     *segment // the journal segment holding it (nil: not journaled)
}

// writer is the single goroutine that commits postings: it takes whatever
// is queued (up to MaxBatch) as one transaction, so under load one commit
// carries many requests (group commit) and with none waiting a posting is
// committed at once. A failed transaction is retried with backoff; each
// posting of a failed batch is then tried alone, so one bad posting cannot
// hold the others back. Nothing is dropped while the process lives; the
// backlog stops new paid requests at MaxBacklog instead (Meter.Open).
type writer struct {
	m   *Meter
	max int

	mu      sync.Mutex
	queue   []*posting
	last    *posting // the last enqueued (Meter.Sync)
	closing bool
	left    []*posting // what an aborted writer had not committed

	n       atomic.Int64 // postings enqueued and not yet committed
	wake    chan struct{}
	abort   chan struct{}
	stopped chan struct{}
}

func newWriter(m *Meter) *writer {
	return &writer{m: m, max: m.cfg.MaxBatch, wake: make(chan struct{}, 1), abort: make(chan struct{}),
		stopped: make(chan struct{})}
}

func (w *writer) backlog() int64 { return w.n.Load() }

func (w *writer) enqueue(p *posting) {
	w.n.Add(1)
	w.mu.Lock()
	w.queue = append(w.queue, p)
	w.last = p
	w.mu.Unlock()
	w.signal()
}

// sync waits until the last posting enqueued before the call is
// committed, so every earlier one is too (the writer commits in order),
// save one whose failure is being retried alone.
func (w *writer) sync(ctx context.Context) error {
	w.mu.Lock()
	p := w.last
	w.mu.Unlock()
	if p == nil {
		return nil
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *writer) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Backoff bounds of a failing store.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = 5 * time.Second
)

func (w *writer) run() {
	defer close(w.stopped)
	var batch []*posting // a failed batch, retried first
	delay := time.Duration(0)
	for {
		w.mu.Lock()
		n := min(len(w.queue), w.max-len(batch))
		if n > 0 {
			batch = append(batch, w.queue[:n]...)
			rest := copy(w.queue, w.queue[n:])
			clear(w.queue[rest:])
			w.queue = w.queue[:rest]
		}
		closing := w.closing
		w.mu.Unlock()
		if len(batch) == 0 {
			if closing {
				return
			}
			<-w.wake
			continue
		}
		batch = w.commit(batch)
		if len(batch) == 0 {
			delay = 0
			continue
		}
		delay = min(max(2*delay, minBackoff), maxBackoff)
		select {
		case <-time.After(delay):
		case <-w.abort:
			w.mu.Lock()
			w.left = append(w.left, batch...)
			w.mu.Unlock()
			return
		}
	}
}

// commit posts batch in one transaction and returns what failed.
func (w *writer) commit(batch []*posting) []*posting {
	ps := make([]store.Posting, len(batch))
	for i, p := range batch {
		ps[i].Usage = p.u
	}
	res, err := w.m.st.Post(context.Background(), ps)
	if err == nil {
		w.applied(batch, res)
		return nil
	}
	w.m.log.Error("billing: ledger commit failed; retrying", "postings", len(batch), "backlog", w.backlog(), "err", err)
	if len(batch) == 1 {
		return batch
	}
	var failed []*posting
	for _, p := range batch {
		res, err := w.m.st.Post(context.Background(), []store.Posting{{Usage: p.u}})
		if err != nil {
			failed = append(failed, p)
			continue
		}
		w.applied([]*posting{p}, res)
	}
	return failed
}

// applied takes a committed batch's postings off their accounts' pending
// charges and sets each account's posted balance to the one the
// transaction returned, all of one account's postings under one hold of
// its lock: the balance Post returns is the account's after the whole
// batch, so applying them one by one would show, in between, a balance
// with a charge both posted and pending. Then it counts them committed in
// their journal segments and wakes their Close.
func (w *writer) applied(batch []*posting, res []store.Posted) {
	for i, p := range batch {
		a := p.a
		if a == nil {
			continue // already applied with an earlier posting of its account
		}
		a.mu.Lock()
		for j := i; j < len(batch); j++ {
			if q := batch[j]; q.a == a {
				if q.charged > 0 {
					a.pending -= q.charged
					a.inflight--
				}
				if res[j].Err == nil {
					a.posted = res[j].Balance
				}
				q.a = nil
			}
		}
		a.mu.Unlock()
	}
	var seg *segment
	n := 0
	for i, p := range batch {
		w.report(p, res[i])
		if p.seg != seg {
			if n > 0 {
				w.m.j.committed(seg, n)
			}
			seg, n = p.seg, 0
		}
		if seg != nil {
			n++
		}
	}
	if n > 0 {
		w.m.j.committed(seg, n)
	}
	for i, p := range batch {
		p.res = res[i]
		w.n.Add(-1)
		close(p.done)
	}
}

// report logs what the ledger did differently from what the meter asked.
func (w *writer) report(p *posting, r store.Posted) {
	switch {
	case r.Err != nil:
		w.m.log.Error("billing: posting refused by the ledger; not charged", "request_id", p.u.RequestID,
			"account", p.u.AccountID, "charge", p.u.Charge, "err", r.Err)
	case r.Replayed:
		// With the journal its bill already showed the charge: the ledger
		// keeps the first settlement's, and the meter follows the ledger.
		w.m.log.Warn("billing: request already settled; nothing charged twice", "request_id", p.u.RequestID,
			"account", p.u.AccountID, "key", p.u.KeyID)
	case r.Shortfall > 0:
		w.m.log.Warn("billing: the ledger capped a charge (the balance moved outside the gateway)",
			"request_id", p.u.RequestID, "account", p.u.AccountID, "charge", p.u.Charge, "shortfall", r.Shortfall)
	}
}

// close drains the queue, or gives up when ctx ends and logs what was left.
func (w *writer) close(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.signal()
	select {
	case <-w.stopped:
		return nil
	case <-ctx.Done():
	}
	close(w.abort)
	w.signal()
	<-w.stopped
	w.mu.Lock()
	left := append(w.left, w.queue...)
	w.mu.Unlock()
	for _, p := range left {
		msg := "billing: settlement never committed"
		if p.seg != nil {
			msg = "billing: settlement not committed; it stays in the journal for the next start"
		}
		w.m.log.Error(msg, "request_id", p.u.RequestID, "account", p.u.AccountID,
			"key", p.u.KeyID, "charge", p.u.Charge, "model", p.u.Model)
	}
	if len(left) > 0 {
		return fmt.Errorf("billing: %d settlements not committed", len(left))
	}
	return nil
}
