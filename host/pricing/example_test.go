package pricing_test

import (
	"fmt"
	"os"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/pricing"
)

// One streamed Anthropic answer, its usage read from the bytes as they
// pass, billed to a pro account.
func Example() {
	in, _ := catalog.ParsePrice("3")
	out, _ := catalog.ParsePrice("15")
	model := catalog.Model{ID: "claude-sonnet-4", Input: in, Output: out} // no cache prices: by convention

	var usage pricing.StreamUsage
	usage.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1200,\"cache_creation_input_tokens\":2000,\"cache_read_input_tokens\":8000,\"output_tokens\":1}}}\n\n"))
	usage.Write([]byte("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":350}}\n\n"))
	u, _ := usage.Usage()

	spread, _ := pricing.TierSpread("pro")
	bill := pricing.NewBill(pricing.Terms{Spread: spread})
	bill.Add(pricing.Outcome{}) // the attempt that failed over first: nothing
	prices := pricing.PricesOf(&model, pricing.ConventionFor(model.ID))
	bill.Add(pricing.Served(prices, u, pricing.Optimizations{PrunedTokens: 1500, AlignedCache: true}))
	f := bill.Settle()

	fmt.Println(pricing.HeaderCost+":", f.CostHeader())
	fmt.Println(pricing.HeaderSavings+":", f.SavingsHeader())
	fmt.Println("assumed:", f.Assumed)
	t := pricing.Trailer{Figures: f}
	os.Stdout.Write(t.Append(nil))
	// Output:
	// X-Bardo-Cost: 0.021563
	// X-Bardo-Savings: 0.021787
	// assumed: cache_read,cache_write
	// : bardo cost=0.021563 savings=0.021787
}
