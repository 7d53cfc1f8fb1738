package routing

// Intent says what a call needs, not which model serves it. It is plain data:
// the host builds it (from the request's model, X-Bardo-Subsystem, the body's
// `bardo` object, or a task type inferred for plain clients), applies
// mortality pressure, and hands it to Resolve.
type Intent struct {
	// Subsystem names the caller's subsystem ("risk", "dream", ...) or an
	// inferred task ("task:code"); provider policies may key on it.
	Subsystem string `json:"subsystem,omitempty"`
	// Model is an explicitly requested model, "" for "best available". It
	// may carry a provider prefix ("blockrun/claude-opus-4-6") to pin the
	// provider; a vendor prefix ("anthropic/claude-opus-4-6") matches either
	// form of the id. An explicit model is never swapped for another:
	// quality, latency and cost do not apply, required features are checked
	// in pass 1 and reported as degraded in pass 2, and the first provider
	// in order that has it (and whose policy takes the intent) serves it.
	Model string `json:"model,omitempty"`
	// Require are hard requirements: a model must have all of them (pass 1).
	Require FeatureSet `json:"require,omitempty"`
	// Prefer are soft preferences: missing ones are reported as degraded.
	Prefer FeatureSet `json:"prefer,omitempty"`
	// Quality is the floor of acceptable model quality (QualityUnset: none).
	Quality Quality `json:"quality,omitempty"`
	// MaxLatencyMs is the latency budget compared with a model's typical
	// latency; 0 means unlimited.
	MaxLatencyMs int64 `json:"max_latency_ms,omitempty"`
	// CostSensitivity runs from 0 (cost does not matter) to 1 (cheapest wins).
	CostSensitivity float64 `json:"cost_sensitivity,omitempty"`
	// Security restricts the providers; above Standard it fails closed.
	Security SecurityClass `json:"security,omitempty"`
	// DiemAvailable says the caller holds Venice DIEM credit, which makes
	// DIEM-paid providers free for this call (and lets a provider whose
	// policy says so accept the intent for that reason alone).
	DiemAvailable bool `json:"diem_available,omitempty"`
	// InputTokens and OutputTokens estimate the call's size for the cost
	// estimate and the cost score; 0 takes DefaultInputTokens and
	// DefaultOutputTokens.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// Relaxed is set by Resolve on the intent it hands providers in pass 2:
	// the requirements are moved to Prefer (and remembered in Dropped) and
	// the latency budget is doubled. A provider may then accept a model one
	// quality level below Quality, or one lacking a dropped requirement; it
	// should prefer, in this order, models with every dropped requirement,
	// then models at the quality floor (StandardResolve does).
	Relaxed bool `json:"relaxed,omitempty"`
	// Wallet is the agent's economics, for self-funding providers.
	Wallet  Wallet     `json:"wallet"`
	Dropped FeatureSet `json:"dropped,omitempty"`
}

// Default call size for cost estimates when an intent gives none: a typical
// agent call with a cached system prompt and a short answer.
const (
	DefaultInputTokens  = 2000
	DefaultOutputTokens = 500
)

// Wants returns every feature the intent asks for, hard or soft.
func (in *Intent) Wants() FeatureSet { return in.Require | in.Prefer }

// Traits are what a provider is, independent of its models (spec:
// ProviderTraits).
type Traits struct {
	Private            bool        `json:"private" toml:"private"`                         // inference logs are not retained
	SelfFunding        bool        `json:"self_funding" toml:"self_funding"`               // paid from the agent's revenue
	ContextEngineering bool        `json:"context_engineering" toml:"context_engineering"` // the pipeline's layers apply
	Payment            PaymentMode `json:"payment" toml:"payment"`
}

// ModelInfo is one catalog entry.
type ModelInfo struct {
	ID            string     `json:"id" toml:"id"`
	Family        string     `json:"family,omitempty" toml:"family"` // vendor family: "anthropic", "openai", "google", "deepseek", ...
	Quality       Quality    `json:"quality,omitempty" toml:"quality"`
	Features      FeatureSet `json:"features,omitempty" toml:"features"`
	ContextWindow int64      `json:"context_window,omitempty" toml:"context_window"` // tokens
	MaxOutput     int64      `json:"max_output,omitempty" toml:"max_output"`         // most tokens one answer may have, thinking included; 0 unknown
	InputPrice    float64    `json:"input_price,omitempty" toml:"input_price"`       // USD per million input tokens
	OutputPrice   float64    `json:"output_price,omitempty" toml:"output_price"`     // USD per million output tokens
	// LatencyMs is the model's typical (p50) latency until the answer
	// starts, reasoning included: what an intent's MaxLatencyMs is compared
	// with. 0 means unknown (it passes every budget, and scores as half of
	// it).
	LatencyMs int64 `json:"latency_ms,omitempty" toml:"latency_ms"`
}

// Level returns the model's quality, Medium when the catalog gives none (a
// fetched catalog rarely rates its models; Medium neither excludes them
// from ordinary work nor promotes them to the critical subsystems).
func (m *ModelInfo) Level() Quality {
	if m.Quality == QualityUnset {
		return Medium
	}
	return m.Quality
}

