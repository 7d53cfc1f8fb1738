package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// A translated stream's response headers go out once the upstream has
// answered, not with its first content: an OpenAI caller of an Anthropic
// model that pauses after message_start (a model thinking before it
// writes) gets its 200 at once. Before, nothing — not even the status —
// reached the caller until the first token or the next heartbeat. Bare,
// and through the shipped layers.
func TestTranslatedStreamHeadersAtOnce(t *testing.T) {
	t.Run("bare", func(t *testing.T) { streamHeadersAtOnce(t, "") })
	t.Run("shipped", func(t *testing.T) { streamHeadersAtOnce(t, testgateway.ShippedLayers(t)) })
}

func streamHeadersAtOnce(t *testing.T, layers string) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, upstreamPipeline(fake, layers), testgateway.Options{Env: map[string]string{"UP_KEY": upKey},
		Heartbeat: time.Minute})
	hold := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	t.Cleanup(release)
	fake.Script(fakeupstream.Behaviour{Hold: hold})
	type got struct {
		resp *http.Response
		err  error
	}
	done := make(chan got, 1)
	go func() {
		resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"claude-sonnet-4-5","stream":true,"messages":[{"role":"user","content":"think first"}]}`))
		done <- got{resp, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		defer r.resp.Body.Close()
		if r.resp.StatusCode != 200 || r.resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, %s", r.resp.StatusCode, r.resp.Header.Get("Content-Type"))
		}
		if r.resp.Header.Get("X-Bardo-Provider") == "" {
			t.Errorf("no X-Bardo-Provider on the stream's headers")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no response headers while the upstream holds after message_start")
	}
	release()
}
