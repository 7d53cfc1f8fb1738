// Package savings names the response headers with which layers report
// what they kept away from the provider, measured in tokens. The host's
// settlement reads them to price the savings figure (host/pricing,
// Optimizations), so a layer and the bill agree on one spelling.
package savings

// Headers a layer sets on the exchange.
const (
	// HeaderPrunedTokens is the estimated prompt tokens tool pruning
	// removed (L4 toolprune).
	HeaderPrunedTokens = "X-Bardo-Tools-Saved-Tokens"
	// HeaderCompressedTokens is the estimated prompt tokens history
	// compression removed (L5 compress).
	HeaderCompressedTokens = "X-Bardo-Compress-Saved-Tokens"
	// HeaderCacheBreakpoints is how many prompt-cache breakpoints the
	// gateway placed (L1 promptcache): more than 0 makes the answer's cache
	// reads and writes the gateway's doing.
	HeaderCacheBreakpoints = "X-Bardo-Cache-Breakpoints"
)
