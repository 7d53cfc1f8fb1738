package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Provider plugins describe themselves (ABI v1.3, docs/abi.md): describe()
// once per loaded pipeline, and — for a provider whose rules the declarative
// policy cannot say — resolve(intent) on the request path. The host keeps
// no capability matrix: what it knows about a provider is the plugin's
// description with pipeline.toml laid over it. describe() answers JSON (once
// per pipeline); resolve() travels in the wire encoding (sdk/plugin
// resolvecodec.go: it is on the request path).

// describeTimeout bounds the describe() call at load.
const describeTimeout = 5 * time.Second

// resolveTimeout bounds one resolve() call, waiting for an instance
// included: a provider that cannot answer in time does not serve the
// intent, and the walk goes on. (A trusted plugin's call, once started,
// cannot be cut: its answer is kept, its lateness counted; docs/abi.md.)
const resolveTimeout = 250 * time.Millisecond

// describe reads the plugin's self-description, when it exports one.
func (pr *Provider) describe(log *slog.Logger) error {
	pr.log = log
	if !pr.Plugin.Exports(plugin.OpProviderDescribe) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), describeTimeout)
	defer cancel()
	out, err := pr.Plugin.Call(ctx, plugin.OpProviderDescribe, []byte{wire.FormatVersion}, sandbox.CallInfo{})
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	d, err := decodeJSONPayload[routing.ProviderDescription](out)
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if d == nil {
		return nil // the plugin leaves its description to pipeline.toml
	}
	pr.Described = d
	if d.Policy.Custom {
		if !pr.Plugin.Exports(plugin.OpResolve) {
			return errors.New("describe: policy custom, but the plugin does not export bardo_resolve")
		}
		pr.customResolve = true
	}
	return nil
}

// Payment is how the provider is paid: the entry's payment trait, else the
// plugin's own description's (a BlockRun plugin says x402 itself).
func (pr *Provider) Payment() routing.PaymentMode {
	if pr.Spec.TraitsSet&config.TraitPayment != 0 || pr.Described == nil {
		return pr.Spec.Traits.Payment
	}
	return pr.Described.Traits.Payment
}

// description is what the resolver knows about the provider: the plugin's
// description (if any) with the entry laid over it, models from the
// refreshed catalog when there is one, and the plugin's resolve() hooked in.
func (pr *Provider) description(spec config.Provider) routing.ProviderDescription {
	var base routing.ProviderDescription
	if pr.Described != nil {
		base = *pr.Described
	}
	d := spec.Overlay(base)
	if pr.customResolve {
		d.Resolver = pr.resolveInPlugin
	}
	return d
}

// resolveInPlugin is a routing.ResolveFunc that asks the plugin: the
// standard answer on the merged description goes with the intent, the
// plugin keeps, adjusts or vetoes it. A plugin that fails to answer does
// not serve the intent (a veto it could not state must not be bypassed).
func (pr *Provider) resolveInPlugin(d *routing.ProviderDescription, in *routing.Intent) (routing.Resolution, bool) {
	std, ok := routing.StandardResolve(d, in)
	var stdp *routing.Resolution
	if ok {
		stdp = &std
	}
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	plugin.EncodeResolveInput(enc, in, stdp)
	ctx, cancel := context.WithTimeout(context.Background(), resolveTimeout)
	defer cancel()
	out, err := pr.Plugin.Call(ctx, plugin.OpResolve, enc.Bytes(), sandbox.CallInfo{})
	if err != nil {
		pr.log.Warn("resolve failed; the provider does not serve this intent", "provider", pr.Spec.Name, "err", err)
		return routing.Resolution{}, false
	}
	r, err := plugin.DecodeResolveResult(out)
	if err != nil {
		pr.log.Warn("resolve: undecodable answer; the provider does not serve this intent", "provider", pr.Spec.Name, "err", err)
		return routing.Resolution{}, false
	}
	if r == nil {
		return routing.Resolution{}, false
	}
	if r.Model == "" || math.IsNaN(r.EstimatedCostUSD) || math.IsInf(r.EstimatedCostUSD, 0) || r.EstimatedCostUSD < 0 {
		pr.log.Warn("resolve: answer without a model or with an impossible cost; the provider does not serve this intent",
			"provider", pr.Spec.Name, "model", r.Model, "cost", r.EstimatedCostUSD)
		return routing.Resolution{}, false
	}
	// A plugin answers for itself only. (Its strings alias out, which is
	// the host's own copy of the guest's output.)
	r.Provider = d.ID
	return *r, true
}

// decodeJSONPayload reads an export's JSON payload after the format byte;
// JSON null gives nil.
func decodeJSONPayload[T any](out []byte) (*T, error) {
	if len(out) == 0 || out[0] != wire.FormatVersion {
		return nil, errors.New("missing or unknown format byte")
	}
	var v *T
	if err := json.Unmarshal(out[1:], &v); err != nil {
		return nil, err
	}
	return v, nil
}
