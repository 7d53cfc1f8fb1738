package gateway

// POST /v1/embeddings routed to upstream providers, priced and billed.
//
// Which providers offer embeddings: an enabled [[provider]] whose models
// match the asked model and whose adapter speaks OpenAI Chat Completions —
// its encode of a chat request is an OpenAI-dialect call to
// <base>/chat/completions (or, with api = "responses", a Responses call to
// <base>/responses). Its embeddings are then <base>/embeddings,
// reached with the same headers (the provider's credential, or the
// caller's own key for a direct provider). That is OpenAI and every
// OpenAI-compatible backend (OpenRouter, Together, Mistral, vLLM, Ollama…);
// the Anthropic and Gemini adapters do not qualify, nor does a simulator,
// so an Anthropic-only gateway answers 404 for any model that is not a
// local [[model]], naming those.
//
// The caller's body is forwarded untouched (unknown fields pass through)
// and the upstream's answer relayed as it came; its usage.prompt_tokens is
// what the request is billed for, at the serving provider's input price
// (an embedding has no output tokens). The failover is a loop of its own,
// not the engine's (which is shaped for chat): the next such provider on a
// connection failure, 429, 5xx or 404 (an OpenAI-compatible backend
// without embeddings answers 404), one try each.

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/catalog"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/host/pricing"
	"github.com/bardoinference/bardo/host/upstream"
	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// embedUpstream serves an embeddings request for a model no [[model]]
