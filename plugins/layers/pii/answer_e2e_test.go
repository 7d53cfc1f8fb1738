//go:build !wasip1

package main_test

import (
	"strings"
	"testing"
)

// A request in which pii masked nothing has no value to restore, so the
// layer says so (SkipAnswer, ABI v1.6) and costs no answer-phase call,
// streamed or not; one in which it masked values still has them restored
// in both (the restore tests above check the text).
func TestNothingMaskedNoAnswerCalls(t *testing.T) {
	g, _ := start(t)
	calls := func() float64 {
		return g.Metrics.Value("bardo_sandbox_call_seconds", "plugin", "pii", "op", "bardo_on_response") +
			g.Metrics.Value("bardo_sandbox_call_seconds", "plugin", "pii", "op", "bardo_on_stream")
	}
	for _, stream := range []bool{false, true} {
		r := post(t, g.URL, "/v1/chat/completions", map[string]any{"model": "gpt-4o", "stream": stream,
			"messages": userMsg("Summarise the release notes in three bullet points, please.")})
		if r.Status != 200 {
			t.Fatalf("stream %v: status %d: %s", stream, r.Status, r.Body)
		}
	}
	if n := calls(); n != 0 {
		t.Fatalf("%v answer-phase calls for requests with nothing masked; want none", n)
	}
	// With no answer-phase layer left, the upstream's answer (same dialect)
	// is forwarded as it came, as without layers.
	if n := strings.Count(g.LogLines.String(), "path=passthrough"); n != 2 {
		t.Errorf("%d of the 2 answers forwarded as they came:\n%s", n, g.LogLines.String())
	}
	for _, stream := range []bool{false, true} {
		r := post(t, g.URL, "/v1/messages", map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 200, "stream": stream,
			"messages": userMsg("Write to " + email + " today.")})
		if r.Status != 200 {
			t.Fatalf("stream %v: status %d: %s", stream, r.Status, r.Body)
		}
	}
	if n := calls(); n < 2 {
		t.Fatalf("%v answer-phase calls for requests with masked values; want them restored", n)
	}
}
