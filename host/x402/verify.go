package x402

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// VerifyError is a refused payment. Reason is an x402 error code (the
// Reason* constants) for PaymentRequired.Error or
// VerifyResponse.InvalidReason; Err says what exactly was wrong.
type VerifyError struct {
	Reason string
	Payer  string // authorization.from when it could be read
	Err    error
}

// Error implements error.
func (e *VerifyError) Error() string {
	return "x402: payment refused (" + e.Reason + "): " + e.Err.Error()
}

// Unwrap returns the detailed cause.
func (e *VerifyError) Unwrap() error { return e.Err }

// ReasonOf returns the x402 error code carried by err, or
// unexpected_verify_error when err is not a VerifyError.
func ReasonOf(err error) string {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	return ReasonUnexpectedVerify
}

func refuse(reason, payer string, format string, args ...any) *VerifyError {
	return &VerifyError{Reason: reason, Payer: payer, Err: fmt.Errorf(format, args...)}
}

// ErrContractSignature: the signature is not a plain 65-byte ECDSA
// signature but an ERC-1271 or ERC-6492 (smart-contract wallet) one, which
// needs a chain to check: refused by a Verifier without Chain.
var ErrContractSignature = errors.New("x402: smart-contract wallet signatures (ERC-1271/ERC-6492) are not supported")

// erc6492Magic ends every ERC-6492 wrapped signature.
var erc6492Magic = common.FromHex("0x6492649264926492649264926492649264926492649264926492649264926492")

// Verifier checks exact-scheme EVM payments against the requirements a
// server issued, offline: signature, recipient, amount, network and token
// (both are bound by the EIP-712 domain), time window and nonce replay. It
// does not check the payer's balance or simulate the transfer (steps 2 and 5
// of specs/schemes/exact/scheme_exact_evm.md's verification): those need a
// chain, and a payment that passes here can still fail to settle.
type Verifier struct {
	// Nonces records accepted authorizations; nil disables replay
	// protection, which only tests should do.
	Nonces NonceStore
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// MinValidity is how long an authorization must still be valid when it
	// is verified, to leave time to settle it before validBefore.
	MinValidity time.Duration
	// Chain, when set, verifies what needs a chain: contract-wallet
	// signatures (ERC-1271, ERC-6492) and the payer's balance. Nil:
	// contract signatures are refused (ReasonContractSignature) and the
	// balance is left to settlement.
	Chain OnChain
	// ClockSkew is the slack allowed beyond now+maxTimeoutSeconds for
	// validBefore. An authorization valid for much longer than the
	// requirement asked for is refused: it would pin a nonce-store entry
	// and give whoever holds it a long time to settle.
	ClockSkew time.Duration
}

// Verifier defaults. MinValidity matches the few seconds (a handful of Base
// blocks) the reference facilitator demands before validBefore.
const (
	DefaultMinValidity = 6 * time.Second
	DefaultClockSkew   = 2 * time.Minute
)

// NewVerifier returns a Verifier with the default margins, using store for
// replay protection (a fresh MemoryNonceStore when nil).
func NewVerifier(store NonceStore, now func() time.Time) *Verifier {
	if now == nil {
		now = time.Now
	}
	if store == nil {
		store = NewMemoryNonceStore(now, 0)
	}
	return &Verifier{Nonces: store, Now: now, MinValidity: DefaultMinValidity, ClockSkew: DefaultClockSkew}
}

// Verified is an accepted payment, ready to be settled.
type Verified struct {
	Payer         common.Address
	Amount        *big.Int // authorization.value, at least the price
	Domain        Domain
	Authorization *TransferAuthorization
	Signature     []byte // 65 bytes (v 27/28 or 0/1) from an EOA; a contract wallet's as sent
	Requirements  *PaymentRequirements
	NonceKey      NonceKey
}

