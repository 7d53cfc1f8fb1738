package sdktest

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// pricedTOML is FakeProviders' two providers with static prices for the
// models these tests ask for.
func pricedTOML(fakeURL string) string {
	return `
[[provider]]
name = "up"
plugin = "openai-compatible.wasm"
base_url = "` + fakeURL + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true

[[provider.model]]
id = "gpt-4o"
input_price = "2.50"
output_price = "10"

[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + fakeURL + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true

[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`
}

// paidKey creates an account of tier with balance (micro-USD) and a key
// limited to perMinute requests (0: the tier's), returning the key.
func paidKey(t *testing.T, dataDir, id string, balance int64, perMinute int) string {
	t.Helper()
	c := context.Background()
	s, err := sqlite.Open(c, filepath.Join(dataDir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	secret, err := auth.LoadSecret(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAccount(c, store.Account{ID: id, Name: id, Tier: store.TierPro}); err != nil {
		t.Fatal(err)
	}
	if balance > 0 {
		if _, err := s.TopUp(c, id, balance, "sdk test"); err != nil {
			t.Fatal(err)
		}
	}
	tok, _, err := auth.New(s, secret, auth.Options{}).Create(c, id, auth.KeySpec{Name: id, RateLimit: perMinute})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// Paid requests through the official SDKs: the stream's cost trailer (an
// SSE comment) is skipped by both SDKs' decoders and accumulators — the
// same events, text and usage as a non-paid stream, no extra chunk — while
// a JSON answer carries the figures in headers; a 402 (balance) and a 429
// (rate limit) are each SDK's own error type with the status and, for the
// 429, Retry-After.
func TestPaidThroughSDKs(t *testing.T) {
	dataDir := t.TempDir()
	key := paidKey(t, dataDir, "acct_sdk_paid", 5*store.MicroUSD, 1000)
	poor := paidKey(t, dataDir, "acct_sdk_poor", 10, 1000) // $0.00001
	limited := paidKey(t, dataDir, "acct_sdk_limited", 5*store.MicroUSD, 1)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, pricedTOML(fake.URL())+keysTOML(dataDir), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	const prompt = "what does this cost?"
	want := "echo: " + prompt

	t.Run("openai stream", func(t *testing.T) {
		c := oaClient(gw.URL, key)
		var resp *http.Response
		s := c.Chat.Completions.NewStreaming(ctx(t), openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}}, openaioption.WithResponseInto(&resp))
		var acc openai.ChatCompletionAccumulator
		for s.Next() {
			ch := s.Current()
			if len(ch.Choices) == 0 {
				t.Errorf("a chunk without choices reached the caller (it did not ask for usage): %s", ch.RawJSON())
			}
			acc.AddChunk(ch)
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != want {
			t.Errorf("accumulated %+v", acc.Choices)
		}
		if resp.Header.Get("X-Bardo-Balance") == "" {
			t.Error("no X-Bardo-Balance up front")
		}
	})
	t.Run("anthropic stream", func(t *testing.T) {
		c := anClient(gw.URL, key)
		s := c.Messages.NewStreaming(ctx(t), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256,
			Messages: []anthropic.MessageParam{userText(prompt)}})
		var msg anthropic.Message
		var types []string
		for s.Next() {
			ev := s.Current()
			types = append(types, ev.Type)
			if err := msg.Accumulate(ev); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		checkEventOrder(t, types)
		if len(msg.Content) != 1 || msg.Content[0].Text != want {
			t.Errorf("accumulated %s", msg.RawJSON())
		}
		checkANUsage(t, msg.Usage, tokens(prompt), tokens(want))
	})
	t.Run("json figures", func(t *testing.T) {
		c := anClient(gw.URL, key)
		var resp *http.Response
		if _, err := c.Messages.New(ctx(t), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256,
			Messages: []anthropic.MessageParam{userText(prompt)}}, anthropicoption.WithResponseInto(&resp)); err != nil {
			t.Fatal(err)
		}
		// Sonnet $3 / $15, pro (15 %): input ⌈20/4⌉ = 5, output ⌈26/4⌉ = 7:
		// 5×3 + 7×15 = 120 µUSD, charged ⌈138⌉.
		if got := resp.Header.Get("X-Bardo-Cost"); got != pricing.Micros(138).String() {
			t.Errorf("X-Bardo-Cost %q, want %s", got, pricing.Micros(138))
		}
		if resp.Header.Get("X-Bardo-Savings") == "" || resp.Header.Get("X-Bardo-Balance") == "" {
			t.Errorf("figures missing: %v", resp.Header)
		}
	})
	t.Run("402", func(t *testing.T) {
		var oe *openai.Error
		oc := oaClient(gw.URL, poor)
		_, err := oc.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		if !errors.As(err, &oe) || oe.StatusCode != 402 {
			t.Errorf("openai: %v", err)
		}
		var ae *anthropic.Error
		ac := anClient(gw.URL, poor)
		_, err = ac.Messages.New(ctx(t), anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256,
			Messages: []anthropic.MessageParam{userText(prompt)}})
		if !errors.As(err, &ae) || ae.StatusCode != 402 {
			t.Errorf("anthropic: %v", err)
		}
	})
	t.Run("429", func(t *testing.T) {
		c := anClient(gw.URL, limited)
		params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256, Messages: []anthropic.MessageParam{userText(prompt)}}
		if _, err := c.Messages.New(ctx(t), params); err != nil {
			t.Fatalf("the first request of the minute: %v", err)
		}
		var ae *anthropic.Error
		_, err := c.Messages.New(ctx(t), params)
		if !errors.As(err, &ae) || ae.StatusCode != 429 || !strings.Contains(ae.RawJSON(), "rate_limit_error") {
			t.Fatalf("anthropic: %v", err)
		}
		if ra, err := strconv.Atoi(ae.Response.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 60 {
			t.Errorf("Retry-After %q", ae.Response.Header.Get("Retry-After"))
		}
		var oe *openai.Error
		oc := oaClient(gw.URL, limited)
		_, err = oc.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{Model: "gpt-4o",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)}})
		if !errors.As(err, &oe) || oe.StatusCode != 429 {
			t.Errorf("openai: %v", err)
		}
	})
}
