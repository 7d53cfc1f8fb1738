// Package golden pins the ABI v1 wire format to byte fixtures shared with the
// JavaScript codec (wasm/host/wire.mjs).
//
// TestGolden encodes fixed, rich messages with sdk/wire and compares them
// byte-for-byte with wasm/test/testdata/*.bin; wasm/test/golden.test.mjs builds
// the same values in JavaScript and checks that wire.mjs encodes them to the same
// bytes and decodes the bytes back to the same values. A change to either codec
// therefore fails a test. After an intended format change, regenerate with
//
//	go test ./wasm/golden -update
//
// and update wire.mjs (and fixtures.mjs, if values changed) until `node --test wasm/test/` passes.
package golden

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

var update = flag.Bool("update", false, "rewrite wasm/test/testdata/*.bin")

const testdata = "../test/testdata"

// The values below are mirrored in fixtures.mjs beside this file: keep them in step.

var meta = wire.Meta{
	RequestID: "req-01J9Z",
	Tenant:    "tenant-ü",
	Session:   "sess/42",
	Dialect:   wire.DialectAnthropic,
	Model:     "claude-sonnet-4",
	Stream:    true,
	Annotations: []wire.KV{
		{Key: "route", Value: "fast"},
		{Key: "note", Value: "naïve café ☕ 日本語 🚀"},
	},
}

var cacheControl = []byte(`{"type":"ephemeral","ttl":"1h"}`)

var request = wire.Request{
	Model: "claude-sonnet-4",
	System: []wire.Block{
		{Type: wire.BlockText, Text: "You are terse.\nNo emojis 🙅.", CacheControl: cacheControl},
	},
	Messages: []wire.Message{
		{Role: "user", Name: "alice", Content: []wire.Block{
			{Type: wire.BlockText, Text: "héllo wörld — 你好 👋🏽 \x00 end"},
			{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"https://example.com/a.png"}`)},
		}},
		{Role: "assistant", Content: []wire.Block{
			{Type: wire.BlockThinking, Text: "hmm…", Signature: "sig=="},
			{Type: wire.BlockToolUse, ID: "toolu_1", Name: "get_weather", Data: []byte(`{"city":"Zürich"}`)},
		}},
		{Role: "user", Content: []wire.Block{
			{Type: wire.BlockToolResult, ID: "toolu_1", Text: "error: timeout", IsError: true, CacheControl: cacheControl},
			{Type: wire.BlockRedactedThinking, Data: []byte(`"opaque"`)},
			{Type: wire.BlockOther, Data: []byte(`{"type":"future_block"}`)},
		}},
	},
	Tools: []wire.Tool{
		{Name: "get_weather", Description: "Weather for a city.",
			Schema:       []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`),
			CacheControl: cacheControl},
		{Name: "noop"},
	},
	ToolChoice: []byte(`{"type":"tool","name":"get_weather"}`),
	Params: wire.Params{
		Set:         wire.HasTemperature | wire.HasTopP | wire.HasTopK | wire.HasMaxTokens | wire.HasSeed,
		MaxTokens:   4096,
		Temperature: 0.7,
		TopP:        1.0000000000000002,
		TopK:        -40,
		Seed:        math.MinInt64,
		Stop:        []string{"\n\nHuman:", "終"},
	},
	Stream: true,
	Extra:  []byte(`{"metadata":{"user_id":"u-1"},"service_tier":"auto"}`),
}

// extrasRequest carries unknown members at every nested level (the ABI
// v1.4 section appended to LayerRequest, LayerResult and EncodeInput).
var extrasRequest = wire.Request{
	Model:  "claude-opus-4-8",
	System: []wire.Block{{Type: wire.BlockText, Text: "sys", Extra: []byte(`{"citations":[]}`)}},
	Messages: []wire.Message{
		{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "q"}}},
		{Role: "system", Extra: []byte(`{"cache_control":{"type":"ephemeral"}}`), Content: []wire.Block{
			{Type: wire.BlockText, Text: "be brief ✂", Extra: []byte(`{"x":1}`)}}},
	},
	Tools: []wire.Tool{{Name: "Read", Extra: []byte(`{"defer_loading":true}`)}, {Name: "Edit"}},
}