// Verify checks payment p against req and, when it passes, claims its nonce
// in v.Nonces, so the same payment is refused from then on (Release the
// claim if the request then fails before settlement). Errors are
// *VerifyError.
func (v *Verifier) Verify(ctx context.Context, p *PaymentPayload, req *PaymentRequirements) (*Verified, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}

	o, err := checkOffer(p, req, SchemeExact)
	if err != nil {
		return nil, err
	}
	chainID, price, payTo, token := o.chainID, o.price, o.payTo, o.asset
	extra, err := req.ExactExtra()
	if err != nil {
		return nil, refuse(ReasonInvalidRequirements, "", "%w", err)
	}

	auth, err := ParseAuthorization(&p.Payload.Authorization)
	if err != nil {
		return nil, refuse(ReasonInvalidPayload, p.Payload.Authorization.From, "%w", err)
	}
	payer := auth.From.Hex()
	if auth.To != payTo {
		return nil, refuse(ReasonRecipientMismatch, payer, "authorization pays %s, requirement payTo is %s", auth.To.Hex(), payTo.Hex())
	}
	if auth.Value.Cmp(price) < 0 {
		return nil, refuse(ReasonValue, payer, "authorization value %s is below the price %s", auth.Value, price)
	}

	t := now()
	unix := big.NewInt(t.Unix())
	if auth.ValidAfter.Cmp(unix) > 0 {
		return nil, refuse(ReasonValidAfter, payer, "authorization valid only after %s, now %d", auth.ValidAfter, t.Unix())
	}
	if auth.ValidBefore.Cmp(big.NewInt(t.Add(v.MinValidity).Unix())) < 0 {
		return nil, refuse(ReasonValidBefore, payer, "authorization expires at %s, now %d (%s needed to settle)", auth.ValidBefore, t.Unix(), v.MinValidity)
	}
	maxTimeout := time.Duration(max(req.MaxTimeoutSeconds, 0)) * time.Second
	latest := t.Add(maxTimeout + v.ClockSkew).Unix()
	if auth.ValidBefore.Cmp(big.NewInt(latest)) > 0 {
		return nil, refuse(ReasonValidBefore, payer, "authorization valid until %s, beyond maxTimeoutSeconds %d", auth.ValidBefore, req.MaxTimeoutSeconds)
	}

	domain := Domain{Name: extra.Name, Version: extra.Version, ChainID: chainID, VerifyingContract: token}
	digest := TypedDataHash(domain, auth)
	sig, err := v.signature(ctx, payer, auth.From, digest, p.Payload.Signature)
	if err != nil {
		return nil, err
	}
	if err := v.funds(ctx, payer, token, auth.From, auth.Value); err != nil {
		return nil, err
	}

	key := NonceKey{ChainID: chainID, Token: token, From: auth.From, Nonce: auth.Nonce}
	if v.Nonces != nil {
		if err := v.Nonces.Use(ctx, key, time.Unix(auth.ValidBefore.Int64(), 0)); err != nil {
			if errors.Is(err, ErrNonceUsed) {
				return nil, refuse(ReasonNonceUsed, payer, "%w", err)
			}
			return nil, &VerifyError{Reason: ReasonUnexpectedVerify, Payer: payer, Err: fmt.Errorf("nonce store: %w", err)}
		}
	}
	return &Verified{
		Payer: auth.From, Amount: auth.Value, Domain: domain, Authorization: auth,
		Signature: sig, Requirements: req, NonceKey: key,
	}, nil
}

// ourOffer is what both schemes read from our requirements.
type ourOffer struct {
	chainID      uint64
	price        *big.Int
	payTo, asset common.Address
}

// checkOffer checks the parts of a payment every scheme checks alike: our
// requirements (scheme, network, price, payTo, asset: if they are broken
// nothing can match), then that the payload is x402 v1 or v2, for this
// scheme and network, and in v2 echoes what we asked for. The
// authorization is what settles, so each scheme checks it on its own; this
// catches a client answering a different offer. Errors are *VerifyError.
func checkOffer(p *PaymentPayload, req *PaymentRequirements, scheme string) (ourOffer, error) {
	var o ourOffer
	if req.Scheme != scheme {
		return o, refuse(ReasonUnsupportedScheme, "", "requirement scheme %q is not %q", req.Scheme, scheme)
	}
	var err error
	if o.chainID, err = ChainID(req.Network); err != nil {
		return o, refuse(ReasonInvalidRequirements, "", "%w", err)
	}
	if o.price, err = req.Price(); err != nil {
		return o, refuse(ReasonInvalidRequirements, "", "%w", err)
	}
	if o.payTo, err = ParseAddress(req.PayTo); err != nil {
		return o, refuse(ReasonInvalidRequirements, "", "payTo: %w", err)
	}
	if o.asset, err = ParseAddress(req.Asset); err != nil {
		return o, refuse(ReasonInvalidRequirements, "", "asset: %w", err)
	}
	if p.X402Version != Version1 && p.X402Version != Version2 {
		return o, refuse(ReasonInvalidVersion, "", "x402Version %d", p.X402Version)
	}
	got, network := p.SchemeAndNetwork()
	if got != req.Scheme {
		return o, refuse(ReasonInvalidScheme, "", "payload scheme %q, want %q", got, req.Scheme)
	}
	if !SameNetwork(network, req.Network) {
		return o, refuse(ReasonInvalidNetwork, "", "payload network %q, want %q", network, req.Network)
	}
	if p.X402Version == Version2 {
		if err := sameOffer(p.Accepted, req); err != nil {
			return o, refuse(ReasonInvalidPayload, "", "accepted does not match the requirements: %w", err)
		}
	}
	return o, nil
}

