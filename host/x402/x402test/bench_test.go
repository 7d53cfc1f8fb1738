package x402test_test

import (
	"io"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

// benchRequests sends chat completions for model through client: the free
// model measures the plain exchange, a paid one adds the 402 round trip,
// signing, and the server's verification.
func benchRequests(b *testing.B, model string, pay bool) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	client := srv.Client()
	if pay {
		k, err := x402.GenerateKeySigner()
		if err != nil {
			b.Fatal(err)
		}
		pol := x402.DefaultPolicy()
		pol.SpendCap = math.MaxUint64 / 2
		p, err := x402.NewPayer(k, pol)
		if err != nil {
			b.Fatal(err)
		}
		client = &http.Client{Transport: p.Transport(srv.Client().Transport)}
	}
	body := chatBody(model, "benchmark", 32, false)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := client.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

func BenchmarkFreeRequest(b *testing.B) { benchRequests(b, "nvidia/gpt-oss-120b", false) }
func BenchmarkPaidRequest(b *testing.B) { benchRequests(b, "openai/gpt-4o-mini", true) }