// names: admitted as a request that spends, routed, settled once.
func (g *Gateway) embedUpstream(ctx *fasthttp.RequestCtx, p *pipeline.Pipeline, rid string, req *embeddingRequest, began time.Time) {
	const d = wire.DialectOpenAI
	body := ctx.PostBody()
	s := Settlement{RequestID: rid, Dialect: d, Asked: req.Model, Path: PathError}
	var tab Tab
	// settle closes the tab exactly once, whatever the way out, and puts
	// the bill's figures on the answer.
	settle := func() {
		s.Latency = time.Since(began)
		if s.Provider != "" {
			s.Prices, s.Priced = embedPrices(p, s.Provider, s.Model)
		}
		if tab != nil {
			b := tab.Close(&s)
			s.Bill = &b
			for _, kv := range b.Headers {
				ctx.Response.Header.Set(kv.Key, kv.Value)
			}
		}
		g.settle(&s)
	}
	fail := func(e *wire.Error) {
		s.Path, s.Err = PathError, e
		s.Status, _ = codecFor(d).EncodeError(e)
		settle()
		WriteError(ctx, d, e)
	}

	if req.Input == nil || string(req.Input) == "null" {
		fail(&wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "input: is required"})
		return
	}
	model := req.Model
	adm := &Admission{Dialect: d, Path: "/v1/embeddings", Header: &ctx.Request.Header, RemoteIP: remoteIP(ctx),
		Model: model, Spends: true, InputTokens: int64(len(body)+bytesPerToken-1) / bytesPerToken,
		Direct: directOnly(p, &ctx.Request.Header, model), Method: "POST", Body: ctx.PostBody()}
	adm.Quotes = func() []Quote {
		if pr, ok := embedDearest(p, model); ok {
			return []Quote{{Model: model, Prices: pr}}
		}
		return nil
	}
	caller, werr := g.admit(context.Background(), adm)
	s.Tenant, s.Key, tab = caller.Tenant, caller.Key, caller.Tab
	for _, kv := range caller.Headers {
		ctx.Response.Header.Set(kv.Key, kv.Value)
	}
	if werr != nil {
		fail(werr) // a refusal with a tab is settled on it: a record, no charge
		addErrorMembers(ctx, caller.ErrorMembers)
		return
	}

	rctx, cancel := context.WithTimeout(context.Background(), g.timeout())
	defer cancel()
	x := g.newExchange(&ctx.Request.Header, rid, caller.Tenant, d, probeRequest(model), nil)
	var (
		tried   []string
		lastErr *wire.Error
		offered bool // some provider can embed the model
		waited  time.Duration
	)
	first := true
	for _, pr := range p.Providers {
		if !pr.Enabled || !pr.Spec.Serves(model) || (!first && !pr.Spec.Failover) {
			continue
		}
		first = false
		route := wire.Route{Provider: pr.Spec.Name, Model: model, BaseURL: pr.Spec.BaseURL}
		call := embeddingCall(rctx, p, x, pr, route)
		if call == nil {
			continue
		}
		offered = true
		if !g.available(route.Provider) || !g.allow(route.Provider) {
			tried = append(tried, route.Provider+":down")
			continue
		}
		if pr.Spec.Direct {
			if x.CallerKey == "" {
				lastErr = &wire.Error{Status: 401, Kind: wire.ErrAuthentication,
					Message: "provider " + route.Provider + " is reached with your own API key: send it as " + HeaderUpstreamKey + ": <key> (or, without a gateway key, as Authorization: Bearer <key>)"}
				tried = append(tried, route.Provider+":401")
				continue
			}
			pipeline.ExpandCallerKey(call.Headers, x.CallerKey)
		} else {
			pr.ExpandCredential(call.Headers)
		}
		t0 := time.Now()
		resp, werr := g.send(rctx, x, pr, &upstream.Request{Method: "POST", URL: call.URL,
			Headers: withJSONContentType(dropUnexpanded(call.Headers)), Body: body})
		took := time.Since(t0)
		waited += took
		if werr != nil {
			g.record(route.Provider, attemptOutcome{err: werr, transient: true}, took, false)
			lastErr = werr
			tried = append(tried, route.Provider+":"+strconv.FormatInt(werr.Status, 10))
			continue
		}
		if resp.Status/100 == 2 {
			g.record(route.Provider, attemptOutcome{resp: resp}, took, false)
			s.Path, s.Provider, s.Model, s.Upstream, s.Direct = PathPassthrough, route.Provider, model, true, pr.Spec.Direct
			s.Status, s.Tried, s.UpstreamWait = resp.Status, tried, waited
			s.Usage = embeddingUsage(resp.Body)
			ctx.Response.Header.Set(HeaderProvider, route.Provider)
			ctx.Response.Header.Set(HeaderModel, model)
			if len(tried) > 0 {
				ctx.Response.Header.Set(HeaderFallback, strings.Join(tried, ","))
			}
			if pr.Spec.Direct {
				ctx.Response.Header.Set(HeaderCost, pricing.DirectCost) // the bill's, when there is one, says the same
			}
			settle()
			ctx.SetStatusCode(resp.Status)
			ctx.SetContentType("application/json")
			ctx.SetBody(resp.Body)
			return
		}
		// The upstream's error, read by its adapter like any other.
		_, werr = p.Decode(rctx, x, pr, route, resp.Status, resp.Headers, resp.Body)
		if werr == nil {
			werr = &wire.Error{Status: 502, Kind: wire.ErrUpstream, Message: "upstream " + route.Provider + " failed"}
		}
		werr.Message = pr.Redact(werr.Message)
		transient := werr.Retryable || resp.Status >= 500 || resp.Status == 429 || resp.Status == 408 || resp.Status == 404
		g.record(route.Provider, attemptOutcome{err: werr, transient: transient, upStatus: resp.Status}, took, false)
		if !transient {
			// A request the upstream found invalid fails everywhere: relayed
			// in OpenAI's shape, never charged (billing charges no error).
			s.Provider, s.Model, s.Upstream, s.Tried, s.UpstreamWait = route.Provider, model, true, tried, waited
			ctx.Response.Header.Set(HeaderProvider, route.Provider)
			ctx.Response.Header.Set(HeaderModel, model)
			fail(werr)
			return
		}
		lastErr = werr
		tried = append(tried, route.Provider+":"+strconv.FormatInt(int64(resp.Status), 10))
	}
	s.Tried, s.UpstreamWait = tried, waited
	if len(tried) > 0 {
		ctx.Response.Header.Set(HeaderFallback, strings.Join(tried, ","))
	}
	switch {
	case !offered:
		fail(noEmbeddingProvider(p, model))
	case lastErr != nil:
		fail(lastErr)
	default:
		fail(&wire.Error{Status: 503, Kind: wire.ErrOverloaded, RetryAfterMs: 30_000,
			Message: "every provider that can embed with model " + model + " is temporarily out of service (" +
				strings.Join(tried, ", ") + "); retry later"})
	}
}

// probeRequest is the chat request an adapter is asked to encode to learn
// how it reaches its upstream: its URL, dialect and headers.
func probeRequest(model string) *wire.Request {
	return &wire.Request{Model: model, Params: wire.Params{MaxTokens: 1, Set: wire.HasMaxTokens},
		Messages: []wire.Message{{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: "embeddings"}}}}}
}

// embeddingCall returns the provider's embeddings call — <base>/embeddings
// with its chat call's headers — when its adapter speaks OpenAI Chat
// Completions (or the Responses API) at <base>/chat/completions (or
// <base>/responses), else nil.
func embeddingCall(ctx context.Context, p *pipeline.Pipeline, x *pipeline.Exchange, pr *pipeline.Provider, route wire.Route) *wire.UpstreamCall {
	er, werr := p.Encode(ctx, x, pr, route)
	if werr != nil || er.Call == nil {
		return nil
	}
	var base string
	ok := false
	switch er.Call.BodyDialect {
	case wire.DialectOpenAI:
		base, ok = strings.CutSuffix(er.Call.URL, "/chat/completions")
	case wire.DialectResponses: // openai-compatible with api = "responses"
		base, ok = strings.CutSuffix(er.Call.URL, "/responses")
	}
	if !ok {
		return nil
	}
	return &wire.UpstreamCall{Method: "POST", URL: base + "/embeddings", Headers: er.Call.Headers}
}

