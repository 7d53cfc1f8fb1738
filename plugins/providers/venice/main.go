// Command venice is the provider adapter for Venice (api.venice.ai), the
// gateway's private-cognition backend.
//
// Venice speaks OpenAI Chat Completions plus a venice_parameters object, and
// this adapter adds the privacy checks the spec puts between Venice and the
// caller:
//
//   - venice_parameters per request: no Venice system prompt by default, a
//     character slug per role, web search off unless asked, and
//     strip_thinking_response set from the routed subsystem (thinking is kept
//     only for dream, death and daimon_complex);
//   - prompt_cache_key from the caller's session;
//   - no-log enforcement: a response whose privacy/retention headers do not
//     confirm that nothing was retained is refused (fail closed), streams
//     included (by their headers, before their first byte is relayed);
//   - TEE models (tee-* / *-tee): an attestation receipt on the response is
//     verified (debug enclave, age, signature, nonce, model, response hash)
//     before the answer goes anywhere;
//   - E2EE models (e2ee-* / *-e2ee): tools and web search are refused before
//     anything is sent.
//
// The heavy work is the host's (ABI v1.3): it encodes the standard OpenAI
// body natively and sets this adapter's members on it (BodyMerge), and it
// hands every successful response to Decode for a verdict before decoding it
// natively (VerifySuccess). So the adapter links only the SDK, never host
// code. See README.md for the formats.
package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// config is the provider's [provider.config] table.
type config struct {
	// The OpenAI-compatible call: path, auth header and scheme, extra
	// headers (sdk/adapter/openaicompat; Authorization: Bearer by default).
	openaicompat.Config

	// IncludeVeniceSystemPrompt is sent as
	// venice_parameters.include_venice_system_prompt unless the caller set
	// it. Venice's own default is true; the spec's is false.
	IncludeVeniceSystemPrompt bool `json:"include_venice_system_prompt"`
	// Characters maps a role (the caller's X-Bardo-Role header, else the
	// routed subsystem) to a Venice character slug.
	Characters map[string]string `json:"characters"`
	// DefaultCharacter is the slug for roles Characters does not name ("":
	// none, Venice's default framing).
	DefaultCharacter string `json:"default_character"`
	// KeepThinking lists the subsystems whose <think> blocks are kept
	// (strip_thinking_response false); every other routed subsystem strips
	// them. nil: the spec's dream, death, daimon_complex.
	KeepThinking []string `json:"keep_thinking"`

	// RequirePrivacyHeaders refuses responses whose privacy headers do not
	// confirm no retention (default true). See README: Venice's public API
	// does not document these headers.
	RequirePrivacyHeaders *bool `json:"require_privacy_headers"`
	// PrivacyLevels are the accepted X-Venice-Privacy-Level values
	// (default ["private"]).
	PrivacyLevels []string `json:"privacy_levels"`
	// (unverified_streams, which let unchecked streams through before the
	// host could show an adapter a stream's headers, is no longer read:
	// every stream is checked now. The config decoder ignores the key.)

	// AttestationKeys are the trusted receipt signing keys: base64 (or hex)
	// Ed25519 public keys. With none, every TEE/E2EE response is refused.
	AttestationKeys []string `json:"attestation_keys"`
	// EnclaveMeasurements, when set, is the allow-list of
	// enclave_measurement values a receipt may carry.
	EnclaveMeasurements []string `json:"enclave_measurements"`
	// AllowE2EEPlaintext sends requests for E2EE models although this
	// adapter does not encrypt them (they are then TEE-attested, not
	// end-to-end encrypted). Default false: refused.
	AllowE2EEPlaintext bool `json:"allow_e2ee_plaintext"`
}

// settings is the config resolved once per instance.
type settings struct {
	config
	endpoint       openaicompat.Endpoint
	keys           []ed25519.PublicKey
	requireHeaders bool
	keep           map[string]bool
}

var cfg settings

// readParts are the request parts the host encodes for encode.
const readParts = wire.PartMessages | wire.PartTools | wire.PartParams | wire.PartExtra

// defaultKeepThinking are the subsystems whose visible reasoning is the
// point (spec: "strip_thinking_response: false for dream, death, and
// daimon_complex").
var defaultKeepThinking = []string{"dream", "death", "daimon_complex"}

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:    "venice",
		Version: "1.0.0",
		// What encode reads: Extra (the caller's venice_parameters and
		// prompt_cache_key, web_search_options), Params (top_k), and
		// Tools and Messages for the E2EE check. Not Model (the route
		// names it) nor System, which the host encodes without us.
		Reads:  readParts,
		Init:   initConfig,
		Encode: encode,
		Decode: decode,
		// The SDK exports bardo_provider_describe from every plugin and
		// the host refuses to load a provider whose describe fails, so the
		// adapter must answer. An empty description is what a provider
		// without one had: pipeline.toml alone describes it (its traits,
		// catalog and params style are the operator's statement).
		Describe: describe,
	})
}

