package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/bardoinference/bardo/sdk/adapter/openaicompat"
)

// preferences are OpenRouter's provider routing preferences: the body's
// "provider" object of a chat completion
// (https://openrouter.ai/docs/guides/routing/provider-selection). Every
// field OpenRouter documents is accepted, with its documented values; an
// unknown field or value fails the load. Fields are pointers or omitted
// when empty, so only what the operator wrote is sent.
type preferences struct {
	// Order lists provider slugs to try in order.
	Order []string `json:"order,omitempty"`
	// AllowFallbacks lets OpenRouter use other providers when those fail
	// (its default: true).
	AllowFallbacks *bool `json:"allow_fallbacks,omitempty"`
	// RequireParameters uses only providers that support every parameter
	// of the request.
	RequireParameters *bool `json:"require_parameters,omitempty"`
	// DataCollection is "allow" or "deny" (providers that may store data).
	DataCollection string `json:"data_collection,omitempty"`
	// ZDR restricts routing to zero-data-retention endpoints.
	ZDR *bool `json:"zdr,omitempty"`
	// EnforceDistillableText restricts routing to models that allow text
	// distillation.
	EnforceDistillableText *bool `json:"enforce_distillable_text,omitempty"`
	// Only and Ignore allow and skip provider slugs.
	Only   []string `json:"only,omitempty"`
	Ignore []string `json:"ignore,omitempty"`
	// Quantizations filters endpoints by quantization level.
	Quantizations []string `json:"quantizations,omitempty"`
	// Sort orders the providers: "price", "throughput", "latency", or
	// {by, partition}. The union-typed fields stay raw JSON, checked by
	// check and sent as written.
	Sort json.RawMessage `json:"sort,omitempty"`
	// PreferredMinThroughput (tokens/s) and PreferredMaxLatency (seconds):
	// a number, or percentile cutoffs {p50, p75, p90, p99}.
	PreferredMinThroughput json.RawMessage `json:"preferred_min_throughput,omitempty"`
	PreferredMaxLatency    json.RawMessage `json:"preferred_max_latency,omitempty"`
	// MaxPrice is the most the request may cost, in USD per million tokens
	// (prompt, completion) or per unit (image, audio, request).
	MaxPrice *maxPrice `json:"max_price,omitempty"`
}

var (
	sortValues         = []string{"price", "throughput", "latency"}
	partitionValues    = []string{"model", "none"}
	dataCollectionVals = []string{"allow", "deny"}
	quantizationValues = []string{"int4", "int8", "fp4", "fp6", "fp8", "fp16", "bf16", "fp32", "unknown"}
)

// members returns the body members to merge: {"provider": …} as
// configured, and the same without "sort" (nil where nothing is left).
func (p *preferences) members() (merge, unsorted []byte, err error) {
	if p == nil {
		return nil, nil, nil
	}
	if err := p.check(); err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	wrap := func(p preferences) ([]byte, error) {
		b, err := json.Marshal(p)
		if err != nil || string(b) == "{}" {
			return nil, err
		}
		return json.Marshal(map[string]json.RawMessage{"provider": b})
	}
	if merge, err = wrap(*p); err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	u := *p
	u.Sort = nil
	if unsorted, err = wrap(u); err != nil {
		return nil, nil, fmt.Errorf("provider: %w", err)
	}
	return merge, unsorted, nil
}

func (p *preferences) check() error {
	if p.DataCollection != "" && !slices.Contains(dataCollectionVals, p.DataCollection) {
		return fmt.Errorf("data_collection %q: want %s", p.DataCollection, oneOf(dataCollectionVals))
	}
	for _, l := range []struct {
		key   string
		slugs []string
	}{{"order", p.Order}, {"only", p.Only}, {"ignore", p.Ignore}} {
		for i, s := range l.slugs {
			if s == "" || strings.TrimSpace(s) != s {
				return fmt.Errorf("%s[%d] %q: want a provider slug", l.key, i, s)
			}
		}
	}
	for i, q := range p.Quantizations {
		if !slices.Contains(quantizationValues, q) {
			return fmt.Errorf("quantizations[%d] %q: want %s", i, q, oneOf(quantizationValues))
		}
	}
	if p.Sort != nil {
		if err := checkSort(p.Sort); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		key string
		raw json.RawMessage
	}{{"preferred_min_throughput", p.PreferredMinThroughput}, {"preferred_max_latency", p.PreferredMaxLatency}} {
		if f.raw != nil {
			if err := checkPerformance(f.key, f.raw); err != nil {
				return err
			}
		}
	}
	if p.MaxPrice != nil {
		return p.MaxPrice.check()
	}
	return nil
}

