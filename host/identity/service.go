// Package identity links ERC-8004 ("Trustless Agents") agent identities to
// gateway keys and authenticates requests signed for them: the EIP-712
// Link and Delegation types, their verification (ecrecover for an EOA,
// ERC-1271 isValidSignature by eth_call for a contract wallet), the
// Identity Registry's owner and agentWallet, and the Reputation
// Registry's summary mapped to the spec's reputation tiers and spreads.
package identity

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/x402"
)

// Store keeps the links; *sqlite.Store implements it.
type Store interface {
	// LinkIdentity links agent (its global id) to key keyID, replacing the
	// agent's and the key's earlier links; store.ErrExists when nonce was
	// used before, store.ErrNotFound when there is no such key.
	LinkIdentity(ctx context.Context, agent, keyID, signer, nonce string) error
	// UnlinkIdentity removes keyID's link (store.ErrNotFound: none).
	UnlinkIdentity(ctx context.Context, keyID string) (agent string, err error)
	// IdentityKey returns the key agent is linked to (store.ErrNotFound).
	IdentityKey(ctx context.Context, agent string) (string, error)
	// KeyIdentity returns the agent linked to key keyID (store.ErrNotFound).
	KeyIdentity(ctx context.Context, keyID string) (agent string, err error)
	// ConsumeNonce records nonce in scope once (store.ErrNonceUsed after):
	// a delegation's, until it can no longer pass the window, so a replay is
	// refused across restarts and by every gateway sharing the database.
	ConsumeNonce(ctx context.Context, scope, nonce string, expires time.Time) error
}

// NonceScope is the scope delegation nonces are consumed in (host/store's
// nonces table; pruned with the x402 ones by PruneNonces).
const NonceScope = "erc8004-delegation"

// Config configures a Service.
type Config struct {
	Registry Registry
	// Domain is the EIP-712 domain both types are signed under: the
	// gateway's name, version, chain id and verifying contract.
	Domain x402.Domain
	Store  Store
	// CacheTTL is how long an agent's signers and score are trusted
	// (default 60 s): a transfer or new feedback applies within it.
	CacheTTL time.Duration
	// Window is how far a delegation's timestamp may be from the clock
	// (default 60 s, each way); its nonce is remembered that long.
	Window time.Duration
	// MaxLinkTTL bounds a link proof's deadline from now (default 1 h).
	MaxLinkTTL time.Duration
	Now        func() time.Time
}

// Reasons a link or delegation is refused (401/403, said to the caller).
var (
	ErrRefused = errors.New("identity")
)

func refuse(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrRefused, fmt.Sprintf(format, a...))
}

// Service links identities and verifies delegations.
type Service struct {
	cfg   Config
	chain *x402.Chain

	mu     sync.Mutex
	agents map[string]cachedAgent // by global agent id
	keys   map[string]cachedKey   // the agent linked to a key, by key id
	links  map[string]cachedLink  // the key linked to an agent, by global agent id
	seen   map[[52]byte]time.Time // signer‖nonce of delegations within the window
}

type cachedLink struct {
	keyID string // "": not linked
	at    time.Time
}

type cachedKey struct {
	agent *big.Int // nil: the key has no link
	at    time.Time
}

type cachedAgent struct {
	signers Signers
	tier    Tier
	score   int64
	at      time.Time
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = time.Minute
	}
	if cfg.Window <= 0 {
		cfg.Window = time.Minute
	}
	if cfg.MaxLinkTTL <= 0 {
		cfg.MaxLinkTTL = time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Service{cfg: cfg, chain: &x402.Chain{Client: cfg.Registry.Client},
		agents: map[string]cachedAgent{}, keys: map[string]cachedKey{}, links: map[string]cachedLink{}, seen: map[[52]byte]time.Time{}}
}

// GlobalID is the ERC's global agent id: eip155:<chainId>:<registry>:<agentId>.
func (s *Service) GlobalID(agentID *big.Int) string {
	return fmt.Sprintf("eip155:%d:%s:%s", s.cfg.Domain.ChainID, s.cfg.Registry.Identity.Hex(), agentID)
}

// Standing is an agent's reputation as the gateway prices it.
type Standing struct {
	Agent string // global id
	Score int64
	Tier  Tier
}

