package x402test_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

// newPayer pays USDC on Base (the fake's default), at most 0.10 USDC a
// request and 1 USDC an hour.
func newPayer(t *testing.T, opts ...x402.PayerOption) *x402.Payer {
	t.Helper()
	k, err := x402.GenerateKeySigner()
	if err != nil {
		t.Fatal(err)
	}
	p, err := x402.NewPayer(k, x402.Policy{
		MaxPerRequest: 100_000, SpendCap: 1_000_000, SpendWindow: time.Hour,
		Tokens: []x402.Token{x402.USDCBase}, MaxValidity: 5 * time.Minute,
	}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func payingClient(srv *x402test.Server, p *x402.Payer) *http.Client {
	return &http.Client{Transport: p.Transport(srv.Client().Transport)}
}

func chatBody(model, prompt string, maxTokens int, stream bool) string {
	b, _ := json.Marshal(map[string]any{
		"model":          model,
		"messages":       []map[string]string{{"role": "user", "content": prompt}},
		"max_tokens":     maxTokens,
		"stream":         stream,
		"stream_options": map[string]bool{"include_usage": stream},
	})
	return string(b)
}

// post sends a chat completion with client; the receipt of its payment, if
// any, lands in *rcpt.
func post(t *testing.T, client *http.Client, srv *x402test.Server, body string, rcpt *x402.Receipt) *http.Response {
	t.Helper()
	ctx := x402.ContextWithReceiptHook(t.Context(), func(r x402.Receipt) { *rcpt = r })
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

type completion struct {
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

func decodeCompletion(t *testing.T, resp *http.Response) completion {
	t.Helper()
	var c completion
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func settlementOf(t *testing.T, resp *http.Response, header string) *x402.SettlementResponse {
	t.Helper()
	sr, err := x402.DecodeSettlementResponse(resp.Header.Get(header))
	if err != nil {
		t.Fatalf("%s: %v", header, err)
	}
	return sr
}

func TestPaidCompletionV2(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("openai/gpt-4o", "hello", 1024, false), &rcpt)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	c := decodeCompletion(t, resp)
	if c.Object != "chat.completion" || c.Choices[0].Message.Content != x402test.Reply("openai/gpt-4o", "hello") {
		t.Fatalf("completion %+v", c)
	}
	sr := settlementOf(t, resp, x402.HeaderPaymentResponse)
	if !sr.Success || sr.Network != x402.NetworkBase || sr.Payer != p.Address().Hex() || sr.Transaction == "" {
		t.Fatalf("settlement %+v", sr)
	}
	// gpt-4o: (9 prompt tokens x 2.5 + 1024 x 10) x 1.05 micro-USD.
	want := x402test.Price(x402test.DefaultModels[0], c.Usage.PromptTokens, 1024)
	if rcpt.Outcome != x402.OutcomePaid || rcpt.Amount != want || want != 10776 {
		t.Fatalf("receipt %+v, want paid %d", rcpt, want)
	}
	st := p.Stats()
	if st.PaidAmount != want || srv.Settled().Uint64() != want || st.Signed != 1 {
		t.Fatalf("payer %+v, server settled %s", st, srv.Settled())
	}
	if cn := srv.Counters(); cn.Challenges != 1 || cn.Paid != 1 || cn.Refusals != 0 {
		t.Fatalf("server counters %+v", cn)
	}
}

func TestPaidCompletionV1(t *testing.T) {
	srv := x402test.New(x402test.Options{Version: 1})
	defer srv.Close()
	p := newPayer(t)
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("openai/gpt-4o-mini", "hi", 64, false), &rcpt)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	sr := settlementOf(t, resp, x402.HeaderXPaymentResponse)
	if !sr.Success || sr.Network != "base" {
		t.Fatalf("settlement %+v", sr)
	}
	if rcpt.Outcome != x402.OutcomePaid || rcpt.Amount != 1000 { // the 0.001 USDC minimum
		t.Fatalf("receipt %+v", rcpt)
	}
}

// sse reads an OpenAI stream: the data payloads, in order.
func sse(t *testing.T, r io.Reader) ([]string, error) {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			out = append(out, d)
		} else if line != "" {
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return out, sc.Err()
}

func TestPaidStream(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("deepseek/deepseek-chat", "stream me", 256, true), &rcpt)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if sr := settlementOf(t, resp, x402.HeaderPaymentResponse); !sr.Success {
		t.Fatalf("settlement %+v", sr)
	}
	data, err := sse(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream does not end with [DONE]: %q", data[len(data)-1])
	}
	var text strings.Builder
	var finish string
	var usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	}
	for _, d := range data[:len(data)-1] {
		var ch struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil {
			t.Fatalf("chunk %q: %v", d, err)
		}
		if ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", ch.Object)
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil {
				text.WriteString(*c.Delta.Content)
			}
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	want := x402test.Reply("deepseek/deepseek-chat", "stream me")
	if text.String() != want || finish != "stop" || usage == nil || usage.CompletionTokens == 0 {
		t.Fatalf("stream text %q finish %q usage %v", text.String(), finish, usage)
	}
	if rcpt.Outcome != x402.OutcomePaid || p.Stats().PaidAmount != srv.Settled().Uint64() {
		t.Fatalf("receipt %+v; payer %+v; settled %s", rcpt, p.Stats(), srv.Settled())
	}
}

func TestFreeModelAndCatalogNeedNoPayment(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	client := payingClient(srv, p)
	var rcpt x402.Receipt
	resp := post(t, client, srv, chatBody("nvidia/gpt-oss-120b", "free?", 64, false), &rcpt)
	if resp.StatusCode != 200 || resp.Header.Get(x402.HeaderPaymentResponse) != "" || rcpt.Outcome != 0 {
		t.Fatalf("free model: status %d, receipt %+v", resp.StatusCode, rcpt)
	}
	mresp, err := client.Get(srv.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Pricing struct {
				Input  float64 `json:"input"`
				Output float64 `json:"output"`
			} `json:"pricing"`
		} `json:"data"`
	}
	if err := json.NewDecoder(mresp.Body).Decode(&list); err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != len(x402test.DefaultModels) || list.Data[0].Pricing.Output != 10 {
		t.Fatalf("catalog %+v", list)
	}
	if st := p.Stats(); st.Signed != 0 {
		t.Fatalf("paid for free things: %+v", st)
	}
}

// TestHonestFailureIsNotCharged: the server verifies the payment, fails
// before settling and releases the nonce. The payer records no payment; the
// same signed payment is then still good (nothing was spent).
func TestHonestFailureIsNotCharged(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	srv.SetFailure(x402test.Failure{Status: 503})

	// The gateway's way, without an http.Client wrapper: send, read the
	// 402, Pay, retry with the header, Complete.
	body := chatBody("openai/gpt-4o", "fail", 100, false)
	first := rawPost(t, srv, body, "", "")
	if first.status != 402 {
		t.Fatalf("first status %d", first.status)
	}
	pm, err := p.Pay(t.Context(), x402.Challenge{Status: first.status, Header: first.header.Get, Body: first.body})
	if err != nil {
		t.Fatal(err)
	}
	retry := rawPost(t, srv, body, pm.Header, pm.Value)
	rcpt := pm.Complete(retry.status, retry.header.Get)
	if retry.status != 503 || rcpt.Outcome != x402.OutcomeFailed || rcpt.SettledOnFailure {
		t.Fatalf("retry %d, receipt %+v", retry.status, rcpt)
	}
	if st := p.Stats(); st.PaidAmount != 0 || st.Failed != 1 || st.Exposure != pm.Amount {
		t.Fatalf("stats %+v", st)
	}
	if srv.Settled().Sign() != 0 {
		t.Fatalf("server settled %s", srv.Settled())
	}
	// Service restored: the unspent authorization is accepted as it is.
	srv.SetFailure(x402test.Failure{})
	again := rawPost(t, srv, body, pm.Header, pm.Value)
	if again.status != 200 || srv.Settled().Uint64() != pm.Amount {
		t.Fatalf("resend after honest failure: %d %s", again.status, again.body)
	}
}

func TestSettleThenFailIsCountedAsLost(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	srv.SetFailure(x402test.Failure{SettleThenFail: true})
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("openai/gpt-4o", "x", 100, false), &rcpt)
	if resp.StatusCode != 500 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if rcpt.Outcome != x402.OutcomeFailed || !rcpt.SettledOnFailure {
		t.Fatalf("receipt %+v", rcpt)
	}
	st := p.Stats()
	if st.PaidAmount != 0 || st.LostAmount != rcpt.Amount || srv.Settled().Uint64() != rcpt.Amount {
		t.Fatalf("payer %+v, server settled %s", st, srv.Settled())
	}
}

