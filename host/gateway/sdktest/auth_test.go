package sdktest

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// keysTOML turns on key admission over a data directory.
func keysTOML(dataDir string) string {
	return "\n[auth]\nmode = \"keys\"\n\n[storage]\ndata_dir = \"" + dataDir + "\"\n"
}

// authKeys are keys created through host/store (as `bardo keys create`
// does) in the data directory the gateway opens.
type authKeys struct {
	good, gptOnly, farIP, readOnly         string
	revoked, expired, wrongSecret, unknown string
}

func createKeys(t *testing.T, dataDir string) authKeys {
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
	if _, err := s.CreateAccount(c, store.Account{ID: "acct_sdk", Name: "sdk", Tier: store.TierFree}); err != nil {
		t.Fatal(err)
	}
	create := func(spec auth.KeySpec) (string, store.Key) {
		token, k, err := a.Create(c, "acct_sdk", spec)
		if err != nil {
			t.Fatal(err)
		}
		return token, k
	}
	var k authKeys
	k.good, _ = create(auth.KeySpec{Name: "good"})
	k.gptOnly, _ = create(auth.KeySpec{Name: "gpt only", Models: []string{"gpt-*"}})
	k.farIP, _ = create(auth.KeySpec{Name: "office only", CIDRs: []string{"203.0.113.0/24"}})
	k.readOnly, _ = create(auth.KeySpec{Name: "dashboard", ReadOnly: true})
	var rk store.Key
	k.revoked, rk = create(auth.KeySpec{Name: "revoked"})
	if err := a.Revoke(c, rk.ID); err != nil {
		t.Fatal(err)
	}
	k.expired, _ = create(auth.KeySpec{Name: "expired", Expires: time.Now().Add(-time.Minute)})
	// The good key's id with another secret, and a well-formed key that
	// was never created: both must be refused like any other bad key.
	last := k.good[len(k.good)-1]
	swap := byte('A')
	if last == 'A' {
		swap = 'B'
	}
	k.wrongSecret = k.good[:len(k.good)-1] + string(swap)
	if k.unknown, _, err = auth.NewToken(); err != nil {
		t.Fatal(err)
	}
	return k
}

func oaClient(url, key string) openai.Client {
	return openai.NewClient(openaioption.WithBaseURL(url+"/v1/"), openaioption.WithAPIKey(key),
		openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(requestTimeout))
}

func anClient(url, key string) anthropic.Client {
	return anthropic.NewClient(anthropicoption.WithoutEnvironmentDefaults(), anthropicoption.WithBaseURL(url),
		anthropicoption.WithAPIKey(key), anthropicoption.WithMaxRetries(0), anthropicoption.WithRequestTimeout(requestTimeout))
}

