package x402

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// Protocol versions (the x402Version field).
const (
	Version1 = 1
	Version2 = 2
)

// HTTP header names, from specs/transports-v1/http.md and
// specs/transports-v2/http.md. HTTP header names are case-insensitive; these
// are the spellings the specification uses.
const (
	// HeaderPaymentRequired carries a base64 PaymentRequired (v2, server to
	// client, with status 402).
	HeaderPaymentRequired = "PAYMENT-REQUIRED"
	// HeaderPaymentSignature carries a base64 PaymentPayload (v2, client to
	// server).
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	// HeaderPaymentResponse carries a base64 SettlementResponse (v2, server
	// to client).
	HeaderPaymentResponse = "PAYMENT-RESPONSE"
	// HeaderXPayment carries a base64 PaymentPayload (v1, client to server).
	// In v1 the PaymentRequired travels as the 402's JSON body instead.
	HeaderXPayment = "X-PAYMENT"
	// HeaderXPaymentResponse carries a base64 SettlementResponse (v1, server
	// to client).
	HeaderXPaymentResponse = "X-PAYMENT-RESPONSE"
)

// SchemeExact is the only scheme this package signs and verifies.
const SchemeExact = "exact"

// Error codes of x402-specification-v2.md section 9, used as
// VerifyResponse.InvalidReason, SettlementResponse.ErrorReason and
// PaymentRequired.Error. ReasonNonceUsed is not in section 9 but is the code
// the ecosystem uses for a replayed EIP-3009 nonce, and
// ReasonContractSignature (ours) marks an ERC-1271/6492 signature, which this
// package does not verify.
const (
	ReasonInsufficientFunds   = "insufficient_funds"
	ReasonValidAfter          = "invalid_exact_evm_payload_authorization_valid_after"
	ReasonValidBefore         = "invalid_exact_evm_payload_authorization_valid_before"
	ReasonValue               = "invalid_exact_evm_payload_authorization_value"
	ReasonSignature           = "invalid_exact_evm_payload_signature"
	ReasonRecipientMismatch   = "invalid_exact_evm_payload_recipient_mismatch"
	ReasonNonceUsed           = "invalid_exact_evm_payload_authorization_nonce_used"
	ReasonInvalidNetwork      = "invalid_network"
	ReasonInvalidPayload      = "invalid_payload"
	ReasonInvalidRequirements = "invalid_payment_requirements"
	ReasonInvalidScheme       = "invalid_scheme"
	ReasonUnsupportedScheme   = "unsupported_scheme"
	ReasonInvalidVersion      = "invalid_x402_version"
	ReasonInvalidTransaction  = "invalid_transaction_state"
	ReasonUnexpectedVerify    = "unexpected_verify_error"
	ReasonUnexpectedSettle    = "unexpected_settle_error"
	ReasonContractSignature   = "unsupported_contract_signature"
)

// ResourceInfo describes the protected resource (v2 only; v1 carries the
// same facts inside each PaymentRequirements).
type ResourceInfo struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// PaymentRequirements is one acceptable way to pay. It holds the fields of
// both versions: v1 names the price maxAmountRequired and repeats the
// resource facts; v2 names it amount and moves the resource facts to
// PaymentRequired.Resource. Use Price to read whichever is set.
type PaymentRequirements struct {
	Scheme            string          `json:"scheme"`
	Network           string          `json:"network"`
	Amount            string          `json:"amount,omitempty"`            // v2
	MaxAmountRequired string          `json:"maxAmountRequired,omitempty"` // v1
	Asset             string          `json:"asset"`
	PayTo             string          `json:"payTo"`
	Resource          string          `json:"resource,omitempty"`     // v1
	Description       string          `json:"description,omitempty"`  // v1
	MimeType          string          `json:"mimeType,omitempty"`     // v1
	OutputSchema      json.RawMessage `json:"outputSchema,omitempty"` // v1
	MaxTimeoutSeconds int64           `json:"maxTimeoutSeconds"`
	// Extra is kept verbatim: a v2 server may compare the echoed
	// "accepted" object with its own, so nothing in it may be dropped.
	Extra json.RawMessage `json:"extra,omitempty"`
}

// ExactExtra is PaymentRequirements.Extra for the exact scheme on EVM: the
// token's EIP-712 domain name and version (USDC on Base: "USD Coin", "2";
// on Base Sepolia: "USDC", "2").
type ExactExtra struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ExactExtra decodes r.Extra as the exact scheme's EIP-712 name and version.
func (r *PaymentRequirements) ExactExtra() (ExactExtra, error) {
	var e ExactExtra
	if len(r.Extra) == 0 || string(r.Extra) == "null" {
		return e, fmt.Errorf("%w: extra.name and extra.version are required for the exact scheme", ErrInvalidRequirements)
	}
	if err := json.Unmarshal(r.Extra, &e); err != nil {
		return e, fmt.Errorf("%w: extra: %w", ErrInvalidRequirements, err)
	}
	if e.Name == "" || e.Version == "" {
		return e, fmt.Errorf("%w: extra.name and extra.version are required for the exact scheme", ErrInvalidRequirements)
	}
	return e, nil
}

