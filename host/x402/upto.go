package x402

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// SchemeUpto is the usage-based scheme: the client signs a maximum through
// Permit2's permitWitnessTransferFrom, the server settles the actual
// amount (specs/schemes/upto/scheme_upto_evm.md). EIP-3009 is not used for
// upto: it fixes the amount at signing.
const SchemeUpto = "upto"

// Permit2 and the x402 upto proxy: the canonical Permit2 (the EIP-712
// verifying contract) and x402UptoPermit2Proxy, the spender every upto
// authorization names, deployed with CREATE2 at one address on all chains.
var (
	Permit2Address   = common.HexToAddress("0x000000000022D473030F116dDEE9F6B43aC78BA3")
	UptoProxyAddress = common.HexToAddress("0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002")
)

// Upto refusal codes. The scheme spec defines only the first; the others
// follow the exact scheme's naming for the same checks.
const (
	ReasonUptoSettlementExceeds = "invalid_upto_evm_payload_settlement_exceeds_amount"
	ReasonUptoSignature         = "invalid_upto_evm_payload_signature"
	ReasonUptoRecipient         = "invalid_upto_evm_payload_recipient_mismatch"
	ReasonUptoAmount            = "invalid_upto_evm_payload_permitted_amount"
	ReasonUptoToken             = "invalid_upto_evm_payload_token_mismatch"
	ReasonUptoSpender           = "invalid_upto_evm_payload_spender_mismatch"
	ReasonUptoFacilitator       = "invalid_upto_evm_payload_facilitator_mismatch"
	ReasonUptoDeadline          = "invalid_upto_evm_payload_deadline"
	ReasonUptoValidAfter        = "invalid_upto_evm_payload_valid_after"
	ReasonUptoNonceUsed         = "invalid_upto_evm_payload_nonce_used"
)

// Permit2Authorization is an upto payload's signed message, as it travels.
type Permit2Authorization struct {
	Permitted struct {
		Token  string `json:"token"`
		Amount string `json:"amount"`
	} `json:"permitted"`
	From     string `json:"from"`
	Spender  string `json:"spender"`
	Nonce    string `json:"nonce"`
	Deadline string `json:"deadline"`
	Witness  struct {
		To          string `json:"to"`
		Facilitator string `json:"facilitator"`
		ValidAfter  string `json:"validAfter"`
	} `json:"witness"`
}

// UptoExtra is PaymentRequirements.Extra for upto: the token's EIP-712
// name and version, and the facilitator address the witness must bind.
type UptoExtra struct {
	Name               string `json:"name"`
	Version            string `json:"version"`
	FacilitatorAddress string `json:"facilitatorAddress"`
}

// Permit2Witness is a typed upto authorization.
type Permit2Witness struct {
	Token       common.Address
	Amount      *big.Int // the maximum
	Spender     common.Address
	Nonce       *big.Int
	Deadline    *big.Int
	To          common.Address
	Facilitator common.Address
	ValidAfter  *big.Int
}

var (
	permit2DomainTypeHash = crypto.Keccak256Hash([]byte("EIP712Domain(string name,uint256 chainId,address verifyingContract)"))
	tokenPermissionsHash  = crypto.Keccak256Hash([]byte("TokenPermissions(address token,uint256 amount)"))
	uptoWitnessTypeHash   = crypto.Keccak256Hash([]byte("Witness(address to,address facilitator,uint256 validAfter)"))
	// permitWitnessTypeHash is Permit2's PermitWitnessTransferFrom stub
	// followed by x402UptoPermit2Proxy's WITNESS_TYPE_STRING.
	permitWitnessTypeHash = crypto.Keccak256Hash([]byte("PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)"))
)

func word(b []byte, i int) []byte { return b[i*32 : (i+1)*32] }

func putAddr(dst []byte, a common.Address) { copy(dst[12:], a[:]) }

