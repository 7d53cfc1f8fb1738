package fakeupstream

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func newServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := New(opts...)
	t.Cleanup(s.Close)
	return s
}

func openAIHeaders() map[string]string {
	return map[string]string{"Authorization": "Bearer " + DefaultAPIKey, "Content-Type": "application/json"}
}

func anthropicHeaders() map[string]string {
	return map[string]string{"x-api-key": DefaultAPIKey, "anthropic-version": "2023-06-01", "Content-Type": "application/json"}
}

func do(t testing.TB, method, url string, headers map[string]string, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func post(t testing.TB, url string, headers map[string]string, body string) *http.Response {
	t.Helper()
	return do(t, http.MethodPost, url, headers, body)
}

// jsonBody reads a JSON object response, checking the status.
func jsonBody(t testing.TB, resp *http.Response, status int) map[string]any {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, b)
	}
	return m
}

// sse reads a complete event stream, checking status and content type.
func sse(t testing.TB, resp *http.Response) []Event {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("Content-Type %q", ct)
	}
	events, err := ParseSSE(resp.Body)
	if err != nil {
		t.Fatalf("reading stream: %v", err)
	}
	return events
}

func obj(t testing.TB, v any, path ...any) map[string]any {
	t.Helper()
	m, ok := at(t, v, path...).(map[string]any)
	if !ok {
		t.Fatalf("%v is not an object in %v", path, v)
	}
	return m
}

func arr(t testing.TB, v any, path ...any) []any {
	t.Helper()
	a, ok := at(t, v, path...).([]any)
	if !ok {
		t.Fatalf("%v is not an array in %v", path, v)
	}
	return a
}

func str(t testing.TB, v any, path ...any) string {
	t.Helper()
	s, ok := at(t, v, path...).(string)
	if !ok {
		t.Fatalf("%v is not a string in %v", path, v)
	}
	return s
}

func num(t testing.TB, v any, path ...any) int {
	t.Helper()
	f, ok := at(t, v, path...).(float64)
	if !ok {
		t.Fatalf("%v is not a number in %v", path, v)
	}
	return int(f)
}

// at walks v by object keys (string) and array indexes (int).
func at(t testing.TB, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %q: not an object: %v", k, v)
			}
			if v, ok = m[k]; !ok {
				t.Fatalf("missing key %q in %v", k, m)
			}
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at [%d]: not an array or too short: %v", k, v)
			}
			v = a[k]
		}
	}
	return v
}

// hasKeys checks that m has exactly the given keys.
func hasKeys(t testing.TB, m map[string]any, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("keys %v, want %v", got, want)
	}
}

func decodeData(t testing.TB, e Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
		t.Fatalf("event data is not JSON: %v: %q", err, e.Data)
	}
	return m
}

func tokens(s string) int { return (len(s) + 3) / 4 }