// checkSort validates "sort": a strategy name, or {by, partition}.
func checkSort(b json.RawMessage) error {
	if len(b) > 0 && b[0] == '{' {
		var o struct {
			By        string `json:"by"`
			Partition string `json:"partition"`
		}
		if err := strictDecode(b, &o); err != nil {
			return fmt.Errorf("sort: %w", err)
		}
		if !slices.Contains(sortValues, o.By) {
			return fmt.Errorf("sort.by %q: want %s", o.By, oneOf(sortValues))
		}
		if o.Partition != "" && !slices.Contains(partitionValues, o.Partition) {
			return fmt.Errorf("sort.partition %q: want %s", o.Partition, oneOf(partitionValues))
		}
		return nil
	}
	var name string
	if err := json.Unmarshal(b, &name); err != nil || !slices.Contains(sortValues, name) {
		return fmt.Errorf("sort %s: want %s, or a table {by, partition}", b, oneOf(sortValues))
	}
	return nil
}

// checkPerformance validates a throughput or latency preference: one
// positive number, or percentile cutoffs {p50, p75, p90, p99}.
func checkPerformance(key string, b json.RawMessage) error {
	if len(b) > 0 && b[0] == '{' {
		var pc struct {
			P50, P75, P90, P99 *float64
		}
		if err := strictDecode(b, &pc); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		set := 0
		for _, v := range []*float64{pc.P50, pc.P75, pc.P90, pc.P99} {
			if v != nil {
				if !positive(*v) {
					return fmt.Errorf("%s: cutoff %v: want a positive number", key, *v)
				}
				set++
			}
		}
		if set == 0 {
			return fmt.Errorf("%s: set at least one of p50, p75, p90, p99", key)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil || !positive(v) {
		return fmt.Errorf("%s %s: want a positive number, or a table {p50, p75, p90, p99}", key, b)
	}
	return nil
}

// maxPrice is "max_price": USD per million tokens (prompt, completion), or
// per image, audio input or request.
type maxPrice struct {
	Prompt     *float64 `json:"prompt,omitempty"`
	Completion *float64 `json:"completion,omitempty"`
	Image      *float64 `json:"image,omitempty"`
	Audio      *float64 `json:"audio,omitempty"`
	Request    *float64 `json:"request,omitempty"`
}

func (m *maxPrice) check() error {
	for _, f := range []*float64{m.Prompt, m.Completion, m.Image, m.Audio, m.Request} {
		if f != nil && (*f < 0 || math.IsNaN(*f) || math.IsInf(*f, 0)) {
			return fmt.Errorf("max_price: %v is not a price (USD, zero or more)", *f)
		}
	}
	return nil
}

// strictDecode decodes a raw JSON object refusing unknown fields, as the
// config decoder does for the typed fields.
func strictDecode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

func oneOf(vs []string) string { return `"` + strings.Join(vs, `", "`) + `"` }

// withAttribution adds OpenRouter's app attribution headers to the
// configured ones. Naming a header both ways is refused: one of the two
// values would be dropped without a word.
func withAttribution(c openaicompat.Config, referer, title string) (openaicompat.Config, error) {
	add := map[string]string{}
	if referer != "" {
		add["HTTP-Referer"] = referer
	}
	if title != "" {
		add["X-Title"] = title
	}
	if len(add) == 0 {
		return c, nil
	}
	h := make(map[string]string, len(c.Headers)+len(add))
	for k, v := range c.Headers {
		for a := range add {
			if strings.EqualFold(k, a) {
				return c, fmt.Errorf("openrouter: config headers.%s and %s both set it: keep one", k, strings.ToLower(strings.ReplaceAll(a, "-", "_")))
			}
		}
		h[k] = v
	}
	for k, v := range add {
		h[k] = v
	}
	c.Headers = h
	return c, nil
}

func configError(err error) error { return fmt.Errorf("openrouter: config %w", err) }
