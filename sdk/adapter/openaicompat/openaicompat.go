// Package openaicompat is what every provider adapter for an upstream that
// speaks OpenAI Chat Completions shares: how the upstream is called (path,
// credential header, extra headers), the call itself — the host encodes the
// body natively and decodes successful answers and streams, the adapter may
// add provider-specific body members (UpstreamCall.BodyMerge) — and the
// mapping of failures to canonical errors (sdk/adapter).
//
// The openai-compatible, openrouter, blockrun and bankr plugins are this
// package plus what makes each upstream different (its description, its
// resolve rule, its body members). Standard library and SDK only: it builds
// for GOOS=wasip1.
package openaicompat

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Credential is the placeholder the host replaces with the provider's
// secret (or a direct provider's caller key) in header values: the secret
// never enters plugin memory.
const Credential = "${credential}"

// DefaultPath is OpenAI's chat completions path, relative to a base_url that
// ends in the API version (https://api.openai.com/v1).
const DefaultPath = "/chat/completions"

// Config is how an upstream is called: the [provider.config] keys every
// OpenAI-compatible adapter takes. Plugins embed it in their own config
// struct, so the keys sit at the top level of the table.
type Config struct {
	// Path is appended to the provider's base_url.
	Path string `json:"path"`
	// AuthHeader names the header that carries the credential; "" sends
	// none (an upstream paid otherwise, e.g. with x402).
	AuthHeader string `json:"auth_header"`
	// AuthScheme prefixes the credential ("Bearer"); "" sends it bare (as
	// an X-API-Key style header wants).
	AuthScheme string `json:"auth_scheme"`
	// Headers are added to every upstream request (e.g. OpenRouter's
	// HTTP-Referer and X-Title).
	Headers map[string]string `json:"headers"`
	// API is the upstream's dialect: "chat" (Chat Completions, the
	// default) or "responses" (the Responses API; Path then defaults to
	// ResponsesPath). A Responses caller's own bytes reach a "responses"
	// upstream untouched when nothing changed them.
	API string `json:"api"`
}

// ResponsesPath is the Responses API's path, relative to base_url.
const ResponsesPath = "/responses"

// Defaults is the configuration of an upstream that takes
// "Authorization: Bearer <credential>" on /chat/completions, as OpenAI does.
// Plugins decode their config over it, so an unset key keeps its default.
func Defaults() Config {
	return Config{Path: DefaultPath, AuthHeader: "Authorization", AuthScheme: "Bearer"}
}

// reserved are headers the adapter or the host sets, and the upstream
// client frames: an operator header of the same name would contradict them.
var reserved = []string{"content-type", "content-length", "accept", "host", "transfer-encoding", "connection"}

// Endpoint is a checked Config, prepared once per instance so that a call
// costs a copy of a few headers and a string concatenation.
type Endpoint struct {
	path    string
	dialect wire.Dialect // of the body and of successful answers
	// headers are Content-Type, the credential header and the operator's
	// headers sorted by name (a stable order: identical requests produce
	// identical upstream calls).
	headers []wire.KV
}

// Endpoint checks the configuration and prepares the calls. Errors name
// the config key, for pipeline.toml's author.
func (c Config) Endpoint() (Endpoint, error) {
	if c.Path != "" && (c.Path[0] != '/' || !printable(c.Path) || strings.ContainsAny(c.Path, " #")) {
		return Endpoint{}, fmt.Errorf("path %q: want a URL path starting with /, without spaces or a fragment", c.Path)
	}
	e := Endpoint{path: c.Path, dialect: wire.DialectOpenAI, headers: []wire.KV{{Key: "Content-Type", Value: "application/json"}}}
	switch c.API {
	case "", "chat":
	case "responses":
		e.dialect = wire.DialectResponses
		if e.path == DefaultPath || e.path == "" {
			e.path = ResponsesPath
		}
	default:
		return Endpoint{}, fmt.Errorf("api %q: want \"chat\" or \"responses\"", c.API)
	}
	if c.AuthHeader != "" {
		if !token(c.AuthHeader) {
			return Endpoint{}, fmt.Errorf("auth_header %q: not an HTTP header name", c.AuthHeader)
		}
		if isReserved(c.AuthHeader) {
			return Endpoint{}, fmt.Errorf("auth_header %q: the adapter sets that header itself", c.AuthHeader)
		}
		if !printable(c.AuthScheme) || strings.Contains(c.AuthScheme, " ") {
			return Endpoint{}, fmt.Errorf("auth_scheme %q: want one word such as Bearer, or \"\"", c.AuthScheme)
		}
		v := Credential
		if c.AuthScheme != "" {
			v = c.AuthScheme + " " + v
		}
		e.headers = append(e.headers, wire.KV{Key: c.AuthHeader, Value: v})
	} else if c.AuthScheme != "" && c.AuthScheme != "Bearer" {
		// A scheme without a header is a configuration that cannot do what
		// its author meant; Bearer is the default and may stay.
		return Endpoint{}, fmt.Errorf("auth_scheme %q is set but auth_header is empty: no credential is sent", c.AuthScheme)
	}
	names := make([]string, 0, len(c.Headers))
	for k := range c.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		v := c.Headers[k]
		switch {
		case !token(k):
			return Endpoint{}, fmt.Errorf("headers: %q is not an HTTP header name", k)
		case isReserved(k) || (c.AuthHeader != "" && strings.EqualFold(k, c.AuthHeader)):
			return Endpoint{}, fmt.Errorf("headers: %q is set by the adapter itself", k)
		case !printable(v):
			return Endpoint{}, fmt.Errorf("headers: the value of %q has a control character", k)
		}
		e.headers = append(e.headers, wire.KV{Key: k, Value: v})
	}
	return e, nil
}

