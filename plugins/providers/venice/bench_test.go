//go:build !wasip1

package main_test

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/dialect/anthropic"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// agentBody is the shared 4 KB agent request (host/testkit/fixtures) for
// model, as an OpenAI body or (anthropic) an Anthropic one.
func agentBody(tb testing.TB, model string, stream, anthropicDialect bool) []byte {
	tb.Helper()
	if anthropicDialect {
		req := fixtures.AgentRequest()
		req.Model, req.Stream = model, stream
		b, err := anthropic.EncodeRequest(req)
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	var m map[string]any
	if err := json.Unmarshal(fixtures.AgentRequestOpenAI(stream), &m); err != nil {
		tb.Fatal(err)
	}
	m["model"] = model
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// BenchmarkVenice measures the Venice path client-observed at concurrency 1:
// the agent request sent straight to the fake's Venice endpoint, and through
// the gateway and the openai-compatible adapter (the floor), and through
// the gateway and this adapter for an OpenAI caller (same dialect), an
// Anthropic caller (translated), a TEE model (receipt verified) and a stream
// (read to its end). Compare the gateway cases with "direct" in one run: the
// machine is noisy and the differences are what matter. The config lets
// streams through with the adapter of ABI ≤ 1.2 too (unverified_streams), so
// the same benchmark runs against both.
//
// VENICE_BENCH_PKG builds the adapter from another package instead (a copy
// of an older version inside the module), to compare the two.
func BenchmarkVenice(b *testing.B) {
	if pkg := os.Getenv("VENICE_BENCH_PKG"); pkg != "" {
		testgateway.Plugins["venice.wasm"] = pkg
	}
	for _, c := range []struct {
		name, path, model string
		stream, anth      bool
	}{
		{"direct", fakeupstream.VeniceChatPath, "llama-3.3-70b", false, false},
		// The floor: the same provider entry and upstream through the
		// openai-compatible adapter, which reads no request part and
		// checks nothing (no merge, no verify call).
		{"openai-compatible", "/v1/chat/completions", "llama-3.3-70b", false, false},
		{"openai", "/v1/chat/completions", "llama-3.3-70b", false, false},
		{"anthropic", "/v1/messages", "llama-3.3-70b", false, true},
		{"openai-tee", "/v1/chat/completions", "tee-deepseek-r1", false, false},
		{"openai-stream", "/v1/chat/completions", "llama-3.3-70b", true, false},
	} {
		b.Run(c.name, func(b *testing.B) {
			g, fake := start(b, "unverified_streams = true")
			if c.name == "openai-compatible" {
				// The same provider entry, served by the plain adapter.
				g = startPlugin(b, fake, "openai-compatible.wasm", "")
			}
			url, auth := g.URL+c.path, "Bearer caller-key"
			if c.name == "direct" {
				url, auth = fake.URL()+c.path, "Bearer "+veniceKey
			}
			body := agentBody(b, c.model, c.stream, c.anth)
			client := &fasthttp.Client{StreamResponseBody: c.stream}
			do := func() {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.Header.SetMethod("POST")
				req.SetRequestURI(url)
				req.Header.SetContentType("application/json")
				req.Header.Set("Authorization", auth)
				if c.anth {
					req.Header.Set("anthropic-version", "2023-06-01")
				}
				req.SetBodyRaw(body)
				if err := client.Do(req, resp); err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode() != 200 {
					b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
				}
				if !c.stream {
					return
				}
				// A stream counts once it has ended: read every line.
				r := bufio.NewReader(resp.BodyStream())
				done := false
				for {
					line, err := r.ReadSlice('\n')
					done = done || strings.HasPrefix(string(line), "data: [DONE]")
					if err != nil {
						break
					}
				}
				if !done {
					b.Fatal("the stream did not end with [DONE]")
				}
			}
			for range 100 { // warm pools, connections and caches
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
		})
	}
}

// BenchmarkVeniceCall measures the adapter's own calls under the real sandbox
// (wazero, the wire round trip), without HTTP: encode of the 4 KB agent
// request (only the parts the adapter declares it reads cross the boundary)
// for an OpenAI caller, and decode of a successful 700-byte answer with its
// privacy headers (since ABI v1.3 a verdict; before, a full decode).
// VENICE_BENCH_PKG as for BenchmarkVenice.
func BenchmarkVeniceCall(b *testing.B) {
	pkg := "plugins/providers/venice"
	if p := os.Getenv("VENICE_BENCH_PKG"); p != "" {
		pkg = p
	}
	p := layertest.Load(b, pkg, sandbox.Options{Name: "venice", Trusted: true})
	meta := wire.Meta{RequestID: "req_0123456789abcdef01234567", Tenant: "anonymous", Dialect: wire.DialectOpenAI,
		Annotations: []wire.KV{{Key: "bardo.route.subsystem", Value: "heartbeat_t1"}}}
	route := wire.Route{Provider: "venice", Model: "llama-3.3-70b", BaseURL: "https://api.venice.ai/api/v1"}
	req := fixtures.AgentRequest()
	answer := []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"llama-3.3-70b","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("Morpho supplies 4.2% against Aave's 3.1%; the gas to move is small. ", 8) +
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1100,"completion_tokens":200,"total_tokens":1300}}`)
	headers := []wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "X-Venice-Privacy-Level", Value: "private"},
		{Key: "X-Venice-Retention-Policy", Value: "none"}, {Key: "x-venice-version", Value: "20260301"}}
	var enc wire.Encoder
	encode := func() {
		wire.EncodeEncodeInput(&enc, &meta, &route, req, p.Descriptor().Reads, false)
		var res wire.EncodeResult
		if err := res.Decode(layertest.Call(b, p, plugin.OpEncode, enc.Bytes(), &meta)); err != nil || res.Call == nil {
			b.Fatalf("encode: %v %+v", err, res.Error)
		}
	}
	decode := func() {
		in := wire.DecodeInput{Meta: meta, Route: route, Status: 200, Headers: headers, Body: answer}
		in.Encode(&enc)
		var res wire.DecodeResult
		if err := res.Decode(layertest.Call(b, p, plugin.OpDecode, enc.Bytes(), &meta)); err != nil || res.Error != nil {
			b.Fatalf("decode: %v %+v", err, res.Error)
		}
	}
	for range 200 { // the first calls pay for lazy initialisation
		encode()
		decode()
	}
	b.Run("encode", func(b *testing.B) { layertest.Measure(b, encode) })
	b.Run("decode", func(b *testing.B) { layertest.Measure(b, decode) })
}
