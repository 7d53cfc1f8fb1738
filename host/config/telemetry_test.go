package config

import (
	"os"
	"strings"
	"testing"
)

func TestTelemetry(t *testing.T) {
	cfg, err := Parse([]byte(`
[telemetry]
endpoint = "http://127.0.0.1:4318"
headers = { "x-honeycomb-team" = "env:HONEYCOMB_KEY" }
sample_ratio = 0.25
service_name = "bardo-eu"
capture_content = true
`), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	tel := cfg.Telemetry
	if !tel.Enabled || tel.Endpoint != "http://127.0.0.1:4318" || tel.SampleRatio != 0.25 || tel.ServiceName != "bardo-eu" ||
		!tel.CaptureContent || tel.Headers["x-honeycomb-team"] != "env:HONEYCOMB_KEY" {
		t.Fatalf("%+v", tel)
	}
	hs, err := ResolveTelemetryHeaders(tel, func(n string) string { return map[string]string{"HONEYCOMB_KEY": "k1"}[n] })
	if err != nil || hs["x-honeycomb-team"] != "k1" {
		t.Fatalf("resolved %v %v", hs, err)
	}
	if _, err := ResolveTelemetryHeaders(tel, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "HONEYCOMB_KEY") {
		t.Fatalf("unset variable: %v", err)
	}

	// Off by default, and off when enabled = false (no endpoint needed).
	for _, src := range []string{"", "[telemetry]\nenabled = false\n"} {
		cfg, err := Parse([]byte(src), "pipeline.toml")
		if err != nil || cfg.Telemetry.Enabled || cfg.Telemetry.Endpoint != "" {
			t.Fatalf("%q: %+v %v", src, cfg.Telemetry, err)
		}
	}
	if cfg, _ := Parse([]byte("[telemetry]\nendpoint = \"http://c:4318\"\n"), "p.toml"); cfg.Telemetry.SampleRatio != 1 || cfg.Telemetry.ServiceName != "bardo" || cfg.Telemetry.CaptureContent {
		t.Fatalf("defaults: %+v", cfg.Telemetry)
	}

	const secret = "hunter2-secret"
	for src, want := range map[string]string{
		"telemetry = 1\n":                                                                          "must be a table",
		"[telemetry]\nsample_ratio = 1\n":                                                          "telemetry.endpoint: is required",
		"[telemetry]\nendpoint = \"grpc://c:4317\"\n":                                              "telemetry.endpoint",
		"[telemetry]\nendpoint = \"http://u:" + secret + "@c\"\n":                                  "without credentials",
		"[telemetry]\nendpoint = \"http://c\"\nsample_ratio = 1.5\n":                               "telemetry.sample_ratio",
		"[telemetry]\nendpoint = \"http://c\"\nsample_ratio = \"all\"\n":                           "telemetry.sample_ratio",
		"[telemetry]\nendpoint = \"http://c\"\nheaders = { authorization = \"" + secret + "\" }\n": "env:NAME",
		"[telemetry]\nendpoint = \"http://c\"\nservice_name = \" \"\n":                             "telemetry.service_name",
		"[telemetry]\nendpoint = \"http://c\"\ncapture = true\n":                                   "unknown key",
	} {
		_, err := Parse([]byte(src), "pipeline.toml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%q: the error repeats the secret: %v", src, err)
		}
	}
}

// The commented [telemetry] block of the shipped pipeline.toml parses once
// uncommented: the example an operator copies is valid.
func TestShippedTelemetryExample(t *testing.T) {
	b, err := os.ReadFile("../../pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	var block []string
lines:
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case line == "# [telemetry]":
			block = append(block, "[telemetry]")
		case len(block) > 0 && strings.HasPrefix(line, "# ") && strings.Contains(line, " = "):
			block = append(block, strings.TrimPrefix(line, "# "))
		case len(block) > 0:
			break lines
		}
	}
	if len(block) < 2 {
		t.Fatal("pipeline.toml has no commented [telemetry] block")
	}
	cfg, err := Parse([]byte(strings.Join(block, "\n")), "pipeline.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Telemetry.Enabled || cfg.Telemetry.Endpoint == "" || cfg.Telemetry.CaptureContent {
		t.Fatalf("%+v", cfg.Telemetry)
	}
}
