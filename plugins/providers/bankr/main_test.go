//go:build !wasip1

package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat/compattest"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

const base = "https://llm.bankr.bot/v1"

func encodeCall(t *testing.T, h *plugintest.Host, model string) *wire.UpstreamCall {
	t.Helper()
	return compattest.Encode(t, h, wire.Route{Provider: "bankr", Model: model, BaseURL: base}, false)
}

func TestDescribe(t *testing.T) {
	plugintest.New(t, "")
	want := &routing.ProviderDescription{
		Traits:     routing.Traits{SelfFunding: true, Payment: routing.PaymentWallet, ContextEngineering: true},
		Features:   routing.Features(routing.SelfFunding),
		Params:     routing.StyleByFamily,
		CatalogURL: "/models",
		Policy:     routing.Policy{Subsystems: []string{"autonomous", "social"}},
	}
	if d := plugintest.ProviderDescription(t); !reflect.DeepEqual(d, want) {
		t.Fatalf("description\n got %+v\nwant %+v", d, want)
	}

	plugintest.New(t, `{"subsystems":["autonomous","social","operator"]}`)
	if d := plugintest.ProviderDescription(t); !reflect.DeepEqual(d.Policy.Subsystems, []string{"autonomous", "social", "operator"}) {
		t.Fatalf("configured subsystems %v", d.Policy.Subsystems)
	}
	plugintest.New(t, `{"subsystems":[]}`)
	if d := plugintest.ProviderDescription(t); len(d.Policy.Subsystems) != 0 {
		t.Fatalf("an empty list must lift the gate, got %v", d.Policy.Subsystems)
	}
}

// What the description makes the standard resolver do, which is all of
// Bankr's routing: only the self-funding subsystems, only for an agent that
// reported its wallet, only within its budget.
func TestDescriptionRoutes(t *testing.T) {
	plugintest.New(t, "")
	d := plugintest.ProviderDescription(t)
	d.ID = "bankr"
	d.Models = []routing.ModelInfo{{ID: "claude-opus-4.6", Quality: routing.Maximum, InputPrice: 5, OutputPrice: 25},
		{ID: "gemini-3-flash", Quality: routing.Low, InputPrice: 0.5, OutputPrice: 3}}
	intent := func(sub, wallet string) *routing.Intent {
		in, _ := routing.SubsystemIntent(sub)
		switch wallet {
		case "flush": // R = 3, $50: $7.50 a call
			in.Wallet = routing.Wallet{Known: true, LifetimeRevenue: 300, LifetimeCost: 100, Balance: 50}
		case "dying": // R = 0.2, $0.05: $0.0015 a call
			in.Wallet = routing.Wallet{Known: true, LifetimeRevenue: 20, LifetimeCost: 100, Balance: 0.05}
		}
		return &in
	}
	for _, tc := range []struct {
		sub, wallet, want string
	}{
		{"autonomous", "flush", "gemini-3-flash"},
		{"social", "flush", "gemini-3-flash"},
		{"autonomous", "", ""},                                // no economics reported: not a self-funding agent
		{"dream", "flush", ""},                                // not a self-funding subsystem
		{"autonomous", "dying", ""},                           // $0.0025 estimated, $0.0015 allowed
		{"bankr/claude-opus-4.6", "flush", "claude-opus-4.6"}, // pinned: the caller chose Bankr
		{"bankr/claude-opus-4.6", "", ""},                     // pinned, but no wallet to pay from
	} {
		var in *routing.Intent
		if strings.HasPrefix(tc.sub, "bankr/") {
			in = intent("autonomous", tc.wallet)
			in.Model = tc.sub
		} else {
			in = intent(tc.sub, tc.wallet)
		}
		r, ok := routing.StandardResolve(d, in)
		if got := map[bool]string{true: r.Model}[ok]; got != tc.want {
			t.Errorf("%s with wallet %q: %q, want %q", tc.sub, tc.wallet, got, tc.want)
		}
	}
}

func TestEncode(t *testing.T) {
	h := plugintest.New(t, "")
	c := encodeCall(t, h, "claude-opus-4.6")
	if c.URL != base+"/chat/completions" || c.BodyMerge != nil || c.ResponseDialect != wire.DialectOpenAI ||
		!reflect.DeepEqual(c.Headers, []wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "Authorization", Value: "Bearer ${credential}"}}) {
		t.Fatalf("call %+v", c)
	}
	// A model addressed to Bankr by its provider prefix reaches Bankr
	// without it.
	if m := encodeCall(t, h, "bankr/claude-opus-4.6").BodyMerge; string(m) != `{"model":"claude-opus-4.6"}` {
		t.Fatalf("merge %s", m)
	}
	// Bankr's documented X-API-Key header works too.
	h = plugintest.New(t, `{"auth_header":"X-API-Key","auth_scheme":""}`)
	if got := encodeCall(t, h, "gpt-5.2").Headers[1]; got != (wire.KV{Key: "X-API-Key", Value: "${credential}"}) {
		t.Fatalf("header %+v", got)
	}
}

func TestConfigRefused(t *testing.T) {
	compattest.Refused(t, `{"subsystems":["autonomous","social","operator"]}`, map[string]string{
		`{"wallet":"0xabc"}`:               "wallet",
		`{"subsystems":["autonomous",""]}`: "subsystems",
		`{"auth_header":"X API Key"}`:      "auth_header",
	})
}
