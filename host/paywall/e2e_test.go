package paywall_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

// e2e is a gateway in keys mode accepting x402, in front of the fake
// upstream, settling through the local facilitator.
type e2e struct {
	gw  *testgateway.Gateway
	fac *x402test.Facilitator
	an  anthropic.Client
	oa  openai.Client
}

func startE2E(t testing.TB) *e2e { return startE2EIn(t, t.TempDir()) }

func startE2EIn(t testing.TB, dataDir string) *e2e { return startE2EWith(t, dataDir, "") }

// startE2EWith starts the gateway with more [x402] keys (x402 lines).
func startE2EWith(t testing.TB, dataDir, x402 string) *e2e {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	fac := x402test.NewFacilitator(nil)
	t.Cleanup(fac.Close)
	toml := `
[auth]
mode = "keys"

[storage]
data_dir = "` + dataDir + `"

[x402]
enabled = true
pay_to = "` + payTo.Hex() + `"
facilitator = "` + fac.URL + `"
facilitator_address = "` + fac.Address.Hex() + `"
` + x402 + testgateway.FakeProviders(fake.URL()) + `
[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`
	gw := testgateway.Start(t, toml, testgateway.Options{Env: testgateway.FakeProviderEnv()})
	// Neither SDK holds a gateway key: "sk-none" is not a bardo_sk_ key,
	// so the request carries no credential the gateway knows.
	return &e2e{gw: gw, fac: fac,
		an: anthropic.NewClient(anthropicoption.WithoutEnvironmentDefaults(), anthropicoption.WithBaseURL(gw.URL),
			anthropicoption.WithAPIKey("sk-none"), anthropicoption.WithMaxRetries(0), anthropicoption.WithRequestTimeout(20*time.Second)),
		oa: openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey("sk-none"),
			openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(20*time.Second)),
	}
}

var anthropicParams = anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
	Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}

// sign answers the challenge of a 402 with a v2 payment by key.
func sign(t testing.TB, resp *http.Response, key *ecdsa.PrivateKey) string {
	t.Helper()
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED: %v", err)
	}
	o := pr.Accepts[0]
	v, _ := new(big.Int).SetString(o.Amount, 10)
	now := time.Now().Unix()
	a := x402.TransferAuthorization{From: crypto.PubkeyToAddress(key.PublicKey), To: common.HexToAddress(o.PayTo), Value: v,
		ValidAfter: big.NewInt(now - 60), ValidBefore: big.NewInt(now + 100)}
	copy(a.Nonce[:], crypto.Keccak256(big.NewInt(time.Now().UnixNano()).Bytes(), []byte(t.Name())))
	d := x402.Domain{Name: "USD Coin", Version: "2", ChainID: 8453, VerifyingContract: common.HexToAddress(o.Asset)}
	sig, err := crypto.Sign(x402.TypedDataHash(d, &a).Bytes(), key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	h, err := x402.EncodeHeader(&x402.PaymentPayload{X402Version: 2, Resource: pr.Resource, Accepted: &o,
		Payload: x402.ExactEVMPayload{Signature: "0x" + common.Bytes2Hex(sig), Authorization: a.Wire()}})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Both official SDKs see the 402 as an error of their own; a paid request
// is served with PAYMENT-RESPONSE and settled once; its replay is refused.
func TestGatewayExact(t *testing.T) {
	e := startE2E(t)
	ctx := t.Context()

	var resp *http.Response
	_, err := e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithResponseInto(&resp))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 402 || !strings.Contains(ae.Error(), "payment required") {
		t.Fatalf("anthropic SDK without payment: %v", err)
	}
	if resp.Header.Get(x402.HeaderPaymentRequired) == "" || resp.Header.Get("X-Bardo-Quote") == "" {
		t.Fatalf("402 headers %v", resp.Header)
	}
	var oresp *http.Response
	_, err = e.oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}}, openaioption.WithResponseInto(&oresp))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 402 || oresp.Header.Get(x402.HeaderPaymentRequired) == "" {
		t.Fatalf("openai SDK without payment: %v", err)
	}
	if n := len(e.fac.Settlements()); n != 0 {
		t.Fatalf("%d settlements before any payment", n)
	}

	key := wallet(t)
	pay := sign(t, resp, key)
	var paid *http.Response
	msg, err := e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, pay),
		anthropicoption.WithResponseInto(&paid))
	if err != nil {
		t.Fatalf("paid request: %v", err)
	}
	if len(msg.Content) == 0 {
		t.Fatalf("empty answer %+v", msg)
	}
	res, err := x402.DecodeSettlementResponse(paid.Header.Get(x402.HeaderPaymentResponse))
	if err != nil || !res.Success || res.Payer != crypto.PubkeyToAddress(key.PublicKey).Hex() {
		t.Fatalf("PAYMENT-RESPONSE %+v (%v)", res, err)
	}
	if n := len(e.fac.Settlements()); n != 1 {
		t.Fatalf("%d settlements, want 1", n)
	}

	// The same payment again: refused, nothing served or settled.
	_, err = e.an.Messages.New(ctx, anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, pay),
		anthropicoption.WithResponseInto(&resp))
	if !errors.As(err, &ae) || ae.StatusCode != 402 || !strings.Contains(ae.Error(), x402.ReasonNonceUsed) {
		t.Fatalf("replay: %v", err)
	}
	if n := len(e.fac.Settlements()); n != 1 {
		t.Fatalf("%d settlements after a replay, want 1", n)
	}

	// A stream is settled at its end, the answer in its trailer. Its body
	// differs ("stream": true), so its price does: it gets its own 402.
	unpaid := e.an.Messages.NewStreaming(context.WithoutCancel(ctx), anthropicParams, anthropicoption.WithResponseInto(&resp))
	for unpaid.Next() {
	}
	if !errors.As(unpaid.Err(), &ae) || ae.StatusCode != 402 {
		t.Fatalf("unpaid stream: %v", unpaid.Err())
	}
	pay = sign(t, resp, key)
	stream := e.an.Messages.NewStreaming(context.WithoutCancel(ctx), anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, pay))
	for stream.Next() {
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("paid stream: %v", err)
	}
	if n := len(e.fac.Settlements()); n != 2 {
		t.Fatalf("%d settlements after the stream, want 2", n)
	}
}