// Price returns the amount asked for, in the asset's atomic units: Amount
// (v2) or MaxAmountRequired (v1). Both must not disagree when both are set.
func (r *PaymentRequirements) Price() (*big.Int, error) {
	s := r.Amount
	if s == "" {
		s = r.MaxAmountRequired
	} else if r.MaxAmountRequired != "" && r.MaxAmountRequired != r.Amount {
		return nil, fmt.Errorf("%w: amount %q and maxAmountRequired %q disagree", ErrInvalidRequirements, r.Amount, r.MaxAmountRequired)
	}
	if s == "" {
		return nil, fmt.Errorf("%w: no amount", ErrInvalidRequirements)
	}
	v, err := parseUint256(s)
	if err != nil {
		return nil, fmt.Errorf("%w: amount: %w", ErrInvalidRequirements, err)
	}
	return v, nil
}

// PaymentRequired is what a server answers with status 402: in v1 the JSON
// body, in v2 the PAYMENT-REQUIRED header.
type PaymentRequired struct {
	X402Version int                   `json:"x402Version"`
	Error       string                `json:"error,omitempty"`
	Resource    *ResourceInfo         `json:"resource,omitempty"` // v2
	Accepts     []PaymentRequirements `json:"accepts"`
	Extensions  json.RawMessage       `json:"extensions,omitempty"` // v2

	// rawAccepts holds each offer exactly as received, so that a v2
	// payment can echo the chosen one verbatim as "accepted": servers may
	// compare it with their own by deep equality, and fields this package
	// does not model must survive.
	rawAccepts []json.RawMessage
}

// UnmarshalJSON decodes a PaymentRequired, keeping each offer's raw JSON.
func (pr *PaymentRequired) UnmarshalJSON(b []byte) error {
	type plain PaymentRequired
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	var raw struct {
		Accepts []json.RawMessage `json:"accepts"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*pr = PaymentRequired(p)
	if len(raw.Accepts) == len(pr.Accepts) {
		pr.rawAccepts = raw.Accepts
	}
	return nil
}

// Authorization holds the EIP-3009 parameters exactly as they travel: strings.
// Per specs/schemes/exact/scheme_exact_evm.md, addresses are 0x-prefixed hex
// (EIP-55 checksummed when we produce them) and the integers are decimal, or
// hex when 0x-prefixed. ParseAuthorization turns them into typed values.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// ExactEVMPayload is PaymentPayload.Payload for the exact scheme on EVM.
// For the upto scheme it carries Permit2Authorization instead of
// Authorization (specs/schemes/upto/scheme_upto_evm.md).
type ExactEVMPayload struct {
	// Signature is the 65-byte r||s||v EIP-712 signature, 0x-prefixed hex.
	Signature            string                `json:"signature"`
	Authorization        Authorization         `json:"authorization,omitzero"`
	Permit2Authorization *Permit2Authorization `json:"permit2Authorization,omitempty"`
}

// PaymentPayload is what the client sends: v1 in X-PAYMENT, v2 in
// PAYMENT-SIGNATURE. v1 names scheme and network at the top level; v2
// instead echoes the chosen requirements as Accepted.
type PaymentPayload struct {
	X402Version int                  `json:"x402Version"`
	Scheme      string               `json:"scheme,omitempty"`   // v1
	Network     string               `json:"network,omitempty"`  // v1
	Resource    *ResourceInfo        `json:"resource,omitempty"` // v2
	Accepted    *PaymentRequirements `json:"accepted,omitempty"` // v2
	Payload     ExactEVMPayload      `json:"payload"`
	Extensions  json.RawMessage      `json:"extensions,omitempty"` // v2
}

// SchemeAndNetwork returns the scheme and network the payload claims, from
// the top level (v1) or from Accepted (v2).
func (p *PaymentPayload) SchemeAndNetwork() (scheme, network string) {
	if p.X402Version >= Version2 && p.Accepted != nil {
		return p.Accepted.Scheme, p.Accepted.Network
	}
	return p.Scheme, p.Network
}

// SettlementResponse reports a settlement: PAYMENT-RESPONSE (v2) or
// X-PAYMENT-RESPONSE (v1). Transaction is required by the specification and
// is the empty string when settlement failed, so it is never omitted.
type SettlementResponse struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Payer       string `json:"payer,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	// Amount is what an upto settlement charged, in atomic units ("0":
	// nothing went on chain).
	Amount string `json:"amount,omitempty"`
}

// VerifyResponse is a facilitator's /verify answer
// (x402-specification-v2.md section 5.4).
type VerifyResponse struct {
	IsValid       bool   `json:"isValid"`
	InvalidReason string `json:"invalidReason,omitempty"`
	Payer         string `json:"payer,omitempty"`
}

// Errors callers can test with errors.Is.
var (
	// ErrMalformed: a header or body is not valid base64 JSON of the
	// expected shape.
	ErrMalformed = errors.New("x402: malformed message")
	// ErrUnsupportedVersion: x402Version is neither 1 nor 2, or does not
	// fit where it was found.
	ErrUnsupportedVersion = errors.New("x402: unsupported x402Version")
	// ErrInvalidRequirements: a PaymentRequirements is incomplete or
	// inconsistent.
	ErrInvalidRequirements = errors.New("x402: invalid payment requirements")
	// ErrNoChallenge: a response carries no payment requirements at all.
	ErrNoChallenge = errors.New("x402: no payment requirements in response")
)
