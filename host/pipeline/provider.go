package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Candidates returns the providers that may serve the request, in
// pipeline.toml order: every enabled provider whose models match (after the
// first, only those that accept failover). The
// gateway tries them in turn (failover). Intent resolution will refine the
// order; the file order stays the operator's statement of preference.
func (p *Pipeline) Candidates(x *Exchange) ([]*Provider, *wire.Error) {
	model := x.Req.Model
	var out []*Provider
	var disabled []string
	for _, pr := range p.Providers {
		if !pr.Spec.Serves(model) {
			continue
		}
		if !pr.Enabled {
			disabled = append(disabled, pr.Spec.Name)
			continue
		}
		if len(out) > 0 && !pr.Spec.Failover {
			continue // serves only as a first choice
		}
		out = append(out, pr)
	}
	if len(out) > 0 {
		return out, nil
	}
	msg := fmt.Sprintf("no configured provider serves model %q", model)
	if len(disabled) > 0 {
		msg += fmt.Sprintf(" (providers %s would, but have no credentials configured)", strings.Join(disabled, ", "))
	}
	return nil, &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: msg}
}

// Route picks the first candidate (see Candidates).
func (p *Pipeline) Route(x *Exchange) (*Provider, wire.Route, *wire.Error) {
	cands, werr := p.Candidates(x)
	if werr != nil {
		return nil, wire.Route{}, werr
	}
	pr := cands[0]
	return pr, wire.Route{Provider: pr.Spec.Name, Model: x.Req.Model, BaseURL: pr.Spec.BaseURL}, nil
}

// EnabledProviders names the providers that can serve requests, so the
// operator can be told when only the local simulator is active.
func (p *Pipeline) EnabledProviders() []string {
	var names []string
	for _, pr := range p.Providers {
		if pr.Enabled {
			names = append(names, pr.Spec.Name)
		}
	}
	return names
}

// ExpandCredential replaces the ${credential} placeholder in upstream header
// values with the provider's secret. The secret never enters plugin memory.
func (pr *Provider) ExpandCredential(headers []wire.KV) {
	if pr.secret == "" {
		return // no credential: the placeholder stays, and the header is dropped before sending
	}
	for i := range headers {
		if strings.Contains(headers[i].Value, "${credential}") {
			headers[i].Value = strings.ReplaceAll(headers[i].Value, "${credential}", pr.secret)
		}
	}
}

// ExpandCallerKey puts the caller's own key where the adapter wrote the
// credential placeholder: a direct provider is paid by the caller.
func ExpandCallerKey(headers []wire.KV, key string) {
	for i := range headers {
		if strings.Contains(headers[i].Value, "${credential}") {
			headers[i].Value = strings.ReplaceAll(headers[i].Value, "${credential}", key)
		}
	}
}

// HasSecret reports whether the provider has a credential, without revealing it.
func (pr *Provider) HasSecret() bool { return pr.secret != "" }

// Redact removes the provider's secret from text that may reach a caller or a
// log (an upstream echoing a key back in an error, say).
func (pr *Provider) Redact(s string) string {
	if pr.secret == "" || len(pr.secret) < 4 {
		return s
	}
	return strings.ReplaceAll(s, pr.secret, "[redacted]")
}

func (p *Pipeline) providerError(pr *Provider, op string, err error) *wire.Error {
	p.log.Warn("provider plugin failed", "provider", pr.Spec.Name, "op", op, "err", err)
	if errors.Is(err, sandbox.ErrTimeout) || errors.Is(err, sandbox.ErrPoolWait) {
		return &wire.Error{Status: 504, Kind: wire.ErrTimeout,
			Message: fmt.Sprintf("provider adapter %q did not finish %s within the request's time", pr.Spec.Name, op)}
	}
	return &wire.Error{Status: 502, Kind: wire.ErrUpstream,
		Message: fmt.Sprintf("provider adapter %q failed in %s", pr.Spec.Name, op)}
}

// Encode asks the provider plugin how to call its upstream.
func (p *Pipeline) Encode(ctx context.Context, x *Exchange, pr *Provider, route wire.Route) (*wire.EncodeResult, *wire.Error) {
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	wire.EncodeEncodeInput(enc, &x.Meta, &route, x.Req, pr.Plugin.Descriptor().Reads, x.Pristine)
	out, err := pr.Plugin.Call(ctx, plugin.OpEncode, enc.Bytes(), x.info())
	if err != nil {
		return nil, p.providerError(pr, "encode", err)
	}
	var res wire.EncodeResult
	if err := res.Decode(out); err != nil {
		return nil, p.providerError(pr, "encode", err)
	}
	if res.Error != nil {
		return nil, res.Error
	}
	if res.Call == nil && res.Local == nil {
		return nil, p.providerError(pr, "encode", fmt.Errorf("neither a call nor a local answer"))
	}
	for _, d := range res.Degraded { // what the adapter approximated (ABI v1.4)
		if d != "" && !slices.Contains(x.Degraded, d) {
			x.Degraded = append(x.Degraded, d)
		}
	}
	return &res, nil
}