// An upto payment through the daemon: served, and settled for at most its
// maximum (what the fake's usage costs; 0 puts nothing on chain).
func TestGatewayUpto(t *testing.T) {
	e := startE2E(t)
	var resp *http.Response
	_, err := e.an.Messages.New(t.Context(), anthropicParams, anthropicoption.WithResponseInto(&resp))
	if err == nil {
		t.Fatal("served without payment")
	}
	pr, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
	if err != nil || len(pr.Accepts) != 2 || pr.Accepts[1].Scheme != x402.SchemeUpto {
		t.Fatalf("challenge %+v (%v)", pr, err)
	}
	o := pr.Accepts[1]
	key := wallet(t)
	maxAmt, _ := new(big.Int).SetString(o.Amount, 10)
	now := time.Now().Unix()
	w := x402.Permit2Witness{Token: common.HexToAddress(o.Asset), Amount: maxAmt, Spender: x402.UptoProxyAddress,
		Nonce: big.NewInt(now), Deadline: big.NewInt(now + 100), To: common.HexToAddress(o.PayTo), Facilitator: e.fac.Address,
		ValidAfter: big.NewInt(now - 60)}
	sig, err := crypto.Sign(w.Digest(8453).Bytes(), key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	h, _ := x402.EncodeHeader(&x402.PaymentPayload{X402Version: 2, Accepted: &o, Payload: x402.ExactEVMPayload{
		Signature: "0x" + common.Bytes2Hex(sig), Permit2Authorization: w.Wire(crypto.PubkeyToAddress(key.PublicKey))}})
	var paid *http.Response
	if _, err := e.an.Messages.New(t.Context(), anthropicParams, anthropicoption.WithHeader(x402.HeaderPaymentSignature, h),
		anthropicoption.WithResponseInto(&paid)); err != nil {
		t.Fatalf("paid upto: %v", err)
	}
	res, err := x402.DecodeSettlementResponse(paid.Header.Get(x402.HeaderPaymentResponse))
	if err != nil || !res.Success {
		t.Fatalf("PAYMENT-RESPONSE %+v (%v)", res, err)
	}
	amt, ok := new(big.Int).SetString(res.Amount, 10)
	if !ok || amt.Cmp(maxAmt) > 0 {
		t.Fatalf("settled %q, max %s", res.Amount, maxAmt)
	}
	if amt.Sign() == 0 || amt.Cmp(maxAmt) >= 0 {
		t.Errorf("settled %s of a %s maximum: want the usage's price, below the estimate", amt, maxAmt)
	}
	if n := len(e.fac.Settlements()); (amt.Sign() > 0) != (n == 1) {
		t.Fatalf("settled %s with %d on-chain settlements", amt, n)
	}
	t.Logf("upto: max %s, settled %s (X-Bardo-Cost %s)", maxAmt, amt, paid.Header.Get("X-Bardo-Cost"))
}
