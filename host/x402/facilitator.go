package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Facilitator is a client of an x402 facilitator's HTTP API
// (x402-specification-v2.md section 7): POST /verify, POST /settle and
// GET /supported. The gateway verifies payments itself (Verifier, which is
// faster and needs no round trip) and asks the facilitator to settle them:
// the facilitator holds the gas and submits transferWithAuthorization.
type Facilitator struct {
	// URL is the facilitator's base, e.g. https://x402.org/facilitator;
	// the paths are appended to it.
	URL string
	// Client makes the calls (nil: a client with a 30 s timeout).
	Client *http.Client
	// Auth, when set, adds headers to each call (an API key the
	// facilitator asks for). It must not log them.
	Auth func(h http.Header)
}

// FacilitatorRequest is the body of /verify and /settle.
type FacilitatorRequest struct {
	X402Version         int                  `json:"x402Version"`
	PaymentPayload      *PaymentPayload      `json:"paymentPayload"`
	PaymentRequirements *PaymentRequirements `json:"paymentRequirements"`
}

// SupportedKind is one scheme and network a facilitator settles.
type SupportedKind struct {
	X402Version int             `json:"x402Version"`
	Scheme      string          `json:"scheme"`
	Network     string          `json:"network"`
	Extra       json.RawMessage `json:"extra,omitempty"`
}

// Supported is the /supported answer.
type Supported struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions,omitempty"`
	Signers    map[string][]string `json:"signers,omitempty"`
}

// Has reports whether the facilitator settles scheme on network.
func (s *Supported) Has(version int, scheme, network string) bool {
	for _, k := range s.Kinds {
		if k.X402Version == version && k.Scheme == scheme && SameNetwork(k.Network, network) {
			return true
		}
	}
	return false
}

// maxFacilitatorBody bounds what is read of a facilitator's answer.
const maxFacilitatorBody = 64 << 10

// Verify asks the facilitator whether payment p satisfies req.
func (f *Facilitator) Verify(ctx context.Context, p *PaymentPayload, req *PaymentRequirements) (*VerifyResponse, error) {
	var r VerifyResponse
	if err := f.call(ctx, http.MethodPost, "/verify", &FacilitatorRequest{X402Version: p.X402Version, PaymentPayload: p, PaymentRequirements: req}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Settle asks the facilitator to execute payment p. A refused settlement
// is an answer (Success false, ErrorReason set), not an error; an error
// means the outcome is unknown (no answer, or one that cannot be read)
// and the settlement must be retried: a replayed EIP-3009 authorization
// cannot transfer twice, so retrying is safe.
func (f *Facilitator) Settle(ctx context.Context, p *PaymentPayload, req *PaymentRequirements) (*SettlementResponse, error) {
	var r SettlementResponse
	if err := f.call(ctx, http.MethodPost, "/settle", &FacilitatorRequest{X402Version: p.X402Version, PaymentPayload: p, PaymentRequirements: req}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Supported lists what the facilitator settles.
func (f *Facilitator) Supported(ctx context.Context) (*Supported, error) {
	var r Supported
	if err := f.call(ctx, http.MethodGet, "/supported", nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (f *Facilitator) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("x402: facilitator %s: %w", path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(f.URL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("x402: facilitator %s: %w", path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if f.Auth != nil {
		f.Auth(req.Header)
	}
	c := f.Client
	if c == nil {
		c = defaultFacilitatorClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("x402: facilitator %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxFacilitatorBody+1))
	if err != nil {
		return fmt.Errorf("x402: facilitator %s: %w", path, err)
	}
	if len(b) > maxFacilitatorBody {
		return fmt.Errorf("x402: facilitator %s: answer larger than %d bytes", path, maxFacilitatorBody)
	}
	if resp.StatusCode >= 500 {
		return fmt.Errorf("x402: facilitator %s: status %d", path, resp.StatusCode)
	}
	// A refusal comes as 400 with the same JSON shape (isValid false,
	// success false): decode it whenever it is JSON.
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("x402: facilitator %s: status %d: %w", path, resp.StatusCode, err)
	}
	return nil
}

var defaultFacilitatorClient = &http.Client{Timeout: 30 * time.Second}