// Decode asks the provider plugin to turn an upstream response into a
// canonical response or error.
func (p *Pipeline) Decode(ctx context.Context, x *Exchange, pr *Provider, route wire.Route, status int, headers []wire.KV, body []byte) (*wire.Response, *wire.Error) {
	return p.decode(ctx, x, pr, route, status, headers, body, false)
}

// Verify asks the provider plugin whether a successful upstream response
// the host will decode natively may be used (UpstreamCall.VerifySuccess):
// nil accepts it, an error refuses it. A stream is verified by its headers
// alone (body nil), before its first byte reaches the caller.
func (p *Pipeline) Verify(ctx context.Context, x *Exchange, pr *Provider, route wire.Route, status int, headers []wire.KV, body []byte) *wire.Error {
	_, werr := p.decode(ctx, x, pr, route, status, headers, body, true)
	return werr
}

func (p *Pipeline) decode(ctx context.Context, x *Exchange, pr *Provider, route wire.Route, status int, headers []wire.KV, body []byte, verify bool) (*wire.Response, *wire.Error) {
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	in := wire.DecodeInput{Meta: x.Meta, Route: route, Status: int64(status), Headers: headers, Body: body}
	in.Encode(enc)
	out, err := pr.Plugin.Call(ctx, plugin.OpDecode, enc.Bytes(), x.info())
	if err != nil {
		return nil, p.providerError(pr, "decode", err)
	}
	var res wire.DecodeResult
	if err := res.Decode(out); err != nil {
		return nil, p.providerError(pr, "decode", err)
	}
	if res.Error != nil {
		res.Error.Message = pr.Redact(res.Error.Message)
		return nil, res.Error
	}
	if verify {
		return nil, nil
	}
	if res.Response == nil {
		return nil, p.providerError(pr, "decode", fmt.Errorf("neither a response nor an error"))
	}
	return res.Response, nil
}

// DecodeStream asks the provider plugin to turn a batch of upstream SSE events
// into canonical events; state is the plugin's own, round-tripped per stream.
func (p *Pipeline) DecodeStream(ctx context.Context, x *Exchange, pr *Provider, route wire.Route, headers []wire.KV, events []wire.SSE, state []byte, final bool) ([]wire.Event, []byte, *wire.Error) {
	enc := encoders.Get().(*wire.Encoder)
	defer encoders.Put(enc)
	in := wire.DecodeStreamInput{Meta: x.Meta, Route: route, Events: events, State: state, Final: final, Headers: headers}
	in.Encode(enc)
	out, err := pr.Plugin.Call(ctx, plugin.OpDecodeStream, enc.Bytes(), x.info())
	if err != nil {
		return nil, nil, p.providerError(pr, "decode_stream", err)
	}
	var res wire.DecodeStreamResult
	if err := res.Decode(out); err != nil {
		return nil, nil, p.providerError(pr, "decode_stream", err)
	}
	return res.Events, res.State, res.Error
}

// Descriptions are what the intent resolver knows about the enabled
// providers, in pipeline.toml order (sdk/routing): their traits and
// catalogs, the refreshed ones when the backend's /models is fetched. They
// are rebuilt only when a refreshed catalog changed: one atomic load on the
// request path.
func (p *Pipeline) Descriptions() []routing.ProviderDescription {
	if p.catalogs != nil && p.catalogs.Version() != p.descVer.Load() {
		p.buildDescriptions()
	}
	return *p.desc.Load()
}

func (p *Pipeline) buildDescriptions() {
	p.descMu.Lock()
	defer p.descMu.Unlock()
	var ver uint64
	if p.catalogs != nil {
		ver = p.catalogs.Version()
	}
	var ds []routing.ProviderDescription
	var names []string
	cats := map[string][]catalog.Model{}
	for _, pr := range p.Providers {
		if !pr.Enabled || pr.Plugin == nil {
			continue
		}
		spec := pr.Spec
		if p.catalogs != nil {
			if ms, ok := p.catalogs.Models(spec.Name); ok {
				spec.Catalog = ms
			}
		}
		ds = append(ds, pr.description(spec))
		names = append(names, spec.Name)
		cats[spec.Name] = spec.Catalog
	}
	idx := indexPrices(cats, names, ds)
	p.prices.Store(&idx)
	p.desc.Store(&ds)
	p.descVer.Store(ver)
}

// CatalogAuth is the Authorization header value for fetching the provider's
// catalog with its credential ("" without one). It never leaves the host.
func (pr *Provider) CatalogAuth() string {
	if pr.secret == "" {
		return ""
	}
	return "Bearer " + pr.secret
}

// Provider returns the enabled provider named name, or nil.
func (p *Pipeline) Provider(name string) *Provider {
	for _, pr := range p.Providers {
		if pr.Enabled && pr.Spec.Name == name {
			return pr
		}
	}
	return nil
}
