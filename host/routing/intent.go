// Package routing builds a request's intent on the host: from the request's
// model, the X-Bardo-Subsystem and X-Bardo-Vitality headers, the body's
// optional `bardo` object, the request's shape, and — for plain clients
// that send none of those — a task type inferred from the content and the
// caller's key tier. The intent then goes to the resolver in the SDK
// (github.com/bardoinference/bardo/sdk/routing), which runs the same way
// natively and inside plugins. README.md documents the precedence.
package routing

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	route "github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Request headers that carry intent.
const (
	HeaderSubsystem = "X-Bardo-Subsystem"
	HeaderVitality  = "X-Bardo-Vitality"
)

// BodyField is the top-level request member that carries an intent object.
// The gateway strips it before the request goes upstream.
const BodyField = "bardo"

// ErrBadIntent is wrapped by every error Build returns: the caller sent an
// intent that cannot be honoured as written (an HTTP 400).
var ErrBadIntent = errors.New("invalid routing intent")

// AutoModel is the model name that asks the gateway to choose, as
// GET /v1/models lists it.
const AutoModel = "auto"

// autoModels are model names that ask the gateway to choose ("" included):
// with any other name the model is explicit and is never swapped.
var autoModels = [...]string{"", AutoModel, "bardo", "bardo/auto", "bardo-auto"}

// IsAutoModel reports whether a request's model asks the gateway to choose.
func IsAutoModel(model string) bool {
	for _, m := range autoModels {
		if strings.EqualFold(m, model) {
			return true
		}
	}
	return false
}

// Sources is everything about a request that bears on its intent.
type Sources struct {
	// Model is the request's model field.
	Model string
	// Subsystem and Vitality are the raw X-Bardo-Subsystem and
	// X-Bardo-Vitality header values ("" when absent).
	Subsystem string
	Vitality  string
	// Wallet is the raw X-Bardo-Wallet header: a self-funding agent's
	// economics, "revenue=<usd>,cost=<usd>,balance=<usd>" (lifetime revenue,
	// lifetime cost, revenue wallet balance).
	Wallet string
	// Bardo is the body's `bardo` object as raw JSON (see BardoObject), nil
	// when absent.
	Bardo []byte
	// Request is the canonical request, for task inference, the request
	// shape's requirements and the size estimate; nil skips all three.
	Request *wire.Request
	// Tier is the caller's key tier ("free", "pro", "golem"; see
	// TierCostSensitivity). It sets the cost sensitivity of inferred
	// intents.
	Tier string
}

// Built is an intent and how it was arrived at.
type Built struct {
	Intent route.Intent
	// Source says where the base intent came from: "subsystem" (the table),
	// "task" (inferred for a plain client) — the body's fields and the
	// request shape may have refined either.
	Source string
	// Task is the inferred task when Source is "task".
	Task Task
	// Vitality is the applied X-Bardo-Vitality, NaN when absent.
	Vitality float64
	// Notes are non-fatal observations for the log and the
	// provider:resolved event ("unknown-subsystem:x",
	// "unknown-feature:x", "bardo-field-ignored:x").
	Notes []string
}

// Build turns a request's sources into its intent. Precedence, lowest
// first (README.md):
//
//  1. the base: the subsystem's table intent — the body's bardo.subsystem,
//     else X-Bardo-Subsystem; an unknown subsystem gets the default intent
//     and a note — or, with no subsystem, the intent of the task inferred
//     from the content, at the key tier's cost sensitivity;
//  2. the body's bardo object: quality, max_latency_ms, cost_sensitivity
//     and security_class replace the base's; require and prefer add to it;
//  3. the request's shape: tools require tool_use, images require vision, a
//     response_format schema prefers structured_outputs;
//  4. the model field, when it is not "auto" (or empty): explicit, never
//     swapped for another;
//  5. mortality pressure from X-Bardo-Vitality (risk, death and operator
//     exempt).
func Build(src *Sources) (Built, error) {
	b := Built{Vitality: math.NaN()}
	body, err := parseBardo(src.Bardo, &b)
	if err != nil {
		return b, err
	}

	subsystem := strings.TrimSpace(src.Subsystem)
	if body.Subsystem != nil {
		subsystem = strings.TrimSpace(*body.Subsystem)
	}
	if subsystem != "" {
		in, ok := route.SubsystemIntent(subsystem)
		if !ok {
			b.Notes = append(b.Notes, "unknown-subsystem:"+subsystem)
		}
		b.Intent, b.Source = in, "subsystem"
	} else {
		b.Task = InferTask(src.Request)
		b.Intent, b.Source = TaskIntent(b.Task, TierCostSensitivity(src.Tier)), "task"
	}

	if err := body.apply(&b); err != nil {
		return b, err
	}
	if src.Request != nil {
		b.Intent.Require |= ShapeRequires(src.Request)
		b.Intent.Prefer |= ShapePrefers(src.Request)
		b.Intent.InputTokens, b.Intent.OutputTokens = EstimateTokens(src.Request)
	}
	if !IsAutoModel(src.Model) {
		b.Intent.Model = src.Model
	}
	if v := strings.TrimSpace(src.Vitality); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f < 0 || f > 1 {
			return b, fmt.Errorf("%w: %s must be a number from 0 to 1, got %q", ErrBadIntent, HeaderVitality, v)
		}
		b.Vitality = f
		route.ApplyMortality(&b.Intent, f)
	}
	if v := strings.TrimSpace(src.Wallet); v != "" {
		w, err := parseWallet(v)
		if err != nil {
			return b, fmt.Errorf("%w: %s: %v", ErrBadIntent, HeaderWallet, err)
		}
		b.Intent.Wallet = w
	}
	return b, nil
}

