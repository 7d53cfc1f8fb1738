package daemon

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/telemetry/trace"
)

// openTracing starts the OTLP/HTTP trace exporter [telemetry] configures
// (off by default). It is read once, at start: a reload keeps the exporter
// it has. An unset header variable fails the start, as a misconfigured
// exporter should not run silently without its credentials.
func (d *Daemon) openTracing(tel config.Telemetry, getenv func(string) string) error {
	if !tel.Enabled || tel.Endpoint == "" {
		return nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	headers, err := config.ResolveTelemetryHeaders(tel, getenv)
	if err != nil {
		return fmt.Errorf("daemon: %w", err)
	}
	t, err := trace.New(trace.Config{Endpoint: tel.Endpoint, Headers: headers, SampleRatio: tel.SampleRatio,
		ServiceName: tel.ServiceName, CaptureContent: tel.CaptureContent,
		Dropped: func(n int) { d.Metrics.Add("bardo_trace_spans_dropped_total", float64(n)) }})
	if err != nil {
		return fmt.Errorf("daemon: telemetry: %w", err)
	}
	d.Gateway.Tracer = t
	d.closeAll = append(d.closeAll, func() {
		// After the server stopped: the last requests' spans go out.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := t.Shutdown(ctx); err != nil {
			d.Log.Warn("trace exporter shutdown", "err", err)
		}
	})
	d.Log.Info("tracing on", "endpoint", tel.Endpoint, "sample_ratio", tel.SampleRatio, "capture_content", tel.CaptureContent)
	return nil
}
