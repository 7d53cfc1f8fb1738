package admit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/identity"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
)

// Through the daemon, its HTTP server and the official OpenAI SDK, with
// the registries on the simulated chain over HTTP JSON-RPC: a key links
// an agent with POST /v1/identity/link, then the SDK, whose only
// credential is a middleware that signs each request's body for the
// agent, is served and billed to the key's account at the agent's tier; a
// request signed by someone else gets the SDK's 401.
func TestDelegationThroughTheGateway(t *testing.T) {
	c := chaintest.New(t, chaintest.Options{HTTP: true})
	b, err := os.ReadFile(filepath.Join(chaintest.ContractsDir(), "ERC8004Registries.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Contracts map[string]struct {
			ABI      json.RawMessage `json:"abi"`
			Bytecode string          `json:"bytecode"`
		} `json:"contracts"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	deploy := func(name string, args ...any) (common.Address, abi.ABI) {
		a, err := abi.JSON(strings.NewReader(string(f.Contracts[name].ABI)))
		if err != nil {
			t.Fatal(err)
		}
		return c.Deploy(t, c.Faucet, &chaintest.Artifact{Name: name, ABI: a, Bytecode: common.FromHex(f.Contracts[name].Bytecode)}, args...), a
	}
	idReg, idABI := deploy("IdentityRegistry")
	repReg, _ := deploy("ReputationRegistry", idReg)
	owner, _ := crypto.GenerateKey()
	stranger, _ := crypto.GenerateKey()
	c.FundETH(t, chaintest.Address(owner), big.NewInt(1e18))
	c.Call(t, owner, idReg, idABI, "register", "https://agent.example/card.json") // agent 0

	fake := fakeupstream.New(fakeupstream.WithAPIKey(testgateway.FakeUpstreamKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, `
[auth]
mode = "keys"

[auth.identity]
rpc_url = "`+c.RPCURL+`"
identity_registry = "`+idReg.Hex()+`"
reputation_registry = "`+repReg.Hex()+`"
reviewers = ["0x0000000000000000000000000000000000000001"]

[storage]
data_dir = "`+t.TempDir()+`"
`+testgateway.FakeProviders(fake.URL())+`
[[provider.model]]
id = "claude-sonnet-4-5"
input_price = "3"
output_price = "15"
`, testgateway.Options{Env: testgateway.FakeProviderEnv()})
	ctx := context.Background()
	if _, err := gw.Daemon.Store.CreateAccount(ctx, store.Account{ID: "acct_agent", Tier: store.TierFree}); err != nil {
		t.Fatal(err)
	}
	if _, err := gw.Daemon.Store.TopUp(ctx, "acct_agent", 1_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	token, key, err := gw.Daemon.Server.Admin.KeyAuth.Create(ctx, "acct_agent", auth.KeySpec{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	domain := x402.Domain{Name: "Bardo Inference", Version: "1", ChainID: 8453, VerifyingContract: idReg}
	sign := func(k any, digest common.Hash) []byte {
		sig, err := crypto.Sign(digest[:], owner)
		if k == stranger {
			sig, err = crypto.Sign(digest[:], stranger)
		}
		if err != nil {
			t.Fatal(err)
		}
		sig[64] += 27
		return sig
	}

	// Link with the key.
	n := identity.NewNonce()
	lm := identity.LinkMessage{AgentID: big.NewInt(0), KeyID: key.ID, Nonce: n, Deadline: time.Now().Add(5 * time.Minute).Unix()}
	body, _ := json.Marshal(identity.LinkRequest{AgentID: "0", Signer: chaintest.Address(owner).Hex(), Nonce: hexutil.Encode(n[:]),
		Deadline: lm.Deadline, Signature: hexutil.Encode(sign(owner, lm.Digest(domain)))})
	req, _ := http.NewRequest("POST", gw.URL+"/v1/identity/link", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(got), `"tier":"none"`) {
		t.Fatalf("link: %d %s", resp.StatusCode, got)
	}

	// The SDK's only credential: a middleware signing each request.
	client := func(signer any) *openai.Client {
		cl := openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithMaxRetries(0),
			openaioption.WithRequestTimeout(20*time.Second),
			openaioption.WithMiddleware(func(r *http.Request, next openaioption.MiddlewareNext) (*http.Response, error) {
				b, err := io.ReadAll(r.Body)
				if err != nil {
					return nil, err
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
				d := identity.Delegation{AgentID: big.NewInt(0), Signer: chaintest.Address(owner), Timestamp: time.Now().Unix(), Nonce: identity.NewNonce()}
				m := identity.DelegationMessage{AgentID: d.AgentID, Method: r.Method, Path: r.URL.Path, BodyHash: crypto.Keccak256Hash(b),
					Timestamp: d.Timestamp, Nonce: d.Nonce}
				d.Signature = sign(signer, m.Digest(domain))
				r.Header.Del("Authorization")
				r.Header.Set(identity.HeaderDelegation, d.Encode())
				return next(r)
			}))
		return &cl
	}
	params := openai.ChatCompletionNewParams{Model: "claude-sonnet-4-5", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("hello there ", 300))}}
	_, err = client(stranger).Chat.Completions.New(t.Context(), params)
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 401 || oe.Type != "authentication_error" || !strings.Contains(oe.Message, "bad signature") {
		t.Fatalf("signed by a stranger: %v", err)
	}
	var hr *http.Response
	out, err := client(owner).Chat.Completions.New(t.Context(), params, openaioption.WithResponseInto(&hr))
	if err != nil || len(out.Choices) == 0 {
		t.Fatalf("delegated: %v", err)
	}
	if err := gw.Daemon.Meter.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	page, err := gw.Daemon.Store.Usage(ctx, store.UsageQuery{AccountID: "acct_agent"})
	if err != nil || len(page.Records) != 1 || page.Records[0].KeyID != key.ID {
		t.Fatalf("usage %+v %v", page, err)
	}
	// Priced at tier none's 20 %: the charge is the cost × 1.20, rounded up
	// (the free tier would be × 1.25).
	r := page.Records[0]
	t.Logf("cost %d µUSD, charged %d µUSD", r.Cost, r.Charge)
	if want := (r.Cost*120 + 99) / 100; r.Charge < want-1 || r.Charge > want+1 {
		t.Fatalf("charged %d µUSD for a cost of %d, want ≈ %d (20 %% spread)", r.Charge, r.Cost, want)
	}
}