// MustEndpoint is Endpoint for configurations known to be valid (defaults).
func (c Config) MustEndpoint() Endpoint {
	e, err := c.Endpoint()
	if err != nil {
		panic("openaicompat: " + err.Error())
	}
	return e
}

// Call is the upstream call for one request: POST base_url+path, the body
// encoded by the host in OpenAI's format (or the caller's own bytes when it
// spoke OpenAI and nothing changed), merge's members set on it, and the
// answer decoded natively. merge is nil or a JSON object
// (UpstreamCall.BodyMerge); it is not copied.
func (e *Endpoint) Call(in *wire.EncodeInput, merge []byte) (*wire.UpstreamCall, *wire.Error) {
	base := strings.TrimRight(in.Route.BaseURL, "/")
	if base == "" {
		return nil, &wire.Error{Status: 500, Kind: wire.ErrInternal, Message: "provider " + in.Route.Provider + " has no base_url configured"}
	}
	// A copy per call: the prepared headers are shared by every call, and a
	// call is its user's to change.
	headers := append(make([]wire.KV, 0, len(e.headers)+1), e.headers...)
	if in.Request.Stream {
		headers = append(headers, wire.KV{Key: "Accept", Value: "text/event-stream"})
	}
	return &wire.UpstreamCall{
		Method:          "POST",
		URL:             base + e.path,
		Headers:         headers,
		BodyMode:        wire.BodyNative,
		BodyDialect:     e.dialect,
		BodyMerge:       merge,
		Stream:          in.Request.Stream,
		ResponseDialect: e.dialect,
	}, nil
}

// EncodeWith is a provider's Encode for this endpoint, with merge's members
// set on the body (nil: none).
func (e *Endpoint) EncodeWith(in *wire.EncodeInput, res *wire.EncodeResult, merge []byte) {
	res.Call, res.Error = e.Call(in, merge)
}

// Encode is a plugin.Provider's Encode for an endpoint whose calls add no
// body members. Registered as the method value of a package-level Endpoint
// (Encode: ep.Encode), it is bound to the variable's address, so it serves
// the endpoint Init prepares later.
func (e *Endpoint) Encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	e.EncodeWith(in, res, nil)
	return nil
}

// configured is a plugin's config struct that embeds Config (the method is
// promoted from it).
type configured interface{ compat() *Config }

func (c *Config) compat() *Config { return c }

// Load reads the plugin's [provider.config] into cfg — a pointer to a
// struct embedding Config, holding its defaults — and prepares the
// endpoint. strict refuses keys cfg does not have, so a typo fails the
// pipeline's load; the lenient mode ignores them. Errors name the plugin.
// The caller checks its own keys after.
func Load(name string, cfg configured, strict bool) (Endpoint, error) {
	decode := plugin.DecodeConfig
	if strict {
		decode = plugin.DecodeConfigStrict
	}
	if err := decode(cfg); err != nil {
		return Endpoint{}, fmt.Errorf("%s: %w", name, err)
	}
	e, err := cfg.compat().Endpoint()
	if err != nil {
		return Endpoint{}, fmt.Errorf("%s: config %w", name, err)
	}
	return e, nil
}

// Decode is a provider's Decode: the host decodes successful answers itself
// (the call set ResponseDialect), so this sees failures only and maps them
// to canonical errors (429 and 5xx retryable, retry-after honoured, a
// refused credential a 502 naming the provider).
func Decode(in *wire.DecodeInput, res *wire.DecodeResult) error {
	res.Error = adapter.ErrorFromResponse(in.Route.Provider, in.Status, in.Headers, in.Body)
	return nil
}

func isReserved(name string) bool {
	for _, r := range reserved {
		if strings.EqualFold(r, name) {
			return true
		}
	}
	return false
}

// token reports whether s is an HTTP header name (RFC 9110 token).
func token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// printable reports whether s has no control character (a CR or LF in a
// header value would split the request).
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
