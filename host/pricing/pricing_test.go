package pricing

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/sdk/wire"
)

func price(t testing.TB, s string) catalog.Price {
	t.Helper()
	p, err := catalog.ParsePrice(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// sonnet is priced as Anthropic lists Claude Sonnet: $3 / $15 per Mtok,
// cache read $0.30, 5-minute cache write $3.75.
func sonnet(t testing.TB) Prices {
	m := catalog.Model{ID: "claude-sonnet-4", Input: price(t, "3"), Output: price(t, "15"),
		CacheRead: price(t, "0.30"), CacheWrite: price(t, "3.75")}
	return PricesOf(&m, Anthropic)
}

// mini is priced as OpenAI lists gpt-4o-mini: $0.15 / $0.60, cached $0.075.
func mini(t testing.TB) Prices {
	m := catalog.Model{ID: "gpt-4o-mini", Input: price(t, "0.15"), Output: price(t, "0.60"),
		CacheRead: price(t, "0.075")}
	return PricesOf(&m, OpenAI)
}

// The README's worked Anthropic example, by hand:
//
//	cost   = 1200×3 + 350×15 + 8000×0.30 + 2000×3.75 = 18,750 µUSD
//	charge = 18,750 × 1.15 = 21,562.5 → 21,563 µUSD (pro, rounded up)
//	direct = (1200 + 1500 pruned + 8000 + 2000 aligned)×3 + 350×15 = 43,350
//	saved  = 43,350 − 21,563 = 21,787 µUSD
func TestAnthropicCacheReadsAndWrites(t *testing.T) {
	u := wire.Usage{InputTokens: 1200, OutputTokens: 350, CacheReadTokens: 8000, CacheWriteTokens: 2000}
	b := NewBill(Terms{Spread: SpreadPro})
	b.Add(Served(sonnet(t), u, Optimizations{PrunedTokens: 1500, AlignedCache: true}))
	f := b.Settle()
	want := Figures{Cost: 18750, Charge: 21563, Direct: 43350, Savings: 21787, Usage: u, Served: 1}
	if f != want {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
	if got := f.CostHeader(); got != "0.021563" {
		t.Errorf("X-Bardo-Cost %q", got)
	}
	if got := f.SavingsHeader(); got != "0.021787" {
		t.Errorf("X-Bardo-Savings %q", got)
	}
}

// The README's worked OpenAI example, by hand (cached tokens are part of
// prompt_tokens = 2048; 1024 of them cached):
//
//	cost   = 1024×0.15 + 300×0.60 + 1024×0.075 = 410.4 → 411 µUSD
//	charge = 410.4 × 1.25 = 513 µUSD exactly (free)
//	direct = 153.6 + 180 + (1024 + 2000 pruned)×0.075 = 560.4 → 561
//	saved  = 561 − 513 = 48 µUSD
//
// (The caller's prefix was being read from cache, so the pruned tools
// would have been cache reads too.)
func TestOpenAICachedTokens(t *testing.T) {
	body := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[],"usage":{"prompt_tokens":2048,"completion_tokens":300,"total_tokens":2348,"prompt_tokens_details":{"cached_tokens":1024}}}`)
	u, ok := BodyUsage(body)
	if !ok {
		t.Fatal("no usage")
	}
	if want := (wire.Usage{InputTokens: 1024, OutputTokens: 300, CacheReadTokens: 1024}); u != want {
		t.Fatalf("usage %+v, want %+v", u, want)
	}
	b := NewBill(Terms{Spread: SpreadFree})
	b.Add(Served(mini(t), u, Optimizations{PrunedTokens: 2000}))
	f := b.Settle()
	want := Figures{Cost: 411, Charge: 513, Direct: 561, Savings: 48, Usage: u, Served: 1, Assumed: AssumedCacheWrite}
	if f != want {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
}

// Without optimizations the spread is a loss against direct, and the
// figures say so rather than clamp to 0.
func TestSavingsNegativeWithoutOptimizations(t *testing.T) {
	b := NewBill(Terms{Spread: SpreadFree})
	b.Add(Served(sonnet(t), wire.Usage{InputTokens: 1000, OutputTokens: 100}, Optimizations{}))
	f := b.Settle() // cost 3000 + 1500 = 4500; charge 5625
	if f.Cost != 4500 || f.Charge != 5625 || f.Direct != 4500 || f.Savings != -1125 {
		t.Fatalf("%+v", f)
	}
	if got := f.SavingsHeader(); got != "-0.001125" {
		t.Errorf("savings header %q", got)
	}
}

func TestNothingServedChargesNothing(t *testing.T) {
	b := NewBill(Terms{Spread: SpreadFree})
	b.Add(Outcome{}) // a failed attempt
	b.Add(Outcome{}) // a refusal
	if f := b.Settle(); f != (Figures{}) {
		t.Fatalf("failed attempts priced: %+v", f)
	}
	var zero Bill
	if f := zero.Settle(); f != (Figures{}) {
		t.Fatalf("zero bill: %+v", f)
	}
}

// Only the attempt that answered is priced; the failed one before it adds
// nothing.
func TestFailoverPricesOnlyTheServedAttempt(t *testing.T) {
	u := wire.Usage{InputTokens: 1000, OutputTokens: 100}
	b := NewBill(Terms{Spread: SpreadGolem})
	b.Add(Outcome{})
	b.Add(Served(sonnet(t), u, Optimizations{}))
	f := b.Settle()
	if f.Cost != 4500 || f.Charge != 4950 || f.Served != 1 {
		t.Fatalf("%+v", f)
	}
}

func TestCacheHitSavesTheWholeCall(t *testing.T) {
	b := NewBill(Terms{Spread: SpreadPro})
	b.Add(CacheHit(sonnet(t), wire.Usage{InputTokens: 1000, OutputTokens: 100, CacheReadTokens: 500}))
	f := b.Settle() // direct 3000 + 1500 + 150
	want := Figures{Direct: 4650, Savings: 4650, CacheHits: 1}
	if f != want {
		t.Fatalf("got %+v\nwant %+v", f, want)
	}
}

func TestDirectTermsNoChargeNoSpread(t *testing.T) {
	b := NewBill(Terms{Spread: SpreadFree, Direct: true})
	b.Add(Served(sonnet(t), wire.Usage{InputTokens: 1000, OutputTokens: 100}, Optimizations{CompressedTokens: 1000}))
	f := b.Settle()
	if f.Charge != 0 || f.Cost != 4500 || f.Direct != 7500 || f.Savings != 3000 || !f.DirectKey {
		t.Fatalf("%+v", f)
	}
	if f.CostHeader() != "direct" {
		t.Errorf("X-Bardo-Cost %q", f.CostHeader())
	}
}

// An internal completion a layer made (a compression summary) is charged
// to the same bill, and the savings are net of it.
func TestInternalCompletionIsChargedAndNetted(t *testing.T) {
	b := NewBill(Terms{Spread: SpreadPro})
	b.Add(Served(sonnet(t), wire.Usage{InputTokens: 2000, OutputTokens: 100}, Optimizations{CompressedTokens: 10000}))
	b.Add(Served(mini(t), wire.Usage{InputTokens: 10000, OutputTokens: 500}, Optimizations{}))
	f := b.Settle()
	// cost: 6000 + 1500 + 1500 + 300 = 9300; charge 10695
	// direct: 12000×3 + 1500 + (the summary, as it would cost direct) 1800
	if f.Cost != 9300 || f.Charge != 10695 || f.Direct != 39300 || f.Savings != 39300-10695 {
		t.Fatalf("%+v", f)
	}
	if f.Usage != (wire.Usage{InputTokens: 12000, OutputTokens: 600}) || f.Served != 2 {
		t.Fatalf("usage %+v", f.Usage)
	}
}

func TestConventions(t *testing.T) {
	in := price(t, "3")
	a := PricesOf(&catalog.Model{Input: in, Output: price(t, "15")}, Anthropic)
	if a.CacheRead.String() != "0.3" || a.CacheWrite.String() != "3.75" || a.Assumed != AssumedCacheRead|AssumedCacheWrite {
		t.Fatalf("anthropic %v %v %v", a.CacheRead, a.CacheWrite, a.Assumed)
	}
	o := PricesOf(&catalog.Model{Input: in, Output: price(t, "15")}, OpenAI)
	if o.CacheRead.String() != "1.5" || o.CacheWrite.String() != "3" || o.Assumed.String() != "cache_read,cache_write" {
		t.Fatalf("openai %v %v %v", o.CacheRead, o.CacheWrite, o.Assumed)
	}
	// A catalog's cache price wins, including a known 0.
	z := PricesOf(&catalog.Model{Input: in, Output: in, CacheRead: catalog.PriceFromNanos(0)}, Anthropic)
	if z.CacheRead.Nanos() != 0 || z.Assumed != AssumedCacheWrite {
		t.Fatalf("catalog price lost: %v %v", z.CacheRead, z.Assumed)
	}
	// A derived price rounds up (never under-bills): 0.000000001 / 10.
	tiny := PricesOf(&catalog.Model{Input: catalog.PriceFromNanos(1), Output: in}, Anthropic)
	if tiny.CacheRead.Nanos() != 1 || tiny.CacheWrite.Nanos() != 2 {
		t.Fatalf("tiny %d %d", tiny.CacheRead.Nanos(), tiny.CacheWrite.Nanos())
	}
	for id, want := range map[string]Convention{"claude-3-5-haiku": Anthropic, "anthropic/claude-sonnet-4": Anthropic, "gpt-4o": OpenAI, "deepseek-chat": OpenAI} {
		if got := ConventionFor(id); got != want {
			t.Errorf("ConventionFor(%q) = %v", id, got)
		}
	}
}

func TestUnpricedIsVisible(t *testing.T) {
	b := NewBill(Terms{Spread: SpreadFree})
	b.Add(Served(PricesOf(&catalog.Model{Output: price(t, "1")}, OpenAI), wire.Usage{InputTokens: 10, OutputTokens: 1_000_000}, Optimizations{}))
	f := b.Settle()
	if !f.Unpriced {
		t.Fatal("unknown input price not flagged")
	}
}

func TestTierSpread(t *testing.T) {
	for tier, want := range map[string]Spread{"free": 2500, "Pro": 1500, "GOLEM": 1000} {
		if got, ok := TierSpread(tier); !ok || got != want {
			t.Errorf("%s: %d %v", tier, got, ok)
		}
	}
	if _, ok := TierSpread("platinum"); ok {
		t.Error("unknown tier has a spread")
	}
}

func TestOverflowSaturates(t *testing.T) {
	p := Prices{Input: catalog.PriceFromNanos(math.MaxInt64), Output: catalog.PriceFromNanos(1)}
	b := NewBill(Terms{Spread: SpreadFree})
	b.Add(Served(p, wire.Usage{InputTokens: 1 << 40}, Optimizations{}))
	f := b.Settle()
	if !f.Overflow || f.Charge < f.Cost || f.Cost <= 0 {
		t.Fatalf("%+v", f)
	}
}

func randUsage(r *rand.Rand) wire.Usage {
	return wire.Usage{
		InputTokens: r.Int64N(2_000_000), OutputTokens: r.Int64N(200_000),
		CacheReadTokens: r.Int64N(2_000_000), CacheWriteTokens: r.Int64N(500_000),
	}
}

func randPrices(r *rand.Rand) Prices {
	n := func() catalog.Price { return catalog.PriceFromNanos(r.Int64N(100 * 1_000_000_000)) } // ≤ $100/Mtok
	return Prices{Input: n(), Output: n(), CacheRead: n(), CacheWrite: n()}
}

// Properties over random usage and prices (bounded: 20,000 cases).
func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	spreads := []Spread{0, SpreadGolem, SpreadPro, SpreadFree}
	for i := 0; i < 20_000; i++ {
		p, u, s := randPrices(r), randUsage(r), spreads[i%len(spreads)]
		exact, _ := p.femtos(u)
		b := NewBill(Terms{Spread: s})
		b.Add(Served(p, u, Optimizations{}))
		f := b.Settle()
		// Rounding bounds: one step, up, by less than a micro-dollar.
		if int64(f.Cost)*femtosPerMicro < exact || (int64(f.Cost)-1)*femtosPerMicro >= exact {
			t.Fatalf("cost %d µ for %d fUSD", f.Cost, exact)
		}
		// charge×10^13 ≥ exact×(10^4+s) > (charge−1)×10^13, in big
		// integers: an independent check of the 128-bit arithmetic.
		num := new(big.Int).Mul(big.NewInt(exact), big.NewInt(int64(10_000+s)))
		e13 := big.NewInt(10_000 * femtosPerMicro)
		hi := new(big.Int).Mul(big.NewInt(int64(f.Charge)), e13)
		lo := new(big.Int).Mul(big.NewInt(int64(f.Charge-1)), e13)
		if hi.Cmp(num) < 0 || lo.Cmp(num) >= 0 {
			t.Fatalf("charge %d µ for %d fUSD at %d bp", f.Charge, exact, s)
		}
		if f.Charge < f.Cost {
			t.Fatalf("charge %d < cost %d", f.Charge, f.Cost)
		}
		if exact > 0 && s > 0 && f.Charge == 0 {
			t.Fatal("a priced answer charged nothing")
		}
		if f.Savings != f.Direct-f.Charge {
			t.Fatalf("savings %d ≠ %d − %d", f.Savings, f.Direct, f.Charge)
		}
		// Additivity: the exact cost of a sum is the sum of exact costs,
		// and one bill of two outcomes rounds once.
		u2 := randUsage(r)
		e2, _ := p.femtos(u2)
		sum, _ := p.femtos(wire.Usage{InputTokens: u.InputTokens + u2.InputTokens, OutputTokens: u.OutputTokens + u2.OutputTokens,
			CacheReadTokens: u.CacheReadTokens + u2.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens + u2.CacheWriteTokens})
		if sum != exact+e2 {
			t.Fatalf("not additive: %d ≠ %d + %d", sum, exact, e2)
		}
		b.Add(Served(p, u2, Optimizations{}))
		f2 := b.Settle()
		if want := Micros(ceilDiv(exact+e2, femtosPerMicro)); f2.Cost != want {
			t.Fatalf("two outcomes: cost %d, want %d", f2.Cost, want)
		}
		one := NewBill(Terms{Spread: s})
		one.Add(Served(p, u2, Optimizations{}))
		if g := one.Settle(); f2.Cost > f.Cost+g.Cost || f2.Cost+1 < f.Cost+g.Cost {
			t.Fatalf("rounding once: %d vs %d + %d", f2.Cost, f.Cost, g.Cost)
		}
		// Optimizations only ever add to what direct would have cost.
		ob := NewBill(Terms{Spread: s})
		ob.Add(Served(p, u, Optimizations{PrunedTokens: r.Int64N(10000), CompressedTokens: r.Int64N(10000)}))
		if of := ob.Settle(); of.Direct < f.Direct || of.Charge != f.Charge {
			t.Fatalf("optimizations: %+v vs %+v", of, f)
		}
	}
}

// Removed prompt tokens are valued at what direct would have paid for
// them: input when nothing was read from cache (or the cache was the
// gateway's doing), cache reads when the caller's own prefix was cached.
func TestRemovedTokensAtTheirDirectRate(t *testing.T) {
	p := sonnet(t)
	for _, tc := range []struct {
		name   string
		u      wire.Usage
		opt    Optimizations
		direct Micros
	}{
		{"uncached", wire.Usage{InputTokens: 1000}, Optimizations{CompressedTokens: 1000}, 6000},
		{"caller-cached", wire.Usage{InputTokens: 1000, CacheReadTokens: 1000}, Optimizations{CompressedTokens: 1000}, 3000 + 600},
		{"gateway-cached", wire.Usage{InputTokens: 1000, CacheReadTokens: 1000}, Optimizations{CompressedTokens: 1000, AlignedCache: true}, 9000},
		{"negative-ignored", wire.Usage{InputTokens: 1000}, Optimizations{PrunedTokens: -500}, 3000},
	} {
		b := NewBill(Terms{})
		b.Add(Served(p, tc.u, tc.opt))
		if f := b.Settle(); f.Direct != tc.direct {
			t.Errorf("%s: direct %d, want %d", tc.name, f.Direct, tc.direct)
		}
	}
}
