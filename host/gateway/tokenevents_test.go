package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

type sseEvent struct {
	Type      string         `json:"type"`
	RequestID string         `json:"request_id"`
	Data      map[string]any `json:"data"`
}

// followEvents reads a caller's /v1/events until ends inference.end events
// arrived (or 20 s pass); ready is closed once the stream is open.
func followEvents(url string, ready chan<- struct{}, ends int) ([]sseEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", url+"/v1/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		close(ready)
		return nil, err
	}
	defer resp.Body.Close()
	var evs []sseEvent
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == ": events" {
			close(ready)
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var e sseEvent
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return evs, err
		}
		evs = append(evs, e)
		if e.Type == "inference.end" {
			if ends--; ends == 0 {
				return evs, nil
			}
		}
	}
	return evs, sc.Err()
}

// A streamed answer raises inference.token events while a caller follows
// its event stream: throttled (a few per second, not one per delta), each
// with the tokens since the last and the running total, reasoning marked,
// all before the request's inference.end — for a relayed stream (OpenAI
// caller and upstream: the bytes are not decoded) and a translated one
// (Anthropic caller). With no one following, none are made. Bare, and
// through the shipped layers (whose stream phase decodes every stream).
func TestInferenceTokenEvents(t *testing.T) {
	t.Run("bare", func(t *testing.T) { tokenEvents(t, "") })
	t.Run("shipped", func(t *testing.T) { tokenEvents(t, testgateway.ShippedLayers(t)) })
}

func tokenEvents(t *testing.T, layers string) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, upstreamPipeline(fake, layers), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}, AdminToken: "adm"})

	// 60 frames of 8 bytes, 20 ms apart: ~1.2 s of stream, ~120 tokens.
	question := "fake:drip=20ms fake:chunk=8 " + strings.Repeat("tell me about impermanent loss ", 15)
	oa := `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"` + question + `"}]}`
	an := `{"model":"gpt-4o-mini","max_tokens":256,"stream":true,"messages":[{"role":"user","content":"fake:thinking ` + question + `"}]}`

	// Nobody watching: the stream is served, no token event is made. (Its
	// own question: the watched one must not be the caches' hit.)
	quiet := post(t, g.URL, "/v1/chat/completions", strings.ReplaceAll(oa, "impermanent loss", "liquidation bonuses"))
	if quiet.Status != 200 {
		t.Fatalf("unwatched stream: %d %s", quiet.Status, quiet.Body)
	}

	ready := make(chan struct{})
	type result struct {
		evs []sseEvent
		err error
	}
	done := make(chan result, 1)
	go func() {
		evs, err := followEvents(g.URL, ready, 2)
		done <- result{evs, err}
	}()
	<-ready
	rOA := post(t, g.URL, "/v1/chat/completions", oa)
	rAN := post(t, g.URL, "/v1/messages", an, "anthropic-version", "2023-06-01")
	if rOA.Status != 200 || rAN.Status != 200 {
		t.Fatalf("streams: %d %s / %d %s", rOA.Status, rOA.Body, rAN.Status, rAN.Body)
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("event stream: %v (%d events)", res.err, len(res.evs))
	}
	frames := strings.Count(string(rOA.Body), "data: ")
	for _, tc := range []struct {
		name        string
		rid         string
		reasoning   bool
		least, most float64 // tokens: the text streamed / 4, give or take
	}{
		// The echoed question, ~470 bytes.
		{"relayed", rOA.Header.Get(gateway.HeaderRequestID), false, 90, 180},
		// The same, after the thinking that repeats it.
		{"translated", rAN.Header.Get(gateway.HeaderRequestID), true, 180, 360},
	} {
		var tokens []sseEvent
		ended := false
		for _, e := range res.evs {
			if e.RequestID != tc.rid {
				continue
			}
			switch e.Type {
			case "inference.token":
				if ended {
					t.Errorf("%s: inference.token after inference.end", tc.name)
				}
				tokens = append(tokens, e)
			case "inference.end":
				ended = true
			}
		}
		if !ended {
			t.Fatalf("%s: no inference.end for %s", tc.name, tc.rid)
		}
		// ~1.2–2.4 s at most 4 a second (plus the reasoning switch and the
		// remainder): a few events, far fewer than the frames.
		if len(tokens) < 2 || len(tokens) > 12 || len(tokens) >= frames/3 {
			t.Fatalf("%s: %d token events for %d frames", tc.name, len(tokens), frames)
		}
		var sum float64
		sawReasoning := false
		for _, e := range tokens {
			sum += e.Data["token_count"].(float64)
			if e.Data["total"].(float64) != sum {
				t.Fatalf("%s: running total %v, counted %v", tc.name, e.Data["total"], sum)
			}
			sawReasoning = sawReasoning || e.Data["is_reasoning"] == true
		}
		if sum < tc.least || sum > tc.most {
			t.Errorf("%s: %v tokens counted", tc.name, sum)
		}
		if sawReasoning != tc.reasoning {
			t.Errorf("%s: reasoning marked %v, want %v", tc.name, sawReasoning, tc.reasoning)
		}
	}
	// The unwatched request left no token event in the operator's log.
	_, all := getEvents(t, g, "", "adm")
	for _, e := range all.Events {
		if e.Type == "inference.token" && e.RequestID == quiet.Header.Get(gateway.HeaderRequestID) {
			t.Fatalf("a token event for a stream nobody watched")
		}
	}
}
