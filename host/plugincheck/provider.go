package plugincheck

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// The route the kit hands a provider: what the host would have decided.
const (
	kitModel   = "kit-model"
	kitBaseURL = "https://upstream.invalid/v1"
)

// resolveTimeout is the host's budget for one resolve() call
// (host/pipeline/describe.go): past it the provider does not serve the intent.
const resolveTimeout = 250 * time.Millisecond

func (k *kit) checkProvider(ctx context.Context) {
	samples, err := dialectSamples()
	if err != nil {
		k.fail("fixtures", "%v", err)
		return
	}
	route := wire.Route{Provider: k.report.Descriptor.Name, Model: kitModel, BaseURL: kitBaseURL}
	var dialect wire.Dialect // the success dialect the adapter's calls declare
	calls := 0               // encodes that asked for an upstream call
	for _, s := range samples {
		if call := k.encode(ctx, "encode/"+s.name, s, route, false); call != nil {
			dialect = call.ResponseDialect
			calls++
		}
	}
	if s, err := unknownFieldsSample(); err != nil {
		k.fail("encode/unknown-fields", "%v", err)
	} else {
		k.encode(ctx, "encode/unknown-fields", s, route, false)
	}
	k.encode(ctx, "encode/empty", emptySample(), route, true)
	k.encode(ctx, "encode/huge", hugeSample(), route, true)
	for i, text := range k.opts.Probes {
		req := withLastUserText(text)
		k.encode(ctx, fmt.Sprintf("encode/probe-%d %q", i+1, short(text)), sample{"probe", meta(wire.DialectOpenAI, req), req}, route, false)
	}
	switch {
	case calls == 0:
		// A provider that answers locally (a simulator) has no upstream
		// whose answers the host would hand to decode.
		k.pass("decode", "not called: the adapter answered every fixture locally")
	default:
		k.decodeErrors(ctx, samples[0].meta, route)
		if dialect == wire.DialectNone {
			k.pass("decode/success", "not checked: the adapter decodes its upstream's own format")
		}
	}
	if k.p.Exports(plugin.OpDecodeStream) {
		in := wire.DecodeStreamInput{Meta: samples[1].meta, Route: route, Final: true}
		in.Encode(&k.enc)
		_, err := k.call(ctx, plugin.OpDecodeStream, k.enc.Bytes())
		if why, failed := k.failure(err, true); failed {
			k.fail("decode_stream/empty", "%s", why)
		} else {
			k.pass("decode_stream/empty", "no trap on an empty final batch")
		}
	}
	desc := k.describe(ctx)
	if desc != nil && desc.Policy.Custom {
		k.resolve(ctx, *desc)
	}
	s := samples[0]
	req := *s.req
	req.Messages = append([]wire.Message(nil), req.Messages...)
	last := &req.Messages[len(req.Messages)-1]
	last.Content = append([]wire.Block(nil), last.Content...)
	base := last.Content[0].Text
	reads := k.report.Descriptor.Reads
	k.measure(ctx, "encode", plugin.OpEncode, func(i int) []byte {
		last.Content[0].Text = base + " (request " + strconv.Itoa(i) + ")"
		wire.EncodeEncodeInput(&k.enc, &s.meta, &route, &req, reads, false)
		return k.enc.Bytes()
	})
}