// agent returns agentID's signers and tier, from the cache when fresh.
func (s *Service) agent(ctx context.Context, agentID *big.Int) (cachedAgent, error) {
	id := s.GlobalID(agentID)
	now := s.cfg.Now()
	s.mu.Lock()
	a, ok := s.agents[id]
	s.mu.Unlock()
	if ok && now.Sub(a.at) < s.cfg.CacheTTL {
		return a, nil
	}
	signers, err := s.cfg.Registry.Signers(ctx, agentID)
	if err != nil {
		return a, err
	}
	sum, err := s.cfg.Registry.Summary(ctx, agentID)
	if err != nil {
		return a, err
	}
	a = cachedAgent{signers: signers, score: sum.Score(), at: now}
	a.tier = TierOf(a.score)
	s.mu.Lock()
	if len(s.agents) >= 100_000 {
		clear(s.agents)
	}
	s.agents[id] = a
	s.mu.Unlock()
	return a, nil
}

// Standing returns agentID's score and tier (cached for CacheTTL).
func (s *Service) Standing(ctx context.Context, agentID *big.Int) (Standing, error) {
	a, err := s.agent(ctx, agentID)
	if errors.Is(err, ErrUnknownAgent) {
		return Standing{}, refuse("agent %s is not on the identity registry", agentID)
	}
	if err != nil {
		return Standing{}, err
	}
	return Standing{Agent: s.GlobalID(agentID), Score: a.score, Tier: a.tier}, nil
}

// verify checks that sig is signer's over digest: ecrecover for an EOA,
// else ERC-1271 isValidSignature on signer's contract.
func (s *Service) verify(ctx context.Context, signer common.Address, digest common.Hash, sig []byte) error {
	if a, ok := recoverEOA(digest, sig); ok && a == signer {
		return nil
	}
	ok, err := s.chain.ValidSignature(ctx, signer, digest, sig)
	if errors.Is(err, x402.ErrFactoryNotAllowed) {
		// No factory is allowed here: a wallet must be deployed to sign.
		return refuse("bad signature: %s is not deployed (ERC-6492 signatures are not accepted)", signer.Hex())
	}
	if err != nil {
		return fmt.Errorf("%w: %s", ErrChain, scrub(err))
	}
	if !ok {
		return refuse("bad signature: not %s's (ecrecover, ERC-1271)", signer.Hex())
	}
	return nil
}

// LinkRequest is POST /v1/identity/link's body.
type LinkRequest struct {
	AgentID   string `json:"agentId"`   // decimal or 0x hex uint256
	Signer    string `json:"signer"`    // the owner's or agent wallet's address
	Nonce     string `json:"nonce"`     // 0x, 32 bytes, never reused
	Deadline  int64  `json:"deadline"`  // unix seconds
	Signature string `json:"signature"` // 0x; 65 bytes for an EOA, the wallet's format for ERC-1271
}

// LinkResult is the link's answer.
type LinkResult struct {
	Agent  string `json:"agent"`
	KeyID  string `json:"keyId"`
	Score  int64  `json:"score"`
	Tier   string `json:"tier"`
	Spread string `json:"spread"`
}

// Link links the agent of r to gateway key keyID after verifying the
// Link proof. A refusal wraps ErrRefused; a chain or store failure does
// not.
func (s *Service) Link(ctx context.Context, keyID string, r *LinkRequest) (*LinkResult, error) {
	agentID, err := parseAgentID([]byte(r.AgentID))
	if err != nil {
		return nil, refuse("agentId is not a uint256")
	}
	if !common.IsHexAddress(r.Signer) {
		return nil, refuse("signer is not an address")
	}
	m := LinkMessage{AgentID: agentID, KeyID: keyID, Deadline: r.Deadline}
	nonce := common.FromHex(r.Nonce)
	if len(nonce) != 32 {
		return nil, refuse("nonce must be 32 bytes of hex")
	}
	copy(m.Nonce[:], nonce)
	now := s.cfg.Now()
	if !time.Unix(r.Deadline, 0).After(now) {
		return nil, refuse("the link proof expired (deadline)")
	}
	if time.Unix(r.Deadline, 0).After(now.Add(s.cfg.MaxLinkTTL)) {
		return nil, refuse("deadline is more than %s away", s.cfg.MaxLinkTTL)
	}
	sig := common.FromHex(r.Signature)
	signer := common.HexToAddress(r.Signer)
	a, err := s.fresh(ctx, agentID)
	if err != nil {
		return nil, err
	}
	if !a.signers.Has(signer) {
		return nil, refuse("%s is neither the owner nor the agent wallet of agent %s", signer.Hex(), agentID)
	}
	if err := s.verify(ctx, signer, m.Digest(s.cfg.Domain), sig); err != nil {
		return nil, err
	}
	id := s.GlobalID(agentID)
	err = s.cfg.Store.LinkIdentity(ctx, id, keyID, signer.Hex(), r.Nonce)
	switch {
	case errors.Is(err, store.ErrExists):
		return nil, refuse("nonce already used")
	case errors.Is(err, store.ErrNotFound):
		return nil, refuse("only a bardo_sk_ key may link an identity")
	case err != nil:
		return nil, err
	}
	s.forgetKey(keyID)
	return &LinkResult{Agent: id, KeyID: keyID, Score: a.score, Tier: a.tier.Name, Spread: spreadText(a.tier)}, nil
}