// Both official SDKs authenticate with a key created through host/store,
// in both dialects; every bad key gets the same 401 and a valid key out of
// its scope a 403, each in the SDK's own error type, and a refused request
// reaches no upstream.
func TestKeysThroughSDKs(t *testing.T) {
	dataDir := t.TempDir()
	keys := createKeys(t, dataDir)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, pipelineTOML(fake, "")+keysTOML(dataDir), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})

	oaAsk := func(key, model string) error {
		c := oaClient(gw.URL, key)
		_, err := c.Chat.Completions.New(ctx(t), openai.ChatCompletionNewParams{
			Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
		return err
	}
	anAsk := func(key, model string) error {
		c := anClient(gw.URL, key)
		_, err := c.Messages.New(ctx(t), anthropic.MessageNewParams{
			Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}})
		return err
	}
	for _, model := range []string{"gpt-4o", "claude-sonnet-4-5"} {
		if err := oaAsk(keys.good, model); err != nil {
			t.Errorf("openai SDK, good key, %s: %v", model, err)
		}
		if err := anAsk(keys.good, model); err != nil {
			t.Errorf("anthropic SDK, good key, %s: %v", model, err)
		}
	}
	if err := oaAsk(keys.gptOnly, "gpt-4o"); err != nil {
		t.Errorf("gpt-only key on gpt-4o: %v", err)
	}
	// The read-only key counts tokens (no spending).
	ro := anClient(gw.URL, keys.readOnly)
	if _, err := ro.Messages.CountTokens(ctx(t), anthropic.MessageCountTokensParams{
		Model:    anthropic.Model("claude-sonnet-4-5"),
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}); err != nil {
		t.Errorf("read-only key, count_tokens: %v", err)
	}

	// Listing models needs a key too; a read-only one will do.
	ro2 := oaClient(gw.URL, keys.readOnly)
	if _, err := ro2.Models.List(ctx(t)); err != nil {
		t.Errorf("read-only key, models: %v", err)
	}
	anon := oaClient(gw.URL, keys.unknown)
	var me *openai.Error
	if _, err := anon.Models.List(ctx(t)); !errors.As(err, &me) || me.StatusCode != 401 {
		t.Errorf("unknown key, models: %v", err)
	}

	served := len(fake.Requests())
	var oaUnauth, anUnauth string
	for _, c := range []struct {
		name, key, model string
		status           int
	}{
		{"no key", "", "gpt-4o", 401},
		{"not a gateway key", "sk-someone-elses-provider-key", "gpt-4o", 401},
		{"wrong secret", keys.wrongSecret, "gpt-4o", 401},
		{"unknown", keys.unknown, "gpt-4o", 401},
		{"revoked", keys.revoked, "gpt-4o", 401},
		{"expired", keys.expired, "gpt-4o", 401},
		{"model out of scope", keys.gptOnly, "claude-sonnet-4-5", 403},
		{"wrong IP", keys.farIP, "gpt-4o", 403},
		{"read-only", keys.readOnly, "gpt-4o", 403},
	} {
		t.Run("openai/"+c.name, func(t *testing.T) {
			var e *openai.Error
			if err := oaAsk(c.key, c.model); !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *openai.Error", err, err)
			}
			if e.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", e.StatusCode, c.status, e.RawJSON())
			}
			if c.status == http.StatusUnauthorized {
				if e.Code != "invalid_api_key" {
					t.Errorf("code %q: %s", e.Code, e.RawJSON())
				}
				if oaUnauth == "" {
					oaUnauth = e.RawJSON()
				} else if e.RawJSON() != oaUnauth {
					t.Errorf("401s differ, so they tell keys apart:\n%s\n%s", e.RawJSON(), oaUnauth)
				}
			} else if e.Type != "permission_error" && !strings.Contains(e.RawJSON(), "permission") {
				t.Errorf("not a permission error: %s", e.RawJSON())
			}
		})
		t.Run("anthropic/"+c.name, func(t *testing.T) {
			var e *anthropic.Error
			if err := anAsk(c.key, c.model); !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *anthropic.Error", err, err)
			}
			if e.StatusCode != c.status {
				t.Fatalf("status %d, want %d: %s", e.StatusCode, c.status, e.RawJSON())
			}
			want := "permission_error"
			if c.status == http.StatusUnauthorized {
				want = "authentication_error"
				if anUnauth == "" {
					anUnauth = e.RawJSON()
				} else if e.RawJSON() != anUnauth {
					t.Errorf("401s differ, so they tell keys apart:\n%s\n%s", e.RawJSON(), anUnauth)
				}
			}
			if !strings.Contains(e.RawJSON(), `"`+want+`"`) {
				t.Errorf("want %s: %s", want, e.RawJSON())
			}
		})
	}
	if n := len(fake.Requests()); n != served {
		t.Errorf("refused requests reached the upstream: %d requests, was %d", n, served)
	}
	for _, k := range []string{keys.good, keys.wrongSecret, keys.unknown} {
		if strings.Contains(gw.LogLines.String(), k) {
			t.Errorf("a key is in the log")
		}
	}
}

// With a gateway key in Authorization, the caller's own provider key
// travels in X-Bardo-Upstream-Key to a direct provider; the gateway key
// never leaves the gateway.
func TestKeysDirectProvider(t *testing.T) {
	const ownKey = "sk-caller-own-key-123456"
	dataDir := t.TempDir()
	keys := createKeys(t, dataDir)
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	own := fakeupstream.New(fakeupstream.WithAPIKey(ownKey))
	t.Cleanup(own.Close)
	gw := testgateway.Start(t, pipelineTOML(fake, "")+`
[[provider]]
name = "mine"
plugin = "openai-compatible.wasm"
base_url = "`+own.URL()+`/v1"
models = ["direct/*"]
direct = true
traits = { payment = "api_key" }
trusted = true
[[provider.model]]
id = "gpt-4o"
quality = "high"
features = ["tool_use", "predicted_outputs"]
`+keysTOML(dataDir), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	ask := openai.ChatCompletionNewParams{Model: "auto", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("rewrite this file")}}
	needsDirect := openaioption.WithJSONSet("bardo", map[string]any{"require": []string{"predicted_outputs"}})

	c := oaClient(gw.URL, keys.good)
	var resp *http.Response
	if _, err := c.Chat.Completions.New(ctx(t), ask, needsDirect, openaioption.WithHeader("X-Bardo-Upstream-Key", ownKey),
		openaioption.WithResponseInto(&resp)); err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Bardo-Provider") != "mine" || resp.Header.Get("X-Bardo-Cost") != "direct" {
		t.Errorf("provider %q cost %q", resp.Header.Get("X-Bardo-Provider"), resp.Header.Get("X-Bardo-Cost"))
	}
	if got := own.Last().Header.Get("Authorization"); got != "Bearer "+ownKey {
		t.Errorf("the direct provider got %q", got)
	}
	// Without X-Bardo-Upstream-Key the gateway key is not forwarded: the
	// caller is told to send its own.
	var e *openai.Error
	if _, err := c.Chat.Completions.New(ctx(t), ask, needsDirect); !errors.As(err, &e) || e.StatusCode != 401 ||
		!strings.Contains(e.Message, "X-Bardo-Upstream-Key") {
		t.Errorf("no upstream key: %v", err)
	}
	for _, r := range append(own.Requests(), fake.Requests()...) {
		for _, v := range r.Header {
			if strings.Contains(strings.Join(v, " "), auth.Prefix) {
				t.Fatalf("a gateway key reached an upstream: %s", r.Path)
			}
		}
	}
}
