//go:build !wasip1

package dashboard_test

// End to end: the gateway in keys mode with the hashcache layer, two
// OpenAI-compatible providers for gpt-* (the first scripted to fail for the
// failover) and an Anthropic one, an account with a key and money; a
// scripted load in both dialects with a stream, a cache hit and a failover.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["hashcache.wasm"] = "plugins/layers/hashcache" }

const adminToken = "dashboard-test-admin-token-0123456789"

type env struct {
	g             *testgateway.Gateway
	first, backup *fakeupstream.Server
	key           string // the caller's bardo_sk_ token
	seq           atomic.Int64
}

func pipelineTOML(dataDir, first, backup string) string {
	return `
[auth]
mode = "keys"

[storage]
data_dir = "` + dataDir + `"
` + testgateway.FailoverPipeline(first, backup, true)
}

func start(t testing.TB) *env {
	t.Helper()
	e := &env{
		first:  fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey)),
		backup: fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey)),
	}
	t.Cleanup(e.first.Close)
	t.Cleanup(e.backup.Close)
	e.g = testgateway.Start(t, pipelineTOML(t.TempDir(), e.first.URL(), e.backup.URL()),
		testgateway.Options{Env: testgateway.FakeProviderEnv(), AdminToken: adminToken})
	var acct struct{ ID string }
	e.admin(t, "POST", "/admin/accounts", `{"name":"acme","tier":"pro"}`, &acct)
	e.admin(t, "POST", "/admin/accounts/"+acct.ID+"/topup", `{"amount_usd":"100.00","reason":"test"}`, nil)
	var key struct{ Token string }
	e.admin(t, "POST", "/admin/keys", `{"account":"`+acct.ID+`","name":"ci","rate_limit":100000}`, &key)
	if !strings.HasPrefix(key.Token, "bardo_sk_") {
		t.Fatalf("key: %+v", key)
	}
	e.key = key.Token
	return e
}

func (e *env) admin(t testing.TB, method, path, body string, out any) {
	t.Helper()
	req, _ := http.NewRequest(method, e.g.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+adminToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
}

// do sends one inference request with the caller's key and returns the
// answer's headers; an answer other than 200 is an error.
func (e *env) do(path, body string) (http.Header, error) {
	req, _ := http.NewRequest("POST", e.g.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.key)
	if path == "/v1/messages" {
		req.Header.Set("anthropic-version", "2023-06-01")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("POST %s: %d %v: %s", path, resp.StatusCode, err, b)
	}
	return resp.Header, nil
}

// call is do on the test's goroutine, failing the test on an error.
func (e *env) call(t testing.TB, path, body string) http.Header {
	t.Helper()
	h, err := e.do(path, body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func chat(text string, stream bool) string {
	s := ""
	if stream {
		s = `"stream":true,`
	}
	return `{"model":"gpt-4o",` + s + `"temperature":0,"max_tokens":100,"messages":[{"role":"user","content":` + quote(text) + `}]}`
}

func messages(text string, stream bool) string {
	s := ""
	if stream {
		s = `"stream":true,`
	}
	return `{"model":"claude-sonnet-4-5",` + s + `"max_tokens":100,"messages":[{"role":"user","content":` + quote(text) + `}]}`
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// load is the scripted run: both dialects, buffered and streamed, a cache
// hit and a failover. It returns how many inference requests it sent.
func (e *env) load(t testing.TB) int {
	t.Helper()
	n := e.seq.Add(1)
	q := fmt.Sprintf("Summarize the risk of position %d in two sentences.", n)
	if h := e.call(t, "/v1/chat/completions", chat(q, false)); h.Get("X-Bardo-Cache") != "miss" {
		t.Fatalf("first: cache %q", h.Get("X-Bardo-Cache"))
	}
	if h := e.call(t, "/v1/chat/completions", chat(q, false)); h.Get("X-Bardo-Cache") != "hash-hit" {
		t.Fatalf("second: cache %q", h.Get("X-Bardo-Cache"))
	}
	e.call(t, "/v1/messages", messages(q+" In Anthropic.", false))
	e.call(t, "/v1/messages", messages(q+" Streamed in Anthropic.", true))
	e.call(t, "/v1/chat/completions", chat(q+" Streamed.", true))
	e.first.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	h := e.call(t, "/v1/chat/completions", chat(q+" Failed over.", false))
	if h.Get("X-Bardo-Provider") != "backup" || h.Get("X-Bardo-Fallback") == "" {
		t.Fatalf("no failover: provider %q, fallback %q", h.Get("X-Bardo-Provider"), h.Get("X-Bardo-Fallback"))
	}
	return 6
}

// scrape parses GET /metrics.
func (e *env) scrape(t testing.TB) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(e.g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}

// sum adds a family's counters, or its histograms' sample counts.
func sum(mfs map[string]*dto.MetricFamily, name string) float64 {
	var s float64
	for _, m := range mfs[name].GetMetric() {
		if h := m.GetHistogram(); h != nil {
			s += float64(h.GetSampleCount())
		} else {
			s += m.GetCounter().GetValue()
		}
	}
	return s
}

// noRedirect is an HTTP client that does not follow redirects, so a test
// sees each answer. It keeps no cookies: Go's jar never sends a Secure
// cookie over http, a browser on 127.0.0.1 does (the browser test checks).
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// login posts the token with c and returns the answer.
func (e *env) login(t testing.TB, c *http.Client, token string) *http.Response {
	t.Helper()
	resp, err := c.PostForm(e.g.URL+"/dashboard/login", url.Values{"token": {token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func getJSON(t testing.TB, c *http.Client, u string, hdr map[string]string, out any) int {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", u, err, b)
		}
	}
	if bytes.Contains(b, []byte(adminToken)) {
		t.Fatalf("%s: the admin token is in the answer", u)
	}
	return resp.StatusCode
}

// eventually retries f every 50 ms for up to d.
func eventually(t testing.TB, d time.Duration, what string, f func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err = f(); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}