// sameOffer compares the fields that define an offer; Extra and the
// descriptive fields are not compared, as JSON re-encoding may reorder them.
func sameOffer(acc *PaymentRequirements, req *PaymentRequirements) error {
	if acc == nil {
		return errors.New("missing")
	}
	if acc.Scheme != req.Scheme {
		return fmt.Errorf("scheme %q", acc.Scheme)
	}
	if !SameNetwork(acc.Network, req.Network) {
		return fmt.Errorf("network %q", acc.Network)
	}
	ap, err := acc.Price()
	if err != nil {
		return err
	}
	rp, _ := req.Price()
	if ap.Cmp(rp) != 0 {
		return fmt.Errorf("amount %s, offered %s", ap, rp)
	}
	if !strings.EqualFold(acc.Asset, req.Asset) {
		return fmt.Errorf("asset %s", acc.Asset)
	}
	if !strings.EqualFold(acc.PayTo, req.PayTo) {
		return fmt.Errorf("payTo %s", acc.PayTo)
	}
	return nil
}

// decodeSignature reads a 0x-prefixed 65-byte hex signature. Longer ones
// are smart-contract wallet signatures (ERC-6492 wraps, or ERC-1271 blobs),
// reported as ErrContractSignature.
func decodeSignature(s string) ([]byte, error) {
	if len(s) < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X') {
		return nil, errors.New("signature is not 0x-prefixed hex")
	}
	if len(s) > 2+2*64<<10 {
		return nil, errors.New("signature too long")
	}
	b := common.FromHex(s)
	if len(b)*2 != len(s)-2 || !isHex(s[2:]) {
		return nil, errors.New("signature is not hex")
	}
	if len(b) > 65 && bytes.HasSuffix(b, erc6492Magic) {
		return nil, fmt.Errorf("%w (ERC-6492 wrapped signature)", ErrContractSignature)
	}
	if len(b) > 65 {
		return nil, fmt.Errorf("%w (%d-byte signature)", ErrContractSignature, len(b))
	}
	if len(b) != 65 {
		return nil, fmt.Errorf("signature is %d bytes, want 65", len(b))
	}
	return b, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

var secp256k1HalfN = new(big.Int).Rsh(crypto.S256().Params().N, 1)

// recoverSigner ecrecovers the address behind a 65-byte signature over
// digest. v may be 27/28 (Ethereum) or 0/1 (raw recovery id). High-s
// signatures are refused: they are malleable copies of a low-s one, and
// FiatToken's ECRecover rejects them, so they could never settle.
func recoverSigner(digest common.Hash, sig []byte) (common.Address, error) {
	v := sig[64]
	if v >= 27 {
		v -= 27
	}
	if v > 1 {
		return common.Address{}, fmt.Errorf("signature v = %d, want 27 or 28", sig[64])
	}
	r := new(big.Int).SetBytes(sig[:32])
	s := new(big.Int).SetBytes(sig[32:64])
	if s.Cmp(secp256k1HalfN) > 0 {
		return common.Address{}, errors.New("signature s is in the upper half of the curve order (malleable)")
	}
	if !crypto.ValidateSignatureValues(v, r, s, true) {
		return common.Address{}, errors.New("signature r or s out of range")
	}
	var norm [65]byte
	copy(norm[:64], sig[:64])
	norm[64] = v
	pub, err := crypto.SigToPub(digest[:], norm[:])
	if err != nil {
		return common.Address{}, fmt.Errorf("ecrecover: %w", err)
	}
	return crypto.PubkeyToAddress(*pub), nil
}

// MatchRequirements finds, among the requirements a server offers, the one
// payment p answers: in v2 the offer p.Accepted echoes, in v1 the first with
// p's scheme and network. Errors are *VerifyError.
func MatchRequirements(p *PaymentPayload, accepts []PaymentRequirements) (*PaymentRequirements, error) {
	scheme, network := p.SchemeAndNetwork()
	var schemeSeen bool
	for i := range accepts {
		r := &accepts[i]
		if r.Scheme != scheme {
			continue
		}
		schemeSeen = true
		if !SameNetwork(r.Network, network) {
			continue
		}
		if p.X402Version == Version2 && sameOffer(p.Accepted, r) != nil {
			continue
		}
		return r, nil
	}
	if !schemeSeen {
		return nil, refuse(ReasonInvalidScheme, p.Payload.Authorization.From, "no offer for scheme %q", scheme)
	}
	if p.X402Version == Version2 {
		return nil, refuse(ReasonInvalidPayload, p.Payload.Authorization.From, "accepted matches no offer")
	}
	return nil, refuse(ReasonInvalidNetwork, p.Payload.Authorization.From, "no offer on network %q", network)
}
