package gateway_test

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/host/dialect/responses"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// responsesAgentRequest is the 4 KB agent fixture in the Responses API's
// form (converted with the gateway's own codecs), store set as given.
func responsesAgentRequest(b *testing.B, store bool) []byte {
	req, err := openai.DecodeRequest(fixtures.AgentRequestOpenAI(false))
	if err != nil {
		b.Fatal(err)
	}
	req.Extra = []byte(`{"store":false}`)
	if store {
		req.Extra = nil
	}
	out, err := responses.EncodeRequest(req)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkResponsesOverhead measures what the Responses front adds,
// client-observed at concurrency 1, against a local fake Chat upstream: the
// 4 KB agent request straight to the fake ("direct"), through the gateway
// in Chat form (bytes forwarded), and in Responses form (decoded,
// re-encoded for Chat, the answer re-encoded as a response object), with
// store:false and stored (one SQLite write per answer). Issue 16's target:
// Responses in, Chat upstream, ≤ 0.2 ms added at p50.
func BenchmarkResponsesOverhead(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	defer fake.Close()
	chatBody := fixtures.AgentRequestOpenAI(false)
	for _, tc := range []struct {
		name, path string
		body       []byte
	}{
		{"direct", "/v1/chat/completions", chatBody},
		{"gateway-chat", "/v1/chat/completions", chatBody},
		{"gateway-responses", "/v1/responses", responsesAgentRequest(b, false)},
		{"gateway-responses-stored", "/v1/responses", responsesAgentRequest(b, true)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			url, auth := fake.URL()+tc.path, "Bearer "+upKey
			if tc.name != "direct" {
				g := testgateway.Start(b, upstreamPipeline(fake, ""), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
				url, auth = g.URL+tc.path, "Bearer caller-key"
			}
			client := &fasthttp.Client{MaxConnsPerHost: 8}
			do := func() {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod("POST")
				req.SetRequestURI(url)
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", auth)
				req.SetBodyRaw(tc.body)
				if err := client.Do(req, resp); err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode() != 200 {
					b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
				}
			}
			for range 200 {
				do()
			}
			var lat []time.Duration
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				do()
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// BenchmarkResponsesStream measures a Responses stream served by a Chat
// upstream: time to the first text delta and per delta after it, beside
// the same stream straight from the fake and relayed in Chat form.
// Targets: ≤ 0.5 ms added to the first token, ≤ 50 µs per chunk.
func BenchmarkResponsesStream(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	defer fake.Close()
	words := strings.Repeat("token ", 120)
	chatBody := []byte(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"` + words + `"}]}`)
	respBody := []byte(`{"model":"gpt-4o","stream":true,"store":false,"input":"` + words + `"}`)
	for _, tc := range []struct {
		name, path string
		body       []byte
	}{
		{"direct", "/v1/chat/completions", chatBody},
		{"gateway-chat", "/v1/chat/completions", chatBody},
		{"gateway-responses", "/v1/responses", respBody},
	} {
		b.Run(tc.name, func(b *testing.B) {
			base := fake.URL()
			if tc.name != "direct" {
				base = testgateway.Start(b, upstreamPipeline(fake, ""), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}}).URL
			}
			client := &fasthttp.Client{StreamResponseBody: true}
			var ttft, perChunk []time.Duration
			run := func() {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod("POST")
				req.SetRequestURI(base + tc.path)
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", "Bearer "+upKey)
				req.SetBodyRaw(tc.body)
				t0 := time.Now()
				if err := client.Do(req, resp); err != nil {
					b.Fatal(err)
				}
				r := bufio.NewReader(resp.BodyStream())
				var first time.Time
				chunks := 0
				for {
					line, err := r.ReadSlice('\n')
					if bytes.HasPrefix(line, []byte("data: ")) && (bytes.Contains(line, []byte(`"content":"`)) || bytes.Contains(line, []byte(`"response.output_text.delta"`))) {
						if chunks == 0 {
							first = time.Now()
						}
						chunks++
					}
					if err != nil {
						break
					}
				}
				end := time.Now()
				if chunks < 2 {
					b.Fatalf("only %d content chunks", chunks)
				}
				ttft = append(ttft, first.Sub(t0))
				perChunk = append(perChunk, end.Sub(first)/time.Duration(chunks-1))
			}
			for range 20 {
				run()
			}
			ttft, perChunk = ttft[:0], perChunk[:0]
			b.ResetTimer()
			for b.Loop() {
				run()
			}
			slices.Sort(ttft)
			slices.Sort(perChunk)
			b.ReportMetric(float64(ttft[len(ttft)/2].Microseconds()), "ttft-p50-µs")
			b.ReportMetric(float64(perChunk[len(perChunk)/2].Nanoseconds())/1e3, "per-chunk-p50-µs")
		})
	}
}