var usage = wire.Usage{InputTokens: 1 << 53, OutputTokens: 321, CacheReadTokens: -7, CacheWriteTokens: math.MaxInt64}

var response = wire.Response{
	ID:    "msg_01",
	Model: "claude-sonnet-4",
	Content: []wire.Block{
		{Type: wire.BlockText, Text: "Grüße 🌍"},
		{Type: wire.BlockToolUse, ID: "toolu_2", Name: "get_weather", Data: []byte(`{"city":"Oslo"}`)},
	},
	StopReason: wire.StopToolUse,
	StopSeq:    "",
	Usage:      usage,
}

var apiError = wire.Error{Status: 429, Kind: wire.ErrRateLimit, Message: "slow down — ⏳", Retryable: true, RetryAfterMs: -1}

var events = []wire.Event{
	{Type: wire.EventMessageStart, ID: "msg_01", Model: "claude-sonnet-4", Usage: wire.Usage{InputTokens: 12}},
	{Type: wire.EventBlockStart, Index: 0, Block: wire.Block{Type: wire.BlockText, CacheControl: cacheControl}},
	{Type: wire.EventDelta, Index: 0, Delta: wire.DeltaText, Text: "Hi ✋"},
	{Type: wire.EventDelta, Index: -1, Delta: wire.DeltaInputJSON, Text: `{"ci`},
	{Type: wire.EventMessageDelta, StopReason: wire.StopSequence, StopSeq: "終", Usage: wire.Usage{OutputTokens: 5}},
	{Type: wire.EventError, Error: &apiError},
}

var route = wire.Route{Provider: "anthropic", Model: "claude-sonnet-4-20250514", BaseURL: "https://api.anthropic.com"}

type fixture struct {
	name   string
	encode func(e *wire.Encoder)
	decode func(b []byte) (encodable, error)
}

type encodable interface{ Encode(*wire.Encoder) }

// message builds a fixture for a message type with Encode and Decode methods.
func message[T any, P interface {
	*T
	encodable
	Decode([]byte) error
}](name string, v P) fixture {
	return fixture{name: name, encode: v.Encode, decode: func(b []byte) (encodable, error) {
		var x T
		err := P(&x).Decode(b)
		return P(&x), err
	}}
}

