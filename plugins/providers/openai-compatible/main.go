// Command openai-compatible is the provider adapter for upstreams that speak
// OpenAI Chat Completions: OpenAI itself, OpenRouter, Venice, BlockRun, Bankr
// and local servers (llama.cpp, vLLM, Ollama).
//
// It describes the call and lets the host do the heavy lifting natively: the
// host encodes the canonical request as OpenAI JSON (or forwards the caller's
// own bytes untouched when the caller spoke OpenAI and nothing changed) and
// decodes successful responses and streams. The adapter maps failures.
package main

import (
	"fmt"
	"strings"

	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

type config struct {
	// Path is appended to the provider's base_url.
	Path string `json:"path"`
	// AuthHeader and AuthScheme say how the credential is sent.
	AuthHeader string `json:"auth_header"`
	AuthScheme string `json:"auth_scheme"`
	// Headers are added to every upstream request (e.g. OpenRouter's
	// HTTP-Referer and X-Title).
	Headers map[string]string `json:"headers"`
	// Params is how the upstream takes inference parameters
	// (sdk/routing.ParamStyle: "openai", "generic", ...; default
	// "by_family": each model by its vendor, as pass-through servers do).
	Params string `json:"params"`
	// CatalogURL is where the model list is fetched, relative to base_url
	// or absolute (e.g. "/models"). Unset by default: which server this
	// adapter talks to is the operator's choice, so is fetching its list
	// (catalog_refresh in pipeline.toml fetches <base_url>/models anyway).
	CatalogURL string `json:"catalog_url"`
}

var cfg config

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:    "openai-compatible",
		Version: "1.0.0",
		Init: func() error {
			cfg = config{Path: "/chat/completions", AuthHeader: "Authorization", AuthScheme: "Bearer"}
			return plugin.DecodeConfig(&cfg)
		},
		Encode:   encode,
		Decode:   decode,
		Describe: describe,
	})
}

// describe: an OpenAI-compatible server whose models are listed at its
// catalog URL. What it is (traits, payment) depends on which server it is
// pointed at, so pipeline.toml states that; the dedicated backend plugins
// (openrouter, blockrun, bankr) describe themselves fully.
func describe() (routing.ProviderDescription, error) {
	d := routing.ProviderDescription{CatalogURL: cfg.CatalogURL}
	if cfg.Params != "" {
		if err := d.Params.UnmarshalText([]byte(cfg.Params)); err != nil {
			return d, fmt.Errorf("config params: %w", err)
		}
	}
	return d, nil
}

func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	base := strings.TrimRight(in.Route.BaseURL, "/")
	if base == "" {
		res.Error = &wire.Error{Status: 500, Kind: wire.ErrInternal, Message: "provider " + in.Route.Provider + " has no base_url configured"}
		return nil
	}
	auth := "${credential}"
	if cfg.AuthScheme != "" {
		auth = cfg.AuthScheme + " " + auth
	}
	headers := []wire.KV{
		{Key: "Content-Type", Value: "application/json"},
		{Key: cfg.AuthHeader, Value: auth},
	}
	for k, v := range cfg.Headers {
		headers = append(headers, wire.KV{Key: k, Value: v})
	}
	if in.Request.Stream {
		headers = append(headers, wire.KV{Key: "Accept", Value: "text/event-stream"})
	}
	res.Call = &wire.UpstreamCall{
		Method:          "POST",
		URL:             base + cfg.Path,
		Headers:         headers,
		BodyMode:        wire.BodyNative,
		BodyDialect:     wire.DialectOpenAI,
		Stream:          in.Request.Stream,
		ResponseDialect: wire.DialectOpenAI,
	}
	return nil
}

func decode(in *wire.DecodeInput, res *wire.DecodeResult) error {
	res.Error = adapter.ErrorFromResponse(in.Route.Provider, in.Status, in.Headers, in.Body)
	return nil
}

func main() {}
