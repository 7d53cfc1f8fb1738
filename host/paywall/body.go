package paywall

import (
	"encoding/json"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/x402"
)

// Body is what a 402 carries beside the dialect's error object, as
// top-level members of the same JSON body (gateway.Caller.ErrorMembers):
// the official SDKs read only their error member ("error", and Anthropic's
// "type"), so they still raise their own 402 error, while x402 v1 clients
// read X402Version and Accepts, and any client reads the quote.
//
//	{"type":"error","error":{…},            // the dialect's error (Anthropic shown)
//	 "x402Version":1,"accepts":[{…v1 exact…}],
//	 "scheme":"upto","recipient":"0x…","maxAmount":"21600","expiry":1767225600,
//	 "inference":{"estimatedInputTokens":…,…,"priceQuote":{…}}}
//
// v1's own "error" string cannot be sent: that name is the dialect's
// error object, which wins; the refusal's code is in the object's message
// and in the PAYMENT-REQUIRED header's error.
type Body struct {
	// X402Version is 1: the body is x402 v1's PaymentRequired (v2 moved it
	// to the PAYMENT-REQUIRED header, which a v2 client reads first).
	X402Version int `json:"x402Version"`
	// Accepts is the exact offer in v1's form (maxAmountRequired, the
	// resource's URL in each offer, the v1 network name). upto has no v1
	// form: it is offered in the header only.
	Accepts []x402.PaymentRequirements `json:"accepts"`
	// Scheme is the scheme the spec's 402 names: "upto" when the gateway
	// offers it (the client authorizes MaxAmount, the actual cost is
	// charged), else "exact".
	Scheme string `json:"scheme"`
	// Recipient is the gateway's receiving address (payTo).
	Recipient string `json:"recipient"`
	// MaxAmount is the offer's amount in the token's atomic units.
	MaxAmount string `json:"maxAmount"`
	// Expiry is when the quote stops being valid, in Unix seconds: now +
	// maxTimeoutSeconds.
	Expiry int64 `json:"expiry"`
	// Inference is the spec's inference block with its PriceQuote.
	Inference Quote `json:"inference"`
}

// body is the 402's body members for offers (exact first) and q.
func (p *Paywall) body(a *gateway.Admission, offers []x402.PaymentRequirements, q Quote) []byte {
	exact := offers[0]
	b := Body{X402Version: x402.Version1, Scheme: x402.SchemeExact, Recipient: exact.PayTo, MaxAmount: exact.Amount,
		Expiry: p.cfg.Now().Add(p.cfg.MaxTimeout).Unix(), Inference: q, Accepts: []x402.PaymentRequirements{}}
	if len(offers) > 1 {
		b.Scheme = x402.SchemeUpto
	}
	if v1, ok := p.v1Offer(a, exact); ok {
		b.Accepts = append(b.Accepts, v1)
	}
	out, err := json.Marshal(b)
	if err != nil {
		return nil
	}
	return out
}

// v1Offer is exact in x402 v1's form (specs/x402-specification-v1.md,
// PaymentRequirements): maxAmountRequired, the resource's URL, description
// and mimeType inside the offer, the network's v1 name ("base"). A chain
// without a v1 name has no v1 offer.
func (p *Paywall) v1Offer(a *gateway.Admission, exact x402.PaymentRequirements) (x402.PaymentRequirements, bool) {
	id, err := x402.ChainID(exact.Network)
	if err != nil {
		return x402.PaymentRequirements{}, false
	}
	network, ok := x402.V1Network(id)
	if !ok {
		return x402.PaymentRequirements{}, false
	}
	r := p.resource(a)
	return x402.PaymentRequirements{Scheme: exact.Scheme, Network: network, MaxAmountRequired: exact.Amount,
		Resource: r.URL, Description: r.Description, MimeType: r.MimeType, PayTo: exact.PayTo,
		MaxTimeoutSeconds: exact.MaxTimeoutSeconds, Asset: exact.Asset, Extra: exact.Extra}, true
}
