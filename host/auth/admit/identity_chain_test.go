package admit

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"log/slog"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/billing"
	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/identity"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/store/sqlite"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/host/x402/chaintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

// idRig is a gateway's admission with ERC-8004 delegations over a real
// store, meter and the minimal ERC-8004 registries on the simulated chain.
type idRig struct {
	ch              *chaintest.Chain
	k               *Keys
	s               *sqlite.Store
	m               *billing.Meter
	svc             *identity.Service
	idABI, repABI   abi.ABI
	idReg, repReg   common.Address
	owner, reviewer *ecdsa.PrivateKey
	keyID, token    string
	domain          x402.Domain
	mu              sync.Mutex
	now             time.Time
}

func (r *idRig) clock() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now }
func (r *idRig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

func registries(t testing.TB) (idA, repA *chaintest.Artifact) {
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
	art := func(name string) *chaintest.Artifact {
		c := f.Contracts[name]
		a, err := abi.JSON(strings.NewReader(string(c.ABI)))
		if err != nil {
			t.Fatal(err)
		}
		return &chaintest.Artifact{Name: name, ABI: a, Bytecode: common.FromHex(c.Bytecode)}
	}
	return art("IdentityRegistry"), art("ReputationRegistry")
}

func newIDRig(t testing.TB) *idRig {
	t.Helper()
	ctx := context.Background()
	ch := chaintest.New(t, chaintest.Options{})
	idA, repA := registries(t)
	r := &idRig{ch: ch, idABI: idA.ABI, repABI: repA.ABI, now: time.Now()}
	r.idReg = ch.Deploy(t, ch.Faucet, idA)
	r.repReg = ch.Deploy(t, ch.Faucet, repA, r.idReg)
	var err error
	for _, k := range []**ecdsa.PrivateKey{&r.owner, &r.reviewer} {
		if *k, err = crypto.GenerateKey(); err != nil {
			t.Fatal(err)
		}
		ch.FundETH(t, chaintest.Address(*k), big.NewInt(1e18))
	}
	ch.Call(t, r.owner, r.idReg, r.idABI, "register", "https://agent.example/.well-known/agent-card.json") // agent 0

	r.s, err = sqlite.Open(ctx, filepath.Join(t.TempDir(), sqlite.FileName), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.s.Close() })
	if _, err := r.s.CreateAccount(ctx, store.Account{ID: "acct_id", Name: "agent", Tier: store.TierFree}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.s.TopUp(ctx, "acct_id", 1_000_000, "test"); err != nil {
		t.Fatal(err)
	}
	authn := auth.New(r.s, []byte("0123456789abcdef0123456789abcdef"), auth.Options{Accounts: r.s})
	token, key, err := authn.Create(ctx, "acct_id", auth.KeySpec{Name: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	r.keyID, r.token = key.ID, token
	r.m, err = billing.New(billing.Config{Store: r.s})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.m.Close(ctx) })
	r.domain = x402.Domain{Name: "Bardo Inference", Version: "1", ChainID: 8453, VerifyingContract: r.idReg}
	r.svc = identity.New(identity.Config{
		Registry: identity.Registry{Client: ch.Client, Identity: r.idReg, Reputation: r.repReg,
			Reviewers: []common.Address{chaintest.Address(r.reviewer)}, Tag1: "starred"},
		Domain: r.domain, Store: r.s, CacheTTL: time.Minute, Now: r.clock})
	r.k = &Keys{Auth: authn, Meter: r.m, Identity: r.svc}
	return r
}

// sign signs digest with key (v 27/28), as wallets do for EIP-712.
func sign(t testing.TB, key *ecdsa.PrivateKey, digest common.Hash) []byte {
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return sig
}

func (r *idRig) link(t testing.TB, signer common.Address, key *ecdsa.PrivateKey, agent int64) (*identity.LinkResult, error) {
	n := identity.NewNonce()
	m := identity.LinkMessage{AgentID: big.NewInt(agent), KeyID: r.keyID, Nonce: n, Deadline: r.clock().Add(10 * time.Minute).Unix()}
	return r.svc.Link(context.Background(), r.keyID, &identity.LinkRequest{AgentID: big.NewInt(agent).String(),
		Signer: signer.Hex(), Nonce: hexutil.Encode(n[:]), Deadline: m.Deadline,
		Signature: hexutil.Encode(sign(t, key, m.Digest(r.domain)))})
}

// delegation returns a signed delegation header for a request.
func (r *idRig) delegation(t testing.TB, signer common.Address, key *ecdsa.PrivateKey, agent int64, at time.Time, body []byte) string {
	d := identity.Delegation{AgentID: big.NewInt(agent), Signer: signer, Timestamp: at.Unix(), Nonce: identity.NewNonce()}
	m := identity.DelegationMessage{AgentID: d.AgentID, Method: "POST", Path: "/v1/chat/completions",
		BodyHash: crypto.Keccak256Hash(body), Timestamp: d.Timestamp, Nonce: d.Nonce}
	d.Signature = sign(t, key, m.Digest(r.domain))
	return d.Encode()
}

var chatBody = []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)

