package x402

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// Policy bounds what a Payer may sign. Amounts are atomic units of the
// token (USDC has 6 decimals: 1_000_000 is 1 USDC) and apply to every
// allowed token alike, so list only tokens of the same value and decimals,
// such as USDC on several chains.
type Policy struct {
	// MaxPerRequest is the price ceiling of one payment. An offer above it
	// is refused before anything is signed.
	MaxPerRequest uint64
	// SpendCap bounds the total of the authorizations signed within any
	// SpendWindow, whatever became of them (see Payer).
	SpendCap    uint64
	SpendWindow time.Duration
	// Tokens are the (network, token contract) pairs the Payer may pay
	// with. When a Token has a Name and Version, the offer's extra must
	// name the same EIP-712 domain: a signature under another domain could
	// never settle, so the offer is refused up front.
	Tokens []Token
	// MaxValidity caps an authorization's lifetime (validBefore minus now)
	// whatever maxTimeoutSeconds the server asks for: the shorter it is,
	// the sooner a signed but unused authorization is dead.
	MaxValidity time.Duration
}

// DefaultPolicy pays USDC on Base only, at most 0.50 USDC a request and 20
// USDC a day, with authorizations valid for at most five minutes.
func DefaultPolicy() Policy {
	return Policy{
		MaxPerRequest: 500_000,
		SpendCap:      20_000_000,
		SpendWindow:   24 * time.Hour,
		Tokens:        []Token{USDCBase},
		MaxValidity:   5 * time.Minute,
	}
}

// Validate reports a policy the Payer cannot apply. Every bound is
// required: a zero cap means "pay nothing", never "no limit".
func (pol *Policy) Validate() error {
	switch {
	case pol.MaxPerRequest == 0:
		return errors.New("x402: policy: max per request must be positive")
	case pol.SpendCap == 0 || pol.SpendWindow <= 0:
		return errors.New("x402: policy: spend cap and spend window must be positive")
	case pol.MaxPerRequest > pol.SpendCap:
		return errors.New("x402: policy: max per request exceeds the spend cap")
	case len(pol.Tokens) == 0:
		return errors.New("x402: policy: no token allowed")
	case pol.MaxValidity < 10*time.Second:
		// Servers want a few seconds of validity left to settle.
		return errors.New("x402: policy: max validity must be at least 10s")
	}
	for i, t := range pol.Tokens {
		if _, err := ChainID(t.Network); err != nil {
			return fmt.Errorf("x402: policy: token %d: %w", i, err)
		}
		if t.Address == (common.Address{}) {
			return fmt.Errorf("x402: policy: token %d: no contract address", i)
		}
	}
	return nil
}

// Errors of Payer.Pay; none is returned after anything was signed.
var (
	// ErrNotPaymentRequired: the response is not a 402.
	ErrNotPaymentRequired = errors.New("x402: response is not 402 Payment Required")
	// ErrNoAcceptableOffer: no offer passes the policy (scheme, network,
	// token, domain or price); the error lists why each was refused.
	ErrNoAcceptableOffer = errors.New("x402: no acceptable payment offer")
	// ErrOverPriceCeiling: an offer would otherwise be acceptable but costs
	// more than Policy.MaxPerRequest. It is wrapped together with
	// ErrNoAcceptableOffer.
	ErrOverPriceCeiling = errors.New("x402: price above the per-request ceiling")
	// ErrSpendCapExceeded: paying would take the window's total over
	// Policy.SpendCap.
	ErrSpendCapExceeded = errors.New("x402: spend cap for the window reached")
)

