package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/apitest"
)

// A stream's events that have already arrived pass the stream layers
// together: one call per layer for the lot, not one per upstream event.
// Under load that per-event crossing was most of a streamed request's cost
// (docs/performance.md, "Where a loaded request's time goes"). Before, a
// stream layer was called once per upstream event and once more at the end;
// the answer must not change.
func TestStreamEventsCrossLayersInBatches(t *testing.T) {
	g, fake := startWithUpstream(t, "[[layer]]\nname = \"noop\"\nplugin = \"noop.wasm\"\ntrusted = true\n\n")
	words := make([]string, 300)
	for i := range words {
		words[i] = fmt.Sprintf("word%d", i)
	}
	prompt := strings.Join(words, " ")
	body := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"` + prompt + `"}]}`

	// What the upstream sends for it, counted at the source.
	direct := apitest.Post(t, fake.URL(), "/v1/chat/completions", body, "Authorization", "Bearer "+upKey)
	upstreamEvents := len(apitest.SSE(t, direct.Body))

	const streams = 5
	for range streams {
		r := post(t, g.URL, "/v1/chat/completions", body)
		if r.Status != 200 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		if text := streamedText(t, "/v1/chat/completions", r.Body); text != "echo: "+prompt {
			t.Fatalf("streamed text %.80q…, want the echo of the prompt", text)
		}
	}
	calls := g.Metrics.Value("bardo_sandbox_call_seconds", "plugin", "noop", "op", "bardo_on_stream")
	t.Logf("%d upstream events per stream; %v stream-phase calls for %d streams", upstreamEvents, calls, streams)
	if upstreamEvents < 50 {
		t.Fatalf("the fake sent only %d events: the test needs a long stream", upstreamEvents)
	}
	if calls >= float64(streams*upstreamEvents) {
		t.Fatalf("%v stream-phase calls for %d streams of %d events: one call per event, no batching", calls, streams, upstreamEvents)
	}
}
