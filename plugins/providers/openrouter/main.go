// Command openrouter is the provider adapter for OpenRouter
// (openrouter.ai), the gateway's universal fallback: 400+ models behind one
// OpenAI-compatible API, paid from the operator's prepaid OpenRouter credit.
//
// Beyond the OpenAI-compatible call (sdk/adapter/openaicompat) it adds what
// the spec gives OpenRouter:
//
//   - describe(): prepaid, OpenRouter's parameter style, the catalog at
//     <base_url>/models, and the cheapest-only policy (OpenRouter resolves
//     to the cheapest eligible model; its catalog is too large for feature
//     scoring to be reliable);
//   - provider preferences from the config, sent as the body's "provider"
//     object (UpstreamCall.BodyMerge), validated at load;
//   - resolve(): the standard answer with the model's :nitro variant for
//     latency-sensitive intents and :floor for cheapest-path ones (see
//     variants.go and README.md).
package main

import (
	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// config is the provider's [provider.config] table.
type config struct {
	openaicompat.Config
	// HTTPReferer and XTitle are OpenRouter's app attribution headers
	// (HTTP-Referer, X-Title); "" sends none.
	HTTPReferer string `json:"http_referer"`
	XTitle      string `json:"x_title"`
	// Provider are OpenRouter's provider routing preferences, sent as the
	// body's "provider" object (preferences.go).
	Provider *preferences `json:"provider"`
	// Variants is the :nitro / :floor rule of resolve() (variants.go).
	Variants *variantConfig `json:"variants"`
}

// settings is the config resolved once per instance.
type settings struct {
	ep openaicompat.Endpoint
	// merge is the body's "provider" member; unsorted is the same without
	// "sort", for models whose :nitro or :floor variant already is the sort.
	// nil: nothing to send.
	merge, unsorted []byte
	variants        variantRule
}

var cfg settings

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:     "openrouter",
		Version:  "1.0.0",
		Init:     initConfig,
		Encode:   encode,
		Decode:   openaicompat.Decode,
		Describe: describe,
		Resolve:  resolve,
	})
}

// initConfig reads the config strictly: an unknown key or a preference
// OpenRouter does not take fails the pipeline's load rather than being
// silently dropped.
func initConfig() error {
	c := config{Config: openaicompat.Defaults()}
	// Load decodes the table and checks the call's keys; settings then adds
	// the attribution headers and prepares the endpoint with them.
	if _, err := openaicompat.Load("openrouter", &c, true); err != nil {
		return err
	}
	s, err := c.settings()
	if err != nil {
		return err
	}
	cfg = s
	return nil
}

func (c *config) settings() (settings, error) {
	var s settings
	var err error
	if c.Config, err = withAttribution(c.Config, c.HTTPReferer, c.XTitle); err != nil {
		return s, err
	}
	if s.ep, err = c.Endpoint(); err != nil {
		return s, configError(err)
	}
	if s.merge, s.unsorted, err = c.Provider.members(); err != nil {
		return s, configError(err)
	}
	if s.variants, err = c.Variants.rule(); err != nil {
		return s, configError(err)
	}
	return s, nil
}

// describe: what the resolver knows about OpenRouter. pipeline.toml's entry
// overrides it field by field (traits, static models, subsystems).
func describe() (routing.ProviderDescription, error) {
	return routing.ProviderDescription{
		// The operator's prepaid credit pays; the pipeline's layers apply
		// (the spec's OpenRouterProvider traits).
		Traits: routing.Traits{Payment: routing.PaymentPrepaid, ContextEngineering: true},
		Params: routing.StyleOpenRouter,
		// GET <base_url>/models: OpenRouter's Models API, which
		// host/catalog reads (prices, context, supported parameters).
		CatalogURL: "/models",
		Policy:     routing.Policy{CheapestOnly: true},
	}, nil
}

func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	merge := cfg.merge
	if sortingVariant(in.Route.Model) {
		merge = cfg.unsorted
	}
	cfg.ep.EncodeWith(in, res, merge)
	return nil
}

func main() {}
