package guardrail

import (
	"context"
	"strings"
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

// TestViewPrechecks: the shortcuts of the decoded views skip only texts
// the full walk would reject: leetChars are exactly the characters leet
// maps, isROT13Word is the rot13Words set, and decodeTags' two bytes
// start every tag character.
func TestViewPrechecks(t *testing.T) {
	for r := rune(0); r < 0x30000; r++ {
		if (leet(r) != 0) != strings.ContainsRune(leetChars, r) {
			t.Fatalf("leet(%q) = %q, leetChars %q", r, leet(r), leetChars)
		}
	}
	for w := range rot13Words {
		if !isROT13Word(w) {
			t.Errorf("isROT13Word(%q) = false", w)
		}
	}
	for _, w := range []string{"", "gu", "gurr", "the", "vtabe", "lbhee"} {
		if isROT13Word(w) {
			t.Errorf("isROT13Word(%q) = true", w)
		}
	}
	for r := rune(0xE0020); r <= 0xE007E; r++ {
		if !strings.HasPrefix(string(r), "\xf3\xa0") {
			t.Fatalf("tag character %U is % x", r, string(r))
		}
	}
}
