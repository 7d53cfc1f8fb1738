// Command anthropic is the provider adapter for the native Anthropic Messages
// API (and servers that speak it). The host encodes the canonical request as
// Anthropic JSON — or forwards an Anthropic caller's own bytes untouched when
// nothing changed, so thinking signatures, cache_control and unknown fields
// survive — and decodes responses and streams natively. The adapter sets the
// endpoint and headers and maps failures.
package main

import (
	"strings"

	"github.com/bardoinference/bardo/sdk/adapter"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

type config struct {
	// Path is appended to base_url.
	Path string `json:"path"`
	// Version is sent as anthropic-version.
	Version string `json:"version"`
	// Beta, when set, is sent as anthropic-beta (comma-separated flags).
	Beta string `json:"beta"`
}

var cfg config

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:    "anthropic",
		Version: "1.0.0",
		Init: func() error {
			cfg = config{Path: "/v1/messages", Version: "2023-06-01"}
			return plugin.DecodeConfig(&cfg)
		},
		Encode:   encode,
		Decode:   decode,
		Describe: describe,
	})
}

// describe: Anthropic takes thinking budgets (the anthropic parameter
// style). No catalog URL: GET /v1/models wants x-api-key, not the bearer
// the catalog refresher sends, and lists neither prices nor quality; a
// static [[provider.model]] catalog in pipeline.toml gives them.
func describe() (routing.ProviderDescription, error) {
	return routing.ProviderDescription{Params: routing.StyleAnthropic}, nil
}

func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	base := strings.TrimRight(in.Route.BaseURL, "/")
	if base == "" {
		base = "https://api.anthropic.com"
	}
	headers := []wire.KV{
		{Key: "Content-Type", Value: "application/json"},
		{Key: "x-api-key", Value: "${credential}"},
		{Key: "anthropic-version", Value: cfg.Version},
	}
	if cfg.Beta != "" {
		headers = append(headers, wire.KV{Key: "anthropic-beta", Value: cfg.Beta})
	}
	if in.Request.Stream {
		headers = append(headers, wire.KV{Key: "Accept", Value: "text/event-stream"})
	}
	res.Call = &wire.UpstreamCall{
		Method:          "POST",
		URL:             base + cfg.Path,
		Headers:         headers,
		BodyMode:        wire.BodyNative,
		BodyDialect:     wire.DialectAnthropic,
		Stream:          in.Request.Stream,
		ResponseDialect: wire.DialectAnthropic,
	}
	return nil
}

func decode(in *wire.DecodeInput, res *wire.DecodeResult) error {
	res.Error = adapter.ErrorFromResponse(in.Route.Provider, in.Status, in.Headers, in.Body)
	return nil
}

func main() {}
