package sandbox

import (
	"fmt"
	"testing"
)

// TestMetricNamesIntern: a metric name read from guest memory becomes the
// same string each call without allocating once interned (the metric
// host function converted it per call: a host allocation for each of a
// request's ~10 samples), its bytes copied (the guest's memory is reused),
// and the set stays bounded: names past the bound still come back right.
func TestMetricNamesIntern(t *testing.T) {
	var mn metricNames
	b := []byte("hits_total")
	first := mn.intern(b)
	if first != "hits_total" {
		t.Fatalf("intern = %q", first)
	}
	if allocs := testing.AllocsPerRun(100, func() {
		if mn.intern(b) != "hits_total" {
			t.Fatal("wrong name")
		}
	}); allocs != 0 {
		t.Errorf("%v allocations a known name, want 0", allocs)
	}
	b[0] = 'x' // the guest's memory changes under it
	if first != "hits_total" || mn.intern([]byte("hits_total")) != "hits_total" {
		t.Fatal("the interned name aliases the guest's bytes")
	}
	for i := range 2 * maxMetricNames {
		name := fmt.Sprintf("m%d_total", i)
		if got := mn.intern([]byte(name)); got != name {
			t.Fatalf("intern(%q) = %q", name, got)
		}
	}
	if n := len(*mn.names.Load()); n > maxMetricNames {
		t.Fatalf("%d names kept, bound %d", n, maxMetricNames)
	}
}
