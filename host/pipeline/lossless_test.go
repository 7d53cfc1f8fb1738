package pipeline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestNoOpPatchIsLossless: real clients' bodies (Claude Code, opencode,
// Codex over Chat Completions: host/dialect/testdata/clients), decoded,
// sent to a layer that reads everything and hands every part back
// unchanged (through the wire both ways, as a guest does), patched in and
// re-encoded in the caller's dialect, are the same JSON as the client sent:
// no member at any level may vanish because some layer rewrote the request
// (issue 11: Claude Code's defer_loading, opencode's eager_input_streaming,
// mid-conversation system messages, server tools, …).
func TestNoOpPatchIsLossless(t *testing.T) {
	files, _ := filepath.Glob("../dialect/testdata/clients/*.json")
	if len(files) == 0 {
		t.Fatal("no client bodies")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			body, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			decode, encode := anthropic.DecodeRequest, anthropic.EncodeRequest
			if strings.Contains(f, ".openai.") {
				decode, encode = openai.DecodeRequest, openai.EncodeRequest
			}
			req, err := decode(body)
			if err != nil {
				t.Fatal(err)
			}
			// host → layer
			var enc wire.Encoder
			wire.EncodeLayerRequest(&enc, &wire.Meta{}, req, wire.PartAll)
			var in wire.LayerRequest
			if err := in.Decode(append([]byte(nil), enc.Bytes()...)); err != nil {
				t.Fatal(err)
			}
			// layer → host: every part "rewritten" to itself
			res := wire.LayerResult{Patched: wire.PartAll, Request: in.Request}
			res.Encode(&enc)
			var out wire.LayerResult
			if err := out.Decode(append([]byte(nil), enc.Bytes()...)); err != nil {
				t.Fatal(err)
			}
			applyPatch(req, &out.Request, out.Patched)
			got, err := encode(req)
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			if err := json.Unmarshal(body, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(equivalent(a), equivalent(b)) {
				t.Errorf("re-encoded body differs from the client's:\n--- sent\n%s\n--- re-encoded\n%s", body, got)
			}
		})
	}
}

// equivalent rewrites the spellings both APIs define as meaning the same, and
// which the codecs normalise, into one: content that is a lone text block
// with no other member is its text as a string, "is_error": false is no
// is_error. Everything else must match exactly.
func equivalent(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = equivalent(e)
		}
		if c, ok := x["content"].([]any); ok && len(c) == 1 {
			if blk, ok := c[0].(map[string]any); ok && len(blk) == 2 && blk["type"] == "text" {
				if s, ok := blk["text"].(string); ok {
					x["content"] = s
				}
			}
		}
		if x["is_error"] == false {
			delete(x, "is_error")
		}
	case []any:
		for i := range x {
			x[i] = equivalent(x[i])
		}
	}
	return v
}

// TestPatchKeepsExtras: a layer that sends parts back without their Extra
// (built before ABI v1.4, or building fresh blocks and tools) does not
// take the caller's unknown members with it; one that drops or reorders
// elements drops only what it dropped.
func TestPatchKeepsExtras(t *testing.T) {
	x := func(s string) []byte { return []byte(s) }
	req := &wire.Request{
		System: []wire.Block{{Type: wire.BlockText, Text: "s", Extra: x(`{"a":1}`)}},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "jane@x.io", Extra: x(`{"b":2}`)}}},
			{Role: "system", Extra: x(`{"cache_control":{"type":"ephemeral"}}`), Content: []wire.Block{{Type: wire.BlockText, Text: "be brief"}}},
		},
		Tools: []wire.Tool{{Name: "Read", Extra: x(`{"defer_loading":true}`)}, {Name: "Edit", Extra: x(`{"e":1}`)}},
	}
	// pii-like: fresh blocks with masked text; toolprune-like: one tool
	// dropped, the other rebuilt.
	patch := wire.Request{
		System: []wire.Block{{Type: wire.BlockText, Text: "s"}},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "[EMAIL_1]"}}},
			{Role: "system", Content: []wire.Block{{Type: wire.BlockText, Text: "be brief"}}},
		},
		Tools: []wire.Tool{{Name: "Edit"}},
	}
	applyPatch(req, &patch, wire.PartSystem|wire.PartMessages|wire.PartTools)
	if string(req.System[0].Extra) != `{"a":1}` || string(req.Messages[0].Content[0].Extra) != `{"b":2}` ||
		req.Messages[0].Content[0].Text != "[EMAIL_1]" || string(req.Messages[1].Extra) != `{"cache_control":{"type":"ephemeral"}}` ||
		len(req.Tools) != 1 || string(req.Tools[0].Extra) != `{"e":1}` {
		t.Fatalf("patched request lost extras: %+v", req)
	}
	// compress-like: fewer messages; nothing is guessed.
	patch = wire.Request{Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "summary"}}}}}
	applyPatch(req, &patch, wire.PartMessages)
	if req.Messages[0].Content[0].Extra != nil {
		t.Fatalf("an extra moved to another message: %+v", req.Messages)
	}
}