// HeaderWallet carries a self-funding agent's economics (see Sources.Wallet).
const HeaderWallet = "X-Bardo-Wallet"

// parseWallet reads "revenue=300,cost=100,balance=50" (USD, any order,
// every key required, none negative).
func parseWallet(s string) (route.Wallet, error) {
	w := route.Wallet{Known: true}
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return w, fmt.Errorf("want revenue=<usd>,cost=<usd>,balance=<usd>, got %q", s)
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
			return w, fmt.Errorf("%s must be a non-negative number of USD, got %q", k, v)
		}
		switch strings.TrimSpace(k) {
		case "revenue":
			w.LifetimeRevenue = f
		case "cost":
			w.LifetimeCost = f
		case "balance":
			w.Balance = f
		default:
			return w, fmt.Errorf("unknown key %q (revenue, cost, balance)", k)
		}
		seen[strings.TrimSpace(k)] = true
	}
	if len(seen) != 3 {
		return w, fmt.Errorf("revenue, cost and balance are all required, got %q", s)
	}
	return w, nil
}

// bardoObject is the body's `bardo` member. Pointers tell "absent" from
// zero (cost_sensitivity 0 is a statement).
type bardoObject struct {
	Require         []string
	Prefer          []string
	Quality         *string
	MaxLatencyMs    *int64
	CostSensitivity *float64
	SecurityClass   *string
	Subsystem       *string
}

// parseBardo decodes the bardo object member by member, so that an unknown
// member is a note rather than an error (agents add fields before the
// gateway knows them) while a known member of the wrong type is an error.
// It walks the object with jsonscan instead of decoding into a map: this
// runs on every request that carries the object.
func parseBardo(raw []byte, b *Built) (bardoObject, error) {
	var o bardoObject
	if len(raw) == 0 {
		return o, nil
	}
	if !json.Valid(raw) {
		return o, fmt.Errorf("%w: the %q member is not valid JSON", ErrBadIntent, BodyField)
	}
	if i := jsonscan.SkipSpace(raw, 0); raw[i] != '{' {
		return o, fmt.Errorf("%w: the %q member must be an object", ErrBadIntent, BodyField)
	}
	var err error
	jsonscan.EachMember(raw, func(k, v []byte) {
		if err != nil {
			return
		}
		var e error
		switch string(k) {
		case "require":
			o.Require, e = stringList(v)
		case "prefer":
			o.Prefer, e = stringList(v)
		case "quality":
			o.Quality, e = stringValue(v)
		case "security_class":
			o.SecurityClass, e = stringValue(v)
		case "subsystem":
			o.Subsystem, e = stringValue(v)
		case "max_latency_ms":
			var n int64
			if n, e = strconv.ParseInt(string(v), 10, 64); e == nil {
				o.MaxLatencyMs = &n
			} else {
				e = errors.New("want an integer")
			}
		case "cost_sensitivity":
			var f float64
			if f, e = strconv.ParseFloat(string(v), 64); e == nil {
				o.CostSensitivity = &f
			} else {
				e = errors.New("want a number")
			}
		default:
			b.Notes = append(b.Notes, "bardo-field-ignored:"+string(k))
		}
		if e != nil {
			err = fmt.Errorf("%w: %s.%s: %w", ErrBadIntent, BodyField, k, e)
		}
	})
	return o, err
}

