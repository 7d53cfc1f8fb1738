// Package paywall admits requests paid per request with x402: the wallet
// that signs a payment is the request's tenant. A completion without any
// credential gets 402 with the x402 v2 PAYMENT-REQUIRED challenge, priced
// from the request's reservation estimate; a PAYMENT-SIGNATURE (v2) or
// X-PAYMENT (v1) header is verified locally (host/x402.Verifier: EIP-712
// signature recovered to authorization.from, payTo, amount, token and
// network, validity window, the nonce consumed in the database), the
// request is served, and the payment is settled through a facilitator
// when the answer succeeded. A settlement that fails is kept in the store
// and retried; its payer is refused until it clears.
//
// host/auth/admit dispatches to it by credential kind (admit.Payments).
package paywall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/bardoinference/bardo/host/auth"
	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/store"
	"github.com/bardoinference/bardo/host/x402"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Settler settles an accepted payment; *x402.Facilitator implements it. A
// refusal is an answer with Success false; an error means the outcome is
// unknown and the settlement must be retried.
type Settler interface {
	Settle(ctx context.Context, p *x402.PaymentPayload, req *x402.PaymentRequirements) (*x402.SettlementResponse, error)
}

// Config configures a Paywall.
type Config struct {
	// PayTo is the gateway's receiving address (required).
	PayTo common.Address
	// Token is the asset asked for (zero: USDC on Base, eip155:8453).
	Token x402.Token
	// MaxTimeout is the offers' maxTimeoutSeconds: how long a signed
	// authorization must stay valid (0: 120 s).
	MaxTimeout time.Duration
	// MinAmount is the least a request is offered at, in the token's
	// atomic units (0: 1000, 0.001 USDC): what an unpriced model costs,
	// and a floor that keeps a settlement worth its gas.
	MinAmount int64
	// Spread is the markup on the provider's price (0: 2000 bps, the spec's
	// reputation tier None).
	Spread pricing.Spread
	// RequestsPerMinute limits each wallet (0: no limit).
	RequestsPerMinute int
	// DayBudget and MonthBudget cap what each wallet may spend per UTC
	// day and month, in micro-USD (USDC atomic units; 0: no cap): the
	// default of every wallet. A wallet's own budget in Budgets overrides
	// its period's default.
	DayBudget, MonthBudget int64
	// Budgets, when set, holds per-wallet budgets (scope account, subject
	// the tenant "wallet:0x…"), read on a wallet's first request and
	// again when older than BudgetRefresh (0: 2 s).
	Budgets       store.SpendBudgets
	BudgetRefresh time.Duration
	// ResourceBase prefixes the path in the challenge's resource.url
	// (e.g. https://bardo.example.com); "" leaves the path alone.
	ResourceBase string
	// UptoFacilitator is the address of the facilitator that settles
	// upto payments (its /supported extra.facilitatorAddress): the
	// client's Permit2 witness binds it. Zero: upto is not offered —
	// unless the Settler settles on chain itself (*x402.ChainSettler):
	// then its settlement key is upto's facilitator, the only sender the
	// upto proxy takes a settlement from, and upto is offered.
	UptoFacilitator common.Address
	// Settler settles accepted payments (required): *x402.Facilitator, or
	// *x402.ChainSettler to settle on chain with the gateway's key.
	Settler Settler
	// Chain, when set, verifies on chain what offline checks cannot: the
	// payer's balance before serving, and contract-wallet signatures
	// (ERC-1271, ERC-6492); without it those signatures are refused.
	Chain x402.OnChain
	// SettleTimeout bounds one settlement call (0: 15 s).
	SettleTimeout time.Duration
	// Nonces is where authorization nonces are consumed (required for a
	// real gateway: a nonce consumed there is refused across restarts and
	// by every process sharing the database).
	Nonces store.Nonces
	// Owed keeps the settlements that failed (required).
	Owed store.X402Settlements
	// Usage, when set, gets a usage record per paid request under its
	// wallet (account id "wallet:0x…"), as a key's requests do; budgets
	// sum a wallet's spend from them on its first request.
	Usage store.UsageLog
	Now   func() time.Time
	Log   *slog.Logger
}

// Paywall implements admit.Payments.
type Paywall struct {
	cfg       Config
	verifier  *x402.Verifier
	extra     json.RawMessage
	uptoExtra json.RawMessage

	mu     sync.Mutex
	owed   map[string]string // payer -> the last failure's reason, for payers with owed settlements
	window int64             // the minute the counts are for
	counts map[string]int
	purses map[string]*purse // tenant -> its budgets' state (budget.go)
}

