// Package pricing turns an upstream attempt's usage into money: what the
// provider bills for it (cost), what the caller pays (charge = cost plus the
// tier's spread), and what the caller saved against sending the same
// request straight to the provider (savings). It also reads usage from
// response bytes without decoding them (BodyUsage, StreamUsage) and formats
// the figures for headers and the end of a stream.
//
// Amounts are exact integers. Inside, a sum is held in femto-dollars
// (10^-15 USD), which is exactly tokens × catalog.Price.Nanos() (a price is
// 10^-9 USD per million tokens), so adding token kinds and attempts never
// rounds. A figure that leaves the package is Micros (10^-6 USD, one USDC
// atomic unit), rounded up once at the end (Bill.Settle). See README.md.
package pricing

import (
	"math"
	"math/bits"
	"strings"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Micros is an amount of money in micro-dollars (10^-6 USD), the unit of a
// USDC atomic amount and of the ledger. It may be negative (a savings
// figure can be).
type Micros int64

// MicrosPerUSD is the number of Micros in one US dollar.
const MicrosPerUSD = 1_000_000

// femtosPerMicro converts the exact internal unit (10^-15 USD) to Micros.
const femtosPerMicro = 1_000_000_000

// Spread is a markup in basis points (1/100 of a percent): 2500 is 25 %.
type Spread int32

// The spec's tier spreads (003, "Feature tiers").
const (
	SpreadFree  Spread = 2500
	SpreadPro   Spread = 1500
	SpreadGolem Spread = 1000
)

// TierSpread returns the spread of a tier by name ("free", "pro", "golem";
// ASCII case ignored).
func TierSpread(tier string) (Spread, bool) {
	switch strings.ToLower(tier) {
	case "free":
		return SpreadFree, true
	case "pro":
		return SpreadPro, true
	case "golem":
		return SpreadGolem, true
	}
	return 0, false
}

// Convention names whose rule fills a cache price the catalog lacks.
type Convention uint8

// Conventions.
const (
	// OpenAI: a cached read costs 0.5× input; there is no write premium
	// (automatic caching bills writes as input).
	OpenAI Convention = iota
	// Anthropic: a cache read costs 0.1× input, a (5-minute) write 1.25×.
	Anthropic
)

// ConventionFor picks the convention for a model id: Anthropic for Claude
// models (also behind a router's "anthropic/" prefix), OpenAI otherwise.
func ConventionFor(modelID string) Convention {
	id := strings.ToLower(modelID)
	if strings.HasPrefix(id, "anthropic/") || strings.Contains(id, "claude") {
		return Anthropic
	}
	return OpenAI
}

// Assumed records which prices a Prices derived by convention rather than
// read from the catalog, so the assumption stays visible (usage records,
// logs).
type Assumed uint8

// Assumed prices.
const (
	AssumedCacheRead Assumed = 1 << iota
	AssumedCacheWrite
)

// String lists the assumed prices ("cache_read,cache_write"), "" for none.
func (a Assumed) String() string {
	switch a {
	case 0:
		return ""
	case AssumedCacheRead:
		return "cache_read"
	case AssumedCacheWrite:
		return "cache_write"
	}
	return "cache_read,cache_write"
}

// Prices are a model's four token prices, complete: a cache price the
// catalog lacks is derived from the input price by a Convention, and
// recorded in Assumed.
type Prices struct {
	Input, Output, CacheRead, CacheWrite catalog.Price
	Assumed                              Assumed
}

// PricesOf returns m's prices, filling unknown cache prices by convention
// c. Input and output are taken as they are: when either is unknown the
// result is not Known and nothing is derived.
func PricesOf(m *catalog.Model, c Convention) Prices {
	p := Prices{Input: m.Input, Output: m.Output, CacheRead: m.CacheRead, CacheWrite: m.CacheWrite}
	if !p.Input.Known() {
		return p
	}
	in := p.Input.Nanos()
	if !p.CacheRead.Known() {
		if c == Anthropic {
			p.CacheRead = catalog.PriceFromNanos(ceilDiv(in, 10))
		} else {
			p.CacheRead = catalog.PriceFromNanos(ceilDiv(in, 2))
		}
		p.Assumed |= AssumedCacheRead
	}
	if !p.CacheWrite.Known() {
		if c == Anthropic {
			p.CacheWrite = catalog.PriceFromNanos(ceilDiv(mulSat(in, 5), 4))
		} else {
			p.CacheWrite = p.Input
		}
		p.Assumed |= AssumedCacheWrite
	}
	return p
}

// Known reports whether the input and output prices are known (cache
// prices always are after PricesOf). An attempt at an unknown price costs
// 0 and its Figures say Unpriced.
func (p Prices) Known() bool { return p.Input.Known() && p.Output.Known() }

// femtos returns the exact cost of u at p in 10^-15 USD, saturating at
// math.MaxInt64 (about 9,223 USD) with ok false. Negative counts are 0.
func (p Prices) femtos(u wire.Usage) (sum int64, ok bool) {
	ok = true
	add := func(tokens int64, price catalog.Price) {
		if tokens <= 0 || price.Nanos() <= 0 {
			return
		}
		hi, lo := bits.Mul64(uint64(tokens), uint64(price.Nanos()))
		if hi != 0 || lo > math.MaxInt64 {
			sum, ok = math.MaxInt64, false
			return
		}
		sum, ok = addSat(sum, int64(lo), ok)
	}
	add(u.InputTokens, p.Input)
	add(u.OutputTokens, p.Output)
	add(u.CacheReadTokens, p.CacheRead)
	add(u.CacheWriteTokens, p.CacheWrite)
	return sum, ok
}

// Optimizations are the tokens the gateway's layers kept away from the
// provider on one attempt, as the layers measure them. They widen the
// counterfactual "sent straight to the provider" usage; see README.md.
type Optimizations struct {
	// PrunedTokens: prompt tokens tool pruning removed
	// (X-Bardo-Tools-Saved-Tokens).
	PrunedTokens int64
	// CompressedTokens: prompt tokens history compression removed
	// (X-Bardo-Compress-Saved-Tokens); the summary's own completion is an
	// internal completion with its own Outcome.
	CompressedTokens int64
	// AlignedCache: the prompt-cache layer placed the breakpoints
	// (X-Bardo-Cache-Breakpoints > 0), so the attempt's cache reads and
	// writes are the gateway's doing; direct, they would be plain input.
	AlignedCache bool
}

// direct returns the usage the request would have had sent straight to the
// provider without the optimizations.
//
// Removed tokens (tool definitions, older history) sit in the prompt's
// prefix. When the caller's own prompt caching was reading that prefix
// (cache reads reported, not of the gateway's doing) they would have been
// read from cache too, so they count as cache reads; otherwise as input.
// The replays (docs/performance.md, "Priced replays") showed why: counted
// at the input price, history folded out of a cached prefix looks ten
// times more valuable than it was.
func (o Optimizations) direct(u wire.Usage) wire.Usage {
	removed := addTokens(max(o.PrunedTokens, 0), o.CompressedTokens)
	if u.CacheReadTokens > 0 && !o.AlignedCache {
		u.CacheReadTokens = addTokens(u.CacheReadTokens, removed)
	} else {
		u.InputTokens = addTokens(u.InputTokens, removed)
	}
	if o.AlignedCache {
		u.InputTokens = addTokens(u.InputTokens, u.CacheReadTokens)
		u.InputTokens = addTokens(u.InputTokens, u.CacheWriteTokens)
		u.CacheReadTokens, u.CacheWriteTokens = 0, 0
	}
	return u
}

// Outcome is what one attempt contributes to a bill. Only Served and
// CacheHit make a priced Outcome; the zero Outcome — a failed attempt, a
// gateway error, a refused request — adds nothing, so no code path can
// charge for one by forgetting a check.
type Outcome struct {
	kind   outcomeKind
	prices Prices
	usage  wire.Usage
	opt    Optimizations
}

type outcomeKind uint8

const (
	notServed outcomeKind = iota
	served
	cacheHit
)

// Served is an upstream attempt that answered, with the usage the upstream
// reported and the optimizations applied to it.
func Served(p Prices, u wire.Usage, opt Optimizations) Outcome {
	return Outcome{kind: served, prices: p, usage: u, opt: opt}
}

// CacheHit is an answer from the gateway's response cache: it costs
// nothing and saves the whole call, priced at p (the model that would have
// served it) from the cached response's usage u.
func CacheHit(p Prices, u wire.Usage) Outcome {
	return Outcome{kind: cacheHit, prices: p, usage: u}
}

// Terms are what the caller pays under: a tier's spread, or Direct (the
// caller's own provider key: no spread, no charge; spec 003 "Direct Keys").
type Terms struct {
	Spread Spread
	Direct bool
}

// Bill accumulates the Outcomes of one request (its final attempt and any
// internal completions a layer made for it) exactly; Settle rounds once.
// The zero Bill is empty and charges nothing.
type Bill struct {
	terms    Terms
	cost     int64 // femtos the provider bills
	direct   int64 // femtos the request would have cost direct
	usage    wire.Usage
	served   int
	hits     int
	unpriced bool
	overflow bool
	assumed  Assumed
}

// NewBill returns an empty bill under t.
func NewBill(t Terms) Bill { return Bill{terms: t} }

// Add adds an outcome. A zero (failed) Outcome changes nothing.
func (b *Bill) Add(o Outcome) {
	if o.kind == notServed {
		return
	}
	if !o.prices.Known() {
		b.unpriced = true
	}
	b.assumed |= o.prices.Assumed
	d, ok := o.prices.femtos(o.opt.direct(o.usage))
	b.direct, ok = addSat(b.direct, d, ok)
	b.overflow = b.overflow || !ok
	if o.kind == cacheHit {
		b.hits++
		return
	}
	b.served++
	c, ok := o.prices.femtos(o.usage)
	b.cost, ok = addSat(b.cost, c, ok)
	b.overflow = b.overflow || !ok
	b.usage.InputTokens = addTokens(b.usage.InputTokens, o.usage.InputTokens)
	b.usage.OutputTokens = addTokens(b.usage.OutputTokens, o.usage.OutputTokens)
	b.usage.CacheReadTokens = addTokens(b.usage.CacheReadTokens, o.usage.CacheReadTokens)
	b.usage.CacheWriteTokens = addTokens(b.usage.CacheWriteTokens, o.usage.CacheWriteTokens)
}

// Figures are a settled bill in Micros: what the ledger records and the
// headers show.
type Figures struct {
	// Cost is what the provider bills for the served attempts.
	Cost Micros
	// Charge is what the caller is charged: Cost × (1 + spread), 0 under
	// Direct terms or when nothing was served.
	Charge Micros
	// Direct is what the request would have cost sent straight to the
	// provider without the gateway's optimizations.
	Direct Micros
	// Savings is Direct minus what the caller paid (Charge; under Direct
	// terms, Cost, which the caller pays its provider). Negative when the
	// spread exceeds what the optimizations saved.
	Savings Micros
	// Usage sums the served attempts' tokens (cache hits excluded).
	Usage wire.Usage
	// Served and CacheHits count the priced outcomes.
	Served, CacheHits int
	// DirectKey is set under Direct terms.
	DirectKey bool
	// Unpriced is set when an outcome's model had no input or output
	// price: its tokens were priced at 0.
	Unpriced bool
	// Overflow is set when an exact sum saturated (above ~9,223 USD).
	Overflow bool
	// Assumed lists the cache prices derived by convention.
	Assumed Assumed
}

// Settle rounds the bill to Micros. Each figure is rounded up once from
// its exact value, so a charge is never short of the exact amount by any
// fraction and is not above it by a whole micro-dollar.
func (b *Bill) Settle() Figures {
	f := Figures{
		Cost:      Micros(ceilDiv(b.cost, femtosPerMicro)),
		Direct:    Micros(ceilDiv(b.direct, femtosPerMicro)),
		Usage:     b.usage,
		Served:    b.served,
		CacheHits: b.hits,
		DirectKey: b.terms.Direct,
		Unpriced:  b.unpriced,
		Overflow:  b.overflow,
		Assumed:   b.assumed,
	}
	paid := f.Cost
	if !b.terms.Direct {
		f.Charge = charge(b.cost, b.terms.Spread)
		paid = f.Charge
	}
	f.Savings = f.Direct - paid
	return f
}

// charge is ⌈femtos × (10000 + spread) / 10000 / 10^9⌉ in Micros, with a
// 128-bit product so the spread is applied to the exact cost.
func charge(femtos int64, s Spread) Micros {
	if femtos <= 0 {
		return 0
	}
	m := int64(10_000) + int64(s)
	if m < 0 {
		m = 0
	}
	hi, lo := bits.Mul64(uint64(femtos), uint64(m))
	const div = 10_000 * femtosPerMicro
	q, r := bits.Div64(hi, lo, div) // hi < div: femtos < 2^63, m < 2^32
	if r > 0 {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return Micros(q)
}

// ceilDiv is ⌈a / b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func addSat(a, b int64, ok bool) (int64, bool) {
	if b > math.MaxInt64-a {
		return math.MaxInt64, false
	}
	return a + b, ok
}

// addTokens adds non-negative token counts, saturating.
func addTokens(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	if a < 0 {
		a = 0
	}
	s, _ := addSat(a, b, true)
	return s
}
