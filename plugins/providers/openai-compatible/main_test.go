//go:build !wasip1

package main

import (
	"reflect"
	"testing"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat/compattest"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

func encodeCall(t *testing.T, h *plugintest.Host) *wire.UpstreamCall {
	t.Helper()
	return compattest.Encode(t, h, wire.Route{Provider: "local", Model: "qwen3", BaseURL: "http://127.0.0.1:8000/v1/"}, false)
}

func TestDefaults(t *testing.T) {
	h := plugintest.New(t, "")
	c := encodeCall(t, h)
	want := []wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "Authorization", Value: "Bearer ${credential}"}}
	if c.URL != "http://127.0.0.1:8000/v1/chat/completions" || !reflect.DeepEqual(c.Headers, want) || c.BodyMerge != nil ||
		c.BodyMode != wire.BodyNative || c.ResponseDialect != wire.DialectOpenAI {
		t.Fatalf("call %+v", c)
	}
	if d := plugintest.ProviderDescription(t); !reflect.DeepEqual(d, &routing.ProviderDescription{}) {
		t.Fatalf("description %+v: pipeline.toml says what the server is", d)
	}
}

// The config stays lenient (host/config/README.md's example passes a key
// this adapter does not read); the values it reads are checked.
func TestConfig(t *testing.T) {
	h := plugintest.New(t, `{"organization":"org-123","path":"/v2/chat","auth_header":"api-key","auth_scheme":"",
		"headers":{"X-Tenant":"t1"},"params":"openai","catalog_url":"/models"}`)
	want := []wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "api-key", Value: "${credential}"}, {Key: "X-Tenant", Value: "t1"}}
	if c := encodeCall(t, h); c.URL != "http://127.0.0.1:8000/v1/v2/chat" || !reflect.DeepEqual(c.Headers, want) {
		t.Fatalf("call %s %+v", c.URL, c.Headers)
	}
	if d := plugintest.ProviderDescription(t); d.Params != routing.StyleOpenAI || d.CatalogURL != "/models" {
		t.Fatalf("description %+v", d)
	}
	compattest.Refused(t, `{"organization":"org-123"}`, map[string]string{
		`{"headers":{"Content-Length":"1"}}`: "Content-Length",
		`{"auth_header":"Bad Header"}`:       "auth_header",
	})
}
