package vectorindex

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errLocked: a lock did not come free before the probe's deadline.
var errLocked = errors.New("held past the liveness deadline")

// pollRLock takes and releases mu's read lock, trying until ctx ends: a
// liveness canary must report a lock that never comes free, not wait for it.
func pollRLock(ctx context.Context, mu *sync.RWMutex) error {
	for {
		if mu.TryRLock() {
			mu.RUnlock()
			return nil
		}
		select {
		case <-ctx.Done():
			return errLocked
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// Probe is a liveness canary: it takes and releases the tenant map's lock
// and every tenant's, as searches do, and fails when one stays held until
// ctx ends (a write section a panic never left would do that). It never
// blocks past ctx; the error does not name tenants.
func (ix *Index) Probe(ctx context.Context) error {
	if err := pollRLock(ctx, &ix.mu); err != nil {
		return fmt.Errorf("vector index: the tenant map is %w", err)
	}
	ix.mu.RLock()
	ts := make([]*tenant, 0, len(ix.tenants))
	for _, t := range ix.tenants {
		ts = append(ts, t)
	}
	ix.mu.RUnlock()
	held := 0
	for _, t := range ts {
		if pollRLock(ctx, &t.mu) != nil {
			held++
		}
	}
	if held > 0 {
		return fmt.Errorf("vector index: %d of %d partitions %w", held, len(ts), errLocked)
	}
	return nil
}

// Probe runs Index.Probe on every index of the spaces.
func (s *Spaces) Probe(ctx context.Context) error {
	for !s.mu.TryLock() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("vector index: the spaces are %w", errLocked)
		case <-time.After(5 * time.Millisecond):
		}
	}
	ixs := make([]*Index, 0, len(s.byDim))
	for _, ix := range s.byDim {
		ixs = append(ixs, ix)
	}
	s.mu.Unlock()
	var errs []error
	for _, ix := range ixs {
		errs = append(errs, ix.Probe(ctx))
	}
	return errors.Join(errs...)
}