// describe: Venice is the private backend. Every model keeps no logs (the
// shared privacy feature, and the private trait that lets private-class
// intents through); it is a specialist — it takes only intents that want
// privacy, TEE or E2EE, or whose caller holds DIEM (then the call is free)
// — and its reasoning effort goes up to "max". Its model list is fetched
// from GET /models?type=text (text models only).
func describe() (routing.ProviderDescription, error) {
	return routing.ProviderDescription{
		Traits:     routing.Traits{Private: true, Payment: routing.PaymentAPIKey},
		Features:   routing.Features(routing.Privacy),
		Params:     routing.StyleVenice,
		CatalogURL: "/models?type=text",
		Policy: routing.Policy{
			Serves:     routing.Features(routing.Privacy, routing.TEE, routing.E2EE),
			DiemFunded: true,
		},
	}, nil
}

func initConfig() error {
	// The privacy checks run in the host's VerifySuccess call (ABI v1.3); a
	// host without it would relay answers unchecked. Asking for the minor
	// version imports abi_minor, which such a host lacks: it refuses to
	// load this plugin instead.
	if m := plugin.HostABIMinor(); m < 3 {
		return fmt.Errorf("venice needs a host with ABI v1.3 (response verification), this one has v1.%d", m)
	}
	c := config{Config: openaicompat.Defaults()}
	if err := plugin.DecodeConfig(&c); err != nil {
		return err
	}
	ep, err := c.Config.Endpoint()
	if err != nil {
		return fmt.Errorf("venice: %w", err)
	}
	s := settings{config: c, endpoint: ep, requireHeaders: true, keep: map[string]bool{}}
	if c.RequirePrivacyHeaders != nil {
		s.requireHeaders = *c.RequirePrivacyHeaders
	}
	if len(s.PrivacyLevels) == 0 {
		s.PrivacyLevels = []string{"private"}
	}
	keep := c.KeepThinking
	if keep == nil {
		keep = defaultKeepThinking
	}
	for _, k := range keep {
		s.keep[k] = true
	}
	for i, k := range c.AttestationKeys {
		pk, err := parseKey(k)
		if err != nil {
			return fmt.Errorf("venice: attestation_keys[%d]: %w", i, err)
		}
		s.keys = append(s.keys, pk)
	}
	cfg = s
	return nil
}

// parseKey reads an Ed25519 public key written as base64 (standard or URL
// alphabet, padded or not) or hex.
func parseKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	for _, dec := range []func(string) ([]byte, error){
		hex.DecodeString,
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if b, err := dec(s); err == nil && len(b) == ed25519.PublicKeySize {
			return ed25519.PublicKey(b), nil
		}
	}
	return nil, fmt.Errorf("not a %d-byte Ed25519 public key in base64 or hex", ed25519.PublicKeySize)
}

// Response and request headers of the privacy protocol (spec, "VeniceClient";
// see README for which of them Venice documents).
const (
	headerPrivacyLevel       = "X-Venice-Privacy-Level"
	headerRetentionPolicy    = "X-Venice-Retention-Policy"
	headerAttestation        = "X-Venice-Attestation"
	headerAttestationNonce   = "X-Venice-Attestation-Nonce"
	headerAttestationReceipt = "X-Venice-Attestation-Receipt"
)

func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	model := in.Route.Model
	t := tierOf(model)
	vp, werr := veniceParams(in)
	if werr != nil {
		res.Error = werr
		return nil
	}
	if t == tierE2EE {
		if werr := e2eeCheck(in, model, vp); werr != nil {
			plugin.CounterAdd("venice_e2ee_refused", 1)
			res.Error = werr
			return nil
		}
	}
	if werr := streamCheck(in, model, t); werr != nil {
		res.Error = werr
		return nil
	}
	merge, err := bodyMerge(in, vp)
	if err != nil {
		res.Error = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "the request cannot be expressed for provider " + in.Route.Provider + ": " + err.Error()}
		return nil
	}

	// The host encodes the standard body (or forwards the caller's own
	// bytes when nothing changed) and sets our members on it.
	call, werr := cfg.endpoint.Call(in, merge)
	if werr != nil {
		res.Error = werr
		return nil
	}
	if t != tierPrivate {
		if in.Meta.RequestID == "" {
			res.Error = &wire.Error{Status: 500, Kind: wire.ErrInternal,
				Message: "provider " + in.Route.Provider + ": no request id to bind the attestation nonce to"}
			return nil
		}
		call.Headers = append(call.Headers,
			wire.KV{Key: headerAttestation, Value: "required"},
			wire.KV{Key: headerAttestationNonce, Value: attestationNonce(in.Meta.RequestID)})
	}
	// Every successful answer comes to decode for a verdict first,
	// whenever there is something to check: the no-log headers (a
	// stream's included, before its first byte is relayed) and an
	// attested model's receipt. With the header check off, a private
	// model's answer has nothing to verify, and skipping the call saves a
	// trip into the plugin.
	call.VerifySuccess = cfg.requireHeaders || t != tierPrivate
	res.Call = call
	return nil
}

