package routing

import (
	"errors"
	"math/bits"
	"strconv"
	"strings"
)

// Feature is one capability a model or provider may have and an intent may
// require or prefer. Features are bits so that matching a catalog of hundreds
// of models costs a few AND instructions per model and never allocates (the
// same code runs inside WASM plugins, 5–7× slower than native).
type Feature uint8

// The features named by the routing and provider specifications. The wire
// name of each (what callers write in `bardo.require`, catalogs in
// `features`, and X-Bardo-Degraded reports) is its constant's doc.
const (
	InterleavedThinking Feature = iota // "interleaved_thinking": thinking blocks between tool calls (Anthropic)
	VisibleThinking                    // "visible_thinking": the reasoning text is returned (DeepSeek <think>, Venice reasoning_content, Anthropic thinking blocks)
	AdaptiveThinking                   // "adaptive_thinking": extended thinking with budget control
	ReasoningEffort                    // "reasoning_effort": the model takes a reasoning-effort parameter
	MaxEffort                          // "max_effort": the model accepts the top effort level (Venice "max" is Opus 4.6 only)
	LowEffort                          // "low_effort": the model can answer without (or with little) reasoning
	Citations                          // "citations": cites passages of provided documents
	Compaction                         // "compaction": server-side context compaction API
	StructuredOutputs                  // "structured_outputs": JSON-schema enforced output (alias response_schema)
	ToolUse                            // "tool_use": function / tool calling
	PromptCaching                      // "prompt_caching": provider prompt cache (cache_control, prompt_cache_key or automatic)
	ExplicitCaching                    // "explicit_caching": user-managed cache entries with TTL (Gemini)
	PredictedOutputs                   // "predicted_outputs": OpenAI Predicted Outputs
	BatchAPI                           // "batch_api": asynchronous batch endpoint (50% discount)
	ResponsesAPI                       // "responses_api": OpenAI stateful Responses API
	DirectPassthrough                  // "direct_passthrough": request sent verbatim, no context engineering
	WebSearch                          // "web_search": provider-side web search
	Vision                             // "vision": image input
	Privacy                            // "privacy": zero data retention (aliases private, no_log)
	TEE                                // "tee": inference in an attested enclave (alias tee_attested)
	E2EE                               // "e2ee": end-to-end encrypted inference
	SelfFunding                        // "self_funding": paid from the agent's own revenue (Bankr)
	CrossVerify                        // "cross_verify": cross-model verification
	MinP                               // "min_p": the min_p sampling parameter
	TopK                               // "top_k": the top_k sampling parameter
	Seed                               // "seed": reproducible sampling seed
	CodeExecution                      // "code_execution": server-side code sandbox
	SearchGrounding                    // "search_grounding": search-grounded answers (Gemini)
	LongContext                        // "long_context": a context window of 200k tokens or more
	Reasoning                          // "reasoning": a thinking model (alias thinking)
	AudioInput                         // "audio_input": audio input
	VideoInput                         // "video_input": video input
	Logprobs                           // "logprobs": token log-probabilities

	numFeatures // keep last; append new features just above, never reorder
)

// AllFeatures is the set of every feature above (for listing the known
// names: AllFeatures.AppendNames(nil)).
const AllFeatures FeatureSet = 1<<numFeatures - 1

// featureNames are the wire names, indexed by Feature.
var featureNames = [numFeatures]string{
	InterleavedThinking: "interleaved_thinking",
	VisibleThinking:     "visible_thinking",
	AdaptiveThinking:    "adaptive_thinking",
	ReasoningEffort:     "reasoning_effort",
	MaxEffort:           "max_effort",
	LowEffort:           "low_effort",
	Citations:           "citations",
	Compaction:          "compaction",
	StructuredOutputs:   "structured_outputs",
	ToolUse:             "tool_use",
	PromptCaching:       "prompt_caching",
	ExplicitCaching:     "explicit_caching",
	PredictedOutputs:    "predicted_outputs",
	BatchAPI:            "batch_api",
	ResponsesAPI:        "responses_api",
	DirectPassthrough:   "direct_passthrough",
	WebSearch:           "web_search",
	Vision:              "vision",
	Privacy:             "privacy",
	TEE:                 "tee",
	E2EE:                "e2ee",
	SelfFunding:         "self_funding",
	CrossVerify:         "cross_verify",
	MinP:                "min_p",
	TopK:                "top_k",
	Seed:                "seed",
	CodeExecution:       "code_execution",
	SearchGrounding:     "search_grounding",
	LongContext:         "long_context",
	Reasoning:           "reasoning",
	AudioInput:          "audio_input",
	VideoInput:          "video_input",
	Logprobs:            "logprobs",
}

// featureAliases are other spellings the specification uses for the same
// capability (it writes both "privacy" and "private", for instance).
var featureAliases = [...]struct {
	name string
	f    Feature
}{
	{"private", Privacy},
	{"no_log", Privacy},
	{"zero_retention", Privacy},
	{"tee_attested", TEE},
	{"response_schema", StructuredOutputs},
	{"structured_output", StructuredOutputs},
	{"tools", ToolUse},
	{"function_calling", ToolUse},
	{"predicted_output", PredictedOutputs},
	{"compaction_api", Compaction},
	{"extended_thinking", AdaptiveThinking},
	{"batch", BatchAPI},
	{"thinking", Reasoning},
	{"caching", PromptCaching},
}

