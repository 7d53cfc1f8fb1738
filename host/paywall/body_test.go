package paywall_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/paywall"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/x402test"
)

// The paywall's 402 body members: x402 v1's PaymentRequired (exact in
// v1's form) and the spec's quote.
func TestChallengeBody(t *testing.T) {
	r := newRig(t)
	c, e := r.keys.Admit(context.Background(), admission(auth.HTTPHeader{}))
	if e == nil || e.Status != 402 {
		t.Fatalf("no credential: %+v", e)
	}
	var b paywall.Body
	if err := json.Unmarshal(c.ErrorMembers, &b); err != nil {
		t.Fatalf("members %s: %v", c.ErrorMembers, err)
	}
	if b.X402Version != 1 || len(b.Accepts) != 1 {
		t.Fatalf("body %s", c.ErrorMembers)
	}
	o := b.Accepts[0]
	if o.Scheme != "exact" || o.Network != "base" || o.MaxAmountRequired != price || o.Amount != "" || o.Resource != "/v1/messages" ||
		o.MimeType != "application/json" || o.Description == "" || o.PayTo != payTo.Hex() || o.Asset != x402.USDCBase.Address.Hex() ||
		o.MaxTimeoutSeconds != 120 || string(o.Extra) != `{"name":"USD Coin","version":"2"}` {
		t.Errorf("v1 offer %+v", o)
	}
	if b.Scheme != "exact" || b.Recipient != payTo.Hex() || b.MaxAmount != price {
		t.Errorf("scheme %q recipient %q maxAmount %q", b.Scheme, b.Recipient, b.MaxAmount)
	}
	if d := time.Until(time.Unix(b.Expiry, 0)); d < 100*time.Second || d > 130*time.Second {
		t.Errorf("expiry in %v, want ~120 s", d)
	}
	q := b.Inference
	if q.EstimatedInputTokens != 1000 || q.EstimatedOutputTokens != 1000 || q.RoutedFrom != "claude-sonnet-4" || !q.CacheEligible ||
		q.Optimizations == nil || q.Price.TotalCharged != 0.0216 || q.Price.ProviderCost != 0.018 || q.Price.InputTokens != 1000 {
		t.Errorf("inference %+v", q)
	}
	// The wire names are the spec's.
	for _, name := range []string{`"estimatedInputTokens":1000`, `"estimatedOutputTokens":1000`, `"routedFrom":"claude-sonnet-4"`,
		`"cacheEligible":true`, `"optimizations":[]`, `"priceQuote":{"input_tokens":1000,"output_tokens":1000,"provider_cost":0.018,` +
			`"routing_discount":0,"cache_discount":0,"compression_discount":0,"margin":0.0036,"total_charged":0.0216}`} {
		if !strings.Contains(string(c.ErrorMembers), name) {
			t.Errorf("body lacks %s: %s", name, c.ErrorMembers)
		}
	}

	// A refusal carries them too, with the fresh offer.
	p := newPayment(t, r, wallet(t))
	p.sig = make([]byte, 65)
	c, e = r.keys.Admit(context.Background(), admission(p.headers(t)))
	if e == nil || e.Status != 402 || !json.Valid(c.ErrorMembers) || !strings.Contains(string(c.ErrorMembers), `"x402Version":1`) {
		t.Fatalf("refusal %+v members %s", e, c.ErrorMembers)
	}
}

// Through the daemon, each dialect's 402 body is its own error object with
// the members beside it, and the official SDKs still raise their 402.
func TestChallengeBodyDialects(t *testing.T) {
	e := startE2E(t)
	for _, tc := range []struct{ path, body, errType string }{
		{"/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "billing_error"},
		{"/v1/chat/completions", `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`, "insufficient_quota"},
		{"/v1/responses", `{"model":"claude-sonnet-4-5","max_output_tokens":64,"input":"hi","store":false}`, "insufficient_quota"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.gw.URL+tc.path, strings.NewReader(tc.body))
		req.Header.Set("content-type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 402 || resp.Header.Get(x402.HeaderPaymentRequired) == "" {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, raw)
		}
		var got struct {
			Type  string
			Error struct {
				Type    string
				Message string
			}
			paywall.Body
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%s: %v: %s", tc.path, err, raw)
		}
		if got.Error.Type != tc.errType || !strings.Contains(got.Error.Message, "payment required") {
			t.Errorf("%s: dialect error %+v in %s", tc.path, got.Error, raw)
		}
		if tc.path == "/v1/messages" && got.Type != "error" {
			t.Errorf("anthropic body type %q", got.Type)
		}
		if got.X402Version != 1 || len(got.Accepts) != 1 || got.Accepts[0].Network != "base" || got.Scheme != "upto" ||
			got.Inference.RoutedFrom == "" || got.Inference.Price.TotalCharged <= 0 {
			t.Errorf("%s: members %s", tc.path, raw)
		}
	}

	// The Responses SDK raises its 402 too (the Messages and Chat SDKs:
	// TestGatewayExact), stored (store's default) or not.
	for _, store := range []bool{false, true} {
		_, err := e.oa.Responses.New(t.Context(), responses.ResponseNewParams{Model: "claude-sonnet-4-5",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}, Store: openai.Bool(store)})
		var oe *openai.Error
		if !errors.As(err, &oe) || oe.StatusCode != 402 {
			t.Fatalf("responses SDK, store %v: %v", store, err)
		}
	}
}

