// Command bankr is the provider adapter for Bankr's LLM gateway
// (llm.bankr.bot), the self-funding backend: an agent's trading and social
// revenue pays for its own inference.
//
// On the wire Bankr is OpenAI-compatible (POST /v1/chat/completions, GET
// /v1/models, the key as "Authorization: Bearer" or X-API-Key; it also
// speaks Anthropic's Messages API, which this adapter does not use), so the
// call is sdk/adapter/openaicompat's. What makes Bankr different is routing:
// describe() marks it self-funding and wallet-paid, so the standard resolver
// serves an intent only for an agent that reported its economics
// (X-Bardo-Wallet) and only within the budget its sustainability ratio
// allows (sdk/routing/wallet.go), and only for the self-funding subsystems
// (Policy.Subsystems, from the config). It has no resolve() of its own; see
// README.md for why.
package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// config is the provider's [provider.config] table.
type config struct {
	openaicompat.Config
	// Subsystems are the subsystems Bankr serves by intent (Policy.Subsystems;
	// pipeline.toml's entry-level `subsystems` overrides it). Unset: the
	// spec's self-funding subsystems; an empty list: every subsystem (the
	// wallet budget still applies).
	Subsystems []string `json:"subsystems"`
}

// defaultSubsystems are the spec's: BankrProvider resolves only for
// "autonomous" and "social", the subsystems that run on self-funding
// economics (12-providers, BankrProvider; its configuration example lists
// the same). They are not among sdk/routing's twelve intents: an agent
// names them in X-Bardo-Subsystem and gets the conservative default intent
// under that name, which this policy matches.
var defaultSubsystems = []string{"autonomous", "social"}

var (
	ep         openaicompat.Endpoint
	subsystems []string
)

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:     "bankr",
		Version:  "1.0.0",
		Init:     initConfig,
		Encode:   encode,
		Decode:   openaicompat.Decode,
		Describe: describe,
	})
}

// initConfig reads the config strictly: a typo fails the load.
func initConfig() error {
	c := config{Config: openaicompat.Defaults()}
	e, err := openaicompat.Load("bankr", &c, true)
	if err != nil {
		return err
	}
	subs := defaultSubsystems
	if c.Subsystems != nil {
		subs = c.Subsystems
	}
	for _, s := range subs {
		if strings.TrimSpace(s) == "" || strings.TrimSpace(s) != s {
			return fmt.Errorf("bankr: config subsystems: %q is not a subsystem name", s)
		}
	}
	ep, subsystems = e, subs
	return nil
}

// describe: Bankr as the spec's BankrProvider traits say — self-funding,
// paid from the agent's wallet, the pipeline's layers applying — with
// parameters by the model's family (Bankr passes requests through to
// Vertex AI and OpenRouter by model), and its model list at
// <base_url>/models. That list is OpenAI's shape, ids without prices: see
// README.md on giving the wallet budget prices to check.
func describe() (routing.ProviderDescription, error) {
	return routing.ProviderDescription{
		Traits:     routing.Traits{SelfFunding: true, Payment: routing.PaymentWallet, ContextEngineering: true},
		Features:   routing.Features(routing.SelfFunding),
		Params:     routing.StyleByFamily,
		CatalogURL: "/models",
		Policy:     routing.Policy{Subsystems: subsystems},
	}, nil
}

// encode sends the OpenAI-compatible call. A model addressed to this
// provider explicitly, "<provider>/<model>" (pipeline.toml's models =
// ["bankr/*"]: Bankr's ids are the vendors' own, so that is how a client
// picks Bankr over the vendor entries), reaches Bankr as <model>, as a
// pinned model does under intent routing (the resolver strips the prefix
// there). The body's model member is replaced (BodyMerge).
func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	var merge []byte
	if rest, ok := strings.CutPrefix(in.Route.Model, in.Route.Provider+"/"); ok && rest != "" {
		b, err := json.Marshal(map[string]string{"model": rest})
		if err != nil {
			return fmt.Errorf("bankr: model member: %w", err)
		}
		merge = b
	}
	ep.EncodeWith(in, res, merge)
	return nil
}

func main() {}