func fixtures() []fixture {
	return []fixture{
		message("descriptor", &wire.Descriptor{ABI: 1, Name: "hostcalls", Version: "1.0.0", Kind: "layer",
			Phases: wire.PhaseRequest | wire.PhaseStream, Reads: wire.PartMessages | wire.PartParams, Writes: wire.PartMessages}),
		message("layer_request", &wire.LayerRequest{Meta: meta, Request: request}),
		{
			// What a host sends a layer that reads only messages and params.
			name:   "layer_request_parts",
			encode: func(e *wire.Encoder) { wire.EncodeLayerRequest(e, &meta, &request, wire.PartMessages|wire.PartParams) },
		},
		message("layer_result", &wire.LayerResult{
			Action:  wire.ActionAnswer,
			Patched: wire.PartSystem | wire.PartMessages | wire.PartTools | wire.PartExtra,
			Request: wire.Request{System: request.System, Messages: request.Messages[:1], Tools: request.Tools,
				ToolChoice: request.ToolChoice, Extra: request.Extra, Stream: true},
			Answer:      &response,
			Error:       &apiError,
			Headers:     []wire.KV{{Key: "X-Bardo-Cache", Value: "hit"}},
			Annotations: []wire.KV{{Key: "cache.key", Value: "ab12"}},
		}),
		message("layer_result_continue", &wire.LayerResult{}),
		message("layer_request_extras", &wire.LayerRequest{Meta: meta, Request: extrasRequest}),
		message("layer_result_extras", &wire.LayerResult{Patched: wire.PartMessages | wire.PartTools,
			Request: wire.Request{Messages: extrasRequest.Messages, Tools: extrasRequest.Tools}}),
		message("layer_response", &wire.LayerResponse{Meta: meta, Response: response}),
		message("layer_response_result", &wire.LayerResponseResult{Replaced: true, Response: response,
			Headers: []wire.KV{{Key: "X-Bardo-Filter", Value: "redacted"}}}),
		message("layer_response_result_kept", &wire.LayerResponseResult{Headers: []wire.KV{{Key: "X-Bardo-Seen", Value: "1"}}}),
		message("layer_stream", &wire.LayerStream{Meta: meta, Events: events, State: []byte{0, 1, 2, 0xff}, Final: true}),
		message("layer_stream_result", &wire.LayerStreamResult{Events: events[1:3], State: []byte("state")}),
		// v1.6, appended: a watching layer's flag, a result that skips its
		// answer phases (the extras section then always written), a host
		// that reads "unchanged", and an unchanged result.
		message("descriptor_flags", &wire.Descriptor{ABI: 1, Name: "affinity", Version: "1.0.0", Kind: "layer",
			Phases: wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream, Reads: wire.PartAll, Flags: wire.FlagWatchStream}),
		message("layer_result_skip", &wire.LayerResult{Annotations: []wire.KV{{Key: "k", Value: "v"}}, SkipAnswer: true}),
		message("layer_stream_unchanged_ok", &wire.LayerStream{Meta: meta, Events: events[:2], Final: true, UnchangedOK: true}),
		message("layer_stream_result_unchanged", &wire.LayerStreamResult{State: []byte("st"), Unchanged: true}),
		message("encode_input", &wire.EncodeInput{Meta: meta, Route: route, Request: request, Pristine: true}),
		message("encode_result", &wire.EncodeResult{Call: &wire.UpstreamCall{
			Method: "POST", URL: "https://api.anthropic.com/v1/messages",
			Headers:  []wire.KV{{Key: "x-api-key", Value: "${credential}"}, {Key: "anthropic-version", Value: "2023-06-01"}},
			BodyMode: wire.BodyRaw, BodyDialect: wire.DialectAnthropic, Body: []byte(`{"model":"x"}`),
			Stream: true, ResponseDialect: wire.DialectAnthropic,
			BodyMerge: []byte(`{"provider":{"sort":"price"}}`), VerifySuccess: true,
		}, Error: &apiError}),
		message("encode_result_local", &wire.EncodeResult{Local: &response}),
		message("encode_result_degraded", &wire.EncodeResult{Call: &wire.UpstreamCall{Method: "POST", URL: "https://g/v1beta/models/x:generateContent"},
			Degraded: []string{"system-as-user", "naïve"}}),
		message("decode_input", &wire.DecodeInput{Meta: meta, Route: route, Status: 529,
			Headers: []wire.KV{{Key: "content-type", Value: "application/json"}}, Body: []byte(`{"type":"error"}`)}),
		message("decode_result", &wire.DecodeResult{Response: &response, Error: &apiError}),
		message("decode_stream_input", &wire.DecodeStreamInput{Meta: meta, Route: route,
			Events: []wire.SSE{{Event: "message_start", Data: []byte(`{"type":"message_start"}`)}, {Event: "", Data: nil}},
			State:  []byte{9}, Final: false, Headers: []wire.KV{{Key: "x-venice-retention", Value: "none"}}}),
		message("decode_stream_result", &wire.DecodeStreamResult{Events: events, State: nil, Error: &apiError}),
	}
}

func TestGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			seen[f.name+".bin"] = true
			var e wire.Encoder
			f.encode(&e)
			got := e.Bytes()
			path := filepath.Join(testdata, f.name+".bin")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run `go test ./wasm/golden -update` to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("sdk/wire encodes %s differently from %s (%d vs %d bytes): if the format change is intended, "+
					"run `go test ./wasm/golden -update` and bring wasm/host/wire.mjs in step", f.name, path, len(got), len(want))
			}
			if f.decode == nil {
				return
			}
			// The Go decoder reads the fixture back to the same bytes.
			x, err := f.decode(want)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			var e2 wire.Encoder
			x.Encode(&e2)
			if !bytes.Equal(e2.Bytes(), want) {
				t.Fatalf("decode+encode of %s does not round-trip", f.name)
			}
		})
	}
	// No stale fixture the JS test would still check.
	bins, _ := filepath.Glob(filepath.Join(testdata, "*.bin"))
	for _, b := range bins {
		if !seen[filepath.Base(b)] {
			t.Errorf("%s has no fixture here: remove it", b)
		}
	}
}
