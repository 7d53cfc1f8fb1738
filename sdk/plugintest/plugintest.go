//go:build !wasip1

// Package plugintest runs a plugin's logic natively, in the test binary, with
// in-memory host functions: plugin authors unit-test their layer or adapter
// with `go test` and a debugger, no WASM involved. The same plugin is then
// checked under the real runtime with the host's harness (see
// docs/plugin-guide.md, "Testing under wazero").
//
//	func TestMyLayer(t *testing.T) {
//		h := plugintest.New(t, `{"threshold": 3}`)
//		res := h.OnRequest(wire.LayerRequest{...})
//		...
//	}
package plugintest

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Host is an in-memory implementation of the host functions.
type Host struct {
	mu      sync.Mutex
	config  []byte
	kv      map[string]kvEntry
	Clock   func() time.Time // defaults to time.Now
	Logs    []string
	Metrics map[string]float64
	tb      testing.TB
}

type kvEntry struct {
	val     []byte
	expires time.Time
}

// New installs a fresh Host with the given config JSON and runs the plugin's
// describe and init exports, failing tb on error.
func New(tb testing.TB, configJSON string) *Host {
	tb.Helper()
	h := &Host{config: []byte(configJSON), kv: map[string]kvEntry{}, Metrics: map[string]float64{}, tb: tb}
	plugin.SetHost(h)
	tb.Cleanup(func() { plugin.SetHost(nil) })
	h.call(plugin.OpInit, nil)
	return h
}

func (h *Host) now() time.Time {
	if h.Clock != nil {
		return h.Clock()
	}
	return time.Now()
}

// Log implements plugin.Host.
func (h *Host) Log(level int, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Logs = append(h.Logs, strings.Clone(msg)) // msg may alias the call's input, as key names below
}

// Now implements plugin.Host.
func (h *Host) Now() time.Time { return h.now() }

// KVGet implements plugin.Host.
func (h *Host) KVGet(key string) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.kv[key]
	if !ok || (!e.expires.IsZero() && !h.now().Before(e.expires)) {
		return nil, false
	}
	return append([]byte(nil), e.val...), true // a copy, as the wasm host's
}

// KVPut implements plugin.Host.
func (h *Host) KVPut(key string, val []byte, ttl time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := kvEntry{val: append([]byte(nil), val...)}
	if ttl > 0 {
		e.expires = h.now().Add(ttl)
	}
	// The key is copied as the wasm host copies it out of guest memory: a
	// key built from the request aliases the call's input, which the next
	// call overwrites (plugin.Call scribbles over it).
	h.kv[strings.Clone(key)] = e
	return nil
}

// KVDelete implements plugin.Host.
func (h *Host) KVDelete(key string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.kv, key)
	return nil
}

// KVGetShared implements plugin.Host.
func (h *Host) KVGetShared(key string) ([]byte, bool) { return h.KVGet("\x00shared\x00" + key) }

// KVPutShared implements plugin.Host.
func (h *Host) KVPutShared(key string, val []byte, ttl time.Duration) error {
	return h.KVPut("\x00shared\x00"+key, val, ttl)
}

// KVDeleteShared implements plugin.Host.
func (h *Host) KVDeleteShared(key string) error { return h.KVDelete("\x00shared\x00" + key) }

// Config implements plugin.Host.
func (h *Host) Config() []byte { return h.config }

// Metric implements plugin.Host.
func (h *Host) Metric(kind int, name string, v float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	name = strings.Clone(name)
	if kind == 1 {
		h.Metrics[name] = v
	} else {
		h.Metrics[name] += v
	}
}

// call runs one export and fails the test on a plugin error.
func (h *Host) call(op plugin.Op, in []byte) []byte {
	h.tb.Helper()
	return call(h.tb, op, in)
}

// Describe returns the plugin's descriptor.
func (h *Host) Describe() wire.Descriptor {
	h.tb.Helper()
	var d wire.Descriptor
	if err := d.Decode(h.call(plugin.OpDescribe, nil)); err != nil {
		h.tb.Fatal(err)
	}
	return d
}

// OnRequest runs the layer's request hook, handing it only the parts it
// declared it reads, exactly as the host does.
func (h *Host) OnRequest(in wire.LayerRequest) wire.LayerResult {
	h.tb.Helper()
	var enc wire.Encoder
	wire.EncodeLayerRequest(&enc, &in.Meta, &in.Request, h.Describe().Reads)
	var res wire.LayerResult
	if err := res.Decode(h.call(plugin.OpOnRequest, enc.Bytes())); err != nil {
		h.tb.Fatal(err)
	}
	return res
}

// OnResponse runs the layer's response hook.
func (h *Host) OnResponse(in wire.LayerResponse) wire.LayerResponseResult {
	h.tb.Helper()
	var enc wire.Encoder
	in.Encode(&enc)
	var res wire.LayerResponseResult
	if err := res.Decode(h.call(plugin.OpOnResponse, enc.Bytes())); err != nil {
		h.tb.Fatal(err)
	}
	return res
}

// OnStream runs the layer's stream hook.
func (h *Host) OnStream(in wire.LayerStream) wire.LayerStreamResult {
	h.tb.Helper()
	var enc wire.Encoder
	in.Encode(&enc)
	var res wire.LayerStreamResult
	if err := res.Decode(h.call(plugin.OpOnStream, enc.Bytes())); err != nil {
		h.tb.Fatal(err)
	}
	return res
}

// Encode runs a provider's encode.
func (h *Host) Encode(in wire.EncodeInput) wire.EncodeResult {
	h.tb.Helper()
	var enc wire.Encoder
	in.Encode(&enc)
	var res wire.EncodeResult
	if err := res.Decode(h.call(plugin.OpEncode, enc.Bytes())); err != nil {
		h.tb.Fatal(err)
	}
	return res
}

// Decode runs a provider's decode.
func (h *Host) Decode(in wire.DecodeInput) wire.DecodeResult {
	h.tb.Helper()
	var enc wire.Encoder
	in.Encode(&enc)
	var res wire.DecodeResult
	if err := res.Decode(h.call(plugin.OpDecode, enc.Bytes())); err != nil {
		h.tb.Fatal(err)
	}
	return res
}