func delegatedAdmission(header string, body []byte) *gateway.Admission {
	h := &fasthttp.RequestHeader{}
	h.Set("X-Bardo-Delegation", header)
	a := &gateway.Admission{Dialect: wire.DialectOpenAI, Path: "/v1/chat/completions", Header: h, Method: "POST", Body: body,
		RemoteIP: netip.MustParseAddr("127.0.0.1"), Model: "gpt-4o", Spends: true, InputTokens: 1000, MaxTokens: 1000}
	a.Quotes = func() []gateway.Quote {
		in, _ := catalog.ParsePrice("3")
		out, _ := catalog.ParsePrice("15")
		return []gateway.Quote{{Model: "gpt-4o", Prices: pricing.PricesOf(&catalog.Model{Input: in, Output: out}, pricing.OpenAI)}}
	}
	return a
}

// charge admits a delegated request, settles 1,000 input and 100 output
// tokens of gpt-4o ($3/$15 per M: 4,500 µUSD of cost) and returns what
// the account was charged.
func (r *idRig) charge(t *testing.T, header string) int64 {
	t.Helper()
	return r.chargeAdmission(t, delegatedAdmission(header, chatBody))
}

func (r *idRig) chargeAdmission(t *testing.T, adm *gateway.Admission) int64 {
	t.Helper()
	ctx := context.Background()
	before, err := r.s.Account(ctx, "acct_id")
	if err != nil {
		t.Fatal(err)
	}
	c, werr := r.k.Admit(ctx, adm)
	if werr != nil || c.Tenant != "acct_id" || c.Key != r.keyID || c.Tab == nil {
		t.Fatalf("delegated request: %+v %+v", c, werr)
	}
	in, _ := catalog.ParsePrice("3")
	out, _ := catalog.ParsePrice("15")
	rid := identity.NewNonce()
	c.Tab.Close(&gateway.Settlement{RequestID: hexutil.Encode(rid[:]), Path: gateway.PathUpstream,
		Upstream: true, Provider: "up", Model: "gpt-4o", Asked: "gpt-4o", Usage: &wire.Usage{InputTokens: 1000, OutputTokens: 100},
		Status: 200, Prices: pricing.PricesOf(&catalog.Model{Input: in, Output: out}, pricing.OpenAI), Priced: true})
	if err := r.m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := r.s.Account(ctx, "acct_id")
	if err != nil {
		t.Fatal(err)
	}
	return before.Balance - after.Balance
}

func (r *idRig) feedback(t *testing.T, n int, value int64) {
	for range n {
		r.ch.Call(t, r.reviewer, r.repReg, r.repABI, "giveFeedback", big.NewInt(0), big.NewInt(value), uint8(0),
			"starred", "", "https://gateway.example", "", [32]byte{})
	}
}

// An EOA owner links its agent to a key; its delegated requests are
// billed to the key's account at the reputation tier's spread (none: 20 %
// instead of the free tier's 25 %), and the tier follows the Reputation
// Registry once the cache's TTL has passed (50 perfect reviews: basic, 18 %).
func TestDelegationEOABilledAtTierSpread(t *testing.T) {
	r := newIDRig(t)
	owner := chaintest.Address(r.owner)
	res, err := r.link(t, owner, r.owner, 0)
	if err != nil || res.Tier != "none" || res.Score != 0 || res.KeyID != r.keyID {
		t.Fatalf("link: %+v %v", res, err)
	}
	if got := r.charge(t, r.delegation(t, owner, r.owner, 0, r.clock(), chatBody)); got != 5400 {
		t.Fatalf("tier none: charged %d µUSD, want 4,500 × 1.20 = 5,400", got)
	}
	r.feedback(t, 50, 100)
	if got := r.charge(t, r.delegation(t, owner, r.owner, 0, r.clock(), chatBody)); got != 5400 {
		t.Fatalf("within the cache TTL: charged %d, want 5,400 still", got)
	}
	r.advance(61 * time.Second)
	if got := r.charge(t, r.delegation(t, owner, r.owner, 0, r.clock(), chatBody)); got != 5310 {
		t.Fatalf("tier basic (score 50): charged %d µUSD, want 4,500 × 1.18 = 5,310", got)
	}
	st, err := r.svc.Standing(context.Background(), big.NewInt(0))
	if err != nil || st.Score != 50 || st.Tier.Name != "basic" {
		t.Fatalf("standing %+v %v", st, err)
	}
}

