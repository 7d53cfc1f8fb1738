package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func chat(t *testing.T, url, prompt string, headers ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"`+prompt+`"}]}`))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestOneCallerCannotTakeProviderOut is issue 11 item 8 through the whole
// gateway: three requests whose upstream answers 500 (each retried once)
// took the provider out for 30 s for every caller, and so did three 429s.
// Now neither does: the next caller is served at once. A 429 makes the
// provider back off for its Retry-After — tried after any other provider
// that serves the model, never refused while it is the only one.
func TestOneCallerCannotTakeProviderOut(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, testgateway.FakeProviders(fake.URL()), testgateway.Options{Env: testgateway.FakeProviderEnv()})

	for range 3 {
		if st, b := chat(t, g.URL, "boom fake:status=500"); st != 500 && st != 502 {
			t.Fatalf("the failing request: %d %s", st, b)
		}
	}
	if st, b := chat(t, g.URL, "hello"); st != 200 {
		t.Fatalf("after three 500s another caller got %d %s", st, b)
	}

	for range 3 {
		if st, b := chat(t, g.URL, "busy fake:status=429 fake:retry-after=60"); st != 429 {
			t.Fatalf("the rate-limited request: %d %s", st, b)
		}
	}
	if st, b := chat(t, g.URL, "hello again"); st != 200 {
		t.Fatalf("after three 429s (retry-after 60s) another caller got %d %s", st, b)
	}
}

// TestDirectRateLimitIsTheCallers: a direct provider runs on the caller's
// own key, so a 429 it answers is that key's limit, not the provider's: the
// provider does not back off and the next request (another caller's, in
// production) is sent at once.
func TestDirectRateLimitIsTheCallers(t *testing.T) {
	const key = "sk-caller-own-key-0123456789"
	own := fakeupstream.New(fakeupstream.WithAPIKey(key))
	t.Cleanup(own.Close)
	g := testgateway.Start(t, `
[[provider]]
name = "mine"
plugin = "openai-compatible.wasm"
base_url = "`+own.URL()+`/v1"
models = ["gpt-*"]
direct = true
traits = { payment = "api_key" }
trusted = true
`, testgateway.Options{})
	if st, b := chat(t, g.URL, "busy fake:status=429 fake:retry-after=60", "Authorization", "Bearer "+key); st != 429 {
		t.Fatalf("the rate-limited caller: %d %s", st, b)
	}
	if st, b := chat(t, g.URL, "hello", "Authorization", "Bearer "+key); st != 200 {
		t.Fatalf("another caller of the direct provider got %d %s", st, b)
	}
}