// fresh reads the agent from the chain, not the cache: a link is rare
// and must see the current owner.
func (s *Service) fresh(ctx context.Context, agentID *big.Int) (cachedAgent, error) {
	s.mu.Lock()
	delete(s.agents, s.GlobalID(agentID))
	s.mu.Unlock()
	a, err := s.agent(ctx, agentID)
	if errors.Is(err, ErrUnknownAgent) {
		return a, refuse("agent %s is not on the identity registry", agentID)
	}
	return a, err
}

// Unlink removes the link of key keyID.
func (s *Service) Unlink(ctx context.Context, keyID string) (string, error) {
	agent, err := s.cfg.Store.UnlinkIdentity(ctx, keyID)
	s.forgetKey(keyID)
	if errors.Is(err, store.ErrNotFound) {
		return "", refuse("this key has no linked identity")
	}
	return agent, err
}

// Delegated is a verified delegation: the key it acts as, and the
// agent's standing.
type Delegated struct {
	KeyID    string
	Standing Standing
}

// Delegate verifies a delegation header for a request (method, path,
// body) and returns the linked key. A refusal wraps ErrRefused and names
// why; ErrChain or a store error is the gateway's trouble.
func (s *Service) Delegate(ctx context.Context, header, method, path string, body []byte) (*Delegated, error) {
	d, err := ParseDelegation(header)
	if err != nil {
		return nil, refuse("%v", err)
	}
	now := s.cfg.Now()
	at := time.Unix(d.Timestamp, 0)
	if at.Before(now.Add(-s.cfg.Window)) {
		return nil, refuse("delegation expired (timestamp older than %s)", s.cfg.Window)
	}
	if at.After(now.Add(s.cfg.Window)) {
		return nil, refuse("delegation timestamp is in the future")
	}
	id := s.GlobalID(d.AgentID)
	keyID, err := s.linkedKey(ctx, id, now)
	if err != nil {
		return nil, err
	}
	if keyID == "" {
		return nil, refuse("agent %s is not linked to a key: POST /v1/identity/link first", d.AgentID)
	}
	a, err := s.agent(ctx, d.AgentID)
	if errors.Is(err, ErrUnknownAgent) {
		return nil, refuse("agent %s is not on the identity registry", d.AgentID)
	}
	if err != nil {
		return nil, err
	}
	if !a.signers.Has(d.Signer) {
		return nil, refuse("%s is neither the owner nor the agent wallet of agent %s", d.Signer.Hex(), d.AgentID)
	}
	m := DelegationMessage{AgentID: d.AgentID, Method: method, Path: path, BodyHash: crypto.Keccak256Hash(body),
		Timestamp: d.Timestamp, Nonce: d.Nonce}
	if err := s.verify(ctx, d.Signer, m.Digest(s.cfg.Domain), d.Signature); err != nil {
		return nil, err
	}
	if !s.firstUse(d, now) {
		return nil, refuse("delegation replayed (nonce already used)")
	}
	// The memory set answers a replay to this process at once; the store
	// makes the refusal survive a restart and hold across gateways. A
	// timestamp passes the window for at most 2×Window after it is signed.
	err = s.cfg.Store.ConsumeNonce(ctx, NonceScope, d.Signer.Hex()+":"+hexNonce(d.Nonce), at.Add(s.cfg.Window+time.Second))
	if errors.Is(err, store.ErrNonceUsed) {
		return nil, refuse("delegation replayed (nonce already used)")
	}
	if err != nil {
		return nil, err
	}
	return &Delegated{KeyID: keyID, Standing: Standing{Agent: id, Score: a.score, Tier: a.tier}}, nil
}