// streamCheck refuses streams of attested models: a receipt covers the whole
// body, whose hash can only be checked once all of it has arrived, and the
// spec's rule is that nothing of an attested answer reaches the caller before
// its receipt verified (fail closed). Relaying a stream and checking it at
// the end would hand the caller an unverified answer. Private models stream:
// their no-log headers are verified before the first byte (decode).
func streamCheck(in *wire.EncodeInput, model string, t tier) *wire.Error {
	if !in.Request.Stream || t == tierPrivate {
		return nil
	}
	return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
		Message: "model " + model + " is attested: its receipt covers the whole response and is verified before any of it is passed on, so it cannot be streamed through provider " +
			in.Route.Provider + "; send the request without stream"}
}

// decode maps failures and, for a successful answer (the host calls it with
// one because the call set VerifySuccess), gives the verdict: an Error refuses
// the answer, neither a Response nor an Error accepts it and the host decodes
// it natively. A stream arrives with its headers and no body.
func decode(in *wire.DecodeInput, res *wire.DecodeResult) error {
	if in.Status/100 != 2 {
		res.Error = adapter.ErrorFromResponse(in.Route.Provider, in.Status, in.Headers, in.Body)
		return nil
	}
	res.Error = verify(in)
	return nil
}

// verify checks a successful answer's privacy: the no-log headers, then an
// attested model's receipt. nil accepts it.
func verify(in *wire.DecodeInput) *wire.Error {
	if cfg.requireHeaders {
		if why := privacyProblem(in.Headers); why != "" {
			plugin.CounterAdd("venice_retention_refused", 1)
			return refusal(in.Route.Provider, "the response does not confirm no retention ("+why+")")
		}
	}
	if tierOf(in.Route.Model) == tierPrivate {
		return nil
	}
	if in.Meta.Stream || len(in.Body) == 0 {
		// encode never sends an attested stream; should one get here
		// anyway, there is no body to check the receipt against.
		plugin.CounterAdd("venice_attestation_refused", 1)
		return refusal(in.Route.Provider, "the attestation receipt cannot be verified without the whole response body (an attested model's answer cannot be streamed)")
	}
	r := receiptCheck{
		header:    headerValues(in.Headers, headerAttestationReceipt),
		body:      in.Body,
		model:     in.Route.Model,
		nonce:     attestationNonce(in.Meta.RequestID),
		now:       plugin.Now(),
		keys:      cfg.keys,
		enclaves:  cfg.EnclaveMeasurements,
		bodyHash:  plugin.SHA256,
		maxAgeSec: receiptMaxAgeSec,
	}
	if err := r.verify(); err != nil {
		plugin.CounterAdd("venice_attestation_refused", 1)
		return refusal(in.Route.Provider, "the attestation receipt was refused: "+err.Error())
	}
	plugin.CounterAdd("venice_attestation_verified", 1)
	return nil
}

// refusal is the error a caller gets for an answer the adapter discarded.
// It is not retryable: asking Venice again would disclose the prompt again
// to a response path that just failed to prove its privacy.
func refusal(provider, why string) *wire.Error {
	return &wire.Error{Status: 502, Kind: wire.ErrUpstream,
		Message: "upstream " + provider + ": " + why + "; the answer was discarded (fail closed)"}
}

// privacyProblem says why headers do not confirm a no-log response, or ""
// when they do. Every occurrence of each header must agree: a repeated
// header with one contradicting value is a contradiction, not a vote.
func privacyProblem(hs []wire.KV) string {
	levels := headerValues(hs, headerPrivacyLevel)
	retention := headerValues(hs, headerRetentionPolicy)
	switch {
	case len(levels) == 0:
		return headerPrivacyLevel + " missing"
	case len(retention) == 0:
		return headerRetentionPolicy + " missing"
	}
	for _, v := range levels {
		if !containsFold(cfg.PrivacyLevels, v) {
			return headerPrivacyLevel + " is " + quote(v)
		}
	}
	for _, v := range retention {
		if !strings.EqualFold(strings.TrimSpace(v), "none") {
			return headerRetentionPolicy + " is " + quote(v)
		}
	}
	return ""
}

func containsFold(list []string, v string) bool {
	v = strings.TrimSpace(v)
	for _, l := range list {
		if strings.EqualFold(l, v) {
			return true
		}
	}
	return false
}

// quote bounds and quotes an upstream value for an error message.
func quote(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// headerValues returns every value of the header name (case-insensitive).
func headerValues(hs []wire.KV, name string) []string {
	var out []string
	for _, h := range hs {
		if strings.EqualFold(h.Key, name) {
			out = append(out, h.Value)
		}
	}
	return out
}

func main() {}
