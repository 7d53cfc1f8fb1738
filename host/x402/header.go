package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// MaxHeaderLen bounds an encoded x402 header we are willing to decode. A real
// PaymentPayload is about 1.3 KB encoded and a PaymentRequired with a few
// accepts a few KB; anything far larger is refused before base64 and JSON
// decoding spend memory on it.
const MaxHeaderLen = 32 << 10

// MaxBodyLen bounds a v1 402 JSON body we are willing to parse.
const MaxBodyLen = 1 << 20

// EncodeHeader returns v as the header value the HTTP transports specify:
// JSON, then standard base64 with padding (specs/transports-v2/http.md).
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("x402: encode header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// decodeBase64 accepts standard or URL-safe base64, padded or not: the
// specification's examples are standard and padded, but being strict here
// would only turn a peer's harmless choice into a failed payment.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimRight(s, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	return enc.DecodeString(s)
}

// decodeJSON decodes exactly one JSON value into v, refusing trailing data.
func decodeJSON(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after JSON value")
	}
	return nil
}

// decodeHeader undoes EncodeHeader into v, naming the header in errors.
func decodeHeader(name, s string, v any) error {
	if s == "" {
		return fmt.Errorf("%w: %s header is empty", ErrMalformed, name)
	}
	if len(s) > MaxHeaderLen {
		return fmt.Errorf("%w: %s header is %d bytes, more than %d", ErrMalformed, name, len(s), MaxHeaderLen)
	}
	raw, err := decodeBase64(s)
	if err != nil {
		return fmt.Errorf("%w: %s header: base64: %w", ErrMalformed, name, err)
	}
	if err := decodeJSON(raw, v); err != nil {
		return fmt.Errorf("%w: %s header: JSON: %w", ErrMalformed, name, err)
	}
	return nil
}

// DecodePaymentRequired decodes a PAYMENT-REQUIRED header value. The result
// has x402Version 2 and a non-null accepts list; the entries themselves are
// checked only when one is chosen, because a challenge may list networks
// this package does not speak (Solana, say) next to one it does.
func DecodePaymentRequired(s string) (*PaymentRequired, error) {
	var pr PaymentRequired
	if err := decodeHeader(HeaderPaymentRequired, s, &pr); err != nil {
		return nil, err
	}
	if pr.X402Version != Version2 {
		return nil, fmt.Errorf("%w: %s header has x402Version %d, want 2", ErrUnsupportedVersion, HeaderPaymentRequired, pr.X402Version)
	}
	if err := pr.checkShape(); err != nil {
		return nil, fmt.Errorf("%s header: %w", HeaderPaymentRequired, err)
	}
	return &pr, nil
}

// ParsePaymentRequiredBody decodes a 402 JSON body: the v1 transport's
// PaymentRequirementsResponse. A body carrying a v2 PaymentRequired is
// accepted too, since some servers repeat the header there.
func ParsePaymentRequiredBody(body []byte) (*PaymentRequired, error) {
	if len(body) > MaxBodyLen {
		return nil, fmt.Errorf("%w: 402 body is %d bytes, more than %d", ErrMalformed, len(body), MaxBodyLen)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, ErrNoChallenge
	}
	var pr PaymentRequired
	if err := decodeJSON(body, &pr); err != nil {
		return nil, fmt.Errorf("%w: 402 body: JSON: %w", ErrMalformed, err)
	}
	if pr.X402Version == 0 && pr.Accepts == nil {
		return nil, ErrNoChallenge
	}
	if pr.X402Version != Version1 && pr.X402Version != Version2 {
		return nil, fmt.Errorf("%w: 402 body has x402Version %d", ErrUnsupportedVersion, pr.X402Version)
	}
	if err := pr.checkShape(); err != nil {
		return nil, fmt.Errorf("402 body: %w", err)
	}
	return &pr, nil
}

func (pr *PaymentRequired) checkShape() error {
	if pr.Accepts == nil {
		return fmt.Errorf("%w: accepts is missing", ErrMalformed)
	}
	return nil
}

// DecodePaymentPayload decodes a PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1)
// header value. The version must match the header it came in; pass the
// header's name as header. The exact-scheme fields must all be present.
func DecodePaymentPayload(header, s string) (*PaymentPayload, error) {
	var want int
	switch {
	case strings.EqualFold(header, HeaderPaymentSignature):
		want = Version2
	case strings.EqualFold(header, HeaderXPayment):
		want = Version1
	default:
		return nil, fmt.Errorf("x402: %q is not a payment header", header)
	}
	var p PaymentPayload
	if err := decodeHeader(header, s, &p); err != nil {
		return nil, err
	}
	if p.X402Version != want {
		return nil, fmt.Errorf("%w: %s header has x402Version %d, want %d", ErrUnsupportedVersion, header, p.X402Version, want)
	}
	if err := p.checkShape(); err != nil {
		return nil, fmt.Errorf("%s header: %w", header, err)
	}
	return &p, nil
}

func (p *PaymentPayload) checkShape() error {
	switch p.X402Version {
	case Version1:
		if p.Scheme == "" || p.Network == "" {
			return fmt.Errorf("%w: v1 payload needs scheme and network", ErrMalformed)
		}
	case Version2:
		if p.Accepted == nil {
			return fmt.Errorf("%w: v2 payload needs accepted", ErrMalformed)
		}
	}
	if scheme, _ := p.SchemeAndNetwork(); scheme == SchemeUpto {
		a := p.Payload.Permit2Authorization
		if p.Payload.Signature == "" || a == nil || a.From == "" || a.Spender == "" || a.Nonce == "" || a.Deadline == "" ||
			a.Permitted.Token == "" || a.Permitted.Amount == "" || a.Witness.To == "" || a.Witness.Facilitator == "" || a.Witness.ValidAfter == "" {
			return fmt.Errorf("%w: upto payload needs signature and permit2Authorization{permitted{token,amount},from,spender,nonce,deadline,witness{to,facilitator,validAfter}}", ErrMalformed)
		}
		return nil
	}
	a := &p.Payload.Authorization
	if p.Payload.Signature == "" || a.From == "" || a.To == "" || a.Value == "" ||
		a.ValidAfter == "" || a.ValidBefore == "" || a.Nonce == "" {
		return fmt.Errorf("%w: payload needs signature and authorization{from,to,value,validAfter,validBefore,nonce}", ErrMalformed)
	}
	return nil
}

// DecodeSettlementResponse decodes a PAYMENT-RESPONSE (v2) or
// X-PAYMENT-RESPONSE (v1) header value; "success" must be present.
func DecodeSettlementResponse(s string) (*SettlementResponse, error) {
	var w struct {
		Success *bool `json:"success"`
		SettlementResponse
	}
	if err := decodeHeader("payment response", s, &w); err != nil {
		return nil, err
	}
	if w.Success == nil {
		return nil, fmt.Errorf("%w: payment response header has no success field", ErrMalformed)
	}
	r := w.SettlementResponse
	r.Success = *w.Success
	return &r, nil
}