// A contract wallet (ERC-1271) set as the agent's wallet links and
// delegates; its signature is checked by isValidSignature on chain.
func TestDelegationContractWallet(t *testing.T) {
	r := newIDRig(t)
	wallet := r.ch.DeployWallet(t, chaintest.Address(r.owner)) // accepts the owner's ECDSA signatures
	r.ch.Call(t, r.owner, r.idReg, r.idABI, "setAgentWallet", big.NewInt(0), wallet, big.NewInt(r.ch.Now(t).Add(time.Hour).Unix()), []byte{})
	if res, err := r.link(t, wallet, r.owner, 0); err != nil || res.Tier != "none" {
		t.Fatalf("link by the contract wallet: %+v %v", res, err)
	}
	if got := r.charge(t, r.delegation(t, wallet, r.owner, 0, r.clock(), chatBody)); got != 5400 {
		t.Fatalf("charged %d, want 5,400", got)
	}
}

// Each bad delegation is a 401 in the caller's dialect naming why; nothing
// is metered.
func TestDelegationRefused(t *testing.T) {
	r := newIDRig(t)
	ctx := context.Background()
	owner := chaintest.Address(r.owner)
	stranger, _ := crypto.GenerateKey()
	refuser := r.ch.DeployRefusingWallet(t, owner)

	// Not linked yet.
	c, werr := r.k.Admit(ctx, delegatedAdmission(r.delegation(t, owner, r.owner, 0, r.clock(), chatBody), chatBody))
	if werr == nil || werr.Status != 401 || !strings.Contains(werr.Message, "not linked") || c.Tab != nil {
		t.Fatalf("unlinked: %+v %+v", c, werr)
	}
	if _, err := r.link(t, owner, r.owner, 0); err != nil {
		t.Fatal(err)
	}
	// A link signed by a stranger, for an unknown agent, with a refusing wallet.
	if _, err := r.link(t, owner, stranger, 0); err == nil || !strings.Contains(err.Error(), "bad signature") {
		t.Errorf("forged link: %v", err)
	}
	if _, err := r.link(t, owner, r.owner, 7); err == nil || !strings.Contains(err.Error(), "not on the identity registry") {
		t.Errorf("unknown agent link: %v", err)
	}

	replayed := r.delegation(t, owner, r.owner, 0, r.clock(), chatBody)
	if c, werr := r.k.Admit(ctx, delegatedAdmission(replayed, chatBody)); werr != nil {
		t.Fatalf("first use: %+v", werr)
	} else {
		c.Tab.Close(&gateway.Settlement{RequestID: "first", Path: gateway.PathError, Status: 499})
	}
	r.ch.Call(t, r.owner, r.idReg, r.idABI, "setAgentWallet", big.NewInt(0), refuser, big.NewInt(r.ch.Now(t).Add(time.Hour).Unix()), []byte{})
	r.advance(61 * time.Second) // the cached signers expire: the refusing wallet is now the agent's
	now := r.clock()
	for name, tc := range map[string]struct {
		header string
		body   []byte
		reason string
	}{
		"forged signature": {r.delegation(t, owner, stranger, 0, now, chatBody), chatBody, "bad signature"},
		"wrong agentId":    {r.delegation(t, owner, r.owner, 3, now, chatBody), chatBody, "not linked"},
		"expired":          {r.delegation(t, owner, r.owner, 0, now.Add(-2*time.Minute), chatBody), chatBody, "expired"},
		"future":           {r.delegation(t, owner, r.owner, 0, now.Add(2*time.Minute), chatBody), chatBody, "future"},
		"replayed":         {replayed, chatBody, "expired"}, // its window passed; see below for within it
		"other body":       {r.delegation(t, owner, r.owner, 0, now, chatBody), []byte(`{"model":"gpt-4o"}`), "bad signature"},
		"not a signer":     {r.delegation(t, chaintest.Address(stranger), stranger, 0, now, chatBody), chatBody, "neither the owner nor the agent wallet"},
		"ERC-1271 says no": {r.delegation(t, refuser, r.owner, 0, now, chatBody), chatBody, "bad signature"},
		"malformed":        {"eyJub3QiOiJqc29uIn0", chatBody, "malformed"},
	} {
		c, werr := r.k.Admit(ctx, delegatedAdmission(tc.header, tc.body))
		if werr == nil || werr.Status != 401 || werr.Kind != wire.ErrAuthentication || c.Tab != nil ||
			!strings.Contains(werr.Message, tc.reason) {
			t.Errorf("%s: %+v %+v", name, c, werr)
		}
	}
	// The Responses front admits twice: delegations are refused there.
	resp := delegatedAdmission(r.delegation(t, owner, r.owner, 0, now, chatBody), chatBody)
	resp.Path = "/v1/responses"
	if c, werr := r.k.Admit(ctx, resp); werr == nil || werr.Status != 401 || !strings.Contains(werr.Message, "/v1/responses") || c.Tab != nil {
		t.Errorf("/v1/responses: %+v %+v", c, werr)
	}
	// A replay within the window.
	h := r.delegation(t, owner, r.owner, 0, r.clock(), chatBody)
	if c, werr := r.k.Admit(ctx, delegatedAdmission(h, chatBody)); werr != nil {
		t.Fatalf("first: %+v", werr)
	} else {
		c.Tab.Close(&gateway.Settlement{RequestID: "x", Path: gateway.PathError, Status: 499})
	}
	if _, werr := r.k.Admit(ctx, delegatedAdmission(h, chatBody)); werr == nil || werr.Status != 401 || !strings.Contains(werr.Message, "replayed") {
		t.Errorf("replay within the window: %+v", werr)
	}
	// Unlinked again: refused.
	if _, err := r.svc.Unlink(ctx, r.keyID); err != nil {
		t.Fatal(err)
	}
	if _, werr := r.k.Admit(ctx, delegatedAdmission(r.delegation(t, owner, r.owner, 0, r.clock(), chatBody), chatBody)); werr == nil || !strings.Contains(werr.Message, "not linked") {
		t.Errorf("after unlink: %+v", werr)
	}
}

