// Package apitest is the small HTTP client end-to-end tests use against a
// running gateway: post a body in either dialect, read the reply, and take
// JSON and SSE bodies apart.
package apitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Reply is a complete HTTP response.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Post sends body (a string, []byte, or any value to marshal as JSON) to
// base+path with Content-Type application/json, and anthropic-version on the
// Anthropic paths; headers are name/value pairs added after those.
func Post(tb testing.TB, base, path string, body any, headers ...string) Reply {
	tb.Helper()
	var b []byte
	switch v := body.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			tb.Fatal(err)
		}
	}
	req, err := http.NewRequest("POST", base+path, bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if strings.HasPrefix(path, "/v1/messages") {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return Reply{resp.StatusCode, resp.Header, out}
}

// JSON decodes a JSON object, failing tb when b is not one.
func JSON(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

// SSE splits a text/event-stream body into (event, data) pairs; data lines
// of one event are joined.
func SSE(tb testing.TB, b []byte) [][2]string {
	tb.Helper()
	var out [][2]string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ev, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" || ev != "" {
				out = append(out, [2]string{ev, data})
			}
			ev, data = "", ""
		case strings.HasPrefix(line, "event: "):
			ev = line[7:]
		case strings.HasPrefix(line, "data: "):
			data += line[6:]
		}
	}
	if data != "" || ev != "" {
		out = append(out, [2]string{ev, data})
	}
	return out
}
