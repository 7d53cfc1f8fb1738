package server_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

const simOnly = `
[[provider]]
name = "sim"
plugin = "sim.wasm"
models = ["*"]
trusted = true
`

// exchange writes head and then body, and reads one response. Like a
// simple client (curl, a script), it reads nothing before it has sent the
// whole body. The body's write error, if any, is returned: a server that
// closes with the body unread makes the kernel reset the connection.
func exchange(t *testing.T, addr, head string, body io.Reader) (*http.Response, []byte, net.Conn) {
	resp, b, c, _ := exchangeErr(t, addr, head, body)
	return resp, b, c
}

func exchangeErr(t *testing.T, addr, head string, body io.Reader) (*http.Response, []byte, net.Conn, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	var werr error
	if body != nil {
		_, werr = io.Copy(c, body)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return resp, b, c, werr
}

func addr(g *testgateway.Gateway) string { return strings.TrimPrefix(g.URL, "http://") }

// anthropicShaped reports an Anthropic error object: {"type":"error","error":{"type":...,"message":...}}.
func anthropicShaped(b []byte) bool {
	var m struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(b, &m) == nil && m.Type == "error" && m.Error.Type != "" && m.Error.Message != ""
}

// openAIShaped reports an OpenAI error object: {"error":{"message":...,"type":...}}.
func openAIShaped(b []byte) bool {
	var m struct {
		Type  *string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(b, &m) == nil && m.Type == nil && m.Error.Message != ""
}

// TestBodyTooLargeAnswered: a 32 MiB upload against the 10 MiB limit gets
// its 413 every time, read after the client sent its whole body without a
// reset (before: the socket was closed with the body unread, the kernel
// reset the upload, and a client that saw the reset first, or whose 413 was
// still in the server's send queue, never got the answer), in the dialect
// of the path.
func TestBodyTooLargeAnswered(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	const size = 32 << 20
	for i := range 10 {
		path, shaped := "/v1/chat/completions", openAIShaped
		if i%2 == 1 {
			path, shaped = "/v1/messages", anthropicShaped
		}
		head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, size)
		resp, b, _, werr := exchangeErr(t, addr(g), head, io.LimitReader(zeros{}, size))
		if werr != nil {
			t.Fatalf("try %d %s: the upload was reset: %v", i, path, werr)
		}
		if resp.StatusCode != 413 || !shaped(b) {
			t.Fatalf("try %d %s: %d %s", i, path, resp.StatusCode, b)
		}
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestChunkedWithContentLengthRefused: a request with both framings is
// refused with 400 and the connection closed, so the bytes after the chunked
// body are never served as a second request (before: the smuggled GET was
// answered).
func TestChunkedWithContentLengthRefused(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	smuggled := "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n"
	head := "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
		"Content-Length: " + fmt.Sprint(5+len(smuggled)) + "\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled
	resp, b, c := exchange(t, addr(g), head, nil)
	if resp.StatusCode != 400 || !openAIShaped(b) || !resp.Close {
		t.Fatalf("got %d (close %v) %s", resp.StatusCode, resp.Close, b)
	}
	rest, _ := io.ReadAll(c)
	if len(rest) > 0 {
		t.Fatalf("the smuggled request was answered: %q", rest)
	}
}

// TestHeaderTooLarge431: a 64 KiB header is 431 Request Header Fields Too
// Large (before: 400), in the dialect of the path.
func TestHeaderTooLarge431(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		head := "POST " + path + " HTTP/1.1\r\nHost: x\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\nContent-Length: 2\r\n\r\n{}"
		resp, b, _ := exchange(t, addr(g), head, nil)
		shaped := openAIShaped
		if path == "/v1/messages" {
			shaped = anthropicShaped
		}
		if resp.StatusCode != 431 || !shaped(b) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
}

const multipart = "--XX\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nb\r\n--XX--\r\n"

// TestMessagesErrorsAnthropicShaped: a Content-Length too long to parse and
// a multipart body on /v1/messages are refused with Anthropic's error
// object (before: OpenAI's), and not with a 5xx.
func TestMessagesErrorsAnthropicShaped(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	for name, head := range map[string]string{
		"long content-length": "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999999999999999999\r\n\r\n{}",
		"multipart": "POST /v1/messages HTTP/1.1\r\nHost: x\r\nanthropic-version: 2023-06-01\r\nContent-Type: multipart/form-data; boundary=XX\r\n" +
			fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(multipart), multipart),
	} {
		resp, b, _ := exchange(t, addr(g), head, nil)
		if resp.StatusCode/100 != 4 || !anthropicShaped(b) {
			t.Errorf("%s: %d %s", name, resp.StatusCode, b)
		}
	}
}

// TestMalformedHeaderNotLogged: fasthttp's parse errors never write the
// request head, or any header value, into the log.
func TestMalformedHeaderNotLogged(t *testing.T) {
	g := testgateway.Start(t, simOnly, testgateway.Options{})
	const secret = "sk-ant-secret-0123456789abcdef"
	for _, head := range []string{
		"POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\r\nBroken header line\r\n\r\n",
		"POST /v1/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + secret + "\x01\r\n\r\n",
		"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: " + secret + "\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n{}",
	} {
		resp, b, _ := exchange(t, addr(g), head, nil)
		if resp.StatusCode != 400 || bytes.Contains(b, []byte(secret)) {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
	}
	// fasthttp logs the connection errors after the response is written,
	// into the gateway's log (before: its own logger on stderr, with the
	// raw request head).
	var logs string
	for range 50 {
		if logs = g.LogLines.String(); strings.Count(logs, "http connection error") >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if strings.Count(logs, "http connection error") < 3 || strings.Contains(logs, secret) {
		t.Fatalf("want three redacted connection errors in the log, got:\n%s", logs)
	}
}

// cutUpstream accepts connections, reads a request and answers with
// response headers promising a body it cuts off: an upstream that died
// mid-answer.
func cutUpstream(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n{\"id\":\"chatcmpl-1\",")
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestUpstreamCutHidesAddress: a non-stream answer cut off by the upstream
// is a 502 naming the provider, without the upstream's address or the
// gateway's socket (before: "upstream unreachable: 127.0.0.1:port: ...").
func TestUpstreamCutHidesAddress(t *testing.T) {
	up := cutUpstream(t)
	g := testgateway.Start(t, testgateway.FakeProviders(up), testgateway.Options{Env: testgateway.FakeProviderEnv()})
	resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up, "http://"))
	if resp.StatusCode != 502 || !openAIShaped(b) || bytes.Contains(b, []byte("127.0.0.1")) || bytes.Contains(b, []byte(port)) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if !bytes.Contains(b, []byte("upstream up ")) {
		t.Fatalf("the error does not name the provider: %s", b)
	}
}
