// Command blockrun is the provider adapter for BlockRun (blockrun.ai), the
// gateway's primary backend: an OpenAI-compatible API over many vendors'
// models, paid per request with x402 (USDC on Base) instead of an API key.
//
// The adapter never signs or holds anything: BlockRun answers an unpaid
// request with 402 and its payment requirements, and the host pays it from
// the gateway's own wallet (BARDO_WALLET_KEY, host/gateway/payment.go,
// host/x402) and sends the request again. So the call is the plain
// OpenAI-compatible one (sdk/adapter/openaicompat) without a credential, and
// describe() says what BlockRun is: x402-paid, parameters by the model's
// family (it passes them through to the vendor), its catalog at
// <base_url>/models.
package main

import (
	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
)

var ep openaicompat.Endpoint

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:     "blockrun",
		Version:  "1.0.0",
		Init:     initConfig,
		Encode:   ep.Encode,
		Decode:   openaicompat.Decode,
		Describe: describe,
	})
}

// defaults: POST <base_url>/chat/completions with no credential header —
// x402 pays. (An operator using a BlockRun API key instead sets a
// credential, auth_header = "Authorization", auth_scheme = "Bearer", and
// traits.payment = "prepaid" on the entry.)
func defaults() openaicompat.Config {
	return openaicompat.Config{Path: openaicompat.DefaultPath}
}

// initConfig reads the config — the OpenAI-compatible call's keys, nothing
// else — strictly: a typo fails the load.
func initConfig() error {
	c := defaults()
	e, err := openaicompat.Load("blockrun", &c, true)
	if err != nil {
		return err
	}
	ep = e
	return nil
}

// describe: BlockRun as the spec's BlockRunProvider: paid with x402, the
// pipeline's layers apply, parameters by the model's family. The catalog is
// GET <base_url>/models — with base_url https://blockrun.ai/api/v1, BlockRun's
// GET /api/v1/models, which host/catalog reads (shape "blockrun": prices in
// USD per million tokens, context window, categories). The host refreshes
// it hourly when the entry lists no models of its own.
func describe() (routing.ProviderDescription, error) {
	return routing.ProviderDescription{
		Traits:     routing.Traits{Payment: routing.PaymentX402, ContextEngineering: true},
		Params:     routing.StyleByFamily,
		CatalogURL: "/models",
	}, nil
}

func main() {}
