package openaicompat_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/wire"
)

func input(base string, stream bool) *wire.EncodeInput {
	return &wire.EncodeInput{
		Route:   wire.Route{Provider: "up", Model: "m", BaseURL: base},
		Request: wire.Request{Model: "m", Stream: stream},
	}
}

// The defaults are OpenAI's call: POST base+/chat/completions, a bearer
// credential the host fills in, the body encoded and the answer decoded by
// the host in OpenAI's dialect.
func TestDefaultCall(t *testing.T) {
	ep := openaicompat.Defaults().MustEndpoint()
	merge := []byte(`{"provider":{"sort":"price"}}`)
	c, werr := ep.Call(input("https://api.example.com/v1/", false), merge)
	if werr != nil {
		t.Fatal(werr)
	}
	want := &wire.UpstreamCall{
		Method: "POST", URL: "https://api.example.com/v1/chat/completions",
		Headers: []wire.KV{{Key: "Content-Type", Value: "application/json"},
			{Key: "Authorization", Value: "Bearer ${credential}"}},
		BodyMode: wire.BodyNative, BodyDialect: wire.DialectOpenAI, BodyMerge: merge,
		ResponseDialect: wire.DialectOpenAI,
	}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("call\n got %+v\nwant %+v", c, want)
	}

	s, _ := ep.Call(input("https://api.example.com/v1", true), nil)
	if !s.Stream || s.Headers[len(s.Headers)-1] != (wire.KV{Key: "Accept", Value: "text/event-stream"}) || s.BodyMerge != nil {
		t.Fatalf("stream call %+v", s)
	}
	// Each call owns its headers: changing one call's leaves the next as
	// configured.
	s.Headers[0].Value = "text/plain"
	if c2, _ := ep.Call(input("https://api.example.com/v1", false), nil); c2.Headers[0].Value != "application/json" || len(c2.Headers) != 2 {
		t.Fatalf("prepared headers changed by a caller: %+v", c2.Headers)
	}
}

func TestNoBaseURL(t *testing.T) {
	ep := openaicompat.Defaults().MustEndpoint()
	var res wire.EncodeResult
	_ = ep.Encode(input("", false), &res)
	if res.Call != nil || res.Error == nil || res.Error.Status != 500 || !strings.Contains(res.Error.Message, "up has no base_url") {
		t.Fatalf("%+v %+v", res.Call, res.Error)
	}
}

func TestAuthAndHeaders(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  openaicompat.Config
		want []wire.KV
	}{
		{"no credential header (x402)", openaicompat.Config{Path: "/chat/completions"},
			[]wire.KV{{Key: "Content-Type", Value: "application/json"}}},
		{"bare key header", openaicompat.Config{AuthHeader: "X-API-Key"},
			[]wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "X-API-Key", Value: "${credential}"}}},
		{"auth off, default scheme left", openaicompat.Config{AuthScheme: "Bearer"},
			[]wire.KV{{Key: "Content-Type", Value: "application/json"}}},
		{"extra headers sorted by name", openaicompat.Config{AuthHeader: "Authorization", AuthScheme: "Bearer",
			Headers: map[string]string{"X-Title": "Bardo", "HTTP-Referer": "https://example.org"}},
			[]wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "Authorization", Value: "Bearer ${credential}"},
				{Key: "HTTP-Referer", Value: "https://example.org"}, {Key: "X-Title", Value: "Bardo"}}},
	} {
		ep, err := tc.cfg.Endpoint()
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		c, _ := ep.Call(input("http://127.0.0.1:1", false), nil)
		if !reflect.DeepEqual(c.Headers, tc.want) {
			t.Errorf("%s: headers %+v, want %+v", tc.name, c.Headers, tc.want)
		}
	}
}

func TestInvalidConfig(t *testing.T) {
	d := openaicompat.Defaults()
	with := func(f func(*openaicompat.Config)) openaicompat.Config {
		c := d
		f(&c)
		return c
	}
	for _, tc := range []struct {
		cfg  openaicompat.Config
		want string
	}{
		{with(func(c *openaicompat.Config) { c.Path = "chat/completions" }), "path"},
		{with(func(c *openaicompat.Config) { c.Path = "/chat completions" }), "path"},
		{with(func(c *openaicompat.Config) { c.Path = "/chat\r\nX: y" }), "path"},
		{with(func(c *openaicompat.Config) { c.AuthHeader = "Auth Header" }), "auth_header"},
		{with(func(c *openaicompat.Config) { c.AuthHeader = "content-type" }), "auth_header"},
		{with(func(c *openaicompat.Config) { c.AuthScheme = "Bearer token" }), "auth_scheme"},
		{with(func(c *openaicompat.Config) { c.AuthHeader, c.AuthScheme = "", "Token" }), "auth_header is empty"},
		{with(func(c *openaicompat.Config) { c.Headers = map[string]string{"X Title": "a"} }), "header name"},
		{with(func(c *openaicompat.Config) { c.Headers = map[string]string{"Accept": "a"} }), "set by the adapter"},
		{with(func(c *openaicompat.Config) { c.Headers = map[string]string{"authorization": "Bearer x"} }), "set by the adapter"},
		{with(func(c *openaicompat.Config) { c.Headers = map[string]string{"X-Title": "a\r\nInjected: 1"} }), "control character"},
	} {
		if _, err := tc.cfg.Endpoint(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one about %q", tc.cfg, err, tc.want)
		}
	}
}

// Failures are mapped by sdk/adapter: a refused key is the gateway's
// failure (502), a rate limit stays retryable.
func TestDecode(t *testing.T) {
	var res wire.DecodeResult
	_ = openaicompat.Decode(&wire.DecodeInput{Route: wire.Route{Provider: "up"}, Status: 401,
		Body: []byte(`{"error":{"message":"bad key"}}`)}, &res)
	if res.Error == nil || res.Error.Status != 502 || !strings.Contains(res.Error.Message, "bad key") {
		t.Fatalf("401: %+v", res.Error)
	}
	_ = openaicompat.Decode(&wire.DecodeInput{Route: wire.Route{Provider: "up"}, Status: 429,
		Headers: []wire.KV{{Key: "Retry-After", Value: "2"}}}, &res)
	if !res.Error.Retryable || res.Error.RetryAfterMs != 2000 {
		t.Fatalf("429: %+v", res.Error)
	}
}