func TestSettlementFailure(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	srv.SetFailure(x402test.Failure{SettleError: x402.ReasonInsufficientFunds})
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("openai/gpt-4o", "x", 100, false), &rcpt)
	if resp.StatusCode != 402 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if rcpt.Outcome != x402.OutcomeFailed || rcpt.Settlement == nil || rcpt.Settlement.Success ||
		rcpt.Settlement.ErrorReason != x402.ReasonInsufficientFunds {
		t.Fatalf("receipt %+v", rcpt)
	}
	if p.Stats().PaidAmount != 0 || srv.Settled().Sign() != 0 {
		t.Fatal("a failed settlement was counted")
	}
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if err != nil || pr.Error != x402.ReasonInsufficientFunds {
		t.Fatalf("challenge after failed settlement: %+v, %v", pr, err)
	}
}

// TestCutStreamAfterPayment: the payment was settled when the stream began,
// so the payer records it; that the stream then broke is for the gateway
// to handle (it must not bill its caller for an answer it could not
// deliver).
func TestCutStreamAfterPayment(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	srv.SetFailure(x402test.Failure{CutStreamAfter: 2})
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("openai/gpt-4o", "cut me off", 100, true), &rcpt)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	data, err := sse(t, resp.Body)
	if err == nil {
		t.Fatalf("cut stream read without error: %q", data)
	}
	if len(data) != 3 || data[len(data)-1] == "[DONE]" {
		t.Fatalf("frames before the cut: %q", data)
	}
	if rcpt.Outcome != x402.OutcomePaid || srv.Settled().Uint64() != rcpt.Amount {
		t.Fatalf("receipt %+v, settled %s", rcpt, srv.Settled())
	}
}

