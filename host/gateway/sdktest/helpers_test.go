package sdktest

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// pipelineTOML routes gpt-* to an OpenAI-compatible upstream ("up") and
// claude-* to an Anthropic upstream ("claude"), both the same fake server;
// layers (if any) come first. It is host/gateway's upstreamPipeline.
func pipelineTOML(fake *fakeupstream.Server, layers string) string {
	return layers + testgateway.FakeProviders(fake.URL())
}

// upKey is the upstream's key: only the gateway knows it. The SDKs send
// clientKey, which the gateway does not check (no authentication yet).
const (
	upKey     = "sk-sdktest-upstream-secret-0123456789"
	clientKey = "sk-client-anything"
)

// touchLayer rewrites the request (a "." appended to the last text block),
// so the gateway cannot forward the caller's bytes and must re-encode.
const touchLayer = `
[[layer]]
name = "touch"
plugin = "touch.wasm"
on_error = "fail-closed"
trusted = true
`

// requestTimeout bounds every SDK call.
const requestTimeout = 20 * time.Second

// env is one running gateway in front of one fake upstream, with an
// OpenAI and an Anthropic SDK client pointed at it.
type env struct {
	gw   *testgateway.Gateway
	fake *fakeupstream.Server
	oa   openai.Client
	an   anthropic.Client
}

func newEnv(t *testing.T, layers string) *env {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, pipelineTOML(fake, layers), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return &env{
		gw:   gw,
		fake: fake,
		oa: openai.NewClient(
			openaioption.WithBaseURL(gw.URL+"/v1/"),
			openaioption.WithAPIKey(clientKey),
			openaioption.WithMaxRetries(0),
			openaioption.WithRequestTimeout(requestTimeout),
		),
		an: anthropic.NewClient(
			// The developer's own ANTHROPIC_* settings must not leak in.
			anthropicoption.WithoutEnvironmentDefaults(),
			anthropicoption.WithBaseURL(gw.URL),
			anthropicoption.WithAPIKey(clientKey),
			anthropicoption.WithMaxRetries(0),
			anthropicoption.WithRequestTimeout(requestTimeout),
		),
	}
}

// ctx returns a context that ends with the test or after requestTimeout.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), requestTimeout)
	t.Cleanup(cancel)
	return c
}

// upstream is one provider the gateway routes to.
type upstream struct {
	name     string // subtest name
	model    string // a model the pipeline routes to it
	provider string // X-Bardo-Provider
	path     string // the path the fake upstream is called on
}

var (
	openaiUp    = upstream{"openai-upstream", "gpt-4o", "up", "/v1/chat/completions"}
	anthropicUp = upstream{"anthropic-upstream", "claude-sonnet-5-5", "claude", "/v1/messages"}
	upstreams   = []upstream{openaiUp, anthropicUp}
)

// isAnthropic reports whether the upstream speaks Anthropic Messages.
func (u upstream) isAnthropic() bool { return u.path == "/v1/messages" }

// tokens is the fake upstream's tokenizer: ceil(bytes/4).
func tokens(s string) int64 { return int64((len(s) + 3) / 4) }

// fakeSignature is the signature the fake upstream gives a thinking block
// with this text.
func fakeSignature(thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(append(sum[:], sum[:]...))
}

// lastUpstream returns the last request the fake received, checking it went
// to u, decoded as JSON.
func (e *env) lastUpstream(t *testing.T, u upstream) map[string]any {
	t.Helper()
	last := e.fake.Last()
	if last.Path != u.path {
		t.Fatalf("the upstream was called on %q, want %q (body %s)", last.Path, u.path, last.Body)
	}
	var m map[string]any
	if err := json.Unmarshal(last.Body, &m); err != nil {
		t.Fatalf("upstream body is not JSON: %v\n%s", err, last.Body)
	}
	return m
}

// checkRouted checks the gateway's routing headers on an SDK response.
func checkRouted(t *testing.T, resp *http.Response, u upstream) {
	t.Helper()
	if resp == nil {
		t.Fatal("no HTTP response captured")
	}
	if got := resp.Header.Get("X-Bardo-Provider"); got != u.provider {
		t.Errorf("X-Bardo-Provider = %q, want %q", got, u.provider)
	}
	if got := resp.Header.Get("X-Bardo-Model"); got != u.model {
		t.Errorf("X-Bardo-Model = %q, want %q", got, u.model)
	}
}

// weatherSchema is the JSON schema of the get_weather tool.
var weatherSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"city": map[string]any{"type": "string", "description": "City name"},
		"days": map[string]any{"type": "integer"},
	},
	"required": []any{"city"},
}

// weatherArgs is what the scripted tool call passes; weatherResult the tool's
// answer the caller sends back.
const (
	weatherArgs   = `{"city":"Paris","days":3,"opts":{"unit":"celsius","tags":["a","b"]}}`
	weatherResult = `{"temp_c":18,"sky":"clear"}`
)

// jsonEqual compares two JSON texts (or decoded values) by value.
func jsonEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	norm := func(v any) any {
		var b []byte
		switch x := v.(type) {
		case string:
			b = []byte(x)
		case []byte:
			b = x
		case json.RawMessage:
			b = x
		default:
			var err error
			if b, err = json.Marshal(x); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s: not JSON: %v: %s", what, err, b)
		}
		return out
	}
	if g, w := norm(got), norm(want); !reflect.DeepEqual(g, w) {
		t.Errorf("%s = %v, want %v", what, g, w)
	}
}

// obj, arr, str walk decoded JSON, failing the test on a wrong shape.
func obj(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s is %T (%v), want an object", what, v, v)
	}
	return m
}

func arr(t *testing.T, v any, what string) []any {
	t.Helper()
	a, ok := v.([]any)
	if !ok {
		t.Fatalf("%s is %T (%v), want an array", what, v, v)
	}
	return a
}

func str(t *testing.T, v any, what string) string {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s is %T (%v), want a string", what, v, v)
	}
	return s
}

// anthropicText returns the text of an Anthropic content value: a string,
// or the text blocks of an array, joined.
func anthropicText(t *testing.T, v any) string {
	t.Helper()
	if s, ok := v.(string); ok {
		return s
	}
	var out string
	for i, b := range arr(t, v, "content") {
		bm := obj(t, b, "content block")
		if bm["type"] == "text" {
			out += str(t, bm["text"], "content text "+string(rune('0'+i)))
		}
	}
	return out
}
