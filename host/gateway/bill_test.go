package gateway_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The engine's side of billing, with an admitter that records what it is
// given: host/billing implements the same contract over the ledger, and
// its end-to-end tests check the money; these check the engine keeps it —
// one Close per request with the prices and usage a bill needs, the bill's
// figures on the answer (in a stream: just before its terminal event), the
// up-front headers, downgrades routed, refusals settled on their tab.

// pricedPipeline prices the fake upstream's models the way pipeline.toml's
// static [[provider.model]] entries do.
func pricedPipeline(fake *fakeupstream.Server) string {
	return `
[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "` + fake.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true

[[provider.model]]
id = "gpt-4o"
input_price = "2.50"
output_price = "10.00"
features = ["tool_use"]

[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + fake.URL() + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true

[[provider.model]]
id = "claude-opus-4-1"
input_price = "15"
output_price = "75"
features = ["tool_use"]

[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
max_output = 64000
features = ["tool_use"]

[[provider.model]]
id = "claude-haiku-4-5"
input_price = "1"
output_price = "5"
features = ["tool_use"]
`
}

type recordingTab struct {
	mu        sync.Mutex
	closed    []gateway.Settlement
	internals int
}

func (t *recordingTab) Internal(*gateway.Settlement) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.internals++
}

func (t *recordingTab) Close(s *gateway.Settlement) gateway.Bill {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = append(t.closed, *s)
	return gateway.Bill{
		Headers: []wire.KV{{Key: "X-Bardo-Cost", Value: "0.000042"}, {Key: "X-Bardo-Balance", Value: "4.999958"}},
		Trailer: []byte(": bardo cost=0.000042 savings=0.000001\n\n"),
	}
}

func (t *recordingTab) settlements() []gateway.Settlement {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]gateway.Settlement(nil), t.closed...)
}

// recordingAdmitter admits everyone onto one tab, optionally downgrading
// or refusing, and keeps the last admission it saw.
type recordingAdmitter struct {
	tab       *recordingTab
	downgrade string
	refuse    *wire.Error

	mu     sync.Mutex
	last   gateway.Admission
	quotes []gateway.Quote
}

func (a *recordingAdmitter) Admit(_ context.Context, adm *gateway.Admission) (gateway.Caller, *wire.Error) {
	a.mu.Lock()
	a.last = *adm
	a.quotes = nil
	if adm.Quotes != nil {
		a.quotes = adm.Quotes()
	}
	a.mu.Unlock()
	c := gateway.Caller{Tenant: "acct_1", Key: "key_1", Tab: a.tab,
		Headers: []wire.KV{{Key: "X-Remaining-Tokens", Value: "99000"}}}
	if a.downgrade != "" {
		c.Model = a.downgrade
		c.Degraded = []string{"budget-downgrade:" + adm.Model + "->" + a.downgrade}
	}
	return c, a.refuse
}

func startBilled(t *testing.T) (*testgateway.Gateway, *fakeupstream.Server, *recordingAdmitter) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, pricedPipeline(fake), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	adm := &recordingAdmitter{tab: &recordingTab{}}
	g.Daemon.Gateway.Admitter = adm
	return g, fake, adm
}

func TestBillClosedOncePerRequestWithPrices(t *testing.T) {
	g, fake, adm := startBilled(t)
	const ask = `"messages":[{"role":"user","content":"one two three"}]}`

	fake.Script(fakeupstream.Cached(5, 0))
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o",`+ask)
	if r.Status != 200 || r.Header.Get("X-Bardo-Cost") != "0.000042" || r.Header.Get("X-Bardo-Balance") != "4.999958" ||
		r.Header.Get("X-Remaining-Tokens") != "99000" {
		t.Fatalf("billed answer: %d %v %s", r.Status, r.Header, r.Body)
	}
	ss := adm.tab.settlements()
	if len(ss) != 1 {
		t.Fatalf("closed %d times", len(ss))
	}
	s := ss[0]
	if !s.Priced || s.Prices.Input.String() != "2.5" || s.Prices.Output.String() != "10" || s.Usage == nil ||
		s.Usage.CacheReadTokens != 5 || s.Key != "key_1" || s.Tenant != "acct_1" {
		t.Fatalf("settlement: %+v usage %+v", s, s.Usage)
	}
	if got := adm.last; got.MaxTokens != gateway.DefaultMaxTokens || got.InputTokens <= 0 || !got.Spends {
		t.Fatalf("admission: %+v", got)
	}

	// The admission's quotes: the asked model, then its cheaper equivalents
	// (same family, tools), dearest first.
	post(t, g.URL, "/v1/messages", `{"model":"claude-opus-4-1","max_tokens":300,`+ask)
	var models []string
	for _, q := range adm.quotes {
		models = append(models, q.Model)
	}
	if strings.Join(models, ",") != "claude-opus-4-1,claude-sonnet-4-5,claude-haiku-4-5" || adm.last.MaxTokens != 300 {
		t.Fatalf("quotes %v, max tokens %d", models, adm.last.MaxTokens)
	}
	if n := len(adm.tab.settlements()); n != 2 {
		t.Fatalf("closed %d times after two requests", n)
	}
}

