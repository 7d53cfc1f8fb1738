package plugin

import (
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The resolve export's messages in the SDK's wire encoding. JSON would do,
// but it is on the request path of every intent that walks past a custom
// resolver, and encoding/json's reflection inside wasm cost ~180 µs a call
// (binary: see docs/performance.md).

// EncodeResolveInput writes bardo_resolve's input: the intent as the walk
// hands it to the provider, and the standard answer (nil: none).
func EncodeResolveInput(e *wire.Encoder, in *routing.Intent, standard *routing.Resolution) {
	e.Reset()
	e.String(in.Subsystem)
	e.String(in.Model)
	e.Uint(uint64(in.Require))
	e.Uint(uint64(in.Prefer))
	e.Uint(uint64(in.Quality))
	e.Int(in.MaxLatencyMs)
	e.Float(in.CostSensitivity)
	e.Uint(uint64(in.Security))
	e.Bool(in.DiemAvailable)
	e.Int(in.InputTokens)
	e.Int(in.OutputTokens)
	e.Bool(in.Relaxed)
	e.Bool(in.Wallet.Known)
	e.Float(in.Wallet.LifetimeRevenue)
	e.Float(in.Wallet.LifetimeCost)
	e.Float(in.Wallet.Balance)
	e.Uint(uint64(in.Dropped))
	e.Bool(standard != nil)
	if standard != nil {
		encodeResolution(e, standard)
	}
}

// DecodeResolveInput reads what EncodeResolveInput wrote; the standard
// answer is nil when there was none. Strings alias b.
func DecodeResolveInput(b []byte) (in routing.Intent, standard *routing.Resolution, err error) {
	d := wire.NewDecoder(b)
	in.Subsystem = d.String()
	in.Model = d.String()
	in.Require = routing.FeatureSet(d.Uint())
	in.Prefer = routing.FeatureSet(d.Uint())
	in.Quality = routing.Quality(d.Uint())
	in.MaxLatencyMs = d.Int()
	in.CostSensitivity = d.Float()
	in.Security = routing.SecurityClass(d.Uint())
	in.DiemAvailable = d.Bool()
	in.InputTokens = d.Int()
	in.OutputTokens = d.Int()
	in.Relaxed = d.Bool()
	in.Wallet.Known = d.Bool()
	in.Wallet.LifetimeRevenue = d.Float()
	in.Wallet.LifetimeCost = d.Float()
	in.Wallet.Balance = d.Float()
	in.Dropped = routing.FeatureSet(d.Uint())
	if d.Bool() {
		r := decodeResolution(d)
		standard = &r
	}
	return in, standard, d.Err()
}

// EncodeResolveResult writes bardo_resolve's answer (nil: none).
func EncodeResolveResult(e *wire.Encoder, r *routing.Resolution) {
	e.Reset()
	e.Bool(r != nil)
	if r != nil {
		encodeResolution(e, r)
	}
}

// DecodeResolveResult reads what EncodeResolveResult wrote (nil: none).
func DecodeResolveResult(b []byte) (*routing.Resolution, error) {
	d := wire.NewDecoder(b)
	if !d.Bool() {
		return nil, d.Err()
	}
	r := decodeResolution(d)
	if err := d.Err(); err != nil {
		return nil, err
	}
	return &r, nil
}

func encodeResolution(e *wire.Encoder, r *routing.Resolution) {
	e.String(r.Provider)
	e.String(r.Model)
	e.Float(r.EstimatedCostUSD)
	e.Uint(uint64(r.Payment))
	e.Uint(uint64(r.Features))
	e.Uint(uint64(r.Quality))
	e.Int(r.LatencyMs)
	e.Int(r.MaxOutput)
	e.Uint(uint64(r.Style))
	e.Uint(uint64(r.Missing))
	e.Strings(r.Degraded)
	e.Int(int64(r.Pass))
}

func decodeResolution(d *wire.Decoder) routing.Resolution {
	return routing.Resolution{
		Provider:         d.String(),
		Model:            d.String(),
		EstimatedCostUSD: d.Float(),
		Payment:          routing.PaymentMode(d.Uint()),
		Features:         routing.FeatureSet(d.Uint()),
		Quality:          routing.Quality(d.Uint()),
		LatencyMs:        d.Int(),
		MaxOutput:        d.Int(),
		Style:            routing.ParamStyle(d.Uint()),
		Missing:          routing.FeatureSet(d.Uint()),
		Degraded:         d.Strings(),
		Pass:             int(d.Int()),
	}
}