type rawResponse struct {
	status int
	header http.Header
	body   []byte
}

// rawPost posts body with an optional payment header, without the paying
// transport.
func rawPost(t *testing.T, srv *x402test.Server, body, name, value string) rawResponse {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(body))
	if name != "" {
		req.Header.Set(name, value)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResponse{resp.StatusCode, resp.Header, b}
}

func challengeError(t *testing.T, r rawResponse) string {
	t.Helper()
	pr, err := x402.ParseChallenge(x402.Challenge{Status: r.status, Header: r.header.Get, Body: r.body})
	if err != nil {
		t.Fatalf("status %d: %v", r.status, err)
	}
	return pr.Error
}

func TestReplayAndTamperingRefused(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	body := chatBody("openai/gpt-4o", "once", 100, false)
	first := rawPost(t, srv, body, "", "")
	pm, err := p.Pay(t.Context(), x402.Challenge{Status: first.status, Header: first.header.Get, Body: first.body})
	if err != nil {
		t.Fatal(err)
	}
	if r := rawPost(t, srv, body, pm.Header, pm.Value); r.status != 200 {
		t.Fatalf("paid: %d %s", r.status, r.body)
	}
	// The same payment again.
	r := rawPost(t, srv, body, pm.Header, pm.Value)
	if r.status != 402 || challengeError(t, r) != x402.ReasonNonceUsed {
		t.Fatalf("replay: %d %q", r.status, challengeError(t, r))
	}

	// A fresh payment whose value is raised after signing.
	pm2, err := p.Pay(t.Context(), x402.Challenge{Status: first.status, Header: first.header.Get, Body: first.body})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := x402.DecodePaymentPayload(pm2.Header, pm2.Value)
	v, _ := new(big.Int).SetString(payload.Payload.Authorization.Value, 10)
	payload.Payload.Authorization.Value = v.Add(v, big.NewInt(1)).String()
	tampered, _ := x402.EncodeHeader(payload)
	r = rawPost(t, srv, body, pm2.Header, tampered)
	if r.status != 402 || challengeError(t, r) != x402.ReasonSignature {
		t.Fatalf("tampered: %d %q", r.status, challengeError(t, r))
	}
	// Garbage in the header is a 400.
	r = rawPost(t, srv, body, x402.HeaderPaymentSignature, "not base64 !")
	if r.status != 400 || !strings.HasPrefix(challengeErrorAny(r), x402.ReasonInvalidPayload) {
		t.Fatalf("garbage: %d %s", r.status, challengeErrorAny(r))
	}
	if len(srv.Settlements()) != 1 {
		t.Fatalf("settlements %d, want 1", len(srv.Settlements()))
	}
}