// Digest returns the EIP-712 digest the payer signs over Permit2's domain
// on chainID.
func (w *Permit2Witness) Digest(chainID uint64) common.Hash {
	var dom [4 * 32]byte
	copy(word(dom[:], 0), permit2DomainTypeHash[:])
	copy(word(dom[:], 1), crypto.Keccak256([]byte("Permit2")))
	new(big.Int).SetUint64(chainID).FillBytes(word(dom[:], 2))
	putAddr(word(dom[:], 3), Permit2Address)
	sep := crypto.Keccak256Hash(dom[:])

	var tp [3 * 32]byte
	copy(word(tp[:], 0), tokenPermissionsHash[:])
	putAddr(word(tp[:], 1), w.Token)
	w.Amount.FillBytes(word(tp[:], 2))
	var wit [4 * 32]byte
	copy(word(wit[:], 0), uptoWitnessTypeHash[:])
	putAddr(word(wit[:], 1), w.To)
	putAddr(word(wit[:], 2), w.Facilitator)
	w.ValidAfter.FillBytes(word(wit[:], 3))
	var msg [6 * 32]byte
	copy(word(msg[:], 0), permitWitnessTypeHash[:])
	copy(word(msg[:], 1), crypto.Keccak256(tp[:]))
	putAddr(word(msg[:], 2), w.Spender)
	w.Nonce.FillBytes(word(msg[:], 3))
	w.Deadline.FillBytes(word(msg[:], 4))
	copy(word(msg[:], 5), crypto.Keccak256(wit[:]))
	return typedDataHash(sep, crypto.Keccak256Hash(msg[:]))
}

// Wire returns w in its JSON wire form, from being the signer.
func (w *Permit2Witness) Wire(from common.Address) *Permit2Authorization {
	var a Permit2Authorization
	a.Permitted.Token, a.Permitted.Amount = w.Token.Hex(), w.Amount.String()
	a.From, a.Spender, a.Nonce, a.Deadline = from.Hex(), w.Spender.Hex(), w.Nonce.String(), w.Deadline.String()
	a.Witness.To, a.Witness.Facilitator, a.Witness.ValidAfter = w.To.Hex(), w.Facilitator.Hex(), w.ValidAfter.String()
	return &a
}

// ParsePermit2Authorization reads an upto payload's message: its signer
// and the typed authorization.
func ParsePermit2Authorization(pa *Permit2Authorization) (common.Address, *Permit2Witness, error) {
	from, err := ParseAddress(pa.From)
	if err != nil {
		return from, nil, fmt.Errorf("permit2Authorization.from: %w", err)
	}
	var w Permit2Witness
	var errs [8]error
	w.Token, errs[0] = ParseAddress(pa.Permitted.Token)
	w.Amount, errs[1] = parseUint256(pa.Permitted.Amount)
	w.Spender, errs[2] = ParseAddress(pa.Spender)
	w.Nonce, errs[3] = parseUint256(pa.Nonce)
	w.Deadline, errs[4] = parseUint256(pa.Deadline)
	w.To, errs[5] = ParseAddress(pa.Witness.To)
	w.Facilitator, errs[6] = ParseAddress(pa.Witness.Facilitator)
	w.ValidAfter, errs[7] = parseUint256(pa.Witness.ValidAfter)
	if err := errors.Join(errs[:]...); err != nil {
		return from, nil, fmt.Errorf("permit2Authorization: %w", err)
	}
	return from, &w, nil
}

// NonceKey is the authorization's key in a NonceStore: Permit2's nonces
// are per owner (unordered), whatever the token.
func (w *Permit2Witness) NonceKey(chainID uint64, from common.Address) NonceKey {
	key := NonceKey{ChainID: chainID, Token: Permit2Address, From: from}
	w.Nonce.FillBytes(key.Nonce[:])
	return key
}

// VerifiedUpto is an accepted upto authorization.
type VerifiedUpto struct {
	Payer    common.Address
	Max      *big.Int // permitted.amount: the most a settlement may charge
	NonceKey NonceKey
}

