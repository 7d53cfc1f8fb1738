//go:build !wasip1

package trace_test

// End to end against a real OpenTelemetry Collector (tools/otelcol: the
// core OTLP receiver and the contrib file exporter, built by
// scripts/otelcol.sh into build/otelcol): the gateway in-process with the
// hashcache layer, two OpenAI-compatible providers for gpt-* (the first
// scripted to fail) and an Anthropic one, exports its spans over OTLP/HTTP;
// the test reads what the Collector wrote to its file.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

func init() { testgateway.Plugins["hashcache.wasm"] = "plugins/layers/hashcache" }

const key = testgateway.FakeUpstreamKey

// collector starts build/otelcol receiving OTLP/HTTP on a loopback port and
// writing what it receives to a file; it returns the endpoint and the file.
func collector(t *testing.T) (endpoint, file string) {
	t.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "build", "otelcol")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is missing: make test builds it (scripts/otelcol.sh)", bin)
		}
		t.Skipf("%s is missing: run `bash scripts/otelcol.sh` (make test does) to build the OpenTelemetry Collector this test exports to", bin)
	}
	dir := t.TempDir()
	file = filepath.Join(dir, "spans.jsonl")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      http:
        endpoint: %s
exporters:
  file:
    path: %s
    flush_interval: 100ms
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
`, addr, file)
	cfgPath := filepath.Join(dir, "otelcol.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", "file:"+cfgPath)
	logs, err := os.Create(filepath.Join(dir, "otelcol.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("collector log:\n%s", b)
		}
	})
	// Ready when its receiver accepts connections (bounded: 30 s).
	for i := 0; ; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("the collector exited: %v\n%s", err, b)
		default:
		}
		if i == 300 {
			b, _ := os.ReadFile(logs.Name())
			t.Fatalf("the collector did not listen on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "http://" + addr, file
}

func pipelineTOML(first, backup, endpoint string) string {
	return `