// The linked key's own requests (Authorization: Bearer bardo_sk_…) are
// priced at the agent's tier too; before the link, and after the unlink,
// at the account tier's (free: 25 %).
func TestLinkedKeyBilledAtTierSpread(t *testing.T) {
	r := newIDRig(t)
	byKey := func() *gateway.Admission {
		a := delegatedAdmission("", chatBody)
		h := &fasthttp.RequestHeader{}
		h.Set("Authorization", "Bearer "+r.token)
		a.Header = h
		return a
	}
	if got := r.chargeAdmission(t, byKey()); got != 5625 {
		t.Fatalf("unlinked key: charged %d, want 4,500 × 1.25 = 5,625", got)
	}
	if _, err := r.link(t, chaintest.Address(r.owner), r.owner, 0); err != nil {
		t.Fatal(err)
	}
	if got := r.chargeAdmission(t, byKey()); got != 5400 {
		t.Fatalf("linked key, tier none: charged %d, want 5,400", got)
	}
	if _, err := r.svc.Unlink(context.Background(), r.keyID); err != nil {
		t.Fatal(err)
	}
	if got := r.chargeAdmission(t, byKey()); got != 5625 {
		t.Fatalf("unlinked again: charged %d, want 5,625", got)
	}
}

// An unreachable chain is the gateway's trouble: a delegation gets 503
// (retryable), never a 401 or a 500; a linked key's own request is served
// at the account tier's spread.
func TestDelegationChainDown(t *testing.T) {
	r := newIDRig(t)
	if _, err := r.link(t, chaintest.Address(r.owner), r.owner, 0); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/v2/secret-api-key" // a provider key in the path, as RPC URLs carry
	l.Close()                                                    // nothing listens there now
	client, err := ethclient.Dial(dead)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	svc := identity.New(identity.Config{Registry: identity.Registry{Client: client, Identity: r.idReg, Reputation: r.repReg,
		Reviewers: []common.Address{chaintest.Address(r.reviewer)}}, Domain: r.domain, Store: r.s, Now: r.clock})
	var logged strings.Builder
	r.k.Identity = svc
	r.k.Log = slog.New(slog.NewTextHandler(&logged, nil))
	c, werr := r.k.Admit(context.Background(), delegatedAdmission(r.delegation(t, chaintest.Address(r.owner), r.owner, 0, r.clock(), chatBody), chatBody))
	if werr == nil || werr.Status != 503 || !werr.Retryable || c.Tab != nil || strings.Contains(werr.Message, dead) {
		t.Fatalf("chain down: %+v %+v", c, werr)
	}
	h := &fasthttp.RequestHeader{}
	h.Set("Authorization", "Bearer "+r.token)
	a := delegatedAdmission("", chatBody)
	a.Header = h
	if got := r.chargeAdmission(t, a); got != 5625 {
		t.Fatalf("linked key with the chain down: charged %d, want the free tier's 5,625", got)
	}
	if !strings.Contains(logged.String(), "cannot be read") || strings.Contains(logged.String(), "secret-api-key") {
		t.Fatalf("the log names the failure without the RPC URL: %s", logged.String())
	}
}

