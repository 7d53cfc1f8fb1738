// Package routing resolves intents to a provider and model: a caller says
// what it needs ("risk assessment, maximum quality, interleaved thinking"),
// not which model, and the resolver picks one from the providers'
// self-descriptions, in the operator's order, reporting every compromise.
//
// The package is pure data and pure functions over the standard library, so
// the same code runs natively in the host and inside provider plugins
// compiled to wasip1. The hot path (Resolve, StandardResolve) allocates
// nothing unless something was degraded.
//
// The pieces:
//
//   - Intent, the request's needs; Subsystems, the spec's twelve subsystem
//     intents as a table; ApplyMortality, the vitality-driven pressure.
//   - ProviderDescription, what a provider plugin's describe() returns:
//     traits, models (features, quality, prices, latency) or a catalog URL,
//     and a declarative Policy.
//   - StandardResolve, one provider's resolve(intent); Resolve, the
//     two-pass, first-match walk over the providers.
//   - InferenceProfile and Profiles, the per-subsystem parameter tables;
//     MapProfile, one provider style's parameters plus degraded notes.
//
// See README.md for the sources of an intent, the algorithm and the numbers.
package routing
