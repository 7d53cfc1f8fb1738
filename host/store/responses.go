package store

import (
	"context"
	"errors"
	"sync"
	"time"
)

// StoredResponse is one answer of the Responses API kept for the caller
// (POST /v1/responses with store): what GET /v1/responses/{id} returns and
// what previous_response_id chains from.
type StoredResponse struct {
	ID       string // "resp_…", as the caller was answered
	Tenant   string // the account that created it; only it can read it
	Previous string // the previous_response_id it continued, "" for none
	Model    string
	// Input is this turn's input items, a JSON array in the Responses
	// input form (a string input is stored as one user message).
	Input []byte
	// Response is the response object as the caller received it (its
	// output array holds the turn's output items).
	Response []byte
	Created  time.Time
	Expires  time.Time // zero: never
}

// ResponseStore keeps stored responses per tenant. A response is invisible
// to every other tenant (it reads as ErrNotFound) and after it expires.
type ResponseStore interface {
	// PutResponse stores r, replacing one of the same tenant and id.
	PutResponse(ctx context.Context, r *StoredResponse) error
	// GetResponse returns the tenant's response id, or ErrNotFound.
	GetResponse(ctx context.Context, tenant, id string) (*StoredResponse, error)
	// DeleteResponse deletes it; ErrNotFound when there was none.
	DeleteResponse(ctx context.Context, tenant, id string) error
	// PruneResponses deletes the responses expired before now.
	PruneResponses(ctx context.Context, now time.Time) (int, error)
}

// MemoryResponses is an in-process ResponseStore: for tests and for a
// gateway without a data directory (its responses do not survive a
// restart).
type MemoryResponses struct {
	mu  sync.Mutex
	m   map[[2]string]*StoredResponse
	Now func() time.Time // nil: time.Now
}

var _ ResponseStore = (*MemoryResponses)(nil)

func (s *MemoryResponses) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// PutResponse implements ResponseStore.
func (s *MemoryResponses) PutResponse(_ context.Context, r *StoredResponse) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[[2]string]*StoredResponse{}
	}
	cp := *r
	s.m[[2]string{r.Tenant, r.ID}] = &cp
	return nil
}

// GetResponse implements ResponseStore.
func (s *MemoryResponses) GetResponse(_ context.Context, tenant, id string) (*StoredResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[[2]string{tenant, id}]
	if !ok || (!r.Expires.IsZero() && !s.now().Before(r.Expires)) {
		return nil, ErrNotFound
	}
	cp := *r
	return &cp, nil
}

// DeleteResponse implements ResponseStore.
func (s *MemoryResponses) DeleteResponse(_ context.Context, tenant, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{tenant, id}
	r, ok := s.m[k]
	if !ok || (!r.Expires.IsZero() && !s.now().Before(r.Expires)) {
		return ErrNotFound
	}
	delete(s.m, k)
	return nil
}

// PruneResponses implements ResponseStore.
func (s *MemoryResponses) PruneResponses(_ context.Context, now time.Time) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, r := range s.m {
		if !r.Expires.IsZero() && !now.Before(r.Expires) {
			delete(s.m, k)
			n++
		}
	}
	return n, nil
}

// maxPendingResponses bounds what BufferedResponses holds unwritten; past
// it a Put writes through, so a slow disk slows requests instead of
// growing memory.
const maxPendingResponses = 10_000

// BufferedResponses keeps responses in memory the moment they are put and
// writes them to the durable store (Next) on a goroutine of its own: a
// request that stores its answer does not wait for a disk commit (~0.15
// ms with SQLite), and a follow-up chaining from it finds it at once. A
// graceful Close writes everything pending; a killed process loses the
// responses of its last moments, never a half-written one.
type BufferedResponses struct {
	next  ResponseStore
	onErr func(error)

	mu      sync.Mutex
	pending map[[2]string]*StoredResponse
	closed  bool
	wmu     sync.Mutex // orders writes to next with deletes
	wake    chan struct{}
	done    chan struct{}
}

var _ ResponseStore = (*BufferedResponses)(nil)

// NewBufferedResponses starts the writer; onErr (nil: ignored) hears of
// writes that failed.
func NewBufferedResponses(next ResponseStore, onErr func(error)) *BufferedResponses {
	b := &BufferedResponses{next: next, onErr: onErr, pending: map[[2]string]*StoredResponse{},
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	go b.run()
	return b
}

func (b *BufferedResponses) run() {
	defer close(b.done)
	for range b.wake {
		b.flush()
	}
	b.flush()
}

// flush writes what is pending; an entry replaced meanwhile stays pending.
func (b *BufferedResponses) flush() {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.mu.Lock()
	batch := make([]*StoredResponse, 0, len(b.pending))
	for _, r := range b.pending {
		batch = append(batch, r)
	}
	b.mu.Unlock()
	for _, r := range batch {
		if err := b.next.PutResponse(context.Background(), r); err != nil && b.onErr != nil {
			b.onErr(err)
		}
		b.mu.Lock()
		k := [2]string{r.Tenant, r.ID}
		if b.pending[k] == r {
			delete(b.pending, k)
		}
		b.mu.Unlock()
	}
}

// PutResponse implements ResponseStore.
func (b *BufferedResponses) PutResponse(ctx context.Context, r *StoredResponse) error {
	cp := *r
	b.mu.Lock()
	if b.closed || len(b.pending) >= maxPendingResponses {
		b.mu.Unlock()
		b.wmu.Lock()
		defer b.wmu.Unlock()
		return b.next.PutResponse(ctx, &cp)
	}
	b.pending[[2]string{r.Tenant, r.ID}] = &cp
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return nil
}

// GetResponse implements ResponseStore.
func (b *BufferedResponses) GetResponse(ctx context.Context, tenant, id string) (*StoredResponse, error) {
	b.mu.Lock()
	r, ok := b.pending[[2]string{tenant, id}]
	b.mu.Unlock()
	if ok {
		if !r.Expires.IsZero() && !time.Now().Before(r.Expires) {
			return nil, ErrNotFound
		}
		cp := *r
		return &cp, nil
	}
	return b.next.GetResponse(ctx, tenant, id)
}

// DeleteResponse implements ResponseStore.
func (b *BufferedResponses) DeleteResponse(ctx context.Context, tenant, id string) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.mu.Lock()
	k := [2]string{tenant, id}
	_, wasPending := b.pending[k]
	delete(b.pending, k)
	b.mu.Unlock()
	err := b.next.DeleteResponse(ctx, tenant, id)
	if wasPending && errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// PruneResponses implements ResponseStore (pending entries are written
// first, then pruned with the rest).
func (b *BufferedResponses) PruneResponses(ctx context.Context, now time.Time) (int, error) {
	b.flush()
	return b.next.PruneResponses(ctx, now)
}

// Close writes everything pending and stops the writer; later puts write
// through.
func (b *BufferedResponses) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	b.mu.Unlock()
	close(b.wake)
	<-b.done
}
