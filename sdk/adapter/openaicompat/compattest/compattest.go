//go:build !wasip1

// Package compattest calls a natively built provider plugin's routing
// exports — describe() and resolve() (ABI v1.3) — the way the host does,
// byte for byte: describe's JSON, resolve's wire encoding. sdk/plugintest covers the
// request-path exports (init, encode, decode); tests use both.
package compattest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Describe runs the plugin's describe export and returns its description
// (nil: the plugin leaves it to pipeline.toml). A plugin error fails tb.
func Describe(tb testing.TB) *routing.ProviderDescription {
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
	plugin.SetHost(configHost{Host: plugintest.New(tb, ""), config: []byte(config)})
	out := plugin.Call(plugin.OpInit, nil)
	if len(out) > 0 && out[0] == plugin.StatusError {
		return string(out[1:])
	}
	return ""
}

// configHost is plugintest's in-memory host with the config replaced.
type configHost struct {
	*plugintest.Host
	config []byte
}

func (h configHost) Config() []byte { return h.config }

// Encode runs h's encode for a request of the route's model (stream or
// not) and returns the upstream call, failing tb when encode answers
// anything else.
func Encode(tb testing.TB, h *plugintest.Host, route wire.Route, stream bool) *wire.UpstreamCall {
	tb.Helper()
	res := h.Encode(wire.EncodeInput{Route: route, Request: wire.Request{Model: route.Model, Stream: stream}})
	if res.Error != nil || res.Call == nil {
		tb.Fatalf("encode %s: error %+v, local %v", route.Model, res.Error, res.Local != nil)
	}
	return res.Call
}

// Header returns the value of the header name in hs (case-insensitive), ""
// when absent.
func Header(hs []wire.KV, name string) string {
	for _, h := range hs {
		if strings.EqualFold(h.Key, name) {
			return h.Value
		}
	}
	return ""
}

// JSONEq fails tb unless got and want are the same JSON value.
func JSONEq(tb testing.TB, what string, got []byte, want string) {
	tb.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		tb.Fatalf("%s: %v in %s", what, err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("%s: bad want: %v", what, err)
	}
	if !reflect.DeepEqual(g, w) {
		tb.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

// Refused checks that init fails for each config (JSON) with an error
// containing its want, and succeeds for good.
func Refused(tb testing.TB, good string, cases map[string]string) {
	tb.Helper()
	for config, want := range cases {
		if got := InitError(tb, config); got == "" || !strings.Contains(got, want) {
			tb.Errorf("%s: init error %q, want one naming %q", config, got, want)
		}
	}
	if got := InitError(tb, good); got != "" {
		tb.Errorf("%s: a valid config refused: %s", good, got)
	}
}

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
