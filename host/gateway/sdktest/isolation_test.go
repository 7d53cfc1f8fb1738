package sdktest

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/testkit/apitest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// tenantKeys creates one account per name, each with one key, in the data
// directory the gateway opens (as `bardo accounts create` and `bardo keys
// create` do), and returns the keys in order.
func tenantKeys(t *testing.T, dataDir string, accounts ...string) []string {
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
	a := auth.New(s, secret, auth.Options{Accounts: s})
	var keys []string
	for _, id := range accounts {
		if _, err := s.CreateAccount(c, store.Account{ID: id, Name: id, Tier: store.TierFree}); err != nil {
			t.Fatal(err)
		}
		token, _, err := a.Create(c, id, auth.KeySpec{Name: id})
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, token)
	}
	return keys
}

// isolationRig is the shipped pipeline (every layer of pipeline.toml as
// shipped) in keys mode in front of two OpenAI-compatible upstreams serving
// gpt-* — "up" (listed first, on fake) and "up2" (on fake2) — and an
// Anthropic one ("claude", on fake), with one key on account A and one on
// account B.
type isolationRig struct {
	gw          *testgateway.Gateway
	fake, fake2 *fakeupstream.Server
	keyA, keyB  string
}

func startIsolation(t *testing.T) *isolationRig {
	t.Helper()
	dataDir := t.TempDir()
	keys := tenantKeys(t, dataDir, "acct_tenant_a", "acct_tenant_b")
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	fake2 := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake2.Close)
	cfg := testgateway.ShippedLayers(t) + testgateway.FakeProviders(fake.URL()) + `
[[provider]]
name = "up2"
plugin = "openai-compatible.wasm"
base_url = "` + fake2.URL() + `/v1"
credential = "env:UP_KEY"
models = ["gpt-*"]
trusted = true
` + keysTOML(dataDir)
	gw := testgateway.Start(t, cfg, testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return &isolationRig{gw: gw, fake: fake, fake2: fake2, keyA: keys[0], keyB: keys[1]}
}

// calls counts the generation requests both upstreams received.
func (r *isolationRig) calls() int {
	return r.fake.Count("/v1/chat/completions") + r.fake.Count("/v1/messages") + r.fake2.Count("/v1/chat/completions")
}

// askOA asks through the OpenAI SDK with key and returns the answer's text
// and headers.
func (r *isolationRig) askOA(t *testing.T, key, model, question string) (string, http.Header) {
	t.Helper()
	var resp *http.Response
	c := oaClient(r.gw.URL, key)
	out, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
		Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(question)},
	}, openaioption.WithResponseInto(&resp))
	if err != nil {
		t.Fatalf("%q: %v", question, err)
	}
	if len(out.Choices) != 1 {
		t.Fatalf("%q: %d choices", question, len(out.Choices))
	}
	return out.Choices[0].Message.Content, resp.Header
}

