package catalog

import (
	"github.com/bardoinference/bardo/sdk/routing"
)

// Origin says where a catalog entry came from.
type Origin string

// Origins.
const (
	OriginStatic  Origin = "static"  // config only
	OriginDynamic Origin = "dynamic" // the backend's /models only
	OriginMerged  Origin = "merged"  // both; config fields win
)

// Fields is a set of Model fields, recording which ones a source gave.
// Merging uses it: a static entry overrides exactly the fields it set.
type Fields uint16

// Model fields.
const (
	FieldName Fields = 1 << iota
	FieldContextWindow
	FieldMaxOutput
	FieldInputPrice
	FieldOutputPrice
	FieldCacheReadPrice
	FieldCacheWritePrice
	FieldFeatures
	FieldQuality
)

// Model is one catalog entry: a model a provider (backend) serves.
type Model struct {
	ID       string `json:"id"`       // as the backend names it in requests
	Provider string `json:"provider"` // the [[provider]] name
	Name     string `json:"name,omitempty"`
	// ContextWindow and MaxOutput are in tokens; 0 when unknown.
	ContextWindow int64 `json:"context_window,omitempty"`
	MaxOutput     int64 `json:"max_output,omitempty"`
	// Prices in USD per million tokens.
	Input      Price `json:"input_price"`
	Output     Price `json:"output_price"`
	CacheRead  Price `json:"cache_read_price"`
	CacheWrite Price `json:"cache_write_price"`
	// Features are the resolver's own feature bits (routing.FeatureSet:
	// JSON as an array of wire names); see the README for how each source
	// fills them.
	Features routing.FeatureSet `json:"features"`
	// Quality is the model's quality level (routing.Quality, "minimum" …
	// "maximum"); zero is unrated. Only static config sets it: no backend's
	// /models says it.
	Quality routing.Quality `json:"quality,omitempty"`
	Origin  Origin          `json:"origin"`
	// Set records the fields its source gave.
	Set Fields `json:"-"`
}

// Has reports whether the model has every feature in want.
func (m *Model) Has(want routing.FeatureSet) bool { return m.Features.HasAll(want) }

// longContext is the context window from which a model has
// routing.LongContext ("a context window of 200k tokens or more").
const longContext = 200_000

// Info returns the resolver's view of the model (routing.ModelInfo): its
// id, quality, features, context window and prices in USD per million
// tokens.
//
// routing.ModelInfo has no "unknown price": an unknown Price (whose
// Float64 is NaN, which would poison the resolver's scoring and its JSON)
// becomes 0, the resolver's own reading of a price nobody gave. A context
// window of 200k tokens or more adds routing.LongContext, the feature's
// definition, so intents preferring long context find such models without
// every catalog declaring it. Family and LatencyMs are left to the caller
// (the catalog knows neither).
func (m *Model) Info() routing.ModelInfo {
	fs := m.Features
	if m.ContextWindow >= longContext {
		fs = fs.With(routing.LongContext)
	}
	return routing.ModelInfo{
		ID:            m.ID,
		Quality:       m.Quality,
		Features:      fs,
		ContextWindow: m.ContextWindow,
		MaxOutput:     m.MaxOutput,
		InputPrice:    usdPerMtok(m.Input),
		OutputPrice:   usdPerMtok(m.Output),
	}
}

// usdPerMtok is p in USD per million tokens, 0 when unknown.
func usdPerMtok(p Price) float64 {
	if !p.Known() {
		return 0
	}
	return p.Float64()
}

// overlay returns base with every field that over set replaced by over's.
func overlay(base, over Model) Model {
	out := base
	s := over.Set
	if s&FieldName != 0 {
		out.Name = over.Name
	}
	if s&FieldContextWindow != 0 {
		out.ContextWindow = over.ContextWindow
	}
	if s&FieldMaxOutput != 0 {
		out.MaxOutput = over.MaxOutput
	}
	if s&FieldInputPrice != 0 {
		out.Input = over.Input
	}
	if s&FieldOutputPrice != 0 {
		out.Output = over.Output
	}
	if s&FieldCacheReadPrice != 0 {
		out.CacheRead = over.CacheRead
	}
	if s&FieldCacheWritePrice != 0 {
		out.CacheWrite = over.CacheWrite
	}
	if s&FieldFeatures != 0 {
		out.Features = over.Features
	}
	if s&FieldQuality != 0 {
		out.Quality = over.Quality
	}
	out.Set = base.Set | over.Set
	return out
}
