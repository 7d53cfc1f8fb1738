//go:build !wasip1

package main

import (
	"encoding/hex"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// goldenRequests are an agent's turns in the shapes the key's pieces take:
// the 4 KB fixture, its next turn, parallel tool calls and their results,
// a long run of messages, extra members, an image, another tenant.
func goldenRequests() []struct {
	tenant string
	req    wire.Request
} {
	base := *fixtures.AgentRequest()
	next := base
	next.Messages = append(append([]wire.Message(nil), base.Messages...),
		wire.Message{Role: "assistant", Content: []wire.Block{{Type: wire.BlockText, Text: "Morpho: 80,000 USDC at 5.1%."}}},
		wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "Rebalance   then, 2025-06-01T10:00:00Z."}}})
	long := strings.Repeat("a long tool result line with  spaces\t", 30)
	tools := base
	tools.Messages = append(append([]wire.Message(nil), base.Messages...),
		wire.Message{Role: "assistant", Content: []wire.Block{
			{Type: wire.BlockToolUse, ID: "c2", Name: "get_price", Data: []byte(`{"asset":"ETH"}`)},
			{Type: wire.BlockToolUse, ID: "c3", Name: "get_position", Data: []byte(`{"protocol":"morpho","asset":"USDC","traceId":"t-1"}`)}}},
		wire.Message{Role: "user", Content: []wire.Block{
			{Type: wire.BlockToolResult, ID: "c3", Text: long},
			{Type: wire.BlockToolResult, ID: "c2", Text: `{"price":"3120.55"}`, IsError: true}}},
		wire.Message{Role: "user", Content: []wire.Block{{Type: wire.BlockImage, Data: []byte(`{"type":"base64","media_type":"image/png","data":"` + strings.Repeat("iVBO", 50) + `"}`)}}})
	extra := base
	extra.Extra = []byte(`{"response_format":{"type":"json_object"},"user":"u-1","metadata":{"x":1}}`)
	extra.Params.Stop = []string{"\n\n"}
	return []struct {
		tenant string
		req    wire.Request
	}{{"t1", base}, {"t1", next}, {"t1", tools}, {"t1", extra}, {"t2", next}}
}

// TestGoldenKeys pins the key of each golden request, built afresh and
// again from the memo (the second and third builds): a change to how the
// key is built that changes a key fails here, whatever its speed. The
// values are those of the canonical form hashcache/5 before issue 14's
// fourth pass.
func TestGoldenKeys(t *testing.T) {
	want := []string{
		"78725e400f4b3ffb74715061dd1b6e39f78b6c15fad6f2b15e436e0672588423",
		"93f38fabd8219f2fb67a6754cb283c0a0f51dd26008521b1077d4a10861cc279",
		"1345ce60ad30581f6e17f89a6be73199b0dce087a03ab7f5f2f1ab5660df766e",
		"2f4574be713aa973d75f7b54493ad0e73c9e36136b0494039824f0c75ad2357d",
		// The tenant is not part of the key: tenants are kept apart by
		// the kv namespace (and the memo's inputs).
		"93f38fabd8219f2fb67a6754cb283c0a0f51dd26008521b1077d4a10861cc279",
	}
	for round := range 3 {
		plugintest.New(t, `{}`)
		pieces.reset()
		for i, g := range goldenRequests() {
			for range round + 1 {
				keys.tenant = g.tenant
				sum := plugin.SHA256(keys.build(&g.req))
				if got := hex.EncodeToString(sum[:]); got != want[i] {
					t.Errorf("round %d, request %d: key %s, want %s", round, i, got, want[i])
				}
			}
		}
	}
}
