package admit_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	anthropicoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/golang-jwt/jwt/v5"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// Through the daemon and both official SDKs: a Privy user is refused in
// its SDK's dialect (401) for a bad token, gets 402 while its
// provisioned account is empty, and once topped up is served and billed
// to that account.
func TestPrivyThroughTheGateway(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := key.PublicKey.Bytes()
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{"kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256",
		"use": "sig", "x": base64.RawURLEncoding.EncodeToString(b[1:33]), "y": base64.RawURLEncoding.EncodeToString(b[33:])}}})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(jwks) }))
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)

	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, `
[auth]
mode = "keys"

[auth.privy]
app_id = "app1"
jwks_url = "`+srv.URL+`/jwks.json"

[storage]
data_dir = "`+t.TempDir()+`"
`+testgateway.FakeProviders(fake.URL())+`
[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`, testgateway.Options{Env: testgateway.FakeProviderEnv()})

	mint := func(edit func(jwt.MapClaims)) string {
		now := time.Now()
		c := jwt.MapClaims{"iss": "privy.io", "aud": "app1", "sub": "did:privy:e2e", "sid": "s1", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
		if edit != nil {
			edit(c)
		}
		tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
		tok.Header["kid"] = "k1"
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	an := func(tok string) *anthropic.Client {
		c := anthropic.NewClient(anthropicoption.WithoutEnvironmentDefaults(), anthropicoption.WithBaseURL(gw.URL),
			anthropicoption.WithAuthToken(tok), anthropicoption.WithMaxRetries(0), anthropicoption.WithRequestTimeout(20*time.Second))
		return &c
	}
	oa := func(tok string) *openai.Client {
		c := openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(tok),
			openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(20*time.Second))
		return &c
	}
	params := anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 64,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))}}
	ctx := t.Context()

	expired := mint(func(c jwt.MapClaims) { c["exp"] = time.Now().Add(-time.Hour).Unix() })
	_, err = an(expired).Messages.New(ctx, params)
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || !strings.Contains(ae.RawJSON(), "authentication_error") ||
		!strings.Contains(ae.RawJSON(), "expired") {
		t.Fatalf("anthropic SDK, expired token: %v", err)
	}
	wrongAud := mint(func(c jwt.MapClaims) { c["aud"] = "app2" })
	_, err = oa(wrongAud).Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hello")}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 401 || oe.Type != "authentication_error" {
		t.Fatalf("openai SDK, wrong aud: %v", err)
	}

	tok := mint(nil)
	_, err = an(tok).Messages.New(ctx, params)
	if !errors.As(err, &ae) || ae.StatusCode != 402 || !strings.Contains(ae.Error(), "insufficient balance") {
		t.Fatalf("empty account: %v", err)
	}
	const account = "privy:e2e"
	if _, err := gw.Daemon.Store.TopUp(context.Background(), account, 1_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	gw.Daemon.Meter.Invalidate(account)
	var resp *http.Response
	msg, err := an(tok).Messages.New(ctx, params, anthropicoption.WithResponseInto(&resp))
	if err != nil || len(msg.Content) == 0 {
		t.Fatalf("funded: %v", err)
	}
	if resp.Header.Get("X-Bardo-Cost") == "" || resp.Header.Get("X-Bardo-Balance") == "" {
		t.Errorf("billing headers %v", resp.Header)
	}
	if err := gw.Daemon.Meter.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	a, err := gw.Daemon.Store.Account(context.Background(), account)
	if err != nil || a.Balance >= 1_000_000 || a.Balance <= 0 {
		t.Fatalf("account after a served request: %+v %v", a, err)
	}
	page, err := gw.Daemon.Store.Usage(context.Background(), store.UsageQuery{AccountID: account})
	if err != nil || len(page.Records) == 0 || page.Records[0].KeyID != auth.PrivyKeyID {
		t.Fatalf("usage %+v %v", page, err)
	}
}
