package vectorindex

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bardoinference/bardo/host/sandbox"
)

// SpacesConfig configures Spaces.
type SpacesConfig struct {
	// MaxEntries bounds each space (one plugin's partition for one tenant,
	// or its shared partition); 0 means DefaultMaxEntriesPerTenant.
	MaxEntries int
	// MaxSpaces bounds the number of spaces of one dimension (Config's
	// MaxTenants); 0 means unbounded. A new space beyond it is refused
	// (ErrTooManyTenants) once expired and empty ones are reclaimed.
	MaxSpaces int
}

// Spaces serves the vector_* host functions (sandbox.Vectors): named
// partitions ("spaces", built by the sandbox from plugin and tenant) over
// one Index per vector dimension, created on first use, so models of
// different sizes can share the host without a configuration step.
type Spaces struct {
	mu     sync.Mutex
	max    int
	spaces int // MaxSpaces
	byDim  map[int]*Index
	names  map[string]int // space → the dimension it was created with
	closed bool
}

// NewSpaces returns an empty set of spaces.
func NewSpaces(cfg SpacesConfig) *Spaces {
	return &Spaces{max: cfg.MaxEntries, spaces: cfg.MaxSpaces, byDim: map[int]*Index{}, names: map[string]int{}}
}

// SetMaxEntries sets the bound of spaces whose dimension is first used from
// now on (the indexes already created keep theirs).
func (s *Spaces) SetMaxEntries(n int) {
	s.mu.Lock()
	s.max = n
	s.mu.Unlock()
}

// SetMaxSpaces sets the bound on spaces (SpacesConfig.MaxSpaces) of the
// indexes whose dimension is first used from now on.
func (s *Spaces) SetMaxSpaces(n int) {
	s.mu.Lock()
	s.spaces = n
	s.mu.Unlock()
}

func (s *Spaces) index(space string, dim int, create bool) (*Index, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("vector index: closed")
	}
	if d, ok := s.names[space]; ok && d != dim {
		return nil, fmt.Errorf("vector index: this partition holds %d-dimensional vectors, not %d (a model change needs a flush)", d, dim)
	}
	ix := s.byDim[dim]
	if ix == nil {
		if !create {
			return nil, nil
		}
		var err error
		if ix, err = New(Config{Dim: dim, MaxEntriesPerTenant: s.max, MaxTenants: s.spaces}); err != nil {
			return nil, err
		}
		s.byDim[dim] = ix
	}
	if create {
		s.names[space] = dim
	}
	return ix, nil
}

// Insert implements sandbox.Vectors.
func (s *Spaces) Insert(space, id string, vec []float32, ttl time.Duration, tags []string, payload []byte) error {
	ix, err := s.index(space, len(vec), true)
	if err != nil {
		return err
	}
	err = ix.Insert(space, id, vec, ttl, tags, payload)
	if errors.Is(err, ErrTooManyTenants) {
		// A refused space is not remembered: the names map would otherwise
		// grow with every tenant turned away.
		s.mu.Lock()
		if ix.Len(space) == 0 {
			delete(s.names, space)
		}
		s.mu.Unlock()
	}
	return err
}

// Search implements sandbox.Vectors.
func (s *Spaces) Search(space string, vec []float32, k int, minScore float32) ([]sandbox.VectorMatch, error) {
	ix, err := s.index(space, len(vec), false)
	if err != nil || ix == nil {
		return nil, err
	}
	ms, err := ix.Search(space, vec, k, minScore)
	if err != nil {
		return nil, err
	}
	out := make([]sandbox.VectorMatch, len(ms))
	for i, m := range ms {
		out[i] = sandbox.VectorMatch{ID: m.ID, Score: m.Score, Tags: m.Tags, Payload: m.Payload}
	}
	return out, nil
}

// each runs f on the index holding space, if any.
func (s *Spaces) each(space string, f func(*Index) int) int {
	s.mu.Lock()
	d, ok := s.names[space]
	ix := s.byDim[d]
	s.mu.Unlock()
	if !ok || ix == nil {
		return 0
	}
	return f(ix)
}

// Delete implements sandbox.Vectors.
func (s *Spaces) Delete(space, id string) bool {
	return s.each(space, func(ix *Index) int {
		if ix.Delete(space, id) {
			return 1
		}
		return 0
	}) == 1
}

// DeleteTagged implements sandbox.Vectors.
func (s *Spaces) DeleteTagged(space, tag string) int {
	return s.each(space, func(ix *Index) int { return ix.DeleteTagged(space, tag) })
}

// FlushPrefix empties every space whose name starts with prefix (the admin
// flush of one layer's partitions: one tenant's, the shared one, or all).
func (s *Spaces) FlushPrefix(prefix string) int {
	s.mu.Lock()
	var doomed []string
	for name := range s.names {
		if strings.HasPrefix(name, prefix) {
			doomed = append(doomed, name)
		}
	}
	s.mu.Unlock()
	n := 0
	for _, name := range doomed {
		n += s.each(name, func(ix *Index) int { return ix.Flush(name) })
		s.mu.Lock()
		delete(s.names, name)
		s.mu.Unlock()
	}
	return n
}

// Close closes every index.
func (s *Spaces) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, ix := range s.byDim {
		ix.Close()
	}
	s.byDim = map[int]*Index{}
}