// VerifyUpto checks an upto payment against req offline, as the scheme's
// verification steps 1, 4, 5 and 6 say (signature, amount, time window,
// token and network), plus the spender (the upto proxy), the witness's
// recipient and facilitator, and the nonce (claimed in v.Nonces). Steps 2,
// 3 and 7 (Permit2 allowance, balance, simulation of the proxy's settle
// at the maximum) need a chain: done with v.Chain set (*Chain), else left
// to the facilitator's settlement. Errors are *VerifyError.
func (v *Verifier) VerifyUpto(ctx context.Context, p *PaymentPayload, req *PaymentRequirements) (*VerifiedUpto, error) {
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	o, err := checkOffer(p, req, SchemeUpto)
	if err != nil {
		return nil, err
	}
	chainID, price, payTo, token := o.chainID, o.price, o.payTo, o.asset
	var extra UptoExtra
	if err := json.Unmarshal(req.Extra, &extra); err != nil {
		return nil, refuse(ReasonInvalidRequirements, "", "extra: %w", err)
	}
	fac, err := ParseAddress(extra.FacilitatorAddress)
	if err != nil {
		return nil, refuse(ReasonInvalidRequirements, "", "extra.facilitatorAddress: %w", err)
	}
	pa := p.Payload.Permit2Authorization
	if pa == nil {
		return nil, refuse(ReasonInvalidPayload, "", "no permit2Authorization")
	}
	from, w, err := ParsePermit2Authorization(pa)
	if err != nil {
		return nil, refuse(ReasonInvalidPayload, pa.From, "%w", err)
	}
	payer := from.Hex()
	switch {
	case w.Token != token:
		return nil, refuse(ReasonUptoToken, payer, "permitted token %s, asset is %s", w.Token.Hex(), token.Hex())
	case w.Amount.Cmp(price) != 0:
		return nil, refuse(ReasonUptoAmount, payer, "permitted amount %s, requirement amount %s", w.Amount, price)
	case w.Spender != UptoProxyAddress:
		return nil, refuse(ReasonUptoSpender, payer, "spender %s is not the x402 upto proxy %s", w.Spender.Hex(), UptoProxyAddress.Hex())
	case w.To != payTo:
		return nil, refuse(ReasonUptoRecipient, payer, "witness pays %s, requirement payTo is %s", w.To.Hex(), payTo.Hex())
	case w.Facilitator != fac:
		return nil, refuse(ReasonUptoFacilitator, payer, "witness facilitator %s, requirement's is %s", w.Facilitator.Hex(), fac.Hex())
	}
	t := now()
	if w.ValidAfter.Cmp(big.NewInt(t.Unix())) > 0 {
		return nil, refuse(ReasonUptoValidAfter, payer, "valid only after %s, now %d", w.ValidAfter, t.Unix())
	}
	if w.Deadline.Cmp(big.NewInt(t.Add(v.MinValidity).Unix())) < 0 {
		return nil, refuse(ReasonUptoDeadline, payer, "deadline %s, now %d (%s needed to settle)", w.Deadline, t.Unix(), v.MinValidity)
	}
	maxTimeout := time.Duration(max(req.MaxTimeoutSeconds, 0)) * time.Second
	if w.Deadline.Cmp(big.NewInt(t.Add(maxTimeout+v.ClockSkew).Unix())) > 0 {
		return nil, refuse(ReasonUptoDeadline, payer, "deadline %s beyond maxTimeoutSeconds %d", w.Deadline, req.MaxTimeoutSeconds)
	}
	sig, err := decodeSignature(p.Payload.Signature)
	if err != nil {
		reason := ReasonUptoSignature
		if errors.Is(err, ErrContractSignature) {
			reason = ReasonContractSignature
		}
		return nil, &VerifyError{Reason: reason, Payer: payer, Err: err}
	}
	signer, err := recoverSigner(w.Digest(chainID), sig)
	if err != nil {
		return nil, refuse(ReasonUptoSignature, payer, "%w", err)
	}
	if signer != from {
		return nil, refuse(ReasonUptoSignature, payer, "signature is by %s, not by from", signer.Hex())
	}
	if v.Chain != nil {
		if err := v.uptoChecks(ctx, payer, from, w, sig); err != nil {
			return nil, err
		}
	}
	key := w.NonceKey(chainID, from)
	if v.Nonces != nil {
		// Permit2's nonces are unordered and per owner; they expire with the
		// deadline.
		if err := v.Nonces.Use(ctx, key, time.Unix(w.Deadline.Int64(), 0)); err != nil {
			if errors.Is(err, ErrNonceUsed) {
				return nil, refuse(ReasonUptoNonceUsed, payer, "%w", err)
			}
			return nil, &VerifyError{Reason: ReasonUnexpectedVerify, Payer: payer, Err: fmt.Errorf("nonce store: %w", err)}
		}
	}
	return &VerifiedUpto{Payer: from, Max: w.Amount, NonceKey: key}, nil
}
