// Command openai-compatible is the provider adapter for upstreams that speak
// OpenAI Chat Completions and need nothing more: OpenAI itself and local
// servers (llama.cpp, vLLM, Ollama). OpenRouter, BlockRun and Bankr have
// their own adapters (plugins/providers/{openrouter,blockrun,bankr}), built
// on the same package, that also describe what those backends are.
//
// It describes the call and lets the host do the heavy lifting natively: the
// host encodes the canonical request as OpenAI JSON (or forwards the caller's
// own bytes untouched when the caller spoke OpenAI and nothing changed) and
// decodes successful responses and streams. The adapter maps failures. All
// of that is sdk/adapter/openaicompat.
package main

import (
	"fmt"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
)

type config struct {
	openaicompat.Config
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

var (
	cfg config
	ep  openaicompat.Endpoint
)

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:     "openai-compatible",
		Version:  "1.1.0",
		Init:     initConfig,
		Encode:   ep.Encode,
		Decode:   openaicompat.Decode,
		Describe: describe,
	})
}

// initConfig reads the config leniently: keys this adapter does not know are
// ignored, as they always were for it (host/config/README.md's example
// passes one). The dedicated adapters refuse unknown keys.
func initConfig() error {
	c := config{Config: openaicompat.Defaults()}
	e, err := openaicompat.Load("openai-compatible", &c, false)
	if err != nil {
		return err
	}
	cfg, ep = c, e
	return nil
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

func main() {}