// Policy narrows which intents a provider takes, declaratively, so that the
// host can run a plugin's resolve natively on its description without a call
// into WASM. A provider whose rules cannot be said this way sets Custom and
// answers resolve() itself.
type Policy struct {
	// Serves, when not empty, makes the provider a specialist: it only takes
	// intents that want (require or prefer) one of these features, and only
	// with models that have one of the wanted ones. Venice: privacy, tee,
	// e2ee. Direct keys: predicted_outputs, batch_api, explicit_caching,
	// responses_api, direct_passthrough. The gate holds for explicit models
	// too (a general request for "deepseek-r1" goes to the general
	// provider that has it) unless the model is pinned to the provider.
	Serves FeatureSet `json:"serves,omitempty" toml:"serves"`
	// DiemFunded also lets a Serves-specialist take any intent whose caller
	// has DIEM credit (Venice: "privacy required or DIEM available").
	DiemFunded bool `json:"diem_funded,omitempty" toml:"diem_funded"`
	// Subsystems, when not empty, limits the provider to intents of these
	// subsystems (Bankr: the subsystems that run on self-funding economics),
	// pinned models excepted.
	Subsystems []string `json:"subsystems,omitempty" toml:"subsystems"`
	// CheapestOnly picks the cheapest eligible model instead of scoring
	// cost against features and latency (spec: OpenRouter, whose 400-model
	// catalog is too large for reliable fine-grained feature matching).
	CheapestOnly bool `json:"cheapest_only,omitempty" toml:"cheapest_only"`
	// Custom says the provider answers resolve() itself (the host calls the
	// plugin); the description's Models still document its catalog.
	Custom bool `json:"custom,omitempty" toml:"custom"`
}

// ResolveFunc is one provider's resolve(intent) → resolution | none. The
// standard one is StandardResolve; a provider may wrap it (add a check,
// adjust the price) or replace it. It must fill Resolution.Provider, Model,
// Features, and should fill Quality and LatencyMs so that Resolve can report
// what was compromised.
type ResolveFunc func(p *ProviderDescription, in *Intent) (Resolution, bool)

// ProviderDescription is what a provider plugin says about itself
// (describe()): who it is, what it is, and its models or where to fetch
// them. The host keeps no capability matrix of its own.
type ProviderDescription struct {
	ID     string `json:"id" toml:"id"`
	Traits Traits `json:"traits" toml:"traits"`
	// Features are shared by every model (Venice: privacy).
	Features FeatureSet `json:"features,omitempty" toml:"features"`
	// Params says how the provider takes inference parameters.
	Params ParamStyle  `json:"params,omitempty" toml:"params"`
	Models []ModelInfo `json:"models,omitempty" toml:"models"`
	// CatalogURL is where the host fetches (and refreshes) the catalog when
	// the provider does not list its models statically.
	CatalogURL string `json:"catalog_url,omitempty" toml:"catalog_url"`
	// ModelPatterns are path.Match patterns of model ids the provider serves
	// when they are asked for explicitly but are not (yet) in Models, as in
	// pipeline.toml's `models = ["claude-*"]`. Their features are unknown.
	ModelPatterns []string `json:"model_patterns,omitempty" toml:"model_patterns"`
	Policy        Policy   `json:"policy" toml:"policy"`
	// Resolver replaces StandardResolve for this provider (nil: standard).
	// The host sets it to a call into the plugin when Policy.Custom is set.
	Resolver ResolveFunc `json:"-" toml:"-"`
}

// resolve runs the provider's resolver. A custom resolver gets its own
// copy of the intent: it cannot change what later providers see, and the
// walk's intent stays on the stack (a func value's argument escapes, so
// only the custom path pays an allocation).
func (p *ProviderDescription) resolve(in *Intent) (Resolution, bool) {
	if p.Resolver != nil {
		c := *in
		return p.Resolver(p, &c)
	}
	return StandardResolve(p, in)
}

// Resolution is the answer: which provider and model serve the intent, what
// it costs, and what was compromised.
type Resolution struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// EstimatedCostUSD is the model's price for the intent's call size (0
	// when DIEM pays). With Payment == PaymentAPIKey the owner's own bill
	// pays it, not Bardo's ledger (the host reports X-Bardo-Cost: direct).
	EstimatedCostUSD float64     `json:"estimated_cost_usd"`
	Payment          PaymentMode `json:"payment"`
	// Features are the model's features (the provider's included).
	Features FeatureSet `json:"features,omitempty"`
	// Quality and LatencyMs are the model's, for degradation reports.
	Quality   Quality `json:"quality,omitempty"`
	LatencyMs int64   `json:"latency_ms,omitempty"`
	// MaxOutput is the model's output limit (0 unknown): a profile's
	// thinking budget and max_tokens are fitted under it (Params.FitOutput).
	MaxOutput int64 `json:"max_output,omitempty"`
	// Style is the parameter style for MapProfile (StyleByFamily already
	// resolved for the model).
	Style ParamStyle `json:"style,omitempty"`
	// Missing are the wanted features (required or preferred) the model
	// lacks.
	Missing FeatureSet `json:"missing,omitempty"`
	// Degraded names every compromise for X-Bardo-Degraded and the
	// provider:resolved event: the Missing features by name, then
	// "quality:<wanted>><got>" and "max_latency_ms:<budget>><typical>" when
	// pass 2 had to relax them. Empty (nil) when nothing was compromised.
	Degraded []string `json:"degraded,omitempty"`
	// Pass is 1 when every requirement was met, 2 when requirements were
	// relaxed.
	Pass int `json:"pass,omitempty"`
}

// IsDegraded reports whether anything was compromised.
func (r *Resolution) IsDegraded() bool { return len(r.Degraded) > 0 }
