package plugincheck

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestDescriptorFlags: the Go SDK refuses a watcher without a response
// phase, but a plugin from another SDK can declare one; the kit must say
// so, and must let a flag this host does not know through with a note (the
// ABI's rule: hosts ignore unknown flags).
func TestDescriptorFlags(t *testing.T) {
	exports := map[string]bool{"bardo_on_request": true, "bardo_on_response": true, "bardo_on_stream": true}
	layer := wire.Descriptor{ABI: plugin.ABIVersion, Name: "w", Version: "1.0.0", Kind: "layer",
		Phases: wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream}
	for _, c := range []struct {
		name   string
		phases wire.Phase
		flags  wire.Flag
		ok     bool
		detail string
	}{
		{"watcher", layer.Phases, wire.FlagWatchStream, true, "flags watch-stream"},
		{"watcher without response phase", wire.PhaseRequest | wire.PhaseStream, wire.FlagWatchStream, false, "watch-stream without the response phase"},
		{"unknown flag", layer.Phases, 1 << 9, true, "unknown 0x200, ignored by this host"},
		{"no flags", layer.Phases, 0, true, `layer "w" version 1.0.0`},
	} {
		d := layer
		d.Phases, d.Flags = c.phases, c.flags
		k := &kit{report: &Report{Descriptor: d}}
		if got := k.checkDescriptor(exports); got != c.ok {
			t.Errorf("%s: checkDescriptor = %v, want %v (%+v)", c.name, got, c.ok, k.report.Checks)
			continue
		}
		if ch := k.report.Checks[0]; !strings.Contains(ch.Detail, c.detail) {
			t.Errorf("%s: detail %q, want it to say %q", c.name, ch.Detail, c.detail)
		}
	}
}