// withJSONContentType makes sure the forwarded body is announced as JSON.
func withJSONContentType(hs []wire.KV) []wire.KV {
	for _, h := range hs {
		if strings.EqualFold(h.Key, "Content-Type") {
			return hs
		}
	}
	return append(hs, wire.KV{Key: "Content-Type", Value: "application/json"})
}

// embeddingUsage reads usage.prompt_tokens from an embeddings answer
// without decoding its vectors; nil when it has none. OpenAI writes usage
// last, after tens of kilobytes of vectors: it is looked for at the end,
// and the object scanned member by member when it is not there.
func embeddingUsage(body []byte) *wire.Usage {
	var usage struct {
		PromptTokens *int64 `json:"prompt_tokens"`
	}
	read := func(val []byte) *wire.Usage {
		if json.Unmarshal(val, &usage) != nil || usage.PromptTokens == nil {
			return nil
		}
		return &wire.Usage{InputTokens: max(*usage.PromptTokens, 0)}
	}
	if i := bytes.LastIndex(body, []byte(`"usage"`)); i > 0 {
		// The top level's last member: a key after '{' or ',', and after
		// its value only the object's '}'.
		j := i - 1
		for j > 0 && isSpace(body[j]) {
			j--
		}
		k := jsonscan.SkipSpace(body, i+len(`"usage"`))
		if (body[j] == ',' || body[j] == '{') && k < len(body) && body[k] == ':' {
			vs := jsonscan.SkipSpace(body, k+1)
			if ve := jsonscan.SkipValue(body, vs); ve > vs {
				end := jsonscan.SkipSpace(body, ve)
				if end < len(body) && body[end] == '}' && jsonscan.SkipSpace(body, end+1) == len(body) {
					if u := read(body[vs:ve]); u != nil {
						return u
					}
				}
			}
		}
	}
	var u *wire.Usage
	jsonscan.EachMember(body, func(key, val []byte) {
		if string(key) == "usage" {
			u = read(val)
		}
	})
	return u
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// embedPrices are provider's prices for model, an embedding's: the input
// price, and no output tokens (a catalog entry that gives no output price
// is still priced).
func embedPrices(p *pipeline.Pipeline, provider, model string) (pricing.Prices, bool) {
	m, ok := p.PricedAt(provider, model)
	if !ok {
		return pricing.Prices{}, false
	}
	pr := pricing.PricesOf(m.Model, pricing.ConventionFor(model))
	if pr.Input.Known() && !pr.Output.Known() {
		pr.Output = catalog.PriceFromNanos(0)
	}
	return pr, pr.Known()
}

// embedDearest is the highest input price any enabled provider asks for
// model: what the admission reserves at.
func embedDearest(p *pipeline.Pipeline, model string) (pricing.Prices, bool) {
	var best pricing.Prices
	found := false
	for _, m := range p.Priced(model) {
		pr, ok := embedPrices(p, m.Provider, model)
		if ok && (!found || pr.Input.Nanos() > best.Input.Nanos()) {
			best, found = pr, true
		}
	}
	return best, found
}

// noEmbeddingProvider is the 404 of a model no local [[model]] names and
// no provider can embed with: it says why, and which local models there
// are.
func noEmbeddingProvider(p *pipeline.Pipeline, model string) *wire.Error {
	var local []string
	if p != nil && p.Config != nil {
		for _, m := range p.Config.ModelSpecs {
			local = append(local, m.Name)
		}
	}
	msg := "The model `" + model + "` does not exist here: no configured provider offers embeddings for it " +
		"(embeddings are routed to OpenAI-compatible providers whose models match; Anthropic and Gemini providers have no embeddings API here)"
	var disabled []string
	if p != nil {
		for _, pr := range p.Providers {
			if !pr.Enabled && pr.Spec.Serves(model) {
				disabled = append(disabled, pr.Spec.Name)
			}
		}
	}
	if len(disabled) > 0 {
		msg += "; providers " + strings.Join(disabled, ", ") + " match the model but have no credentials configured"
	}
	if len(local) > 0 {
		msg += "; the local [[model]] embedders are: " + strings.Join(local, ", ")
	} else {
		msg += "; no local [[model]] embedder is configured either"
	}
	return &wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: msg}
}
