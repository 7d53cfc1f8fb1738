package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// sseLines reads an event stream until it has seen every want (or 10 s
// pass), returning what it read; ready is closed once the stream is open.
func sseLines(url, auth string, ready chan<- struct{}, want ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	defer func() {
		if ready != nil {
			close(ready)
		}
	}()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		return "", fmt.Errorf("%s: %d %s %s", url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var got strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		got.WriteString(sc.Text() + "\n")
		if sc.Text() == ": events" && ready != nil {
			close(ready)
			ready = nil
		}
		all := true
		for _, w := range want {
			all = all && strings.Contains(got.String(), w)
		}
		if all {
			return got.String(), nil
		}
	}
	return got.String(), fmt.Errorf("stream ended (%v) before %q", sc.Err(), want)
}

type streamed struct {
	text string
	err  error
}

// A caller follows its own inference events over SSE (GET /v1/events), the
// operator everything (GET /admin/events/stream, with the admin token):
// start, then end with the status and the latency, for the request the
// caller made, and a cache hit when it asks again — through the shipped
// layers.
func TestInferenceEventStream(t *testing.T) {
	g := testgateway.Start(t, testgateway.ShippedLayers(t)+simOnly, testgateway.Options{AdminToken: "admin-secret"})
	callerReady, adminReady := make(chan struct{}), make(chan struct{})
	caller, admin := make(chan streamed, 1), make(chan streamed, 1)
	go func() {
		s, err := sseLines(g.URL+"/v1/events", "", callerReady, "event: inference.start", "event: inference.end", `"status":200`,
			"event: inference.cache_hit", `"cache":"hash-hit"`)
		caller <- streamed{s, err}
	}()
	go func() {
		s, err := sseLines(g.URL+"/admin/events/stream", "Bearer admin-secret", adminReady, "event: inference.end")
		admin <- streamed{s, err}
	}()
	<-callerReady
	<-adminReady
	const ask = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hello there, what is impermanent loss?"}]}`
	r := post(t, g.URL, "/v1/chat/completions", ask)
	rid := r.Header.Get(gateway.HeaderRequestID)
	if hit := post(t, g.URL, "/v1/chat/completions", ask); hit.Header.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatalf("the same request again: cache %q", hit.Header.Get("X-Bardo-Cache"))
	}
	got := <-caller
	if got.err != nil || !strings.Contains(got.text, `"request_id":"`+rid+`"`) || !strings.Contains(got.text, `"account":"anonymous"`) ||
		!strings.Contains(got.text, `"latency_ms":`) {
		t.Fatalf("caller's stream (%v):\n%s", got.err, got.text)
	}
	if a := <-admin; a.err != nil || !strings.Contains(a.text, rid) {
		t.Fatalf("operator's stream (%v):\n%s", a.err, a.text)
	}
	// Without the admin token the operator's stream is refused.
	resp, err := http.Get(g.URL + "/admin/events/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("admin stream without a token: %d", resp.StatusCode)
	}
}
