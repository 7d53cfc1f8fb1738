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
