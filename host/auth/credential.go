package auth

import (
	"bytes"
	"errors"
	"net/http"
)

// Kind is the kind of credential a request carries.
type Kind uint8

// Credential kinds, in the spec's detection order.
const (
	KindNone       Kind = iota
	KindX402            // an x402 payment header (X402Scheme)
	KindKey             // a bardo_sk_ API key
	KindPrivy           // a Privy access token (PrivyScheme)
	KindDelegation      // an EIP-712 delegation (next issue)
)

func (k Kind) String() string {
	switch k {
	case KindX402:
		return "x402"
	case KindKey:
		return "key"
	case KindPrivy:
		return "privy"
	case KindDelegation:
		return "delegation"
	}
	return "none"
}

// Credential is what Detect found. Value is secret: never log it.
type Credential struct {
	Kind  Kind
	Value string
	// Header is the header the credential came in, when its kind has
	// several (x402: PAYMENT-SIGNATURE for v2, X-PAYMENT for v1).
	Header string
}

// Header reads one request header; *fasthttp.RequestHeader satisfies it,
// and HTTPHeader adapts net/http.
type Header interface {
	Peek(name string) []byte
}

// HTTPHeader adapts an http.Header to Header.
type HTTPHeader http.Header

// Peek returns the first value of name.
func (h HTTPHeader) Peek(name string) []byte {
	if v := http.Header(h).Get(name); v != "" {
		return []byte(v)
	}
	return nil
}

// Errors of Detect and of the schemes.
var (
	// ErrNotThisKind is returned by a Scheme whose credential is absent.
	ErrNotThisKind = errors.New("auth: not this kind of credential")
	// ErrNoCredential means no scheme found a credential (401).
	ErrNoCredential = errors.New("auth: no credential")
	// ErrAmbiguous means Authorization and x-api-key carry different
	// gateway keys (401).
	ErrAmbiguous = errors.New("auth: two different API keys")
)

// Scheme detects one kind of credential in a request's headers, returning
// ErrNotThisKind when the request does not carry it.
type Scheme interface {
	Kind() Kind
	Detect(h Header) (Credential, error)
}

// Schemes is the spec's detection order: x402 payment header, bardo_sk_
// key, Privy, EIP-712 delegation. Only the key is active here; x402 and
// Privy are seams answering ErrNotThisKind that WithX402 and WithPrivy
// replace when the gateway takes them, and delegation is a seam.
var Schemes = []Scheme{seam(KindX402), KeyScheme{}, seam(KindPrivy), seam(KindDelegation)}

// WithX402 is the detection order of a gateway that accepts x402
// payments: Schemes with the x402 seam replaced by X402Scheme. It is not
// the default, so a gateway that does not take payments keeps admitting a
// request that carries both a payment header and a key by its key.
func WithX402(schemes []Scheme) []Scheme {
	out := make([]Scheme, len(schemes))
	for i, s := range schemes {
		if s.Kind() == KindX402 {
			s = X402Scheme{}
		}
		out[i] = s
	}
	return out
}

// X402Scheme finds an x402 payment: PAYMENT-SIGNATURE (x402 v2) or
// X-PAYMENT (v1), v2 first. The value is returned as it came; decoding
// and verifying it is host/x402's work.
type X402Scheme struct{}

// Kind returns KindX402.
func (X402Scheme) Kind() Kind { return KindX402 }

// Detect implements Scheme.
func (X402Scheme) Detect(h Header) (Credential, error) {
	for _, name := range [...]string{"PAYMENT-SIGNATURE", "X-PAYMENT"} {
		if v := bytes.TrimSpace(h.Peek(name)); len(v) > 0 {
			return Credential{Kind: KindX402, Value: string(v), Header: name}, nil
		}
	}
	return Credential{}, ErrNotThisKind
}

// Detect returns the first credential the schemes find, in order.
func Detect(h Header, schemes []Scheme) (Credential, error) {
	for _, s := range schemes {
		c, err := s.Detect(h)
		if errors.Is(err, ErrNotThisKind) {
			continue
		}
		return c, err
	}
	return Credential{}, ErrNoCredential
}

type seam Kind

func (s seam) Kind() Kind                        { return Kind(s) }
func (s seam) Detect(Header) (Credential, error) { return Credential{}, ErrNotThisKind }

// KeyScheme finds a bardo_sk_ key in either SDK's convention:
// "Authorization: Bearer <key>" (OpenAI) or "x-api-key: <key>" (Anthropic).
// A value that does not start with bardo_sk_ is not this kind (a provider
// key is for the direct-provider header); a malformed bardo_sk_ value is
// still returned, so that Verify refuses it like any wrong key.
type KeyScheme struct{}

// Kind returns KindKey.
func (KeyScheme) Kind() Kind { return KindKey }

// Detect implements Scheme.
func (KeyScheme) Detect(h Header) (Credential, error) {
	bearer := bearerToken(h.Peek("Authorization"))
	apiKey := bytes.TrimSpace(h.Peek("X-Api-Key"))
	fromBearer := bytes.HasPrefix(bearer, []byte(Prefix))
	fromAPIKey := bytes.HasPrefix(apiKey, []byte(Prefix))
	switch {
	case fromBearer && fromAPIKey:
		if !bytes.Equal(bearer, apiKey) {
			return Credential{}, ErrAmbiguous
		}
		return Credential{Kind: KindKey, Value: string(bearer)}, nil
	case fromBearer:
		return Credential{Kind: KindKey, Value: string(bearer)}, nil
	case fromAPIKey:
		return Credential{Kind: KindKey, Value: string(apiKey)}, nil
	}
	return Credential{}, ErrNotThisKind
}

// bearerToken returns the token of an "Authorization: Bearer <token>"
// value (scheme case-insensitive, RFC 6750), or nil.
func bearerToken(v []byte) []byte {
	v = bytes.TrimSpace(v)
	const scheme = "bearer"
	if len(v) <= len(scheme) || !bytes.EqualFold(v[:len(scheme)], []byte(scheme)) || (v[len(scheme)] != ' ' && v[len(scheme)] != '\t') {
		return nil
	}
	return bytes.TrimSpace(v[len(scheme)+1:])
}
