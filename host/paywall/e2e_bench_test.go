package paywall_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/x402"
)

// BenchmarkPaidVsPrepaid sends the same buffered completion through the
// daemon (HTTP, the fake upstream) with a prepaid key and with an x402
// exact payment, n each, and reports each p50, the local facilitator's
// /verify round trip p50 (a settle's stand-in: the same verification,
// no transfer), and the x402 request's added latency net of it.
func BenchmarkPaidVsPrepaid(b *testing.B) {
	dir := b.TempDir()
	key := prepaidKey(b, dir)
	e := startE2EIn(b, dir)
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`)
	c := &http.Client{Timeout: 20 * time.Second}
	send := func(h http.Header) (*http.Response, time.Duration) {
		req, _ := http.NewRequest("POST", e.gw.URL+"/v1/messages", bytes.NewReader(body))
		req.Header = h
		req.Header.Set("content-type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		t0 := time.Now()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, time.Since(t0)
	}
	challenge, _ := send(http.Header{})
	if challenge.StatusCode != 402 {
		b.Fatalf("challenge %d", challenge.StatusCode)
	}
	w := wallet(b)
	n := max(b.N, 50)
	pays := make([]string, n)
	for i := range pays {
		pays[i] = sign(b, challenge, w)
	}
	pre, paid, fac := make([]time.Duration, n), make([]time.Duration, n), make([]time.Duration, n)
	f := &x402.Facilitator{URL: e.fac.URL}
	b.ResetTimer()
	for i := range n {
		resp, d := send(http.Header{"X-Api-Key": {key}})
		if resp.StatusCode != 200 {
			b.Fatalf("prepaid %d", resp.StatusCode)
		}
		pre[i] = d
		resp, d = send(http.Header{x402.HeaderPaymentSignature: {pays[i]}})
		if resp.StatusCode != 200 {
			b.Fatalf("paid %d", resp.StatusCode)
		}
		paid[i] = d
		pl, _ := x402.DecodePaymentPayload(x402.HeaderPaymentSignature, pays[i])
		t0 := time.Now()
		if _, err := f.Verify(context.Background(), pl, pl.Accepted); err != nil {
			b.Fatal(err)
		}
		fac[i] = time.Since(t0)
	}
	b.StopTimer()
	p50 := func(d []time.Duration) float64 { slices.Sort(d); return float64(d[len(d)/2].Microseconds()) }
	pp, xp, fp := p50(pre), p50(paid), p50(fac)
	b.ReportMetric(pp, "prepaid-p50-µs")
	b.ReportMetric(xp, "x402-p50-µs")
	b.ReportMetric(fp, "facilitator-p50-µs")
	b.ReportMetric(xp-pp-fp, "added-p50-µs")
}

// prepaidKey creates a pro account with $100 and an unlimited key.
func prepaidKey(tb testing.TB, dir string) string {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	secret, err := auth.LoadSecret(dir)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := s.CreateAccount(ctx, store.Account{ID: "acct_bench", Name: "bench", Tier: store.TierPro}); err != nil {
		tb.Fatal(err)
	}
	if _, err := s.TopUp(ctx, "acct_bench", 100*store.MicroUSD, "bench"); err != nil {
		tb.Fatal(err)
	}
	tok, _, err := auth.New(s, secret, auth.Options{}).Create(ctx, "acct_bench", auth.KeySpec{Name: "bench", RateLimit: 1_000_000})
	if err != nil {
		tb.Fatal(err)
	}
	return tok
}
