package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// embedProviders are two OpenAI-compatible providers of the same
// embedding model at prices the tests compute by hand, the first
// preferred, the second speaking the Responses API; a direct provider (the caller's own key, at second) of
// mine-embed-*; and an Anthropic provider (which cannot embed).
func embedProviders(first, second string) string {
	return `
[[provider]]
name = "emb1"
plugin = "openai-compatible.wasm"
base_url = "` + first + `/v1"
credential = "env:UP_KEY"
models = ["text-embedding-*"]
trusted = true

[[provider.model]]
id = "text-embedding-3-large"
input_price = "0.13"

[[provider]]
name = "emb2"
plugin = "openai-compatible.wasm"
base_url = "` + second + `/v1"
credential = "env:UP_KEY"
models = ["text-embedding-*"]
trusted = true
[provider.config]
api = "responses"

[[provider.model]]
id = "text-embedding-3-large"
input_price = "0.13"

[[provider]]
name = "mine"
plugin = "openai-compatible.wasm"
base_url = "` + second + `/v1"
models = ["mine-embed-*"]
direct = true
trusted = true

[[provider.model]]
id = "mine-embed-1"
input_price = "0.13"

[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "` + first + `"
credential = "env:UP_KEY"
models = ["claude-*"]
trusted = true
`
}

