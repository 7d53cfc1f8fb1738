//go:build !wasip1

package main

import (
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The same plugin, natively: what plugin authors do with plugintest.
func TestNative(t *testing.T) {
	h := plugintest.New(t, `{"suffix":" [test]"}`)
	req := func(text string) wire.LayerRequest {
		return wire.LayerRequest{
			Meta:    wire.Meta{Tenant: "t1"},
			Request: wire.Request{Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: text}}}}},
		}
	}
	for i, want := range []string{"hi [test] #1", "hi [test] #2"} {
		res := h.OnRequest(req("hi"))
		if got := res.Request.Messages[0].Content[0].Text; got != want {
			t.Fatalf("call %d: %q, want %q", i, got, want)
		}
	}
	if h.Metrics["hostcalls_requests_total"] != 2 {
		t.Fatalf("metrics = %v", h.Metrics)
	}
}