// Payer answers 402 responses from a wallet, under a Policy. It is safe for
// concurrent use.
//
// Accounting, and what "never charge for a failed upstream attempt" can and
// cannot mean for the paying side:
//
//   - Before signing, the offer's amount is reserved against the spend cap.
//     Refusals (price, token, cap) happen before any signature exists.
//   - A payment is recorded as paid (Stats.PaidAmount, the receipt hook)
//     only when the paid retry succeeded: a 2xx whose PAYMENT-RESPONSE /
//     X-PAYMENT-RESPONSE does not report a failed settlement.
//   - A failed retry (402 again, 4xx, 5xx, a transport error) is not
//     recorded as paid, and the gateway must not bill its caller for it.
//     But the signed authorization has left the building: an honest server
//     settles only after serving, yet a dishonest or broken one can submit
//     transferWithAuthorization anyway until validBefore. We cannot prevent
//     that off chain; what we guarantee is a bound. The reservation of a
//     failed attempt therefore stays counted against the spend cap for the
//     whole window, so the wallet can lose at most SpendCap per SpendWindow
//     whatever servers do, and each loss at most MaxPerRequest. A failure
//     whose response nevertheless reports a successful settlement is
//     counted in Stats.LostAmount for the operator to pursue.
//   - Only Abandon (the retry was certainly never sent) returns the
//     reservation.
//
// Detecting a settlement on chain (authorizationState(from, nonce) on the
// token) would turn "may have been settled" into a fact; that needs an RPC
// endpoint and is not done here.
type Payer struct {
	signer Signer
	pol    Policy
	now    func() time.Time
	hook   func(Receipt)

	mu     sync.Mutex
	window []reservation // signed within the last SpendWindow, oldest first
	inWin  uint64        // sum of window amounts
	nextID uint64
	stats  Stats
}

type reservation struct {
	at     time.Time
	amount uint64
	id     uint64
}

// Stats are a Payer's running totals since it was made.
type Stats struct {
	Signed     uint64 // authorizations signed
	Refused    uint64 // challenges refused without signing
	Paid       uint64 // successful paid retries
	PaidAmount uint64 // their total, atomic units
	Failed     uint64 // paid retries that failed (not recorded as paid)
	Lost       uint64 // failed retries whose server reported settlement
	LostAmount uint64
	Abandoned  uint64 // signed but never sent
	Exposure   uint64 // signed within the current window, as held against SpendCap
}

// PayerOption configures a Payer.
type PayerOption func(*Payer)

// WithClock sets the clock (time.Now by default).
func WithClock(now func() time.Time) PayerOption { return func(p *Payer) { p.now = now } }

// WithReceiptHook calls fn with every payment's receipt once its outcome
// is known, e.g. to write a ledger. fn runs synchronously on the caller's
// goroutine and must not block.
func WithReceiptHook(fn func(Receipt)) PayerOption { return func(p *Payer) { p.hook = fn } }

