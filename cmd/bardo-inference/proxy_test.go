package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// headerLog records the credential headers of what the proxy sends on.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (h *headerLog) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	for _, k := range credentialHeaders {
		if v := r.Header.Get(k); v != "" {
			h.seen = append(h.seen, k+": "+v)
		}
	}
	h.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

// rig is a gateway in keys mode that accepts x402 (settling through the
// local facilitator, in front of the fake upstream) and the proxy before it.
type rig struct {
	gw      *testgateway.Gateway
	fac     *x402test.Facilitator
	proxy   *httptest.Server
	payer   *x402.Payer
	headers *headerLog
}

func start(t *testing.T, pol x402.Policy) *rig {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	fac := x402test.NewFacilitator(nil)
	t.Cleanup(fac.Close)
	gw := testgateway.Start(t, `
[auth]
mode = "keys"

[storage]
data_dir = "`+t.TempDir()+`"

[x402]
enabled = true
pay_to = "`+payTo+`"
facilitator = "`+fac.URL+`"
facilitator_address = "`+fac.Address.Hex()+`"
`+testgateway.FakeProviders(fake.URL())+`
[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`, testgateway.Options{Env: testgateway.FakeProviderEnv()})
	signer, err := x402.GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	payer, err := x402.NewPayer(signer, pol)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(gw.URL)
	hl := &headerLog{}
	p := &Proxy{Gateway: u, Payer: payer, Base: hl, Log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(p.Handler())
	t.Cleanup(srv.Close)
	return &rig{gw: gw, fac: fac, proxy: srv, payer: payer, headers: hl}
}

func (r *rig) anthropic() anthropic.Client {
	// The tool's own provider key: it must never reach the gateway.
	return anthropic.NewClient(anthropicoption.WithoutEnvironmentDefaults(), anthropicoption.WithBaseURL(r.proxy.URL),
		anthropicoption.WithAPIKey("sk-ant-the-users-own-key"), anthropicoption.WithMaxRetries(0),
		anthropicoption.WithRequestTimeout(20*time.Second))
}

var ask = anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
	Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("what is a health factor?"))}}

// The official SDKs, pointed at the proxy with their own provider keys,
// are answered by the x402 gateway — plain, streamed, both dialects —
// each request paid once from the wallet and settled; no tool credential
// reaches the gateway.
func TestToolsPayThroughTheProxy(t *testing.T) {
	r := start(t, x402.DefaultPolicy())
	ctx := t.Context()

	var resp *http.Response
	an := r.anthropic()
	msg, err := an.Messages.New(ctx, ask, anthropicoption.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("anthropic through the proxy: %v", err)
	}
	if len(msg.Content) == 0 || !strings.Contains(msg.Content[0].Text, "health factor") {
		t.Fatalf("answer %+v", msg.Content)
	}
	if resp.Header.Get(x402.HeaderPaymentResponse) == "" || resp.Header.Get("X-Bardo-Cost") == "" {
		t.Fatalf("a paid answer's headers: %v", resp.Header)
	}

	stream := an.Messages.NewStreaming(ctx, ask)
	var text strings.Builder
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" {
			text.WriteString(ev.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil || !strings.Contains(text.String(), "health factor") {
		t.Fatalf("stream through the proxy: %v %q", err, text.String())
	}

	oa := openai.NewClient(openaioption.WithBaseURL(r.proxy.URL+"/v1/"), openaioption.WithAPIKey("sk-the-users-openai-key"),
		openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(20*time.Second))
	cc, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello there")}})
	if err != nil || len(cc.Choices) == 0 || !strings.Contains(cc.Choices[0].Message.Content, "hello there") {
		t.Fatalf("openai through the proxy: %v %+v", err, cc)
	}

	if st := r.payer.Stats(); st.Paid != 3 {
		t.Errorf("payer stats %+v: want 3 paid", st)
	}
	// The stream settles as it ends; give its settlement a moment.
	deadline := time.Now().Add(5 * time.Second)
	for len(r.fac.Settlements()) < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(r.fac.Settlements()); n != 3 {
		t.Errorf("%d settlements, want 3", n)
	}
	r.headers.mu.Lock()
	defer r.headers.mu.Unlock()
	if len(r.headers.seen) > 0 {
		t.Errorf("credentials forwarded to the gateway: %q", r.headers.seen)
	}
}

// A price over the wallet's per-request limit is not paid: the tool gets a
// 402 in its own dialect naming why, and nothing is signed or settled.
func TestOverTheLimitIsNotPaid(t *testing.T) {
	pol := x402.DefaultPolicy()
	pol.MaxPerRequest = 1 // one millionth of a USDC
	r := start(t, pol)
	an := r.anthropic()
	_, err := an.Messages.New(t.Context(), ask)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 402 || !strings.Contains(ae.Error(), "not paid") ||
		!strings.Contains(ae.Error(), "billing_error") {
		t.Fatalf("over the limit: %v", err)
	}
	if st := r.payer.Stats(); st.Paid != 0 {
		t.Errorf("payer stats %+v", st)
	}
	if n := len(r.fac.Settlements()); n != 0 {
		t.Errorf("%d settlements", n)
	}
	// The same from an OpenAI-dialect tool.
	resp, err := http.Post(r.proxy.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 402 || !strings.Contains(string(b), `"insufficient_quota"`) {
		t.Fatalf("openai dialect over the limit: %d %s", resp.StatusCode, b)
	}
}

// The settings: a wallet is required, the listen address must be
// loopback, limits are exact USDC amounts.
func TestSettings(t *testing.T) {
	key := "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	s, err := load(env("BARDO_WALLET_KEY", key, "BARDO_MAX_PER_REQUEST", "0.25", "BARDO_MAX_PER_DAY", "3"))
	if err != nil || s.policy.MaxPerRequest != 250_000 || s.policy.SpendCap != 3_000_000 || s.listen != "127.0.0.1:8402" ||
		s.gateway.String() != "http://127.0.0.1:8080" {
		t.Fatalf("%+v %v", s, err)
	}
	if _, err := load(env("WALLET", key, "BARDO_WALLET_KEY", "env:WALLET")); err != nil {
		t.Fatalf("env reference: %v", err)
	}
	for name, e := range map[string]func(string) string{
		"no wallet":        env(),
		"remote listen":    env("BARDO_WALLET_KEY", key, "BARDO_INFERENCE_LISTEN", "0.0.0.0:8402"),
		"bad gateway":      env("BARDO_WALLET_KEY", key, "BARDO_GATEWAY_URL", "ftp://x"),
		"too many decimal": env("BARDO_WALLET_KEY", key, "BARDO_MAX_PER_REQUEST", "0.0000001"),
		"negative":         env("BARDO_WALLET_KEY", key, "BARDO_MAX_PER_DAY", "-1"),
		"bad key":          env("BARDO_WALLET_KEY", "0x1234"),
	} {
		if _, err := load(e); err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), key[2:]) {
			t.Errorf("%s: the error shows the key: %v", name, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := run(ctx, env(), slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("run without a wallet")
	}
}
