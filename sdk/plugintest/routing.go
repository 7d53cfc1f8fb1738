//go:build !wasip1

package plugintest

// The routing exports a provider plugin may have (ABI v1.3): describe() and
// resolve(), called the way the host calls them, byte for byte — describe's
// JSON, resolve's wire encoding — on the host New installed; and init under
// another config, for tests of configurations that must fail the load.

import (
	"encoding/json"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// ProviderDescription runs the plugin's provider describe export and
// returns its description (nil: the plugin leaves it to pipeline.toml). A
// plugin error fails tb.
func ProviderDescription(tb testing.TB) *routing.ProviderDescription {
	tb.Helper()
	var d *routing.ProviderDescription
	decode(tb, call(tb, plugin.OpProviderDescribe, []byte{wire.FormatVersion}), &d)
	return d
}

// Resolve runs the plugin's resolve export with the intent and the
// standard resolver's answer (nil: it found none), as the host's
// resolveInPlugin sends them, and returns the plugin's answer (nil: none).
func Resolve(tb testing.TB, in routing.Intent, standard *routing.Resolution) *routing.Resolution {
	tb.Helper()
	var e wire.Encoder
	plugin.EncodeResolveInput(&e, &in, standard)
	out := call(tb, plugin.OpResolve, e.Bytes())
	r, err := plugin.DecodeResolveResult(out)
	if err != nil {
		tb.Fatalf("resolve answered %q: %v", out, err)
	}
	return r
}

// InitError runs the plugin's init with config (JSON) and returns its
// error message, "" when it succeeded: for tests of configurations that
// must fail the load (plugintest.New fails the test instead).
func InitError(tb testing.TB, config string) string {
	tb.Helper()
	// plugintest's host with another config: New runs init once with an
	// empty table (the defaults, which must load), then init runs again on
	// config and its error is returned instead of failing the test.
	plugin.SetHost(configHost{Host: New(tb, ""), config: []byte(config)})
	out := plugin.Call(plugin.OpInit, nil)
	if len(out) > 0 && out[0] == plugin.StatusError {
		return string(out[1:])
	}
	return ""
}

// configHost is plugintest's in-memory host with the config replaced.
type configHost struct {
	*Host
	config []byte
}

func (h configHost) Config() []byte { return h.config }

// call runs one export and fails the test on a plugin error.
func call(tb testing.TB, op plugin.Op, in []byte) []byte {
	tb.Helper()
	out := plugin.Call(op, in)
	if len(out) == 0 || out[0] == plugin.StatusError {
		tb.Fatalf("plugin op %d failed: %s", op, out[min(1, len(out)):])
	}
	return out
}

func decode(tb testing.TB, out []byte, v any) {
	tb.Helper()
	if out[0] != wire.FormatVersion {
		tb.Fatalf("unknown format byte %d", out[0])
	}
	if err := json.Unmarshal(out[1:], v); err != nil {
		tb.Fatalf("undecodable payload %s: %v", out[1:], err)
	}
}