// A stream's figures go in-band just before its terminal event, in both
// dialects, forwarded or translated: the caller's SDK ignores the comment,
// and a client that stops at the terminal event has read them.
func TestBillTrailerBeforeTerminalEvent(t *testing.T) {
	g, _, adm := startBilled(t)
	const ask = `"stream":true,"messages":[{"role":"user","content":"one two three"}]}`
	for _, c := range []struct{ name, path, body, terminal string }{
		{"anthropic passthrough", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,` + ask, "event: message_stop"},
		{"openai passthrough", "/v1/chat/completions", `{"model":"gpt-4o","stream_options":{"include_usage":true},` + ask, "data: [DONE]"},
		{"openai caller, anthropic upstream", "/v1/chat/completions", `{"model":"claude-sonnet-4-5",` + ask, "data: [DONE]"},
		{"anthropic caller, openai upstream", "/v1/messages", `{"model":"gpt-4o","max_tokens":64,` + ask, "event: message_stop"},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(adm.tab.settlements())
			r := post(t, g.URL, c.path, c.body)
			body := string(r.Body)
			i := strings.Index(body, ": bardo cost=0.000042 savings=0.000001\n\n")
			j := strings.Index(body, c.terminal)
			if r.Status != 200 || i < 0 || j < 0 || i > j || strings.Count(body, ": bardo cost=") != 1 {
				t.Fatalf("trailer at %d, terminal at %d: %s", i, j, body)
			}
			if rest := strings.TrimSpace(body[i+len(": bardo cost=0.000042 savings=0.000001"):]); !strings.HasPrefix(rest, c.terminal) {
				t.Fatalf("something between the trailer and the terminal event: %q", rest)
			}
			ss := adm.tab.settlements()
			if len(ss) != before+1 {
				t.Fatalf("closed %d times", len(ss)-before)
			}
			s := ss[len(ss)-1]
			if !s.Streamed || s.StreamEnd != gateway.StreamEnded || s.Usage == nil || s.Usage.OutputTokens == 0 || !s.Priced ||
				s.UpstreamWait <= 0 || s.FirstByte <= 0 || s.FirstByte > s.Latency {
				t.Fatalf("stream settlement: %+v usage %+v", s, s.Usage)
			}
			if r.Header.Get("X-Remaining-Tokens") != "99000" {
				t.Fatalf("up-front headers missing on the stream: %v", r.Header)
			}
		})
	}
}

// A budget downgrade is routed: the upstream is asked for the cheaper
// model, in the caller's bytes too, and the answer says why.
func TestBillDowngradeRouted(t *testing.T) {
	g, fake, adm := startBilled(t)
	adm.downgrade = "claude-haiku-4-5"
	r := post(t, g.URL, "/v1/messages", `{"model":"claude-opus-4-1","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var sent struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(fake.Last().Body, &sent); err != nil || sent.Model != "claude-haiku-4-5" {
		t.Fatalf("upstream asked for %q (%v)", sent.Model, err)
	}
	if d := r.Header.Get(gateway.HeaderDegraded); !strings.Contains(d, "budget-downgrade:claude-opus-4-1->claude-haiku-4-5") {
		t.Fatalf("X-Bardo-Degraded = %q", d)
	}
	s := adm.tab.settlements()[0]
	if s.Model != "claude-haiku-4-5" || s.Prices.Input.String() != "1" {
		t.Fatalf("settled %+v", s)
	}
}

// A caller identified and then refused is settled on its tab, with the
// refusal's status, and reaches no upstream.
func TestBillRefusalSettledOnTab(t *testing.T) {
	g, fake, adm := startBilled(t)
	adm.refuse = &wire.Error{Status: 429, Kind: wire.ErrRateLimit, Message: "rate limit: 2 requests a minute", RetryAfterMs: 30_000}
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if r.Status != 429 || r.Header.Get("Retry-After") != "30" || r.Header.Get("X-Remaining-Tokens") != "99000" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	ss := adm.tab.settlements()
	if len(ss) != 1 || ss[0].Status != 429 || ss[0].Path != gateway.PathError || ss[0].Upstream {
		t.Fatalf("settled %+v", ss)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("a refused request reached the upstream %d times", n)
	}
}

// An OpenAI caller streaming without include_usage is still billed on the
// upstream's reported tokens, and still gets no usage chunk.
func TestBillStreamAsksUsageAndHidesIt(t *testing.T) {
	g, fake, adm := startBilled(t)
	r := post(t, g.URL, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"x_keep":1},"messages":[{"role":"user","content":"one two"}]}`)
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	var sent struct {
		StreamOptions map[string]any `json:"stream_options"`
	}
	if err := json.Unmarshal(fake.Last().Body, &sent); err != nil || sent.StreamOptions["include_usage"] != true || sent.StreamOptions["x_keep"] != float64(1) {
		t.Fatalf("upstream got stream_options %v (%v)", sent.StreamOptions, err)
	}
	for _, ev := range sseEvents(t, r.Body) {
		if strings.Contains(ev[1], `"usage":{`) {
			t.Fatalf("the caller got a usage chunk it did not ask for: %s", ev[1])
		}
	}
	s := adm.tab.settlements()[0]
	if s.Usage == nil || s.Usage.OutputTokens == 0 || s.Usage.InputTokens == 0 {
		t.Fatalf("usage %+v", s.Usage)
	}
}

// count_tokens passes the request phase: what is counted upstream is what
// would be sent, personal data masked, never the caller's raw body.
func TestCountTokensPassesRequestPhase(t *testing.T) {
	g, fake := startWithUpstream(t, `
[[layer]]
name = "pii"
plugin = "pii.wasm"
`)
	body := `{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"mail jane.doe@example.com the count"}]}`
	r := post(t, g.URL, "/v1/messages/count_tokens", body)
	if r.Status != 200 || r.Header.Get("X-Bardo-Token-Count") != "upstream" {
		t.Fatalf("%d %v %s", r.Status, r.Header, r.Body)
	}
	sent := string(fake.Last().Body)
	if fake.Last().Path != "/v1/messages/count_tokens" || strings.Contains(sent, "jane.doe@example.com") || strings.Contains(sent, "max_tokens") {
		t.Fatalf("upstream counted %s %s", fake.Last().Path, sent)
	}
}

// A layer's internal completion (the compression summary) is folded into
// the tab of the request that caused it, and charged with it.
func TestBillInternalCompletionOnCallersTab(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	g := testgateway.Start(t, `
[[layer]]
name = "compress"
plugin = "compress.wasm"
phases = ["request"]
timeout = "30s"
trusted = true
[layer.config]
budget_tokens = 100
limit_tokens = 100
keep_recent_turns = 1
summary_max_tokens = 64
chunk_tokens = 100
`+pricedPipeline(fake), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	adm := &recordingAdmitter{tab: &recordingTab{}}
	g.Daemon.Gateway.Admitter = adm
	turn := strings.Repeat("the quick brown fox jumps over the lazy dog again and again ", 12)
	var msgs []string
	for i := 0; i < 7; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		msgs = append(msgs, `{"role":"`+role+`","content":"`+turn+`"}`)
	}
	r := post(t, g.URL, "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[`+strings.Join(msgs, ",")+`]}`)
	if r.Status != 200 || r.Header.Get("X-Bardo-Compress") != "compressed" {
		t.Fatalf("%d compress=%q (%s) %s", r.Status, r.Header.Get("X-Bardo-Compress"), r.Header.Get("X-Bardo-Compress-Reason"), r.Body)
	}
	adm.tab.mu.Lock()
	internals := adm.tab.internals
	adm.tab.mu.Unlock()
	if internals != 1 || len(adm.tab.settlements()) != 1 {
		t.Fatalf("internal completions on the tab: %d, closes %d", internals, len(adm.tab.settlements()))
	}
}
