//go:build !wasip1

package main_test

// End to end: the gateway in-process with the affinity layer compiled to
// WASM, in front of two fake OpenAI-compatible upstreams, "a" (listed first)
// and "b", both serving gpt-*, called over HTTP.

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func init() { testgateway.Plugins["affinity.wasm"] = "plugins/layers/affinity" }

const upKey = testgateway.FakeUpstreamKey

const chat = "/v1/chat/completions"

type rig struct {
	g    *testgateway.Gateway
	a, b *fakeupstream.Server
}

func start(t *testing.T) rig {
	t.Helper()
	a := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	b := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(a.Close)
	t.Cleanup(b.Close)
	cfg := `
[[layer]]
name = "affinity"
plugin = "affinity.wasm"
on_error = "fail-open"
trusted = true
[layer.config]
ttl = "300s"
min_cache_tokens = 0

[[provider]]
name = "a"
plugin = "openai-compatible.wasm"
base_url = "` + a.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true

[[provider]]
name = "b"
plugin = "openai-compatible.wasm"
base_url = "` + b.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
`
	g := testgateway.Start(t, cfg, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return rig{g, a, b}
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

// post sends a chat request, in session (X-Bardo-Session) when it is not "".
func (r rig) post(t *testing.T, session, body string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", r.g.URL+chat, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if session != "" {
		req.Header.Set("X-Bardo-Session", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if d := resp.Header.Get("X-Bardo-Degraded"); d != "" {
		t.Fatalf("degraded %q", d)
	}
	return reply{resp.StatusCode, resp.Header, b}
}

// counts returns how many chat requests each upstream has received.
func (r rig) counts() [2]int { return [2]int{r.a.Count(chat), r.b.Count(chat)} }

// expect checks a reply's status, provider and affinity outcome, and which
// upstreams the request reached.
func expect(t *testing.T, what string, rep reply, provider, affinity string, before, after [2]int, delta [2]int) {
	t.Helper()
	if rep.status != 200 {
		t.Fatalf("%s: status %d: %s", what, rep.status, rep.body)
	}
	if got := rep.header.Get("X-Bardo-Provider"); got != provider {
		t.Fatalf("%s: served by %q, want %q (fallback %q)", what, got, provider, rep.header.Get("X-Bardo-Fallback"))
	}
	if got := rep.header.Get("X-Bardo-Affinity"); got != affinity {
		t.Fatalf("%s: X-Bardo-Affinity = %q, want %q", what, got, affinity)
	}
	if after[0]-before[0] != delta[0] || after[1]-before[1] != delta[1] {
		t.Fatalf("%s: upstream calls a+%d b+%d, want a+%d b+%d", what, after[0]-before[0], after[1]-before[1], delta[0], delta[1])
	}
}

func body(turns ...string) string {
	var msgs []string
	msgs = append(msgs, `{"role":"system","content":"`+strings.Repeat("You are a careful DeFi operations agent. ", 40)+`"}`)
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, `{"role":"`+role+`","content":"`+t+`"}`)
	}
	return `{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestSessionAffinity(t *testing.T) {
	r := start(t)

	// Session s1's first request: a fails twice (the try and its retry), b
	// answers.
	r.a.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	c0 := r.counts()
	rep := r.post(t, "s1", body("hello"))
	expect(t, "s1 first", rep, "b", "new", c0, r.counts(), [2]int{2, 1})
	if rep.header.Get("X-Bardo-Affinity-Saved-Tokens") != "" {
		t.Fatal("saved tokens on a new session")
	}

	// s1 again: a is healthy and listed first, but the session goes to b,
	// whose cache holds its prefix.
	c0 = r.counts()
	rep = r.post(t, "s1", body("hello", "echo: hello", "and now?"))
	expect(t, "s1 second", rep, "b", "hit", c0, r.counts(), [2]int{0, 1})
	saved, err := strconv.Atoi(rep.header.Get("X-Bardo-Affinity-Saved-Tokens"))
	if err != nil || saved <= 0 {
		t.Fatalf("X-Bardo-Affinity-Saved-Tokens = %q", rep.header.Get("X-Bardo-Affinity-Saved-Tokens"))
	}

	// Another session is served in the configured order: a.
	c0 = r.counts()
	rep = r.post(t, "s2", body("hello"))
	expect(t, "s2", rep, "a", "new", c0, r.counts(), [2]int{1, 0})

	// b fails twice: s1 fails over to a (affinity never prevents
	// failover), the caller is told it was a miss, and the session moves.
	r.b.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	c0 = r.counts()
	rep = r.post(t, "s1", body("hello", "echo: hello", "and now?", "echo: and now?", "go on"))
	expect(t, "s1 failover", rep, "a", "miss", c0, r.counts(), [2]int{1, 2})
	if got := rep.header.Get("X-Bardo-Fallback"); got != "b:502,b:502" {
		t.Fatalf("fallback = %q", got)
	}
	if got := rep.header.Get("X-Bardo-Affinity-Saved-Tokens"); got != "0" {
		t.Fatalf("saved tokens after a failover = %q", got)
	}
	c0 = r.counts()
	rep = r.post(t, "s1", body("hello", "echo: hello", "and now?", "echo: and now?", "go on", "echo: go on", "done?"))
	expect(t, "s1 moved", rep, "a", "hit", c0, r.counts(), [2]int{1, 0})

	// The gateway's metrics count the outcomes.
	metrics := r.metrics(t)
	for _, want := range []string{
		`bardo_plugin_affinity_hits_total{plugin="affinity"} 2`,
		`bardo_plugin_affinity_misses_total{plugin="affinity"} 1`,
		`bardo_plugin_affinity_new_total{plugin="affinity"} 2`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// A stream is recorded when it ends; without X-Bardo-Session the session is
// the conversation's prefix.
func TestStreamAndDerivedSession(t *testing.T) {
	r := start(t)
	r.a.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
	c0 := r.counts()
	stream := strings.Replace(body("plan my week"), `{"model"`, `{"stream":true,"model"`, 1)
	rep := r.post(t, "", stream)
	expect(t, "stream", rep, "b", "new", c0, r.counts(), [2]int{2, 1})
	if !strings.Contains(string(rep.body), "[DONE]") {
		t.Fatalf("stream body: %s", rep.body)
	}
	// It only watches (WatchStream): the host handed it the finished
	// stream once, as a response, and never a batch.
	calls := func(op string) float64 {
		return r.g.Metrics.Value("bardo_sandbox_call_seconds", "plugin", "affinity", "op", "bardo_"+op)
	}
	if s, a := calls("on_stream"), calls("on_response"); s != 0 || a != 1 {
		t.Fatalf("affinity: %v on_stream and %v on_response calls for one stream; want 0 and 1", s, a)
	}
	// The same conversation, one turn later, no session header: b again.
	c0 = r.counts()
	rep = r.post(t, "", body("plan my week", "echo: plan my week", "start with monday"))
	expect(t, "derived", rep, "b", "hit", c0, r.counts(), [2]int{0, 1})
	// Another conversation (a different first message) is its own session.
	c0 = r.counts()
	rep = r.post(t, "", body("plan my month"))
	expect(t, "other conversation", rep, "a", "new", c0, r.counts(), [2]int{1, 0})
}

func (r rig) metrics(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(r.g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// A stream that broke off is not recorded: the session's next request
// starts afresh rather than following a provider that did not answer.
func TestBrokenStreamNotRecorded(t *testing.T) {
	r := start(t)
	r.a.Script(fakeupstream.CutAfter(2))
	stream := strings.Replace(body("fix the build"), `{"model"`, `{"stream":true,"model"`, 1)
	c0 := r.counts()
	r.post(t, "s-broken", stream)
	if got := r.counts(); got[0] != c0[0]+1 {
		t.Fatalf("the stream went to a+%d b+%d; want a", got[0]-c0[0], got[1]-c0[1])
	}
	c0 = r.counts()
	rep := r.post(t, "s-broken", body("fix the build"))
	expect(t, "after a broken stream", rep, "a", "new", c0, r.counts(), [2]int{1, 0})
}