// A Responses request paid per request with store's default is served,
// settled once, and its answer kept under the paying wallet — the
// engine's admission names the tenant (before, the front admitted it as a
// read first and answered 401).
func TestResponsesPaidAndStored(t *testing.T) {
	e := startE2E(t)
	const body = `{"model":"claude-sonnet-4-5","input":"what is a health factor?","max_output_tokens":64}`
	post := func(h http.Header) (*http.Response, []byte) { return postJSON(t, e.gw.URL+"/v1/responses", body, h) }
	resp, raw := post(http.Header{})
	if resp.StatusCode != 402 {
		t.Fatalf("unpaid: %d %s", resp.StatusCode, raw)
	}
	key := wallet(t)
	h := http.Header{}
	h.Set(x402.HeaderPaymentSignature, sign(t, resp, key))
	paid, raw := post(h)
	if paid.StatusCode != 200 || paid.Header.Get(x402.HeaderPaymentResponse) == "" {
		t.Fatalf("paid: %d %s", paid.StatusCode, raw)
	}
	var answer struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil || answer.ID == "" {
		t.Fatalf("answer %s: %v", raw, err)
	}
	if n := len(e.fac.Settlements()); n != 1 {
		t.Fatalf("%d settlements, want 1", n)
	}
	tenant := paywall.TenantPrefix + strings.ToLower(crypto.PubkeyToAddress(key.PublicKey).Hex())
	// Through the gateway's own store of answers: they are readable at once
	// and reach the disk behind the request (store.BufferedResponses).
	if _, err := e.gw.Daemon.Gateway.Responses.GetResponse(t.Context(), tenant, answer.ID); err != nil {
		t.Fatalf("the paid answer is not stored under %s: %v\n%s", tenant, err, e.gw.LogLines.String())
	}
}

// An x402 v1 client, as specs/x402-specification-v1.md has it: it reads
// the requirements from the 402's JSON body (ignoring the v2 header),
// signs the v1 offer's EIP-3009 authorization (chain from the v1 network
// name, domain from extra, value maxAmountRequired), pays with X-PAYMENT
// and reads X-PAYMENT-RESPONSE; the facilitator settles the v1 offer.
func TestGatewayV1(t *testing.T) {
	e := startE2E(t)
	const body = `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi from v1"}]}`
	post := func(h http.Header) (*http.Response, []byte) {
		h.Set("anthropic-version", "2023-06-01")
		return postJSON(t, e.gw.URL+"/v1/messages", body, h)
	}
	resp, raw := post(http.Header{})
	var pr x402.PaymentRequired
	if err := json.Unmarshal(raw, &struct {
		X402Version *int                        `json:"x402Version"`
		Accepts     *[]x402.PaymentRequirements `json:"accepts"`
	}{&pr.X402Version, &pr.Accepts}); err != nil || resp.StatusCode != 402 || pr.X402Version != 1 || len(pr.Accepts) != 1 {
		t.Fatalf("402 body %d %s (%v)", resp.StatusCode, raw, err)
	}
	o := pr.Accepts[0]
	chain, err := x402.ChainID(o.Network)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := o.ExactExtra()
	if err != nil {
		t.Fatal(err)
	}
	key := wallet(t)
	v, _ := new(big.Int).SetString(o.MaxAmountRequired, 10)
	now := time.Now().Unix()
	a := x402.TransferAuthorization{From: crypto.PubkeyToAddress(key.PublicKey), To: common.HexToAddress(o.PayTo), Value: v,
		ValidAfter: big.NewInt(now - 600), ValidBefore: big.NewInt(now + o.MaxTimeoutSeconds)}
	copy(a.Nonce[:], crypto.Keccak256([]byte(t.Name()), big.NewInt(time.Now().UnixNano()).Bytes()))
	sig, err := crypto.Sign(x402.TypedDataHash(x402.Domain{Name: extra.Name, Version: extra.Version, ChainID: chain,
		VerifyingContract: common.HexToAddress(o.Asset)}, &a).Bytes(), key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	pay, err := x402.EncodeHeader(&x402.PaymentPayload{X402Version: 1, Scheme: o.Scheme, Network: o.Network,
		Payload: x402.ExactEVMPayload{Signature: "0x" + common.Bytes2Hex(sig), Authorization: a.Wire()}})
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(x402.HeaderXPayment, pay)
	resp, raw = post(h)
	if resp.StatusCode != 200 {
		t.Fatalf("paid v1: %d %s", resp.StatusCode, raw)
	}
	res, err := x402.DecodeSettlementResponse(resp.Header.Get(x402.HeaderXPaymentResponse))
	if err != nil || !res.Success || res.Network != "base" || res.Payer != a.From.Hex() {
		t.Fatalf("X-PAYMENT-RESPONSE %+v (%v)", res, err)
	}
	if resp.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Errorf("a v1 payment answered with v2's PAYMENT-RESPONSE too")
	}
	if n := len(e.fac.Settlements()); n != 1 {
		t.Fatalf("%d settlements, want 1", n)
	}
	// Replayed: refused with the v1 offer still in the body.
	resp, raw = post(h)
	if resp.StatusCode != 402 || !strings.Contains(string(raw), x402.ReasonNonceUsed) || !strings.Contains(string(raw), `"x402Version":1`) {
		t.Fatalf("replay: %d %s", resp.StatusCode, raw)
	}
}