// encode runs the adapter's encode as host/pipeline does and checks that
// the host could act on the result.
func (k *kit) encode(ctx context.Context, name string, s sample, route wire.Route, onlyTraps bool) *wire.UpstreamCall {
	wire.EncodeEncodeInput(&k.enc, &s.meta, &route, s.req, k.report.Descriptor.Reads, false)
	out, err := k.call(ctx, plugin.OpEncode, k.enc.Bytes())
	if why, failed := k.failure(err, onlyTraps); failed {
		k.fail(name, "%s", why)
		return nil
	} else if err != nil {
		k.pass(name, "no trap (%s)", k.explain(err))
		return nil
	}
	var res wire.EncodeResult
	if err := res.Decode(out); err != nil {
		k.fail(name, "result does not decode: %v", err)
		return nil
	}
	switch {
	case res.Error != nil && onlyTraps:
		k.pass(name, "refused: %d %s", res.Error.Status, short(res.Error.Message))
		return nil
	case res.Error != nil:
		k.fail(name, "refused an ordinary request: %d %s", res.Error.Status, res.Error.Message)
		return nil
	case res.Local != nil:
		k.pass(name, "answered locally (%d blocks)", len(res.Local.Content))
		return nil
	case res.Call == nil:
		k.fail(name, "neither a call nor a local answer nor an error: the host fails the request")
		return nil
	}
	if why := checkCall(res.Call); why != "" {
		k.fail(name, "%s", why)
		return nil
	}
	k.pass(name, "%s %s", res.Call.Method, res.Call.URL)
	return res.Call
}

func checkCall(c *wire.UpstreamCall) string {
	switch c.Method {
	case "GET", "POST", "PUT", "PATCH", "DELETE":
	default:
		return fmt.Sprintf("method %q", c.Method)
	}
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("URL %q is not an absolute http(s) URL", c.URL)
	}
	switch c.BodyMode {
	case wire.BodyRaw:
	case wire.BodyNative:
		if c.BodyDialect == wire.DialectNone || c.BodyDialect > wire.DialectResponses {
			return fmt.Sprintf("native body in dialect %d, which the host does not encode", c.BodyDialect)
		}
	case wire.BodyOriginal:
		return "body mode original on a request that is not pristine: the host has no caller's bytes to send"
	default:
		return fmt.Sprintf("unknown body mode %d", c.BodyMode)
	}
	if c.ResponseDialect > wire.DialectResponses {
		return fmt.Sprintf("unknown response dialect %d", c.ResponseDialect)
	}
	if len(c.BodyMerge) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(c.BodyMerge, &obj) != nil {
			return "body merge is not a JSON object"
		}
	}
	for _, h := range c.Headers {
		if h.Key == "" {
			return "a header without a name"
		}
	}
	return ""
}

// decodeErrors hands the adapter upstream failures: each must become an
// error (the host retries, fails over or relays it), never a success.
func (k *kit) decodeErrors(ctx context.Context, m wire.Meta, route wire.Route) {
	cases := []struct {
		name    string
		status  int64
		headers []wire.KV
		body    string
	}{
		{"decode/429", 429, []wire.KV{{Key: "Content-Type", Value: "application/json"}, {Key: "Retry-After", Value: "7"}},
			`{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`},
		{"decode/500-empty", 500, nil, ``},
		{"decode/502-html", 502, []wire.KV{{Key: "Content-Type", Value: "text/html"}}, `<html><body>Bad gateway</body></html>`},
	}
	for _, c := range cases {
		in := wire.DecodeInput{Meta: m, Route: route, Status: c.status, Headers: c.headers, Body: []byte(c.body)}
		in.Encode(&k.enc)
		out, err := k.call(ctx, plugin.OpDecode, k.enc.Bytes())
		if why, failed := k.failure(err, false); failed {
			k.fail(c.name, "%s", why)
			continue
		}
		var res wire.DecodeResult
		if err := res.Decode(out); err != nil {
			k.fail(c.name, "result does not decode: %v", err)
			continue
		}
		switch {
		case res.Response != nil:
			k.fail(c.name, "answered a %d as a success", c.status)
		case res.Error == nil:
			k.fail(c.name, "no error for a %d: the host cannot tell the caller what failed", c.status)
		case res.Error.Status < 400 || res.Error.Status > 599:
			k.fail(c.name, "error status %d for an upstream %d", res.Error.Status, c.status)
		default:
			retry := ""
			if res.Error.RetryAfterMs > 0 {
				retry = fmt.Sprintf(", retry after %d ms", res.Error.RetryAfterMs)
			}
			k.pass(c.name, "%d %s%s", res.Error.Status, res.Error.Kind, retry)
		}
	}
}

