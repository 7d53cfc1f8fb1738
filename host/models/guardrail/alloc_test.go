package guardrail

import (
	"context"
	"testing"
)

// TestClassifyAllocs: classifying an agent's new turn allocates the
// result and the rule engine's own few values, not the tokens, n-grams,
// rows and base64 decodings it works through (pooled or on the stack):
// on the gateway's busy heap every allocation of this host call costs
// its share of the GC (24 allocations before, 8 after).
func TestClassifyAllocs(t *testing.T) {
	c := sharedClassifier(t)
	ctx := context.Background()
	// A turn with a long identifier (a base64 run that decodes to binary)
	// and words and bigrams of the vocabulary.
	turns := []string{"Go ahead, and summarize the risk in two sentences at the end. (request 123 at 1795764000123456789)"}
	if _, err := c.Classify(ctx, turns); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := c.Classify(ctx, turns); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 10 {
		t.Errorf("Classify of an agent turn: %v allocations, want at most 10", allocs)
	}
}