[telemetry]
endpoint = "` + endpoint + `"
service_name = "bardo-e2e"
` + testgateway.FailoverPipeline(first, backup, false)
}

// call posts body and returns the request id the gateway answered with.
func call(t *testing.T, url, path, body string, hdr map[string]string) string {
	t.Helper()
	req, err := http.NewRequest("POST", url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if path == "/v1/messages" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return resp.Header.Get("X-Bardo-Request-Id")
}

func chat(model, text string, stream bool) string {
	s := ""
	if stream {
		s = `"stream":true,"stream_options":{"include_usage":true},`
	}
	return `{"model":"` + model + `",` + s + `"temperature":0,"max_tokens":200,"messages":[{"role":"user","content":"` + text + `"}]}`
}

// The question's words must not reach the collector: capture_content is
// off by default.
const question = "Summarize the risk of my Aave position in two sentences, considering ETH volatility and the health factor."

// span is one exported span, from the file exporter's OTLP JSON.
type span struct {
	TraceID, SpanID, ParentSpanID, Name string
	Kind                                int
	Attrs                               map[string]any
	Status                              struct{ Code int }
}

type otlpValue struct {
	StringValue *string  `json:"stringValue"`
	IntValue    *string  `json:"intValue"`
	BoolValue   *bool    `json:"boolValue"`
	DoubleValue *float64 `json:"doubleValue"`
	ArrayValue  *struct {
		Values []otlpValue `json:"values"`
	} `json:"arrayValue"`
}

func (v otlpValue) value() any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.IntValue != nil:
		n, _ := strconv.ParseInt(*v.IntValue, 10, 64)
		return n
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.DoubleValue != nil:
		return *v.DoubleValue
	case v.ArrayValue != nil:
		var ss []string
		for _, e := range v.ArrayValue.Values {
			ss = append(ss, fmt.Sprint(e.value()))
		}
		return strings.Join(ss, ",")
	}
	return nil
}

// readSpans parses the collector's file: one ExportTraceServiceRequest in
// JSON a line.
func readSpans(t *testing.T, file string) (spans []span, service string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line struct {
			ResourceSpans []struct {
				Resource struct {
					Attributes []struct {
						Key   string
						Value otlpValue
					}
				}
				ScopeSpans []struct {
					Spans []struct {
						TraceID, SpanID, ParentSpanID, Name string
						Kind                                int
						Attributes                          []struct {
							Key   string
							Value otlpValue
						}
						Status struct{ Code int }
					}
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("the collector's file: %v", err)
		}
		for _, rs := range line.ResourceSpans {
			for _, a := range rs.Resource.Attributes {
				if a.Key == "service.name" {
					service = fmt.Sprint(a.Value.value())
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := span{TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID, Name: s.Name, Kind: s.Kind,
						Attrs: map[string]any{}, Status: s.Status}
					for _, a := range s.Attributes {
						sp.Attrs[a.Key] = a.Value.value()
					}
					spans = append(spans, sp)
				}
			}
		}
	}
	return spans, service
}

// OTLP span kinds and status codes.
const (
	kindInternal = 1
	kindServer   = 2
	kindClient   = 3
	statusError  = 2
)

func TestTracesThroughCollector(t *testing.T) {
	endpoint, file := collector(t)
	first := fakeupstream.New(fakeupstream.WithAPIKey(key))
	t.Cleanup(first.Close)
	backup := fakeupstream.New(fakeupstream.WithAPIKey(key))
	t.Cleanup(backup.Close)
	g := testgateway.Start(t, pipelineTOML(first.URL(), backup.URL(), endpoint), testgateway.Options{Env: map[string]string{"UP_KEY": key}})
	if g.Daemon.Gateway.Tracer == nil {
		t.Fatal("[telemetry] did not turn tracing on")
	}

	const path = "/v1/chat/completions"
	const callerTrace, callerSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	ids := map[string]string{
		"miss":      call(t, g.URL, path, chat("gpt-4o", question, false), nil),
		"hit":       call(t, g.URL, path, chat("gpt-4o", question, false), nil),
		"anthropic": call(t, g.URL, "/v1/messages", `{"model":"claude-sonnet-4","max_tokens":200,"messages":[{"role":"user","content":"`+question+` In Anthropic."}]}`, nil),
		"stream":    call(t, g.URL, path, chat("gpt-4o", question+" Streamed.", true), nil),
		"continued": call(t, g.URL, path, chat("gpt-4o", question+" Continued.", false),
			map[string]string{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}),
	}
	first.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	ids["failover"] = call(t, g.URL, path, chat("gpt-4o", question+" Failed over.", false), nil)

	// Spans leave in batches: flush (a stream settles just after its
	// caller read the end, so retry), then wait for the file (bounded).
	var byRID map[string]span
	var spans []span
	var service string
	for i := 0; ; i++ {
		if err := g.Daemon.Gateway.Tracer.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		spans, service = readSpans(t, file)
		byRID = map[string]span{}
		for _, s := range spans {
			if rid, ok := s.Attrs["bardo.request.id"].(string); ok {
				byRID[rid] = s
			}
		}
		if len(byRID) == len(ids) {
			break
		}
		if i == 100 {
			t.Fatalf("after 10 s the collector has %d request spans of %d (%d spans)", len(byRID), len(ids), len(spans))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if service != "bardo-e2e" {
		t.Errorf("service.name %q", service)
	}
	children := func(parent span) []span {
		var out []span
		for _, s := range spans {
			if s.ParentSpanID == parent.SpanID && s.TraceID == parent.TraceID {
				out = append(out, s)
			}
		}
		return out
	}
	named := func(ss []span, name string) []span {
		var out []span
		for _, s := range ss {
			if s.Name == name {
				out = append(out, s)
			}
		}
		return out
	}
	want := func(s span, k string, v any) {
		t.Helper()
		if got := s.Attrs[k]; got != v {
			t.Errorf("%s %s: %s = %v (%T), want %v", s.Attrs["bardo.request.id"], s.Name, k, got, got, v)
		}
	}
	for name, rid := range ids {
		s, ok := byRID[rid]
		if !ok {
			t.Fatalf("%s: no span for request %s", name, rid)
		}
		if s.Kind != kindServer || s.Attrs["gen_ai.operation.name"] != "chat" {
			t.Errorf("%s: kind %d, operation %v", name, s.Kind, s.Attrs["gen_ai.operation.name"])
		}
		kids := children(s)
		if len(named(kids, "bardo.admission")) != 1 {
			t.Errorf("%s: no admission span", name)
		}
		layer := named(kids, "bardo.layer hashcache")
		if len(layer) == 0 || layer[0].Attrs["bardo.layer.op"] != "on_request" || layer[0].Kind != kindInternal {
			t.Errorf("%s: no hashcache on_request span: %+v", name, layer)
		}
		want(s, "bardo.layers", "hashcache")
		want(s, "http.response.status_code", int64(200))
	}

	miss := byRID[ids["miss"]]
	want(miss, "gen_ai.request.model", "gpt-4o")
	want(miss, "gen_ai.provider.name", "up")
	want(miss, "gen_ai.request.max_tokens", int64(200))
	want(miss, "bardo.dialect", "openai")
	want(miss, "bardo.cache", "miss")
	want(miss, "bardo.path", "upstream")
	if miss.Name != "chat gpt-4o" || miss.Attrs["gen_ai.response.model"] == nil || miss.Attrs["gen_ai.response.id"] == nil ||
		miss.Attrs["gen_ai.response.finish_reasons"] == nil {
		t.Errorf("miss: %s %v", miss.Name, miss.Attrs)
	}
	for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
		if n, _ := miss.Attrs[k].(int64); n <= 0 {
			t.Errorf("miss: %s = %v", k, miss.Attrs[k])
		}
	}
	kids := children(miss)
	if len(named(kids, "bardo.route")) != 1 || named(kids, "bardo.route")[0].Attrs["bardo.route.mode"] != "explicit" {
		t.Errorf("miss: no route span")
	}
	att := named(kids, "chat gpt-4o")
	if len(att) != 1 || att[0].Kind != kindClient || att[0].Attrs["gen_ai.provider.name"] != "up" || att[0].Attrs["http.response.status_code"] != int64(200) {
		t.Errorf("miss: attempts %+v", att)
	}
	if resp := named(kids, "bardo.layer hashcache"); len(resp) != 2 || resp[1].Attrs["bardo.layer.op"] != "on_response" {
		t.Errorf("miss: hashcache spans %+v", resp)
	}

	hit := byRID[ids["hit"]]
	want(hit, "bardo.cache", "hash-hit")
	want(hit, "bardo.path", "layer")
	if len(named(children(hit), "chat gpt-4o")) != 0 || len(named(children(hit), "bardo.route")) != 0 {
		t.Errorf("hit: went upstream")
	}

	an := byRID[ids["anthropic"]]
	want(an, "bardo.dialect", "anthropic")
	want(an, "gen_ai.provider.name", "claude")
	want(an, "gen_ai.request.model", "claude-sonnet-4")
	if att := named(children(an), "chat claude-sonnet-4"); len(att) != 1 || att[0].Attrs["gen_ai.provider.name"] != "claude" {
		t.Errorf("anthropic: attempts %+v", att)
	}

	st := byRID[ids["stream"]]
	want(st, "bardo.stream", true)
	want(st, "bardo.stream.end", "ended")
	if st.Attrs["gen_ai.response.id"] == nil || st.Attrs["gen_ai.response.finish_reasons"] == nil {
		t.Errorf("stream: no response id or finish reason: %v", st.Attrs)
	}
	if n, _ := st.Attrs["gen_ai.usage.output_tokens"].(int64); n <= 0 {
		t.Errorf("stream: output tokens %v", st.Attrs["gen_ai.usage.output_tokens"])
	}
	if len(named(children(st), "bardo.layer hashcache")) < 2 {
		t.Errorf("stream: no on_stream layer spans")
	}

	fo := byRID[ids["failover"]]
	want(fo, "gen_ai.provider.name", "backup")
	want(fo, "bardo.failover", "up:502,up:502") // as X-Bardo-Fallback says; the attempts carry the upstream's own 500
	att = named(children(fo), "chat gpt-4o")
	if len(att) != 3 {
		t.Fatalf("failover: %d attempts", len(att))
	}
	for i, a := range att {
		wantProvider, wantStatus, wantTry := "up", int64(500), int64(i+1)
		if i == 2 {
			wantProvider, wantStatus, wantTry = "backup", 200, 1
		}
		if a.Attrs["gen_ai.provider.name"] != wantProvider || a.Attrs["http.response.status_code"] != wantStatus || a.Attrs["bardo.attempt.try"] != wantTry {
			t.Errorf("failover attempt %d: %v", i, a.Attrs)
		}
		if (i < 2) != (a.Status.Code == statusError) {
			t.Errorf("failover attempt %d: status %d", i, a.Status.Code)
		}
	}

	co := byRID[ids["continued"]]
	if co.TraceID != callerTrace || co.ParentSpanID != callerSpan {
		t.Errorf("traceparent not continued: trace %s parent %s", co.TraceID, co.ParentSpanID)
	}
	if miss.TraceID == callerTrace || miss.ParentSpanID != "" {
		t.Errorf("a request without traceparent joined a trace: %s / %s", miss.TraceID, miss.ParentSpanID)
	}

	// Nothing of the prompt or the answer left the gateway.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, word := range []string{"Aave", "volatility", "gen_ai.input.messages", "gen_ai.output.messages", key} {
		if strings.Contains(string(raw), word) {
			t.Errorf("the collector received %q", word)
		}
	}
}
