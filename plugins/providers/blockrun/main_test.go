//go:build !wasip1

package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat/compattest"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

const base = "https://blockrun.ai/api/v1"

func encodeCall(t *testing.T, h *plugintest.Host, stream bool) *wire.UpstreamCall {
	t.Helper()
	return compattest.Encode(t, h, wire.Route{Provider: "blockrun", Model: "openai/gpt-4o", BaseURL: base}, stream)
}

func TestDescribe(t *testing.T) {
	plugintest.New(t, "")
	want := &routing.ProviderDescription{
		Traits:     routing.Traits{Payment: routing.PaymentX402, ContextEngineering: true},
		Params:     routing.StyleByFamily,
		CatalogURL: "/models",
	}
	if d := plugintest.ProviderDescription(t); !reflect.DeepEqual(d, want) {
		t.Fatalf("description\n got %+v\nwant %+v", d, want)
	}
}

// x402 pays, so the call carries no credential at all: the plugin has none
// and asks the host for none.
func TestEncodeWithoutCredential(t *testing.T) {
	h := plugintest.New(t, "")
	c := encodeCall(t, h, true)
	want := []wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "Accept", Value: "text/event-stream"}}
	if c.URL != base+"/chat/completions" || !reflect.DeepEqual(c.Headers, want) || c.BodyMode != wire.BodyNative ||
		c.ResponseDialect != wire.DialectOpenAI || !c.Stream || c.BodyMerge != nil {
		t.Fatalf("call %+v", c)
	}
	for _, kv := range c.Headers {
		if strings.Contains(kv.Value, "${credential}") {
			t.Fatalf("credential placeholder in %s", kv.Key)
		}
	}
}

// With a BlockRun API key instead of a wallet, the operator names the
// header.
func TestEncodeAPIKeyMode(t *testing.T) {
	h := plugintest.New(t, `{"auth_header":"Authorization","auth_scheme":"Bearer"}`)
	if got := encodeCall(t, h, false).Headers; len(got) != 2 || got[1] != (wire.KV{Key: "Authorization", Value: "Bearer ${credential}"}) {
		t.Fatalf("headers %+v", got)
	}
}

func TestConfigRefused(t *testing.T) {
	compattest.Refused(t, `{"headers":{"X-Client":"bardo"}}`, map[string]string{
		`{"wallet":"0xabc"}`:           "wallet",
		`{"path":"chat/completions"}`:  "path",
		`{"headers":{"Accept":"*/*"}}`: "Accept",
	})
}

// A failure after the host's payment round (BlockRun down, or refusing
// the request) is mapped like any OpenAI-compatible failure.
func TestDecodeFailure(t *testing.T) {
	h := plugintest.New(t, "")
	res := h.Decode(wire.DecodeInput{Route: wire.Route{Provider: "blockrun"}, Status: 503,
		Body: []byte(`{"error":{"message":"upstream busy"}}`)})
	if res.Error == nil || res.Error.Status != 502 || !res.Error.Retryable || !strings.Contains(res.Error.Message, "upstream busy") {
		t.Fatalf("%+v", res.Error)
	}
}
