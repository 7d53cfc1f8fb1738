//go:build !wasip1

package dashboard_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/dashboard"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/telemetry"
)

// BenchmarkHistoryAPI times GET /dashboard/api/history over HTTP against a
// store of 1M usage records (30 days, 20 accounts, 3 providers, 4 models),
// for each range: the target is ≤ 50 ms. Ranges up to 6 hours read
// minute rollups, up to a week hour rollups, 30 days day rollups. The records go in through
// sqlite.ImportUsage, the bulk path, once per run.
func BenchmarkHistoryAPI(b *testing.B) {
	const rows = 1_000_000
	ctx := context.Background()
	now := time.Now().UTC()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	began := time.Now()
	batch := make([]store.Usage, 0, 50_000)
	span := 30 * 24 * time.Hour
	for i := range rows {
		batch = append(batch, store.Usage{RequestID: fmt.Sprintf("req-%d", i), AccountID: fmt.Sprintf("acct_%02d", i%20),
			KeyID: fmt.Sprintf("key%02d", i%20), Provider: []string{"openai", "anthropic", "venice"}[i%3],
			Model: []string{"gpt-4o", "claude-sonnet-4-5", "gpt-4o-mini", "llama-3.3-70b"}[i%4], InputTokens: 500, OutputTokens: 200,
			Cost: 1200, Charge: 1380, Savings: 90, Cache: []string{"miss", "miss", "hash-hit"}[i%3], LatencyMicros: 800_000,
			Status: 200, At: now.Add(-span + time.Duration(i)*(span/rows))})
		if len(batch) == cap(batch) {
			if err := s.ImportUsage(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	b.Logf("imported %d usage records in %s", rows, time.Since(began).Round(time.Millisecond))

	d := &dashboard.Dashboard{Token: "bench", Metrics: telemetry.New(), Store: s}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &fasthttp.Server{Handler: func(c *fasthttp.RequestCtx) { d.Handle(c) }}
	go srv.Serve(ln)
	defer srv.Shutdown()
	client := &fasthttp.Client{}
	for _, r := range []string{"1h", "6h", "24h", "7d", "30d"} {
		b.Run(r, func(b *testing.B) {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(resp)
			req.SetRequestURI("http://" + ln.Addr().String() + "/dashboard/api/history?range=" + r)
			req.Header.Set("Authorization", "Bearer bench")
			var worst time.Duration
			c0 := cpuTime()
			for b.Loop() {
				t := time.Now()
				if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
					b.Fatalf("%v %d %s", err, resp.StatusCode(), resp.Body())
				}
				worst = max(worst, time.Since(t))
			}
			// CPU time (this process: the server and the client) says what
			// a request costs when the machine is shared; wall time what
			// it took.
			b.ReportMetric(float64((cpuTime()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
			b.ReportMetric(float64(len(resp.Body())), "bytes")
		})
	}
	b.Run("live", func(b *testing.B) {
		for b.Loop() {
			if _, err := d.Snapshot(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
