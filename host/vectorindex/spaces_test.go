package vectorindex

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestSpacesMaxSpaces: the number of spaces is bounded by configuration
// (SetMaxSpaces, as the daemon sets [models] index_max_spaces); a space
// turned away is not remembered, and one freed by a flush makes room.
func TestSpacesMaxSpaces(t *testing.T) {
	sp := NewSpaces(SpacesConfig{})
	defer sp.Close()
	sp.SetMaxSpaces(3)
	v := []float32{1, 0, 0}
	for i := range 3 {
		if err := sp.Insert(fmt.Sprintf("semcache/t%d", i), "a", v, time.Hour, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 3; i < 20; i++ {
		if err := sp.Insert(fmt.Sprintf("semcache/t%d", i), "a", v, time.Hour, nil, nil); !errors.Is(err, ErrTooManyTenants) {
			t.Fatalf("space %d of a bound of 3: err = %v, want ErrTooManyTenants", i+1, err)
		}
	}
	sp.mu.Lock()
	names := len(sp.names)
	sp.mu.Unlock()
	if names != 3 {
		t.Fatalf("%d space names remembered, want the 3 admitted", names)
	}
	// An existing space still takes entries at the bound.
	if err := sp.Insert("semcache/t0", "b", v, time.Hour, nil, nil); err != nil {
		t.Fatal(err)
	}
	if n := sp.FlushPrefix("semcache/t1"); n != 1 {
		t.Fatalf("flushed %d entries, want 1", n)
	}
	if err := sp.Insert("semcache/t9", "a", v, time.Hour, nil, nil); err != nil {
		t.Fatalf("after a flush freed a space: %v", err)
	}
}
