package store

import (
	"context"
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