// A wallet not deployed yet (an ERC-6492-wrapped signature) is refused
// with a 401 naming it, not a 503: no factory is trusted for delegations.
func TestDelegationCounterfactualRefused(t *testing.T) {
	r := newIDRig(t)
	owner := chaintest.Address(r.owner)
	if _, err := r.link(t, owner, r.owner, 0); err != nil {
		t.Fatal(err)
	}
	cf := r.ch.CounterfactualWallet(t, r.ch.DeployFactory(t), owner, [32]byte{7})
	r.ch.Call(t, r.owner, r.idReg, r.idABI, "setAgentWallet", big.NewInt(0), cf.Address, big.NewInt(r.ch.Now(t).Add(time.Hour).Unix()), []byte{})
	r.advance(61 * time.Second) // past the cached signers
	d := identity.Delegation{AgentID: big.NewInt(0), Signer: cf.Address, Timestamp: r.clock().Unix(), Nonce: identity.NewNonce()}
	m := identity.DelegationMessage{AgentID: d.AgentID, Method: "POST", Path: "/v1/chat/completions",
		BodyHash: crypto.Keccak256Hash(chatBody), Timestamp: d.Timestamp, Nonce: d.Nonce}
	d.Signature = chaintest.Wrap6492(cf, sign(t, r.owner, m.Digest(r.domain)))
	c, werr := r.k.Admit(context.Background(), delegatedAdmission(d.Encode(), chatBody))
	if werr == nil || werr.Status != 401 || !strings.Contains(werr.Message, "not deployed") || c.Tab != nil {
		t.Fatalf("%+v %+v", c, werr)
	}
}

// A delegation is single-use across restarts: a new Service (an empty
// replay set) over the same database still refuses it.
func TestDelegationReplayAfterRestart(t *testing.T) {
	r := newIDRig(t)
	owner := chaintest.Address(r.owner)
	if _, err := r.link(t, owner, r.owner, 0); err != nil {
		t.Fatal(err)
	}
	h := r.delegation(t, owner, r.owner, 0, r.clock(), chatBody)
	c, werr := r.k.Admit(context.Background(), delegatedAdmission(h, chatBody))
	if werr != nil {
		t.Fatal(werr)
	}
	c.Tab.Close(&gateway.Settlement{RequestID: "first", Path: gateway.PathError, Status: 499})
	r.k.Identity = identity.New(identity.Config{Registry: identity.Registry{Client: r.ch.Client, Identity: r.idReg,
		Reputation: r.repReg, Reviewers: []common.Address{chaintest.Address(r.reviewer)}, Tag1: "starred"},
		Domain: r.domain, Store: r.s, Now: r.clock})
	c, werr = r.k.Admit(context.Background(), delegatedAdmission(h, chatBody))
	if werr == nil || werr.Status != 401 || !strings.Contains(werr.Message, "replayed") || c.Tab != nil {
		t.Fatalf("replayed after a restart: %+v %+v", c, werr)
	}
	// Pruned once expired: the window has passed, so the refusal is "expired".
	r.advance(2 * time.Minute)
	if n, err := r.s.PruneNonces(context.Background(), r.clock()); err != nil || n == 0 {
		t.Fatalf("prune: %d %v", n, err)
	}
	if _, werr := r.k.Admit(context.Background(), delegatedAdmission(h, chatBody)); werr == nil || !strings.Contains(werr.Message, "expired") {
		t.Fatalf("after the window: %+v", werr)
	}
}