// stringValue decodes a JSON string (null: absent).
func stringValue(v []byte) (*string, error) {
	if string(v) == "null" {
		return nil, nil
	}
	if len(v) < 2 || v[0] != '"' {
		return nil, errors.New("want a string")
	}
	var s string
	if bytes.IndexByte(v, '\\') < 0 {
		s = string(v[1 : len(v)-1]) // valid JSON without escapes: the bytes are the string
	} else if err := json.Unmarshal(v, &s); err != nil {
		return nil, err
	}
	return &s, nil
}

// stringList decodes a JSON array of strings (null: empty).
func stringList(v []byte) ([]string, error) {
	if string(v) == "null" {
		return nil, nil
	}
	if v[0] != '[' {
		return nil, errors.New("want an array of feature names")
	}
	var out []string
	i := jsonscan.SkipSpace(v, 1)
	for i < len(v) && v[i] != ']' {
		j := jsonscan.SkipValue(v, i)
		if j < 0 {
			return nil, errors.New("want an array of feature names")
		}
		s, err := stringValue(v[i:j])
		if err != nil || s == nil {
			return nil, errors.New("want an array of feature names")
		}
		out = append(out, *s)
		i = jsonscan.SkipSpace(v, j)
		if i < len(v) && v[i] == ',' {
			i = jsonscan.SkipSpace(v, i+1)
		}
	}
	return out, nil
}

// apply overlays the body's fields on the base intent.
func (o *bardoObject) apply(b *Built) error {
	in := &b.Intent
	req, unknown := route.ParseFeatures(o.Require)
	if len(unknown) > 0 {
		// A typo must not silently drop a hard requirement.
		return fmt.Errorf("%w: %s.require: unknown feature %q", ErrBadIntent, BodyField, unknown[0])
	}
	pref, unknown := route.ParseFeatures(o.Prefer)
	for _, u := range unknown {
		b.Notes = append(b.Notes, "unknown-feature:"+u)
	}
	in.Require |= req
	// A feature both required and preferred is required.
	in.Prefer = (in.Prefer | pref) &^ in.Require
	if o.Quality != nil {
		q, err := route.ParseQuality(*o.Quality)
		if err != nil {
			return fmt.Errorf("%w: %s.quality: %w", ErrBadIntent, BodyField, err)
		}
		in.Quality = q
	}
	if o.MaxLatencyMs != nil {
		if *o.MaxLatencyMs < 0 {
			return fmt.Errorf("%w: %s.max_latency_ms must not be negative", ErrBadIntent, BodyField)
		}
		in.MaxLatencyMs = *o.MaxLatencyMs
	}
	if o.CostSensitivity != nil {
		cs := *o.CostSensitivity
		if math.IsNaN(cs) || cs < 0 || cs > 1 {
			return fmt.Errorf("%w: %s.cost_sensitivity must be from 0 to 1", ErrBadIntent, BodyField)
		}
		in.CostSensitivity = cs
	}
	if o.SecurityClass != nil {
		c, err := route.ParseSecurityClass(*o.SecurityClass)
		if err != nil {
			return fmt.Errorf("%w: %s.security_class: %w", ErrBadIntent, BodyField, err)
		}
		in.Security = c
	}
	return nil
}

// BardoObject returns the raw `bardo` member of a request's unknown
// top-level fields (wire.Request.Extra), or nil.
func BardoObject(extra []byte) []byte {
	var out []byte
	jsonscan.EachMember(extra, func(k, v []byte) {
		if string(k) == BodyField {
			out = v
		}
	})
	if len(out) == 4 && string(out) == "null" {
		return nil
	}
	return out
}

// tierCostSensitivity are the default cost sensitivities of the key tiers
// (003 "Feature tiers"; the spec says plain clients' cost sensitivity comes
// from the pricing tier but gives no numbers). Free keys are steered to
// cheap models, Pro keys balance, Golem keys mostly send subsystem hints
// and get the middle for the rest.
var tierCostSensitivity = map[string]float64{
	"free":  0.8,
	"pro":   0.4,
	"golem": 0.5,
}

// DefaultTierCostSensitivity applies to an unknown or empty tier.
const DefaultTierCostSensitivity = 0.5

// TierCostSensitivity returns a key tier's cost sensitivity.
func TierCostSensitivity(tier string) float64 {
	if cs, ok := tierCostSensitivity[strings.ToLower(tier)]; ok {
		return cs
	}
	return DefaultTierCostSensitivity
}