// String returns the feature's wire name.
func (f Feature) String() string {
	if f < numFeatures {
		return featureNames[f]
	}
	return "unknown"
}

// ParseFeature returns the feature a wire name (or alias) names. Matching
// ignores ASCII case and treats '-' like '_'.
func ParseFeature(name string) (Feature, bool) {
	for f := Feature(0); f < numFeatures; f++ {
		if nameEq(featureNames[f], name) {
			return f, true
		}
	}
	for _, a := range featureAliases {
		if nameEq(a.name, name) {
			return a.f, true
		}
	}
	return 0, false
}

// nameEq compares a canonical lower-case snake name with user input without
// allocating.
func nameEq(canon, s string) bool {
	if len(canon) != len(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		} else if c == '-' {
			c = '_'
		}
		if c != canon[i] {
			return false
		}
	}
	return true
}

// FeatureSet is a set of features.
type FeatureSet uint64

// Features returns the set holding fs.
func Features(fs ...Feature) FeatureSet {
	var s FeatureSet
	for _, f := range fs {
		s |= 1 << f
	}
	return s
}

// Has reports whether f is in s.
func (s FeatureSet) Has(f Feature) bool { return s&(1<<f) != 0 }

// HasAll reports whether every feature of t is in s.
func (s FeatureSet) HasAll(t FeatureSet) bool { return s&t == t }

// With returns s with f added.
func (s FeatureSet) With(f Feature) FeatureSet { return s | 1<<f }

// Len returns the number of features in s.
func (s FeatureSet) Len() int { return bits.OnesCount64(uint64(s)) }

// Each calls fn for every feature of s in constant order.
func (s FeatureSet) Each(fn func(Feature)) {
	for s != 0 {
		f := Feature(bits.TrailingZeros64(uint64(s)))
		fn(f)
		s &^= 1 << f
	}
}

// AppendNames appends the wire names of s, in constant order, to dst.
func (s FeatureSet) AppendNames(dst []string) []string {
	for s != 0 {
		f := Feature(bits.TrailingZeros64(uint64(s)))
		dst = append(dst, f.String())
		s &^= 1 << f
	}
	return dst
}

// String returns the wire names of s joined by commas.
func (s FeatureSet) String() string {
	var b strings.Builder
	s.Each(func(f Feature) {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f.String())
	})
	return b.String()
}

// ErrUnknownFeature is returned (wrapped) for a feature name no constant or
// alias matches.
var ErrUnknownFeature = errors.New("unknown feature")

// ParseFeatures parses wire names into a set. Unknown names are returned in
// unknown (the caller decides whether that is an error: an unknown required
// feature can never be satisfied, an unknown preference is merely reported).
func ParseFeatures(names []string) (s FeatureSet, unknown []string) {
	for _, n := range names {
		if f, ok := ParseFeature(n); ok {
			s |= 1 << f
		} else {
			unknown = append(unknown, n)
		}
	}
	return s, unknown
}

// MarshalJSON encodes s as an array of wire names.
func (s FeatureSet) MarshalJSON() ([]byte, error) {
	b := []byte{'['}
	first := true
	s.Each(func(f Feature) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, f.String()...)
		b = append(b, '"')
	})
	return append(b, ']'), nil
}

// UnmarshalJSON decodes an array of wire names (or null). It is written by
// hand so that catalogs decode inside plugins without reflection-heavy
// encoding/json paths; names never contain escapes.
func (s *FeatureSet) UnmarshalJSON(b []byte) error {
	*s = 0
	i := skipSpace(b, 0)
	if i+4 <= len(b) && string(b[i:i+4]) == "null" {
		return nil
	}
	if i >= len(b) || b[i] != '[' {
		return errors.New("routing: features: want a JSON array of names")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errors.New("routing: features: want a string")
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				return errors.New("routing: features: escapes are not allowed in feature names")
			}
			j++
		}
		if j >= len(b) {
			return errors.New("routing: features: unterminated string")
		}
		name := string(b[i+1 : j])
		f, ok := ParseFeature(name)
		if !ok {
			return &NameError{Kind: "feature", Name: name, Err: ErrUnknownFeature}
		}
		*s |= 1 << f
		i = skipSpace(b, j+1)
		if i < len(b) && b[i] == ']' {
			return nil
		}
		if i >= len(b) || b[i] != ',' {
			return errors.New("routing: features: want ',' or ']'")
		}
		i = skipSpace(b, i+1)
	}
}

// UnmarshalTOML decodes a TOML array of names (the interface of
// github.com/BurntSushi/toml, satisfied without importing it).
func (s *FeatureSet) UnmarshalTOML(v any) error {
	list, ok := v.([]any)
	if !ok {
		return errors.New("routing: features: want an array of names")
	}
	*s = 0
	for _, e := range list {
		name, ok := e.(string)
		if !ok {
			return errors.New("routing: features: want an array of names")
		}
		f, ok := ParseFeature(name)
		if !ok {
			return &NameError{Kind: "feature", Name: name, Err: ErrUnknownFeature}
		}
		*s |= 1 << f
	}
	return nil
}

// NameError reports a name that does not parse (a feature, quality level,
// security class, ...).
type NameError struct {
	Kind string // "feature", "quality", ...
	Name string
	Err  error
}

func (e *NameError) Error() string {
	return "routing: " + e.Kind + " " + strconv.Quote(e.Name) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *NameError) Unwrap() error { return e.Err }

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}