// askAN asks through the Anthropic SDK, streamed or not, with key and
// returns the answer's text and headers.
func (r *isolationRig) askAN(t *testing.T, key, model, question string, stream bool) (string, http.Header) {
	t.Helper()
	var resp *http.Response
	c := anClient(r.gw.URL, key)
	params := anthropic.MessageNewParams{
		Model: anthropic.Model(model), MaxTokens: 256,
		Messages: []anthropic.MessageParam{userText(question)},
	}
	if !stream {
		msg, err := c.Messages.New(ctx(t), params, anthropicoption.WithResponseInto(&resp))
		if err != nil {
			t.Fatalf("%q: %v", question, err)
		}
		var text strings.Builder
		for _, b := range msg.Content {
			text.WriteString(b.Text)
		}
		return text.String(), resp.Header
	}
	s := c.Messages.NewStreaming(ctx(t), params, anthropicoption.WithResponseInto(&resp))
	defer s.Close()
	var msg anthropic.Message
	for s.Next() {
		if err := msg.Accumulate(s.Current()); err != nil {
			t.Fatalf("%q: accumulate: %v", question, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%q: stream: %v", question, err)
	}
	if msg.StopReason == "" {
		t.Fatalf("%q: the stream did not end: %s", question, msg.RawJSON())
	}
	var text strings.Builder
	for _, b := range msg.Content {
		text.WriteString(b.Text)
	}
	return text.String(), resp.Header
}

// expectCache checks X-Bardo-Cache and how many upstream calls a request
// made (0 for a hit, 1 for a miss).
func expectCache(t *testing.T, what string, h http.Header, want string, calls int) {
	t.Helper()
	if got := h.Get("X-Bardo-Cache"); got != want {
		t.Errorf("%s: X-Bardo-Cache = %q, want %q", what, got, want)
	}
	if want == "miss" && calls != 1 || want != "miss" && calls != 0 {
		t.Errorf("%s (%s): %d upstream calls", what, want, calls)
	}
}

// Tenant isolation through the shipped pipeline: with two keys on two
// accounts, tenant B never gets tenant A's exact-cache or semantic-cache
// answer (the same request bytes included), A's PII mapping, A's stored
// Responses API answers, or A's sticky provider — while A, asking again,
// does, so each check can fail (with hashcache and semcache set to
// isolation = "shared", the cache checks do).
func TestTenantIsolation(t *testing.T) {
	r := startIsolation(t)

	t.Run("hash cache", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			model  string
			stream bool
		}{
			{"openai", "gpt-4o", false},
			{"anthropic", "claude-sonnet-4-5", false},
			{"anthropic stream", "claude-sonnet-4-5", true},
		} {
			t.Run(c.name, func(t *testing.T) {
				q := "Which consensus does the " + c.name + " chain of tenant A use?"
				ask := func(key string) (string, http.Header) {
					if c.name == "openai" {
						return r.askOA(t, key, c.model, q)
					}
					return r.askAN(t, key, c.model, q, c.stream)
				}
				r.fake.Script(fakeupstream.Reply("Tenant A's private answer about consensus, proof of stake with " + c.name + "."))
				n := r.calls()
				textA, h := ask(r.keyA)
				expectCache(t, "A first", h, "miss", r.calls()-n)
				n = r.calls()
				again, h := ask(r.keyA)
				expectCache(t, "A again", h, "hash-hit", r.calls()-n)
				if again != textA {
					t.Errorf("A's hit %q, want its first answer %q", again, textA)
				}
				// The same bytes from B: a miss, answered by the upstream.
				n = r.calls()
				textB, h := ask(r.keyB)
				expectCache(t, "B, same request", h, "miss", r.calls()-n)
				if strings.Contains(textB, "private answer") {
					t.Errorf("B got A's cached answer %q", textB)
				}
			})
		}
	})

	t.Run("semantic cache", func(t *testing.T) {
		r.fake.Script(fakeupstream.Reply("Impermanent loss, for tenant A: the gap between holding two tokens in a pool and holding them in a wallet."))
		n := r.calls()
		_, h := r.askOA(t, r.keyA, "gpt-4o", "What is impermanent loss?")
		expectCache(t, "A first", h, "miss", r.calls()-n)
		// Other case and punctuation: the exact cache misses, the semantic
		// one hits — for A.
		n = r.calls()
		textA, h := r.askOA(t, r.keyA, "gpt-4o", "what is IMPERMANENT loss")
		expectCache(t, "A reworded", h, "semantic-hit", r.calls()-n)
		if !strings.Contains(textA, "for tenant A") {
			t.Errorf("A's semantic hit answered %q", textA)
		}
		n = r.calls()
		textB, h := r.askOA(t, r.keyB, "gpt-4o", "WHAT is impermanent loss??")
		expectCache(t, "B reworded", h, "miss", r.calls()-n)
		if strings.Contains(textB, "tenant A") {
			t.Errorf("B got A's answer %q", textB)
		}
	})

	t.Run("pii", func(t *testing.T) {
		const aliceMail, bobMail = "alice.secret@example.com", "bob.other@example.org"
		// A's e-mail never reaches the upstream and comes back restored.
		n := len(r.fake.Requests())
		textA, h := r.askOA(t, r.keyA, "gpt-4o", "Remember my address "+aliceMail+" for the invoice")
		if h.Get("X-Bardo-PII") == "" || !strings.Contains(textA, aliceMail) {
			t.Fatalf("A: X-Bardo-PII %q, answer %q", h.Get("X-Bardo-PII"), textA)
		}
		for _, req := range r.fake.Requests()[n:] {
			if strings.Contains(string(req.Body), aliceMail) {
				t.Fatalf("A's e-mail reached the upstream: %s", req.Body)
			}
		}
		// B's answer names A's placeholder: it is not B's to restore.
		r.fake.Script(fakeupstream.Reply("The address on file is [EMAIL_1], as you asked."))
		textB, _ := r.askOA(t, r.keyB, "gpt-4o", "Which address is on file for the invoice?")
		if strings.Contains(textB, aliceMail) || !strings.Contains(textB, "[EMAIL_1]") {
			t.Errorf("B's answer %q: a placeholder without a mapping of B's must pass as it is", textB)
		}
		// B's own e-mail in a request that masks to the very bytes A's did
		// (same text, same placeholder): B's own value comes back, from
		// its own upstream call, never A's.
		n = r.calls()
		textB, h = r.askOA(t, r.keyB, "gpt-4o", "Remember my address "+bobMail+" for the invoice")
		expectCache(t, "B, same masked request", h, "miss", r.calls()-n)
		if strings.Contains(textB, aliceMail) || !strings.Contains(textB, bobMail) {
			t.Errorf("B's answer %q", textB)
		}
		// count_tokens runs the request phase too: the e-mail is masked
		// before the upstream counts.
		ct := apitest.Post(t, r.gw.URL, "/v1/messages/count_tokens",
			`{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"Count my address `+aliceMail+`"}]}`,
			"x-api-key", r.keyA)
		if ct.Status != 200 || r.fake.Last().Path != "/v1/messages/count_tokens" || strings.Contains(string(r.fake.Last().Body), aliceMail) {
			t.Errorf("count_tokens: %d, the upstream got %s %s", ct.Status, r.fake.Last().Path, r.fake.Last().Body)
		}
		// A's repeat is a hit from A's own cache, restored with A's value.
		n = r.calls()
		textA, h = r.askOA(t, r.keyA, "gpt-4o", "Remember my address "+aliceMail+" for the invoice")
		expectCache(t, "A again", h, "hash-hit", r.calls()-n)
		if !strings.Contains(textA, aliceMail) || strings.Contains(textA, bobMail) {
			t.Errorf("A's hit %q", textA)
		}
	})

	t.Run("stored responses", func(t *testing.T) {
		// A's stored Responses API answer: A reads it and continues it;
		// for B the id does not exist, to read, to continue or to delete.
		post := func(key, body string) apitest.Reply {
			return apitest.Post(t, r.gw.URL, "/v1/responses", body, "Authorization", "Bearer "+key)
		}
		get := func(key, path, method string) int {
			req, _ := http.NewRequest(method, r.gw.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		rep := post(r.keyA, `{"model":"gpt-4o","input":"Tenant A's stored question about its treasury","store":true}`)
		if rep.Status != 200 {
			t.Fatalf("A: %d %s", rep.Status, rep.Body)
		}
		id, _ := apitest.JSON(t, rep.Body)["id"].(string)
		if id == "" {
			t.Fatalf("no id: %s", rep.Body)
		}
		if code := get(r.keyA, "/v1/responses/"+id, "GET"); code != 200 {
			t.Fatalf("A reads its own response: %d", code)
		}
		if rep := post(r.keyA, `{"model":"gpt-4o","input":"and then?","previous_response_id":"`+id+`"}`); rep.Status != 200 {
			t.Fatalf("A continues its own response: %d %s", rep.Status, rep.Body)
		}
		for _, c := range []struct{ path, method string }{{"/v1/responses/" + id, "GET"}, {"/v1/responses/" + id + "/input_items", "GET"}, {"/v1/responses/" + id, "DELETE"}} {
			if code := get(r.keyB, c.path, c.method); code != 404 {
				t.Errorf("B %s %s: %d, want 404", c.method, c.path, code)
			}
		}
		n := len(r.fake.Requests())
		rep = post(r.keyB, `{"model":"gpt-4o","input":"and then?","previous_response_id":"`+id+`"}`)
		if rep.Status == 200 || strings.Contains(string(rep.Body), "treasury") {
			t.Errorf("B continued A's response: %d %s", rep.Status, rep.Body)
		}
		for _, req := range r.fake.Requests()[n:] {
			if strings.Contains(string(req.Body), "treasury") {
				t.Errorf("A's stored conversation went upstream for B: %s", req.Body)
			}
		}
		if code := get(r.keyA, "/v1/responses/"+id, "GET"); code != 200 {
			t.Errorf("A's response after B's attempts: %d", code)
		}
	})

	t.Run("affinity", func(t *testing.T) {
		post := func(key, question string) apitest.Reply {
			body := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + question + `"}]}`
			rep := apitest.Post(t, r.gw.URL, "/v1/chat/completions", body, "Authorization", "Bearer "+key, "X-Bardo-Session", "shared-session-id")
			if rep.Status != 200 {
				t.Fatalf("%q: %d %s", question, rep.Status, rep.Body)
			}
			return rep
		}
		expect := func(what string, rep apitest.Reply, provider, affinity string) {
			t.Helper()
			if p, a := rep.Header.Get("X-Bardo-Provider"), rep.Header.Get("X-Bardo-Affinity"); p != provider || a != affinity {
				t.Errorf("%s: provider %q affinity %q, want %q %q (fallback %q)", what, p, a, provider, affinity, rep.Header.Get("X-Bardo-Fallback"))
			}
		}
		// A's session lands on up2: up (listed first) fails its try and
		// its retry.
		r.fake.Script(fakeupstream.Fail(500), fakeupstream.Fail(500))
		expect("A first", post(r.keyA, "plan the rebalancing of vault seven"), "up2", "new")
		// A again, in the same session: up2, though up is healthy now.
		expect("A again", post(r.keyA, "and what about vault eight"), "up2", "hit")
		// B with the same session id has no session yet: the configured
		// order, up.
		expect("B, same session id", post(r.keyB, "plan the rebalancing of vault nine"), "up", "new")
		expect("B again", post(r.keyB, "and what about vault ten"), "up", "hit")
	})
}
