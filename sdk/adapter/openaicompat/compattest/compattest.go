//go:build !wasip1

// Package compattest holds the test helpers of the OpenAI-compatible
// adapters (sdk/adapter/openaicompat): their call, its headers and body
// members, and config refusals. The exports every plugin has — describe,
// resolve, init — are driven by sdk/plugintest.
package compattest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

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
		if got := plugintest.InitError(tb, config); got == "" || !strings.Contains(got, want) {
			tb.Errorf("%s: init error %q, want one naming %q", config, got, want)
		}
	}
	if got := plugintest.InitError(tb, good); got != "" {
		tb.Errorf("%s: a valid config refused: %s", good, got)
	}
}