// describe calls the routing self-description (ABI v1.3), when exported.
func (k *kit) describe(ctx context.Context) *routing.ProviderDescription {
	if !k.p.Exports(plugin.OpProviderDescribe) {
		k.pass("describe", "not exported: pipeline.toml describes the provider")
		return nil
	}
	out, err := k.call(ctx, plugin.OpProviderDescribe, []byte{wire.FormatVersion})
	if err != nil {
		k.fail("describe", "%s", k.explain(err))
		return nil
	}
	if len(out) == 0 || out[0] != wire.FormatVersion {
		k.fail("describe", "missing or unknown format byte")
		return nil
	}
	var d *routing.ProviderDescription
	if err := json.Unmarshal(out[1:], &d); err != nil {
		k.fail("describe", "not a provider description: %v", err)
		return nil
	}
	if d == nil {
		k.pass("describe", "null: pipeline.toml describes the provider")
		return nil
	}
	for _, m := range d.Models {
		if m.ID == "" {
			k.fail("describe", "a model without an id")
			return nil
		}
		if bad(m.InputPrice) || bad(m.OutputPrice) {
			k.fail("describe", "model %s: a negative or non-finite price", m.ID)
			return nil
		}
	}
	if d.CatalogURL != "" {
		if _, err := url.Parse(d.CatalogURL); err != nil {
			k.fail("describe", "catalog_url: %v", err)
			return nil
		}
	}
	if d.Policy.Custom && !k.p.Exports(plugin.OpResolve) {
		k.fail("describe", "policy custom, but the plugin does not export bardo_resolve: the host refuses to load it")
		return nil
	}
	k.pass("describe", "%d models, catalog %q, custom resolve %v", len(d.Models), d.CatalogURL, d.Policy.Custom)
	return d
}

func bad(f float64) bool { return math.IsNaN(f) || math.IsInf(f, 0) || f < 0 }

// resolve asks the plugin about every subsystem's intent, with what the
// standard resolver answers on its description, under the host's budget;
// an answer the host would discard fails, and so does a provider that
// vetoes every intent the standard resolver could serve.
func (k *kit) resolve(ctx context.Context, d routing.ProviderDescription) {
	d.ID = k.report.Descriptor.Name
	if len(d.Models) == 0 { // a catalog fetched at run time: give the resolver one model
		d.Models = []routing.ModelInfo{{ID: kitModel, Family: "openai", Quality: routing.High, ContextWindow: 200_000,
			MaxOutput: 16_384, InputPrice: 1, OutputPrice: 4,
			Features: routing.Features(routing.ToolUse, routing.PromptCaching, routing.StructuredOutputs,
				routing.Vision, routing.Reasoning, routing.LowEffort, routing.LongContext)}}
	}
	var asked, served, standard int
	for _, spec := range routing.Subsystems {
		in := spec.Intent()
		std, ok := routing.StandardResolve(&d, &in)
		var stdp *routing.Resolution
		if ok {
			stdp = &std
			standard++
		}
		plugin.EncodeResolveInput(&k.enc, &in, stdp)
		cctx, cancel := context.WithTimeout(ctx, resolveTimeout)
		out, err := k.call(cctx, plugin.OpResolve, k.enc.Bytes())
		cancel()
		asked++
		if err != nil {
			k.fail("resolve", "intent %s: %s", in.Subsystem, k.explain(err))
			return
		}
		r, err := plugin.DecodeResolveResult(out)
		if err != nil {
			k.fail("resolve", "intent %s: the answer does not decode: %v", in.Subsystem, err)
			return
		}
		if r == nil {
			continue
		}
		if r.Model == "" || bad(r.EstimatedCostUSD) {
			k.fail("resolve", "intent %s: an answer without a model or with an impossible cost (%v): the host discards it", in.Subsystem, r.EstimatedCostUSD)
			return
		}
		served++
	}
	if served == 0 && standard > 0 {
		k.fail("resolve", "vetoed every intent (%d asked, %d the standard resolver would serve): the provider serves nothing routed by intent", asked, standard)
		return
	}
	k.pass("resolve", "%d intents asked, %d served (%d by the standard resolver)", asked, served, standard)
}