// NewPayer returns a Payer signing with s under pol.
func NewPayer(s Signer, pol Policy, opts ...PayerOption) (*Payer, error) {
	if s == nil {
		return nil, errors.New("x402: payer needs a signer")
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	pol.Tokens = append([]Token(nil), pol.Tokens...)
	p := &Payer{signer: s, pol: pol, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p, nil
}

// Address is the paying wallet's address.
func (p *Payer) Address() common.Address { return p.signer.Address() }

// Policy returns the policy in force.
func (p *Payer) Policy() Policy { return p.pol }

// Stats returns the running totals.
func (p *Payer) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneLocked(p.now())
	st := p.stats
	st.Exposure = p.inWin
	return st
}

// Challenge is a response that may ask for payment, independent of the
// HTTP client that received it.
type Challenge struct {
	Status int
	// Header looks up a response header (case-insensitively, as
	// http.Header.Get does); nil means no headers.
	Header func(name string) string
	Body   []byte
}

// ParseChallenge extracts the payment requirements of a 402: the v2
// PAYMENT-REQUIRED header when present, else the v1 JSON body.
func ParseChallenge(ch Challenge) (*PaymentRequired, error) {
	if ch.Status != 402 {
		return nil, fmt.Errorf("%w (status %d)", ErrNotPaymentRequired, ch.Status)
	}
	if ch.Header != nil {
		if h := ch.Header(HeaderPaymentRequired); h != "" {
			return DecodePaymentRequired(h)
		}
	}
	return ParsePaymentRequiredBody(ch.Body)
}

// Payment is a signed authorization, to be sent as Header: Value on the
// retry of the request that drew the 402. Report what became of the retry
// with Complete, or Abandon it if it was never sent.
type Payment struct {
	Header       string // HeaderPaymentSignature (v2) or HeaderXPayment (v1)
	Value        string // base64 PaymentPayload
	Version      int
	Requirements PaymentRequirements // the offer paid
	Amount       uint64              // authorization value, atomic units
	Token        Token
	Payer        common.Address
	PayTo        common.Address
	Nonce        [32]byte
	ValidBefore  time.Time

	p    *Payer
	id   uint64
	once sync.Once
	rcpt Receipt
}

// Outcome is what became of a paid retry.
type Outcome int

// Outcomes. Only OutcomePaid is recorded as paid.
const (
	// OutcomePaid: the retry succeeded (2xx) and the server did not report
	// a failed settlement.
	OutcomePaid Outcome = iota + 1
	// OutcomeUnsettled: the retry succeeded but the server reported that
	// settlement failed; nothing was paid.
	OutcomeUnsettled
	// OutcomeFailed: the retry failed (non-2xx or no response).
	OutcomeFailed
	// OutcomeAbandoned: the retry was never sent.
	OutcomeAbandoned
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case OutcomePaid:
		return "paid"
	case OutcomeUnsettled:
		return "unsettled"
	case OutcomeFailed:
		return "failed"
	case OutcomeAbandoned:
		return "abandoned"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Receipt is the accounting record of one Payment.
type Receipt struct {
	Outcome Outcome
	Status  int    // the retry's HTTP status; 0 when there was no response
	Amount  uint64 // authorized amount, atomic units
	Network string
	Token   common.Address
	Payer   common.Address
	PayTo   common.Address
	Nonce   [32]byte
	// Settlement is the server's settlement report, nil when it sent none
	// (or an undecodable one, see SettlementErr).
	Settlement    *SettlementResponse
	SettlementErr error
	// SettledOnFailure: the retry failed yet the server reported a
	// successful settlement: money most likely moved without service.
	SettledOnFailure bool
}

// Pay answers a 402: it picks the cheapest offer the policy accepts,
// reserves its amount against the spend cap, signs an EIP-3009
// authorization for it and returns the header for the retry. When it
// returns an error nothing was signed.
func (p *Payer) Pay(ctx context.Context, ch Challenge) (*Payment, error) {
	pr, err := ParseChallenge(ch)
	if err != nil {
		p.count(func(s *Stats) { s.Refused++ })
		return nil, err
	}
	return p.PayRequirements(ctx, pr)
}

// offer is an acceptable requirement with its parsed values.
type offer struct {
	index   int // in PaymentRequired.Accepts
	req     *PaymentRequirements
	amount  uint64
	token   Token
	chainID uint64
	payTo   common.Address
}

// PayRequirements is Pay for requirements already parsed.
func (p *Payer) PayRequirements(ctx context.Context, pr *PaymentRequired) (*Payment, error) {
	o, err := p.choose(pr)
	if err != nil {
		p.count(func(s *Stats) { s.Refused++ })
		return nil, err
	}
	now := p.now()
	id, err := p.reserve(now, o.amount)
	if err != nil {
		p.count(func(s *Stats) { s.Refused++ })
		return nil, err
	}
	pm, err := p.sign(ctx, pr, o, now, id)
	if err != nil {
		p.unreserve(id)
		p.count(func(s *Stats) { s.Refused++ })
		return nil, err
	}
	p.count(func(s *Stats) { s.Signed++ })
	return pm, nil
}

// choose returns the cheapest acceptable offer, or why none is.
func (p *Payer) choose(pr *PaymentRequired) (*offer, error) {
	var (
		best      *offer
		why       []string
		overPrice bool
	)
	for i := range pr.Accepts {
		o, err := p.check(&pr.Accepts[i])
		if err != nil {
			if errors.Is(err, ErrOverPriceCeiling) {
				overPrice = true
			}
			why = append(why, fmt.Sprintf("offer %d: %v", i, err))
			continue
		}
		if best == nil || o.amount < best.amount {
			o.index = i
			best = o
		}
	}
	if best != nil {
		return best, nil
	}
	if len(why) == 0 {
		why = append(why, "the 402 lists no offers")
	}
	msg := strings.Join(why, "; ")
	if overPrice {
		return nil, fmt.Errorf("%w: %w: %s", ErrNoAcceptableOffer, ErrOverPriceCeiling, msg)
	}
	return nil, fmt.Errorf("%w: %s", ErrNoAcceptableOffer, msg)
}

// check applies the policy to one offer. The price is checked last, so an
// ErrOverPriceCeiling means the offer was acceptable in every other way.
func (p *Payer) check(r *PaymentRequirements) (*offer, error) {
	if r.Scheme != SchemeExact {
		return nil, fmt.Errorf("scheme %q is not supported", r.Scheme)
	}
	chainID, err := ChainID(r.Network)
	if err != nil {
		return nil, err
	}
	asset, err := ParseAddress(r.Asset)
	if err != nil {
		return nil, fmt.Errorf("asset: %w", err)
	}
	var tok *Token
	for i := range p.pol.Tokens {
		t := &p.pol.Tokens[i]
		if id, _ := ChainID(t.Network); id == chainID && t.Address == asset {
			tok = t
			break
		}
	}
	if tok == nil {
		return nil, fmt.Errorf("token %s on %s is not allowed", asset.Hex(), r.Network)
	}
	extra, err := r.ExactExtra()
	if err != nil {
		return nil, err
	}
	if tok.Name != "" && (extra.Name != tok.Name || extra.Version != tok.Version) {
		return nil, fmt.Errorf("EIP-712 domain %q/%q does not match the token's %q/%q", extra.Name, extra.Version, tok.Name, tok.Version)
	}
	payTo, err := ParseAddress(r.PayTo)
	if err != nil {
		return nil, fmt.Errorf("payTo: %w", err)
	}
	if payTo == (common.Address{}) {
		return nil, errors.New("payTo is the zero address")
	}
	price, err := r.Price()
	if err != nil {
		return nil, err
	}
	if !price.IsUint64() || price.Uint64() > p.pol.MaxPerRequest {
		return nil, fmt.Errorf("%w: %s > %d", ErrOverPriceCeiling, price, p.pol.MaxPerRequest)
	}
	t := *tok
	if t.Name == "" {
		t.Name, t.Version = extra.Name, extra.Version
	}
	return &offer{req: r, amount: price.Uint64(), token: t, chainID: chainID, payTo: payTo}, nil
}

// reserve holds amount against the spend cap, or refuses.
func (p *Payer) reserve(now time.Time, amount uint64) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pruneLocked(now)
	if p.inWin+amount > p.pol.SpendCap || p.inWin+amount < p.inWin {
		return 0, fmt.Errorf("%w: %d signed in the last %s, cap %d, this payment %d",
			ErrSpendCapExceeded, p.inWin, p.pol.SpendWindow, p.pol.SpendCap, amount)
	}
	p.nextID++
	id := p.nextID
	p.window = append(p.window, reservation{at: now, amount: amount, id: id})
	p.inWin += amount
	return id, nil
}

// unreserve returns a reservation whose authorization never left.
func (p *Payer) unreserve(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, r := range p.window {
		if r.id == id {
			p.inWin -= r.amount
			p.window = append(p.window[:i], p.window[i+1:]...)
			return
		}
	}
}

func (p *Payer) pruneLocked(now time.Time) {
	cut := now.Add(-p.pol.SpendWindow)
	i := sort.Search(len(p.window), func(i int) bool { return p.window[i].at.After(cut) })
	for _, r := range p.window[:i] {
		p.inWin -= r.amount
	}
	if i > 0 {
		p.window = append(p.window[:0], p.window[i:]...)
	}
}

func (p *Payer) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// validAfterBackdate moves validAfter into the past, so a server or chain
// whose clock is behind ours does not see the authorization as not yet
// valid. It widens nothing an attacker can use: the authorization did not
// exist before now.
const validAfterBackdate = 10 * time.Minute

// defaultTimeout is used when an offer gives no maxTimeoutSeconds.
const defaultTimeout = 60 * time.Second

func (p *Payer) sign(ctx context.Context, pr *PaymentRequired, o *offer, now time.Time, id uint64) (*Payment, error) {
	validity := defaultTimeout
	if o.req.MaxTimeoutSeconds > 0 {
		validity = time.Duration(o.req.MaxTimeoutSeconds) * time.Second
	}
	validity = min(validity, p.pol.MaxValidity)
	validBefore := now.Add(validity)

	auth := &TransferAuthorization{
		From:        p.signer.Address(),
		To:          o.payTo,
		Value:       new(big.Int).SetUint64(o.amount),
		ValidAfter:  big.NewInt(now.Add(-validAfterBackdate).Unix()),
		ValidBefore: big.NewInt(validBefore.Unix()),
	}
	// A random nonce: EIP-3009 nonces are unordered, and a guessable one
	// would let a third party front-run our authorization's slot.
	if _, err := rand.Read(auth.Nonce[:]); err != nil {
		return nil, fmt.Errorf("x402: nonce: %w", err)
	}
	domain := Domain{Name: o.token.Name, Version: o.token.Version, ChainID: o.chainID, VerifyingContract: o.token.Address}
	sig, err := p.signer.SignTransferAuthorization(ctx, domain, auth)
	if err != nil {
		return nil, err
	}
	payload := ExactEVMPayload{Signature: "0x" + common.Bytes2Hex(sig), Authorization: auth.Wire()}

	var env any
	header := HeaderPaymentSignature
	switch pr.X402Version {
	case Version2:
		// Echo the offer as received when we have its bytes.
		var accepted any = o.req
		if o.index < len(pr.rawAccepts) {
			accepted = pr.rawAccepts[o.index]
		}
		env = struct {
			X402Version int             `json:"x402Version"`
			Resource    *ResourceInfo   `json:"resource,omitempty"`
			Accepted    any             `json:"accepted"`
			Payload     ExactEVMPayload `json:"payload"`
		}{Version2, pr.Resource, accepted, payload}
	case Version1:
		header = HeaderXPayment
		env = &PaymentPayload{X402Version: Version1, Scheme: o.req.Scheme, Network: o.req.Network, Payload: payload}
	default:
		return nil, fmt.Errorf("%w: %d", ErrUnsupportedVersion, pr.X402Version)
	}
	value, err := EncodeHeader(env)
	if err != nil {
		return nil, err
	}
	return &Payment{
		Header: header, Value: value, Version: pr.X402Version,
		Requirements: *o.req, Amount: o.amount, Token: o.token,
		Payer: auth.From, PayTo: o.payTo, Nonce: auth.Nonce, ValidBefore: validBefore,
		p: p, id: id,
	}, nil
}

// Complete records what became of the paid retry: its status (0 when no
// response came back) and its headers (nil for none), from which the
// settlement report is read. It returns the receipt, also given to the
// receipt hook. Only the first of Complete and Abandon counts; later calls
// return the first receipt.
func (pm *Payment) Complete(status int, header func(name string) string) Receipt {
	pm.once.Do(func() {
		r := pm.receipt(status)
		if header != nil {
			h := header(HeaderPaymentResponse)
			if h == "" {
				h = header(HeaderXPaymentResponse)
			}
			if h != "" {
				r.Settlement, r.SettlementErr = DecodeSettlementResponse(h)
			}
		}
		ok := status >= 200 && status < 300
		switch {
		case ok && r.Settlement != nil && !r.Settlement.Success:
			r.Outcome = OutcomeUnsettled
		case ok:
			r.Outcome = OutcomePaid
		default:
			r.Outcome = OutcomeFailed
			r.SettledOnFailure = r.Settlement != nil && r.Settlement.Success
		}
		pm.finish(r)
	})
	return pm.rcpt
}

// Abandon reports that the retry carrying this payment was never sent, so
// the authorization never left the process: its amount is returned to the
// spend cap. Call it only when that is certain; after a send error the
// server may have received the header, so use Complete(0, nil).
func (pm *Payment) Abandon() Receipt {
	pm.once.Do(func() {
		r := pm.receipt(0)
		r.Outcome = OutcomeAbandoned
		pm.p.unreserve(pm.id)
		pm.finish(r)
	})
	return pm.rcpt
}

func (pm *Payment) receipt(status int) Receipt {
	return Receipt{
		Status: status, Amount: pm.Amount, Network: pm.Requirements.Network,
		Token: pm.Token.Address, Payer: pm.Payer, PayTo: pm.PayTo, Nonce: pm.Nonce,
	}
}

func (pm *Payment) finish(r Receipt) {
	pm.rcpt = r
	p := pm.p
	p.count(func(s *Stats) {
		switch r.Outcome {
		case OutcomePaid:
			s.Paid++
			s.PaidAmount += r.Amount
		case OutcomeUnsettled:
			// Served without payment: nothing to record.
		case OutcomeFailed:
			s.Failed++
			if r.SettledOnFailure {
				s.Lost++
				s.LostAmount += r.Amount
			}
		case OutcomeAbandoned:
			s.Abandoned++
		}
	})
	if p.hook != nil {
		p.hook(r)
	}
}