// A paid embeddings request (an upstream model) gets the same 402 body,
// and a v1 client pays it with X-PAYMENT.
func TestEmbeddingsChallengeBody(t *testing.T) {
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
pay_to = "`+payTo.Hex()+`"
facilitator = "`+fac.URL+`"

[[provider]]
name = "emb"
plugin = "openai-compatible.wasm"
base_url = "`+fake.URL()+`/v1"
credential = "env:UP_KEY"
models = ["text-embedding-*"]
trusted = true

[[provider.model]]
id = "text-embedding-3-small"
input_price = "0.02"
`, testgateway.Options{Env: testgateway.FakeProviderEnv()})
	post := func(h http.Header) (*http.Response, []byte) {
		return postJSON(t, gw.URL+"/v1/embeddings", `{"model":"text-embedding-3-small","input":"rotate the keys"}`, h)
	}
	resp, raw := post(http.Header{})
	var got struct {
		Error struct{ Type string }
		paywall.Body
	}
	if err := json.Unmarshal(raw, &got); err != nil || resp.StatusCode != 402 || got.Error.Type != "insufficient_quota" ||
		got.X402Version != 1 || len(got.Accepts) != 1 || got.Inference.RoutedFrom != "text-embedding-3-small" {
		t.Fatalf("402 %d %s (%v)", resp.StatusCode, raw, err)
	}
	key := wallet(t)
	h := http.Header{}
	h.Set(x402.HeaderXPayment, signV1(t, got.Accepts[0], key))
	resp, raw = post(h)
	if resp.StatusCode != 200 {
		t.Fatalf("paid v1 embeddings: %d %s", resp.StatusCode, raw)
	}
	if res, err := x402.DecodeSettlementResponse(resp.Header.Get(x402.HeaderXPaymentResponse)); err != nil || !res.Success {
		t.Fatalf("X-PAYMENT-RESPONSE %+v (%v)", res, err)
	}
}

// signV1 is a v1 client's X-PAYMENT for a v1 exact offer.
func signV1(t *testing.T, o x402.PaymentRequirements, key *ecdsa.PrivateKey) string {
	t.Helper()
	chain, err := x402.ChainID(o.Network)
	if err != nil {
		t.Fatal(err)
	}
	extra, err := o.ExactExtra()
	if err != nil {
		t.Fatal(err)
	}
	v, _ := new(big.Int).SetString(o.MaxAmountRequired, 10)
	now := time.Now().Unix()
	a := x402.TransferAuthorization{From: crypto.PubkeyToAddress(key.PublicKey), To: common.HexToAddress(o.PayTo), Value: v,
		ValidAfter: big.NewInt(now - 600), ValidBefore: big.NewInt(now + o.MaxTimeoutSeconds)}
	copy(a.Nonce[:], crypto.Keccak256([]byte(t.Name()), big.NewInt(time.Now().UnixNano()).Bytes()))
	sig, err := crypto.Sign(x402.TypedDataHash(x402.Domain{Name: extra.Name, Version: extra.Version, ChainID: chain,
		VerifyingContract: common.HexToAddress(o.Asset)}, &a).Bytes(), key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	pay, err := x402.EncodeHeader(&x402.PaymentPayload{X402Version: 1, Scheme: o.Scheme, Network: o.Network,
		Payload: x402.ExactEVMPayload{Signature: "0x" + common.Bytes2Hex(sig), Authorization: a.Wire()}})
	if err != nil {
		t.Fatal(err)
	}
	return pay
}

// postJSON POSTs body as JSON to url with the headers h and returns the
// response and its read body.
func postJSON(t *testing.T, url, body string, h http.Header) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	req.Header = h
	req.Header.Set("content-type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, raw
}