// Defaults of Config.
const (
	DefaultMaxTimeout    = 120 * time.Second
	DefaultMinAmount     = 1000
	DefaultSpread        = pricing.Spread(2000)
	DefaultSettleTimeout = 15 * time.Second
)

// TenantPrefix starts a wallet tenant: "wallet:0x<address, lower case>".
const TenantPrefix = "wallet:"

// New returns a Paywall, loading the payers that owe a settlement.
func New(ctx context.Context, cfg Config) (*Paywall, error) {
	if cfg.PayTo == (common.Address{}) {
		return nil, errors.New("paywall: pay_to is required")
	}
	if cfg.Settler == nil || cfg.Owed == nil || cfg.Nonces == nil {
		return nil, errors.New("paywall: a settler, a nonce store and a settlement store are required")
	}
	if cfg.Token.Address == (common.Address{}) {
		cfg.Token = x402.USDCBase
	}
	if cfg.MaxTimeout <= 0 {
		cfg.MaxTimeout = DefaultMaxTimeout
	}
	if cfg.MinAmount <= 0 {
		cfg.MinAmount = DefaultMinAmount
	}
	if cfg.Spread <= 0 {
		cfg.Spread = DefaultSpread
	}
	if cfg.SettleTimeout <= 0 {
		cfg.SettleTimeout = DefaultSettleTimeout
	}
	if cfg.BudgetRefresh <= 0 {
		cfg.BudgetRefresh = DefaultBudgetRefresh
	}
	if cfg.DayBudget < 0 || cfg.MonthBudget < 0 {
		return nil, errors.New("paywall: a wallet budget cannot be negative")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	extra, err := json.Marshal(x402.ExactExtra{Name: cfg.Token.Name, Version: cfg.Token.Version})
	if err != nil {
		return nil, err
	}
	p := &Paywall{cfg: cfg, extra: extra, owed: map[string]string{}, counts: map[string]int{},
		purses: map[string]*purse{}}
	if cs, ok := cfg.Settler.(interface{ SettlementAddress() common.Address }); ok {
		switch key := cs.SettlementAddress(); {
		case key == (common.Address{}):
		case cfg.UptoFacilitator == (common.Address{}):
			cfg.UptoFacilitator = key
			p.cfg.UptoFacilitator = key
		case cfg.UptoFacilitator != key:
			return nil, fmt.Errorf("paywall: upto's facilitator %s is not the settlement key's address %s, which settles upto on chain",
				cfg.UptoFacilitator.Hex(), key.Hex())
		}
	}
	if cfg.UptoFacilitator != (common.Address{}) {
		p.uptoExtra = uptoExtra(cfg.Token, cfg.UptoFacilitator.Hex())
	}
	p.verifier = x402.NewVerifier(dbNonces{cfg.Nonces}, cfg.Now)
	p.verifier.Chain = cfg.Chain
	owed, err := cfg.Owed.X402Owed(ctx, "", 1<<20)
	if err != nil {
		return nil, fmt.Errorf("paywall: reading owed settlements: %w", err)
	}
	for _, o := range owed {
		p.owed[o.Payer] = o.LastError
	}
	return p, nil
}

// dbNonces is x402.NonceStore over the store's nonces: one scope per
// chain, token and payer, as the token contract keys authorizationState.
type dbNonces struct{ s store.Nonces }

func (d dbNonces) Use(ctx context.Context, k x402.NonceKey, expires time.Time) error {
	scope := "x402:" + strconv.FormatUint(k.ChainID, 10) + ":" + strings.ToLower(k.Token.Hex()) + ":" + strings.ToLower(k.From.Hex())
	err := d.s.ConsumeNonce(ctx, scope, common.Bytes2Hex(k.Nonce[:]), expires)
	if errors.Is(err, store.ErrNonceUsed) {
		return x402.ErrNonceUsed
	}
	return err
}

// Release keeps the claim: an authorization the gateway accepted and did
// not settle is abandoned (its funds never moved); the client signs a new
// one. Forgetting it would let the same signature buy a second answer if
// the first one's settlement were merely late.
func (dbNonces) Release(context.Context, x402.NonceKey) error { return nil }

// offer returns the exact offer for an admission, and the quote behind it.
func (p *Paywall) offer(a *gateway.Admission) (x402.PaymentRequirements, Quote) {
	q := p.quote(a)
	amount := max(int64(q.Price.micros), p.cfg.MinAmount)
	return x402.PaymentRequirements{
		Scheme:            x402.SchemeExact,
		Network:           p.cfg.Token.Network,
		Amount:            strconv.FormatInt(amount, 10),
		Asset:             p.cfg.Token.Address.Hex(),
		PayTo:             p.cfg.PayTo.Hex(),
		MaxTimeoutSeconds: int64(p.cfg.MaxTimeout / time.Second),
		Extra:             p.extra,
	}, q
}

// offers are the ways to pay for a: exact, then upto when configured.
func (p *Paywall) offers(a *gateway.Admission) ([]x402.PaymentRequirements, Quote) {
	o, q := p.offer(a)
	if p.uptoExtra == nil {
		return []x402.PaymentRequirements{o}, q
	}
	return []x402.PaymentRequirements{o, p.uptoOffer(o)}, q
}

func (p *Paywall) resource(a *gateway.Admission) *x402.ResourceInfo {
	return &x402.ResourceInfo{URL: strings.TrimRight(p.cfg.ResourceBase, "/") + a.Path,
		Description: "LLM completion, paid per request", MimeType: "application/json"}
}

// Challenge answers a completion that carries no credential: 402 with the
// PAYMENT-REQUIRED challenge and the inference quote. A read (a.Spends
// false) is not for sale: it gets ok false, and the caller answers it as
// unauthenticated.
func (p *Paywall) Challenge(_ context.Context, a *gateway.Admission) (gateway.Caller, *wire.Error, bool) {
	if !a.Spends {
		return gateway.Caller{}, nil, false
	}
	c, e := p.refuse(a, "", "payment required: send an x402 payment (PAYMENT-SIGNATURE) for this request, or an API key")
	return c, e, true
}

// refuse is a 402 naming reason (an x402 error code, "" for the first
// challenge), with a fresh challenge.
func (p *Paywall) refuse(a *gateway.Admission, reason, msg string) (gateway.Caller, *wire.Error) {
	offers, q := p.offers(a)
	offer := offers[0]
	pr := x402.PaymentRequired{X402Version: x402.Version2, Error: reason, Resource: p.resource(a), Accepts: offers}
	if ext, err := json.Marshal(map[string]any{ExtensionInference: map[string]any{"info": q}}); err == nil {
		pr.Extensions = ext
	}
	var c gateway.Caller
	if h, err := x402.EncodeHeader(&pr); err == nil {
		c.Headers = append(c.Headers, wire.KV{Key: x402.HeaderPaymentRequired, Value: h})
	}
	if b, err := json.Marshal(q); err == nil {
		c.Headers = append(c.Headers, wire.KV{Key: HeaderQuote, Value: string(b)})
	}
	c.ErrorMembers = p.body(a, offers, q)
	usd := pricing.Micros(mustInt(offer.Amount))
	scheme := "scheme exact"
	if len(offers) > 1 {
		scheme += ", or at most that with upto"
	}
	text := msg + "; price " + offer.Amount + " atomic units of " + p.cfg.Token.Name + " (" + usd.String() + " USD) on " +
		offer.Network + " to " + offer.PayTo + " (" + scheme + "); quote: " + q.String()
	if reason != "" {
		text = "x402 payment refused (" + reason + "): " + msg + "; " + text[len(msg)+2:]
	}
	return c, &wire.Error{Status: 402, Kind: wire.ErrPermission, Message: text}
}

func mustInt(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Pay admits a request that carries an x402 payment (cred from
// auth.X402Scheme): decoded, matched to this request's offer, verified and
// its nonce consumed. The caller is the payer's wallet; its tab settles
// the payment when the answer succeeded.
func (p *Paywall) Pay(ctx context.Context, cred auth.Credential, a *gateway.Admission) (gateway.Caller, *wire.Error) {
	if !a.Spends {
		return gateway.Caller{}, &wire.Error{Status: 401, Kind: wire.ErrAuthentication,
			Message: "an x402 payment pays for a completion; this endpoint needs an API key"}
	}
	pl, err := x402.DecodePaymentPayload(cred.Header, cred.Value)
	if err != nil {
		return p.refuse(a, x402.ReasonInvalidPayload, "the payment header cannot be read: "+errText(err))
	}
	offers, _ := p.offers(a)
	if pl.X402Version == x402.Version1 {
		// A v1 client answered the body's offer: exact, in v1's form, which
		// is also what its settlement sends the facilitator (v1 semantics:
		// maxAmountRequired, the network's v1 name).
		offers = offers[:1]
		if v1, ok := p.v1Offer(a, offers[0]); ok {
			offers[0] = v1
		}
	}
	from := pl.Payload.Authorization.From
	if pl.Payload.Permit2Authorization != nil {
		from = pl.Payload.Permit2Authorization.From
	}
	payer := strings.ToLower(from)
	if reason, owes := p.owes(ctx, payer); owes {
		return p.refuse(a, x402.ReasonInvalidTransaction, "an earlier payment from "+from+
			" could not be settled ("+reason+"); it is retried, and this wallet is served again once it clears")
	}
	req, err := x402.MatchRequirements(pl, offers)
	if err != nil {
		return p.refuse(a, x402.ReasonOf(err), errText(err))
	}
	var v *x402.Verified
	var vu *x402.VerifiedUpto
	if req.Scheme == x402.SchemeUpto {
		vu, err = p.verifier.VerifyUpto(ctx, pl, req)
	} else {
		v, err = p.verifier.Verify(ctx, pl, req)
	}
	if err != nil {
		reason := x402.ReasonOf(err)
		if reason == x402.ReasonUnexpectedVerify {
			p.cfg.Log.Error("x402: verifying a payment", "err", err)
			return gateway.Caller{}, &wire.Error{Status: 503, Kind: wire.ErrOverloaded, Retryable: true, RetryAfterMs: 1000,
				Message: "the gateway cannot record payments right now; try again"}
		}
		if reason == x402.ReasonContractSignature {
			// The seam for ERC-1271/6492: verifying them needs a chain
			// (isValidSignature, or the ERC-6492 factory call).
			return p.refuse(a, reason, "smart-contract wallet signatures (ERC-1271, ERC-6492) are not accepted yet; pay from an EOA")
		}
		return p.refuse(a, reason, errText(err))
	}
	var signer common.Address
	if v != nil {
		signer = v.Payer
	} else {
		signer = vu.Payer
	}
	tenant := TenantPrefix + strings.ToLower(signer.Hex())
	c := gateway.Caller{Tenant: tenant}
	if !p.allow(tenant) {
		// The nonce is consumed and nothing is settled: the client signs
		// a new authorization after Retry-After.
		now := p.cfg.Now()
		return c, &wire.Error{Status: 429, Kind: wire.ErrRateLimit, Retryable: true,
			RetryAfterMs: int64(time.Unix((now.Unix()/60+1)*60, 0).Sub(now) / time.Millisecond),
			Message:      "rate limit reached: this wallet may send " + strconv.Itoa(p.cfg.RequestsPerMinute) + " requests a minute; nothing was charged"}
	}
	// The budgets come after the rate limit, the cheaper check; a refusal
	// settles nothing and, like the rate limit's, leaves the nonce consumed.
	if vu != nil {
		u, e := p.hold(ctx, tenant, vu.Max.Int64())
		if e != nil {
			return c, e
		}
		c.Tab = &uptoTab{p: p, payload: pl, req: req, verified: vu, input: a.InputTokens, tenant: tenant, purse: u,
			bill: pricing.NewBill(pricing.Terms{Spread: p.cfg.Spread})}
		return c, nil
	}
	u, e := p.hold(ctx, tenant, v.Amount.Int64())
	if e != nil {
		return c, e
	}
	c.Tab = &tab{p: p, payload: pl, req: req, verified: v, input: a.InputTokens, tenant: tenant, purse: u}
	return c, nil
}

// errText is an error's text without the package prefix: it names fields
// and addresses, never a secret (a payment carries none).
func errText(err error) string {
	var ve *x402.VerifyError
	if errors.As(err, &ve) {
		err = ve.Err
	}
	return strings.TrimPrefix(err.Error(), "x402: ")
}

// allow counts a request against its wallet's per-minute limit.
func (p *Paywall) allow(tenant string) bool {
	if p.cfg.RequestsPerMinute <= 0 {
		return true
	}
	w := p.cfg.Now().Unix() / 60
	p.mu.Lock()
	defer p.mu.Unlock()
	if w != p.window {
		p.window, p.counts = w, map[string]int{}
	}
	if p.counts[tenant] >= p.cfg.RequestsPerMinute {
		return false
	}
	p.counts[tenant]++
	return true
}

// owes reports whether payer has an owed settlement, after one attempt to
// settle what it owes.
func (p *Paywall) owes(ctx context.Context, payer string) (string, bool) {
	p.mu.Lock()
	_, owes := p.owed[payer]
	p.mu.Unlock()
	if !owes {
		return "", false
	}
	p.Retry(ctx, payer)
	p.mu.Lock()
	defer p.mu.Unlock()
	reason, owes := p.owed[payer]
	return reason, owes
}
