package paywall

import (
	"strconv"

	"github.com/bardoinference/bardo/host/gateway"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// HeaderQuote carries the inference quote of a 402 as JSON, for clients
// that read headers rather than the x402 extension.
const HeaderQuote = "X-Bardo-Quote"

// ExtensionInference names the PaymentRequired extension that carries the
// quote ({"bardo-inference": {"info": Quote}}).
const ExtensionInference = "bardo-inference"

// Quote is the spec's inference block of a 402 (003, "x402 protocol
// detail"): what the request is estimated to use and what it costs.
type Quote struct {
	EstimatedInputTokens  int64      `json:"estimatedInputTokens"`
	EstimatedOutputTokens int64      `json:"estimatedOutputTokens"`
	RoutedFrom            string     `json:"routedFrom"`
	CacheEligible         bool       `json:"cacheEligible"`
	Optimizations         []string   `json:"optimizations"`
	Price                 PriceQuote `json:"priceQuote"`
}

// PriceQuote is the spec's PriceQuote, amounts in USD. At the 402 nothing
// has been optimised yet, so the discounts are 0 and the total is the
// most the request can cost: the estimate's provider cost plus the margin.
type PriceQuote struct {
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	ProviderCost        float64 `json:"provider_cost"`
	RoutingDiscount     float64 `json:"routing_discount"`
	CacheDiscount       float64 `json:"cache_discount"`
	CompressionDiscount float64 `json:"compression_discount"`
	Margin              float64 `json:"margin"`
	TotalCharged        float64 `json:"total_charged"`
	// micros is TotalCharged exactly, for the offer's amount.
	micros pricing.Micros
}

// String is the quote in one line, for the 402's message.
func (q Quote) String() string {
	return strconv.FormatInt(q.EstimatedInputTokens, 10) + " input and up to " + strconv.FormatInt(q.EstimatedOutputTokens, 10) +
		" output tokens of " + q.RoutedFrom + ", provider cost " + pricing.Micros(q.Price.ProviderCost*pricing.MicrosPerUSD+0.5).String() +
		" USD + margin " + pricing.Micros(q.Price.Margin*pricing.MicrosPerUSD+0.5).String() + " USD"
}

// quote prices the admission's reservation estimate: the asked model's
// dearest prices (input at the dearer of input and cache write), the
// estimated input tokens and the most output tokens, with the spread.
func (p *Paywall) quote(a *gateway.Admission) Quote {
	q := Quote{EstimatedInputTokens: a.InputTokens, EstimatedOutputTokens: a.MaxTokens, RoutedFrom: a.Model, Optimizations: []string{}}
	q.Price.InputTokens, q.Price.OutputTokens = a.InputTokens, a.MaxTokens
	var quotes []gateway.Quote
	if a.Quotes != nil && !a.Direct {
		quotes = a.Quotes()
	}
	if len(quotes) == 0 || !quotes[0].Prices.Known() {
		return q
	}
	pr := quotes[0].Prices
	q.RoutedFrom = quotes[0].Model
	// A listed cache-read price is a provider that caches prompts.
	q.CacheEligible = pr.Assumed&pricing.AssumedCacheRead == 0
	if pr.CacheWrite.Nanos() > pr.Input.Nanos() {
		pr.Input = pr.CacheWrite
	}
	b := pricing.NewBill(pricing.Terms{Spread: p.cfg.Spread})
	b.Add(pricing.Served(pr, wire.Usage{InputTokens: a.InputTokens, OutputTokens: a.MaxTokens}, pricing.Optimizations{}))
	f := b.Settle()
	q.Price.ProviderCost = usd(f.Cost)
	q.Price.Margin = usd(f.Charge - f.Cost)
	q.Price.TotalCharged = usd(f.Charge)
	q.Price.micros = f.Charge
	return q
}

func usd(m pricing.Micros) float64 { return float64(m) / pricing.MicrosPerUSD }
