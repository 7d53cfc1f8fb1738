package gateway_test

import (
	"slices"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// BenchmarkEmbeddings measures POST /v1/embeddings with the local GloVe
// model, one short input, client-observed at concurrency 1 (issue 16's
// target: ≤ 1 ms p50 end to end).
func BenchmarkEmbeddings(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	defer fake.Close()
	g := testgateway.Start(b, modeltest.TOML(b)+upstreamPipeline(fake, ""), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	body := []byte(`{"model":"embed","input":"how do I rotate the signing keys of the staging cluster"}`)
	client := &fasthttp.Client{}
	do := func() {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(resp)
		req.Header.SetMethod("POST")
		req.SetRequestURI(g.URL + "/v1/embeddings")
		req.Header.SetContentType("application/json")
		req.SetBodyRaw(body)
		if err := client.Do(req, resp); err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode() != 200 {
			b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
		}
	}
	for range 100 {
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
}

// BenchmarkEmbeddingsUpstream measures POST /v1/embeddings routed to an
// upstream provider (the fake, text-embedding-3-small: 1,536 floats, one
// short input), client-observed at concurrency 1, through the gateway
// and straight to the fake: the difference of the p50s is what the
// gateway adds (admission, the adapter's encode, the relay, settlement;
// open mode, so no ledger).
func BenchmarkEmbeddingsUpstream(b *testing.B) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	defer fake.Close()
	g := testgateway.Start(b, embedProviders(fake.URL(), fake.URL()), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	body := []byte(`{"model":"text-embedding-3-small","input":"how do I rotate the signing keys of the staging cluster"}`)
	client := &fasthttp.Client{}
	p50 := func(url string, auth bool) time.Duration {
		do := func() {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.Header.SetMethod("POST")
			req.SetRequestURI(url)
			req.Header.SetContentType("application/json")
			if auth {
				req.Header.Set("Authorization", "Bearer "+upKey)
			}
			req.SetBodyRaw(body)
			if err := client.Do(req, resp); err != nil {
				b.Fatal(err)
			}
			if resp.StatusCode() != 200 {
				b.Fatalf("status %d: %s", resp.StatusCode(), resp.Body())
			}
		}
		for range 100 {
			do()
		}
		lat := make([]time.Duration, 0, 1000)
		for range 1000 {
			t0 := time.Now()
			do()
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		return lat[len(lat)/2]
	}
	var direct, via time.Duration
	for b.Loop() {
		direct = p50(fake.URL()+"/v1/embeddings", true)
		via = p50(g.URL+"/v1/embeddings", false)
	}
	b.ReportMetric(float64(direct.Microseconds()), "direct-p50-µs")
	b.ReportMetric(float64(via.Microseconds()), "gateway-p50-µs")
	b.ReportMetric(float64((via - direct).Microseconds()), "added-p50-µs")
}