// firstUse records the delegation's signer and nonce, reporting false
// when they were seen within the window. Entries older than twice the
// window (a timestamp may be a window ahead) are swept as the set grows.
func (s *Service) firstUse(d *Delegation, now time.Time) bool {
	var k [52]byte
	copy(k[:20], d.Signer[:])
	copy(k[20:], d.Nonce[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[k]; ok {
		return false
	}
	if len(s.seen) >= 1024 && len(s.seen)%1024 == 0 {
		for key, t := range s.seen {
			if now.Sub(t) > 2*s.cfg.Window {
				delete(s.seen, key)
			}
		}
	}
	s.seen[k] = now
	return true
}

// spreadText writes a spread in percent, e.g. "18.00%".
func spreadText(t Tier) string {
	return fmt.Sprintf("%d.%02d%%", t.Spread/100, t.Spread%100)
}

func hexNonce(n [32]byte) string { return common.Bytes2Hex(n[:]) }

// NewNonce returns 32 random bytes, for clients and tests.
func NewNonce() (n [32]byte) {
	_, _ = rand.Read(n[:])
	return n
}

// KeyStanding returns the standing of the agent linked to key keyID, ok
// false when the key has no link: a linked key's own requests are priced
// at its agent's tier too (the spec: linking unlocks the discounts). The
// link and the standing are cached for CacheTTL; the link is forgotten at
// once when this Service links or unlinks the key.
func (s *Service) KeyStanding(ctx context.Context, keyID string) (st Standing, ok bool, err error) {
	now := s.cfg.Now()
	s.mu.Lock()
	k, hit := s.keys[keyID]
	s.mu.Unlock()
	if !hit || now.Sub(k.at) >= s.cfg.CacheTTL {
		agent, err := s.cfg.Store.KeyIdentity(ctx, keyID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			k = cachedKey{at: now}
		case err != nil:
			return st, false, err
		default:
			k = cachedKey{agent: s.agentOf(agent), at: now}
		}
		s.mu.Lock()
		if len(s.keys) >= 100_000 {
			clear(s.keys)
		}
		s.keys[keyID] = k
		s.mu.Unlock()
	}
	if k.agent == nil {
		return st, false, nil
	}
	st, err = s.Standing(ctx, k.agent)
	return st, err == nil, err
}

// agentOf returns the agent id of a global id on the configured registry
// (nil for another registry's: the operator changed it since the link).
func (s *Service) agentOf(global string) *big.Int {
	prefix := s.GlobalID(new(big.Int))
	prefix = prefix[:len(prefix)-1] // without the "0"
	if len(global) <= len(prefix) || global[:len(prefix)] != prefix {
		return nil
	}
	n, ok := new(big.Int).SetString(global[len(prefix):], 10)
	if !ok {
		return nil
	}
	return n
}

// linkedKey returns the key agent (a global id) is linked to, "" for
// none, from the cache when younger than CacheTTL.
func (s *Service) linkedKey(ctx context.Context, agent string, now time.Time) (string, error) {
	s.mu.Lock()
	l, ok := s.links[agent]
	s.mu.Unlock()
	if ok && now.Sub(l.at) < s.cfg.CacheTTL {
		return l.keyID, nil
	}
	keyID, err := s.cfg.Store.IdentityKey(ctx, agent)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	s.mu.Lock()
	if len(s.links) >= 100_000 {
		clear(s.links)
	}
	s.links[agent] = cachedLink{keyID: keyID, at: now}
	s.mu.Unlock()
	return keyID, nil
}

// forgetKey drops what is cached about keyID's link (and every agent's
// link: a link or unlink is rare, and an agent moved between keys must
// not act as the old one).
func (s *Service) forgetKey(keyID string) {
	s.mu.Lock()
	delete(s.keys, keyID)
	clear(s.links)
	s.mu.Unlock()
}