// billedEmbeddings starts a keys-mode gateway over a real SQLite data
// directory (as `bardo` runs with [auth] mode = "keys") in front of two
// fake upstreams, with a free-tier account holding $10 (key) and an
// empty one (broke).
func billedEmbeddings(t *testing.T) (gw *testgateway.Gateway, st *sqlite.Store, key, broke string, up1, up2 *fakeupstream.Server) {
	t.Helper()
	up1 = fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	up2 = fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(up1.Close)
	t.Cleanup(up2.Close)
	dir := t.TempDir()
	secret, err := auth.LoadSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := context.Background()
	st, err = sqlite.Open(c, filepath.Join(dir, sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateAccount(c, store.Account{ID: "acct_embed", Name: "embed", Tier: store.TierFree}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.TopUp(c, "acct_embed", 10*store.MicroUSD, "test top-up"); err != nil {
		t.Fatal(err)
	}
	keys := auth.New(st, secret, auth.Options{Accounts: st})
	if key, _, err = keys.Create(c, "acct_embed", auth.KeySpec{Name: "embed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateAccount(c, store.Account{ID: "acct_broke", Name: "broke", Tier: store.TierFree}); err != nil {
		t.Fatal(err)
	}
	if broke, _, err = keys.Create(c, "acct_broke", auth.KeySpec{Name: "broke"}); err != nil {
		t.Fatal(err)
	}
	gw = testgateway.Start(t, modeltest.TOML(t)+embedProviders(up1.URL(), up2.URL())+
		"\n[auth]\nmode = \"keys\"\n\n[storage]\ndata_dir = \""+dir+"\"\n",
		testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return gw, st, key, broke, up1, up2
}

// usageOf returns the usage records of request id, once the meter has
// committed what it settled.
func usageOf(t *testing.T, gw *testgateway.Gateway, st *sqlite.Store, acct, id string) []store.Usage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := gw.Daemon.Meter.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	p, err := st.Usage(ctx, store.UsageQuery{AccountID: acct, Limit: 500})
	if err != nil {
		t.Fatal(err)
	}
	var out []store.Usage
	for _, u := range p.Records {
		if u.RequestID == id {
			out = append(out, u)
		}
	}
	return out
}

func postEmbeddings(t *testing.T, url, key string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url+"/v1/embeddings", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
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
	return resp, b
}

// text is exactly 4·tokens bytes: the fake counts ceil(bytes/4) tokens.
func text(prefix string, tokens int) string {
	s := prefix + strings.Repeat("x", max(4*tokens-len(prefix), 0))
	return s[:4*tokens]
}

// /v1/embeddings for a model no [[model]] names goes to the first
// OpenAI-compatible provider that serves it, is charged for the
// upstream's usage.prompt_tokens at its input price with the tier's
// spread, fails over, relays a refusal uncharged, and leaves the local
// model free.
func TestEmbeddingsUpstreamBilled(t *testing.T) {
	gw, st, key, broke, up1, up2 := billedEmbeddings(t)
	// 1,234 tokens at $0.13 a million = 160.42 µUSD; free tier, 25 %
	// spread: ⌈160.42 × 1.25⌉ = ⌈200.525⌉ = 201 µUSD.
	const tokens, cost, charge = 1234, 161, 201

	t.Run("sdk", func(t *testing.T) {
		c := openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(key), openaioption.WithMaxRetries(0))
		in := text("sdk: embed this. ", tokens)
		var raw *http.Response
		res, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model: "text-embedding-3-large", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String(in)},
			EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
		}, openaioption.WithResponseInto(&raw))
		if err != nil {
			t.Fatal(err)
		}
		want := fakeupstream.FakeEmbedding("text-embedding-3-large", in, 3072)
		if len(res.Data) != 1 || len(res.Data[0].Embedding) != len(want) || float32(res.Data[0].Embedding[7]) != want[7] {
			t.Fatalf("data %d vectors", len(res.Data))
		}
		if res.Usage.PromptTokens != tokens {
			t.Errorf("usage %+v", res.Usage)
		}
		h := raw.Header
		if h.Get("X-Bardo-Provider") != "emb1" || h.Get("X-Bardo-Model") != "text-embedding-3-large" || h.Get("X-Bardo-Cost") != pricing.Micros(charge).String() {
			t.Errorf("provider %q model %q cost %q, want emb1 text-embedding-3-large %s",
				h.Get("X-Bardo-Provider"), h.Get("X-Bardo-Model"), h.Get("X-Bardo-Cost"), pricing.Micros(charge))
		}
		if got := up1.Last().Header.Get("Authorization"); got != "Bearer "+upKey {
			t.Errorf("the upstream got Authorization %q", got)
		}
		us := usageOf(t, gw, st, "acct_embed", h.Get("X-Bardo-Request-Id"))
		if len(us) != 1 || us[0].InputTokens != tokens || us[0].OutputTokens != 0 || us[0].Cost != cost || us[0].Charge != charge ||
			us[0].Provider != "emb1" || us[0].Model != "text-embedding-3-large" {
			t.Errorf("usage records %+v", us)
		}
	})

	t.Run("raw passthrough", func(t *testing.T) {
		body := []byte(`{"model":"text-embedding-3-large","input":["` + text("raw: one. ", 600) + `","` + text("raw: two. ", 634) +
			`"],"encoding_format":"base64","dimensions":256,"user":"u-1","x_vendor_flag":{"keep":true}}`)
		resp, b := postEmbeddings(t, gw.URL, key, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if got := up1.Last(); got.Path != "/v1/embeddings" || !bytes.Equal(got.Body, body) {
			t.Errorf("the upstream got %s %s, want the caller's bytes", got.Path, got.Body)
		}
		var res struct {
			Data []struct {
				Embedding string `json:"embedding"`
			} `json:"data"`
		}
		// 256 float32s are 1,024 bytes, 1,368 in base64.
		if err := json.Unmarshal(b, &res); err != nil || len(res.Data) != 2 || len(res.Data[1].Embedding) != 1368 {
			t.Fatalf("%v: %.200s", err, b)
		}
		if resp.Header.Get("X-Bardo-Cost") != pricing.Micros(charge).String() || resp.Header.Get("X-Bardo-Balance") == "" {
			t.Errorf("cost %q balance %q", resp.Header.Get("X-Bardo-Cost"), resp.Header.Get("X-Bardo-Balance"))
		}
	})

	t.Run("failover", func(t *testing.T) {
		up1.Script(fakeupstream.Behaviour{Status: 503})
		n2 := up2.Count("/v1/embeddings")
		resp, b := postEmbeddings(t, gw.URL, key, []byte(`{"model":"text-embedding-3-large","input":"`+text("failover. ", tokens)+`"}`))
		if resp.StatusCode != 200 || resp.Header.Get("X-Bardo-Provider") != "emb2" || up2.Count("/v1/embeddings") != n2+1 {
			t.Fatalf("%d provider %q: %.200s", resp.StatusCode, resp.Header.Get("X-Bardo-Provider"), b)
		}
		if resp.Header.Get("X-Bardo-Fallback") != "emb1:503" || resp.Header.Get("X-Bardo-Cost") != pricing.Micros(charge).String() {
			t.Errorf("fallback %q cost %q", resp.Header.Get("X-Bardo-Fallback"), resp.Header.Get("X-Bardo-Cost"))
		}
		if us := usageOf(t, gw, st, "acct_embed", resp.Header.Get("X-Bardo-Request-Id")); len(us) != 1 || us[0].Provider != "emb2" || us[0].Charge != charge {
			t.Errorf("usage records %+v", us)
		}
	})

	t.Run("upstream 400 not charged", func(t *testing.T) {
		n2 := up2.Count("/v1/embeddings")
		c := openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(key), openaioption.WithMaxRetries(0))
		var raw *http.Response
		_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{
			Model: "text-embedding-3-large", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("too many dimensions")},
			Dimensions: openai.Int(99_999),
		}, openaioption.WithResponseInto(&raw))
		var e *openai.Error
		if !errors.As(err, &e) || e.StatusCode != 400 || e.Type != "invalid_request_error" || !strings.Contains(e.Message, "dimensions") {
			t.Fatalf("err %v", err)
		}
		if up2.Count("/v1/embeddings") != n2 {
			t.Error("an invalid request was failed over")
		}
		id := e.Response.Header.Get("X-Bardo-Request-Id")
		if c := e.Response.Header.Get("X-Bardo-Cost"); c != "" && c != pricing.Micros(0).String() {
			t.Errorf("X-Bardo-Cost %q on a refusal", c)
		}
		if us := usageOf(t, gw, st, "acct_embed", id); len(us) != 1 || us[0].Charge != 0 || us[0].Status != 400 {
			t.Errorf("usage records %+v", us)
		}
	})

	t.Run("refusal settled on its tab", func(t *testing.T) {
		n := up1.Count("/v1/embeddings")
		resp, b := postEmbeddings(t, gw.URL, broke, []byte(`{"model":"text-embedding-3-large","input":"no money"}`))
		if resp.StatusCode != 402 || !strings.Contains(string(b), "insufficient balance") || up1.Count("/v1/embeddings") != n {
			t.Fatalf("%d %s", resp.StatusCode, b)
		}
		if us := usageOf(t, gw, st, "acct_broke", resp.Header.Get("X-Bardo-Request-Id")); len(us) != 1 || us[0].Status != 402 || us[0].Charge != 0 {
			t.Errorf("usage records %+v", us)
		}
	})

	t.Run("direct provider", func(t *testing.T) {
		body := []byte(`{"model":"mine-embed-1","input":"` + text("direct. ", tokens) + `"}`)
		resp, b := postEmbeddings(t, gw.URL, key, body, "X-Bardo-Upstream-Key", upKey)
		if resp.StatusCode != 200 || resp.Header.Get("X-Bardo-Provider") != "mine" || resp.Header.Get("X-Bardo-Cost") != "direct" {
			t.Fatalf("%d provider %q cost %q: %.200s", resp.StatusCode, resp.Header.Get("X-Bardo-Provider"), resp.Header.Get("X-Bardo-Cost"), b)
		}
		if got := up2.Last().Header.Get("Authorization"); got != "Bearer "+upKey {
			t.Errorf("the direct provider got Authorization %q", got)
		}
		if us := usageOf(t, gw, st, "acct_embed", resp.Header.Get("X-Bardo-Request-Id")); len(us) != 1 || us[0].Charge != 0 || us[0].InputTokens != tokens {
			t.Errorf("usage records %+v", us)
		}
		// Without the caller's own key the gateway's is never sent.
		n := up2.Count("/v1/embeddings")
		if resp, b := postEmbeddings(t, gw.URL, key, body); resp.StatusCode != 401 || !strings.Contains(string(b), "X-Bardo-Upstream-Key") ||
			up2.Count("/v1/embeddings") != n {
			t.Errorf("without a key: %d %s", resp.StatusCode, b)
		}
	})

	t.Run("local model free", func(t *testing.T) {
		n := up1.Count("/v1/embeddings") + up2.Count("/v1/embeddings")
		resp, b := postEmbeddings(t, gw.URL, key, []byte(`{"model":"embed","input":"rotate the signing keys"}`))
		if resp.StatusCode != 200 || resp.Header.Get("X-Bardo-Provider") != "local" || resp.Header.Get("X-Bardo-Cost") != "" {
			t.Fatalf("%d provider %q cost %q: %.200s", resp.StatusCode, resp.Header.Get("X-Bardo-Provider"), resp.Header.Get("X-Bardo-Cost"), b)
		}
		if up1.Count("/v1/embeddings")+up2.Count("/v1/embeddings") != n {
			t.Error("a local model's request reached an upstream")
		}
		if us := usageOf(t, gw, st, "acct_embed", resp.Header.Get("X-Bardo-Request-Id")); len(us) != 0 {
			t.Errorf("usage records %+v for a free local embedding", us)
		}
	})

	// Three charged requests, nothing else.
	a, err := st.Account(context.Background(), "acct_embed")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(10*store.MicroUSD - 3*charge); a.Balance != want {
		t.Errorf("balance %d µUSD, want %d", a.Balance, want)
	}
}

