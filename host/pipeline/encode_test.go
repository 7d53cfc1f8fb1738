package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

// The request phase encodes each part of the request once for all its
// layers (wire.RequestEncoder): a layer after one that replaced the
// messages must read the replacement, not the encoding made before it.
func TestRequestPhaseLayerReadsEarlierPatch(t *testing.T) {
	e := newEnv(t, map[string]string{"hostcalls.wasm": "testplugins/hostcalls", "sim.wasm": "plugins/providers/sim"}, `
[[layer]]
name = "a"
plugin = "hostcalls.wasm"
trusted = true
[layer.config]
suffix = " [a]"

[[layer]]
name = "b"
plugin = "hostcalls.wasm"
trusted = true
[layer.config]
suffix = " [b]"
`+providerSim)
	x := ask(t, e.m, "hello")
	if got := x.Req.Messages[0].Content[0].Text; got != "hello [a] #1 [b] #1" {
		t.Errorf("text after the phase %q, want both layers' suffixes in order", got)
	}
	var hashes []string
	for _, h := range x.Headers {
		if h.Key == "X-Bardo-Hostcalls-Hash" {
			hashes = append(hashes, h.Value)
		}
	}
	sum := func(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:4]) }
	if len(hashes) != 2 || hashes[0] != sum("hello") || hashes[1] != sum("hello [a] #1") {
		t.Errorf("the layers hashed %v, want %s then %s (b reads a's text)", hashes, sum("hello"), sum("hello [a] #1"))
	}
}

// A layer's headers reach the answer only as X-Bardo-* headers that cannot
// split or forge one.
func TestAddHeadersKeepsSafeBardoHeaders(t *testing.T) {
	var x Exchange
	x.addHeaders([]wire.KV{
		{Key: "X-Bardo-Cache", Value: "hit"},
		{Key: "x-bardo-pii", Value: "masked 2"},
		{Key: "Set-Cookie", Value: "a=b"},
		{Key: "X-Bardo-", Value: "empty name"},
		{Key: "X-Bardo-A b", Value: "space"},
		{Key: "X-Bardo-A:b", Value: "colon"},
		{Key: "X-Bardo-Split", Value: "x\r\nSet-Cookie: a=b"},
		{Key: "X-Bardo-Nl\n", Value: "y"},
	})
	if len(x.Headers) != 2 || x.Headers[0].Key != "X-Bardo-Cache" || x.Headers[1].Key != "x-bardo-pii" {
		t.Errorf("kept %v, want the two X-Bardo-* headers", x.Headers)
	}
}
