//go:build !wasip1

package main

import (
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// TestMemoSameKey: a request whose long texts were normalized before (the
// agent's next turn) gets, from the memo, the canonical string normalizing
// builds — timestamps, UUIDs, ephemeral fields and whitespace handled the
// same — and another tenant's turn is normalized afresh.
func TestMemoSameKey(t *testing.T) {
	plugintest.New(t, `{}`)
	filler := strings.Repeat("Keep the answer short  and\tcite the file you changed. ", 12)
	req := wire.Request{
		Model:  "m",
		System: []wire.Block{{Type: wire.BlockText, Text: "  " + filler + " at 2025-01-01T10:00:00Z for 123e4567-e89b-12d3-a456-426614174000\n"}},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: filler}}},
			{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, ID: "c1", Name: "read",
				Data: []byte(`{"traceId":"abc","path":"` + filler + `"}`)}}},
			{Role: "user", Content: []wire.Block{{Type: wire.BlockToolResult, ID: "c1", Text: filler + " -- done"}}},
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "Now fix it."}}},
		},
		Tools: []wire.Tool{{Name: "read", Description: filler + "!", Schema: []byte(`{"type":"object","description":"` + filler + `"}`)}},
	}
	build := func(tenant string) (string, int) {
		hits := memoized.Hits
		keys.tenant = tenant
		return string(keys.build(&req)), memoized.Hits - hits
	}
	memoized.Reset()
	fresh, hits := build("t1")
	if hits != 0 {
		t.Fatalf("first build: %d memo hits", hits)
	}
	if strings.Contains(fresh, "2025-01-01") || strings.Contains(fresh, "123e4567") || strings.Contains(fresh, "abc") || strings.Contains(fresh, "  ") {
		t.Fatalf("not normalized: %q", fresh)
	}
	again, hits := build("t1")
	if hits != 6 {
		t.Fatalf("next turn: %d memo hits, want the 6 long texts", hits)
	}
	if again != fresh {
		t.Fatalf("from the memo:\n%q\nwant\n%q", again, fresh)
	}
	if other, hits := build("t2"); hits != 0 || other != fresh {
		t.Fatalf("another tenant: %d memo hits, same string %v", hits, other == fresh)
	}
}
