//go:build !wasip1

package plugin

import (
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// A module registering several plugins exports them all: the first is
// selected from the start (what a host before v1.5 sees), and Select
// moves every op to another.
func TestBundleSelect(t *testing.T) {
	saved, savedL, savedP := entries, layer, provider
	defer func() { entries, layer, provider = saved, savedL, savedP }()
	entries, layer, provider = nil, nil, nil

	RegisterLayer(Layer{Name: "a", Phases: wire.PhaseRequest})
	RegisterProvider(Provider{Name: "b", Reads: wire.PartAll})
	describe := func() wire.Descriptor {
		t.Helper()
		var d wire.Descriptor
		if err := d.Decode(Call(OpDescribe, nil)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := describe(); d.Name != "a" || d.Kind != "layer" {
		t.Fatalf("before any select: %+v", d)
	}
	if !Select(1) {
		t.Fatal("Select(1) refused")
	}
	if d := describe(); d.Name != "b" || d.Kind != "provider" || d.Reads != wire.PartAll {
		t.Fatalf("after Select(1): %+v", d)
	}
	if Select(2) || Select(-1) {
		t.Fatal("Select accepted an entry that does not exist")
	}
	if got := Entries(); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("Entries() = %v", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second plugin named a was accepted")
		}
	}()
	RegisterLayer(Layer{Name: "a"})
}