func challengeErrorAny(r rawResponse) string {
	pr, err := x402.DecodePaymentRequired(r.header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return err.Error()
	}
	return pr.Error
}

func TestOverCeilingRefusedBeforeSigning(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(chatBody("anthropic/claude-sonnet-4.6", "expensive", 16384, false)))
	_, err := payingClient(srv, p).Do(req)
	if !errors.Is(err, x402.ErrOverPriceCeiling) {
		t.Fatalf("error %v, want over the price ceiling", err)
	}
	if st := p.Stats(); st.Signed != 0 || st.Refused != 1 || st.Exposure != 0 {
		t.Fatalf("stats %+v", st)
	}
	if cn := srv.Counters(); cn.Challenges != 1 || cn.Refusals != 0 || len(srv.Settlements()) != 0 {
		t.Fatalf("server saw %+v", cn)
	}
}

func TestNetworkPolicy(t *testing.T) {
	srv := x402test.New(x402test.Options{Token: x402.USDCBaseSepolia})
	defer srv.Close()
	var rcpt x402.Receipt
	// A Base-only payer refuses Base Sepolia.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(chatBody("openai/gpt-4o", "x", 10, false)))
	if _, err := payingClient(srv, newPayer(t)).Do(req); !errors.Is(err, x402.ErrNoAcceptableOffer) {
		t.Fatalf("Base payer on Sepolia: %v", err)
	}
	// One that allows it pays, with the Sepolia domain ("USDC", "2").
	k, _ := x402.GenerateKeySigner()
	pol := x402.DefaultPolicy()
	pol.Tokens = []x402.Token{x402.USDCBaseSepolia}
	sp, err := x402.NewPayer(k, pol)
	if err != nil {
		t.Fatal(err)
	}
	resp := post(t, payingClient(srv, sp), srv, chatBody("openai/gpt-4o", "x", 10, false), &rcpt)
	if resp.StatusCode != 200 || rcpt.Outcome != x402.OutcomePaid || rcpt.Network != x402.NetworkBaseSepolia {
		t.Fatalf("Sepolia payer: %d %+v", resp.StatusCode, rcpt)
	}
}

// TestExpiredPaymentRefused: a payer whose clock is an hour slow signs an
// authorization the server finds expired.
func TestExpiredPaymentRefused(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t, x402.WithClock(func() time.Time { return time.Now().Add(-time.Hour) }))
	var rcpt x402.Receipt
	resp := post(t, payingClient(srv, p), srv, chatBody("openai/gpt-4o", "late", 10, false), &rcpt)
	if resp.StatusCode != 402 || rcpt.Outcome != x402.OutcomeFailed {
		t.Fatalf("status %d receipt %+v", resp.StatusCode, rcpt)
	}
	pr, _ := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if pr.Error != x402.ReasonValidBefore {
		t.Fatalf("error %q", pr.Error)
	}
}

func TestConcurrentPaidRequests(t *testing.T) {
	srv := x402test.New(x402test.Options{})
	defer srv.Close()
	p := newPayer(t)
	client := payingClient(srv, p)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+"/v1/chat/completions",
				bytes.NewReader([]byte(chatBody("openai/gpt-4o-mini", fmt.Sprint("q", i), 32, i%2 == 0))))
			resp, err := client.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := p.Stats(); st.Paid != n || st.PaidAmount != srv.Settled().Uint64() || len(srv.Settlements()) != n {
		t.Fatalf("payer %+v, server %d settlements for %s", st, len(srv.Settlements()), srv.Settled())
	}
}

func TestPriceMatchesBlockRun(t *testing.T) {
	// Published BlockRun charges for an 18-token prompt at max_tokens 1024:
	// gpt-4o $0.0108, claude-sonnet $0.0162, gpt-4o-mini the $0.001 floor.
	for _, c := range []struct {
		m    x402test.Model
		want uint64
	}{
		{x402test.DefaultModels[0], 10800},
		{x402test.DefaultModels[2], 16200},
		{x402test.DefaultModels[1], 1000},
	} {
		got := x402test.Price(c.m, 18, 1024)
		if (got+50)/100 != c.want/100 { // published to four decimals
			t.Errorf("%s: %d, want about %d", c.m.ID, got, c.want)
		}
	}
	if x402test.Price(x402test.DefaultModels[4], 18, 1024) != 0 {
		t.Error("free model priced")
	}
}
