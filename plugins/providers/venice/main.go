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
//     confirm that nothing was retained is refused (fail closed);
//   - TEE models (tee-* / *-tee): an attestation receipt on the response is
//     verified (debug enclave, age, signature, nonce, model, response hash)
//     before the answer goes anywhere;
//   - E2EE models (e2ee-* / *-e2ee): tools and web search are refused before
//     anything is sent.
//
// The request body is built here (BodyRaw) with the host's OpenAI encoder,
// because the host's native encoding has no way to add venice_parameters; and
// successful non-streamed responses come back to Decode (no ResponseDialect),
// because that is the only place an adapter sees the response headers. See
// README.md for the formats and for what the host would need to change.
package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/bardoinference/bardo/host/dialect/openai"
	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// config is the provider's [provider.config] table.
type config struct {
	// Path is appended to the provider's base_url.
	Path string `json:"path"`
	// Headers are added to every upstream request.
	Headers map[string]string `json:"headers"`

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
	// UnverifiedStreams lets streamed requests to non-attested models
	// through even though their headers cannot be checked (default false:
	// such streams are refused).
	UnverifiedStreams bool `json:"unverified_streams"`

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
	headerKeys     []string // sorted keys of Headers
	keys           []ed25519.PublicKey
	requireHeaders bool
	keep           map[string]bool
}

var cfg settings

// defaultKeepThinking are the subsystems whose visible reasoning is the
// point (spec: "strip_thinking_response: false for dream, death, and
// daimon_complex").
var defaultKeepThinking = []string{"dream", "death", "daimon_complex"}

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:    "venice",
		Version: "1.0.0",
		// The adapter writes the body itself, so it needs every part.
		Reads:  wire.PartAll,
		Init:   initConfig,
		Encode: encode,
		Decode: decode,
	})
}

func initConfig() error {
	var c config
	c.Path = "/chat/completions"
	if err := plugin.DecodeConfig(&c); err != nil {
		return err
	}
	s := settings{config: c, requireHeaders: true, keep: map[string]bool{}}
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
	for k := range c.Headers {
		s.headerKeys = append(s.headerKeys, k)
	}
	slices.Sort(s.headerKeys)
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
	base := strings.TrimRight(in.Route.BaseURL, "/")
	if base == "" {
		res.Error = &wire.Error{Status: 500, Kind: wire.ErrInternal, Message: "provider " + in.Route.Provider + " has no base_url configured"}
		return nil
	}
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
	extra, err := upstreamExtra(in, vp)
	if err != nil {
		res.Error = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "the request cannot be expressed for provider " + in.Route.Provider + ": " + err.Error()}
		return nil
	}
	req := in.Request
	req.Model = model
	req.Extra = extra
	body, err := openai.EncodeRequestWith(&req, openai.EncodeOptions{StreamUsage: req.Stream})
	if err != nil {
		res.Error = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "the request cannot be expressed for provider " + in.Route.Provider + ": " + err.Error()}
		return nil
	}

	headers := []wire.KV{
		{Key: "Content-Type", Value: "application/json"},
		{Key: "Authorization", Value: "Bearer ${credential}"},
	}
	for _, k := range cfg.headerKeys {
		headers = append(headers, wire.KV{Key: k, Value: cfg.Headers[k]})
	}
	if req.Stream {
		headers = append(headers, wire.KV{Key: "Accept", Value: "text/event-stream"})
	}
	if t != tierPrivate {
		if in.Meta.RequestID == "" {
			res.Error = &wire.Error{Status: 500, Kind: wire.ErrInternal,
				Message: "provider " + in.Route.Provider + ": no request id to bind the attestation nonce to"}
			return nil
		}
		headers = append(headers,
			wire.KV{Key: headerAttestation, Value: "required"},
			wire.KV{Key: headerAttestationNonce, Value: attestationNonce(in.Meta.RequestID)})
	}
	call := &wire.UpstreamCall{
		Method:   "POST",
		URL:      base + cfg.Path,
		Headers:  headers,
		BodyMode: wire.BodyRaw,
		Body:     body,
		Stream:   req.Stream,
	}
	if req.Stream {
		// Only private models get here, with the header check off or
		// waived for streams (streamCheck): nothing of the stream is
		// checked, so the host may as well decode it natively.
		call.ResponseDialect = wire.DialectOpenAI
	}
	res.Call = call
	return nil
}

// streamCheck refuses streams whose privacy could not be verified. An
// adapter's DecodeStream sees SSE events but not the response headers, so
// neither the no-log headers nor an attestation receipt (which covers the
// whole body, and must be checked before any of it is passed on) can be
// verified on a stream.
func streamCheck(in *wire.EncodeInput, model string, t tier) *wire.Error {
	if !in.Request.Stream {
		return nil
	}
	if t != tierPrivate {
		return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "model " + model + " is attested: its receipt covers the whole response and is verified before any of it is passed on, so it cannot be streamed through provider " +
				in.Route.Provider + "; send the request without stream"}
	}
	if cfg.requireHeaders && !cfg.UnverifiedStreams {
		return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "provider " + in.Route.Provider + " cannot stream: the no-log confirmation in Venice's response headers cannot be verified on a stream (fail closed); send the request without stream"}
	}
	return nil
}

func decode(in *wire.DecodeInput, res *wire.DecodeResult) error {
	if in.Status/100 != 2 {
		res.Error = adapter.ErrorFromResponse(in.Route.Provider, in.Status, in.Headers, in.Body)
		return nil
	}
	if cfg.requireHeaders {
		if why := privacyProblem(in.Headers); why != "" {
			plugin.CounterAdd("venice_retention_refused", 1)
			res.Error = refusal(in.Route.Provider, "the response does not confirm no retention ("+why+")")
			return nil
		}
	}
	if tierOf(in.Route.Model) != tierPrivate {
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
			res.Error = refusal(in.Route.Provider, "the attestation receipt was refused: "+err.Error())
			return nil
		}
		plugin.CounterAdd("venice_attestation_verified", 1)
	}
	r, err := openai.DecodeResponse(in.Body)
	if err != nil {
		res.Error = &wire.Error{Status: 502, Kind: wire.ErrUpstream,
			Message: "upstream " + in.Route.Provider + " returned a response that is not valid OpenAI JSON: " + err.Error()}
		return nil
	}
	res.Response = r
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