// A gateway whose only provider is Anthropic (which has no embeddings
// API; an OpenAI entry without its key is disabled) serves its local
// [[model]] embedders and answers any other model with a 404 in OpenAI's
// shape that says why, names them, and names the provider that lacks a
// key.
func TestEmbeddingsAnthropicOnly(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, modeltest.TOML(t)+`
[[provider]]
name = "claude"
plugin = "anthropic.wasm"
base_url = "`+fake.URL()+`"
credential = "env:UP_KEY"
trusted = true

[[provider]]
name = "openai"
plugin = "openai-compatible.wasm"
base_url = "`+fake.URL()+`/v1"
credential = "env:UNSET_OPENAI_KEY"
models = ["gpt-*", "text-embedding-*"]
trusted = true
`, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	resp, b := postEmbeddings(t, gw.URL, "", []byte(`{"model":"text-embedding-3-small","input":"hello"}`))
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if resp.StatusCode != 404 || json.Unmarshal(b, &e) != nil || e.Error.Message == "" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if !strings.Contains(e.Error.Message, "no configured provider offers embeddings") || !strings.Contains(e.Error.Message, "embedders are: embed") ||
		!strings.Contains(e.Error.Message, "providers openai match the model but have no credentials configured") ||
		resp.Header.Get("X-Bardo-Request-Id") == "" {
		t.Errorf("message %q, request id %q", e.Error.Message, resp.Header.Get("X-Bardo-Request-Id"))
	}
	if fake.Count("/v1/embeddings")+fake.Count("/v1/messages") != 0 {
		t.Error("the Anthropic upstream was called")
	}
	if resp, b := postEmbeddings(t, gw.URL, "", []byte(`{"model":"embed","input":"hello"}`)); resp.StatusCode != 200 {
		t.Errorf("local model: %d %s", resp.StatusCode, b)
	}
	// Both were settled: the metrics count the local answer and the 404.
	if n := gw.Metrics.Value("bardo_provider_responses_total", "provider", "local", "model", "embed", "code", "200"); n != 1 {
		t.Errorf("%v local answers counted", n)
	}
	if n := gw.Metrics.Value("bardo_errors_total", "kind", "not_found", "provider", ""); n != 1 {
		t.Errorf("%v not-found errors counted", n)
	}
}

// A provider that cannot be reached is failed over like one that answers
// 5xx: the next provider of the model serves.
func TestEmbeddingsFailoverOnConnectionFailure(t *testing.T) {
	dead := fakeupstream.New()
	dead.Close() // its port now refuses connections
	up := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(up.Close)
	gw := testgateway.Start(t, embedProviders(dead.URL(), up.URL()), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	resp, b := postEmbeddings(t, gw.URL, "", []byte(`{"model":"text-embedding-3-large","input":"hello"}`))
	if resp.StatusCode != 200 || resp.Header.Get("X-Bardo-Provider") != "emb2" || resp.Header.Get("X-Bardo-Fallback") != "emb1:502" {
		t.Fatalf("%d provider %q fallback %q: %.200s", resp.StatusCode, resp.Header.Get("X-Bardo-Provider"), resp.Header.Get("X-Bardo-Fallback"), b)
	}
	// Both unreachable: the caller gets the last failure, 502, in OpenAI's shape.
	up.Close()
	resp, b = postEmbeddings(t, gw.URL, "", []byte(`{"model":"text-embedding-3-large","input":"hello"}`))
	if resp.StatusCode != 502 || !strings.Contains(string(b), `"error"`) || strings.Contains(string(b), "127.0.0.1") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}
