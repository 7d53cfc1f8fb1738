package catalog

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/sdk/routing"
)

// FieldError is one problem with one static model entry.
type FieldError struct {
	Provider string
	Index    int    // the entry's position in the list, from 0
	Model    string // its id, "" when missing
	Field    string // the TOML key
	Msg      string
}

// Error reads `catalog: provider "venice", model "llama-3.3-70b": input_price:
// "abc": not a decimal number`.
func (e *FieldError) Error() string {
	who := fmt.Sprintf("model #%d", e.Index+1)
	if e.Model != "" {
		who = fmt.Sprintf("model %q", e.Model)
	}
	return fmt.Sprintf("catalog: provider %q, %s: %s: %s", e.Provider, who, e.Field, e.Msg)
}

// ValidationError lists every problem found in a provider's static models.
type ValidationError struct {
	Errors []*FieldError
}

// Error joins the problems, one a line.
func (e *ValidationError) Error() string {
	msgs := make([]string, len(e.Errors))
	for i, fe := range e.Errors {
		msgs[i] = fe.Error()
	}
	return strings.Join(msgs, "\n")
}

// Unwrap returns the individual *FieldErrors.
func (e *ValidationError) Unwrap() []error {
	out := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe
	}
	return out
}

// StaticKeys are the keys a static model table may hold.
var StaticKeys = []string{
	"id", "name", "context_window", "max_output",
	"input_price", "output_price", "cache_read_price", "cache_write_price",
	"features", "quality",
}

// FromTOML builds a provider's static models from its decoded TOML model
// tables (what BurntSushi/toml yields for an array of tables decoded into
// map[string]any), e.g.
//
//	[[provider.model]]
//	id = "llama-3.3-70b"
//	name = "Llama 3.3 70B"
//	context_window = 131072
//	max_output = 8192
//	input_price = "0.70"        # USD per million tokens; a string keeps it exact
//	output_price = "2.80"
//	cache_read_price = "0.07"
//	features = ["tool_use", "structured_outputs", "privacy"]
//	quality = "medium"
//
// Only id is required. Features are sdk/routing's wire names (or their
// aliases); quality is a routing.Quality name. Prices are decimal strings
// (preferred: exact) or TOML numbers, never negative. Keys given are
// recorded in Model.Set, so a static entry overrides exactly those fields
// of the backend's dynamic entry (see Merge). Every problem is reported, as
// a *ValidationError of *FieldErrors naming the model and the key.
func FromTOML(provider string, tables []map[string]any) ([]Model, error) {
	var errs []*FieldError
	models := make([]Model, 0, len(tables))
	seen := map[string]int{}
	for i, t := range tables {
		m, fes := staticModel(provider, i, t)
		if m.ID != "" {
			if j, dup := seen[m.ID]; dup {
				fes = append(fes, &FieldError{Provider: provider, Index: i, Model: m.ID, Field: "id",
					Msg: fmt.Sprintf("duplicate of model #%d", j+1)})
			} else {
				seen[m.ID] = i
			}
		}
		errs = append(errs, fes...)
		if len(fes) == 0 {
			models = append(models, m)
		}
	}
	if len(errs) > 0 {
		return nil, &ValidationError{Errors: errs}
	}
	return models, nil
}

func staticModel(provider string, idx int, t map[string]any) (Model, []*FieldError) {
	m := Model{Provider: provider, Origin: OriginStatic}
	var errs []*FieldError
	bad := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Provider: provider, Index: idx, Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	// The id first, so every message can name the model.
	switch v := t["id"].(type) {
	case nil:
		bad("id", "missing")
	case string:
		switch {
		case strings.TrimSpace(v) == "":
			bad("id", "empty")
		case strings.ContainsAny(v, " \t\r\n"):
			bad("id", "%q contains whitespace", v)
		default:
			m.ID = v
		}
	default:
		bad("id", "want a string, got %s", typeName(v))
	}

	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := t[k]
		switch k {
		case "id":
		case "name":
			s, ok := v.(string)
			if !ok {
				bad(k, "want a string, got %s", typeName(v))
				continue
			}
			m.Name = s
			m.Set |= FieldName
		case "context_window", "max_output":
			n, ok := v.(int64)
			if !ok {
				bad(k, "want an integer number of tokens, got %s", typeName(v))
				continue
			}
			if n <= 0 {
				bad(k, "must be positive, got %d", n)
				continue
			}
			if k == "context_window" {
				m.ContextWindow, m.Set = n, m.Set|FieldContextWindow
			} else {
				m.MaxOutput, m.Set = n, m.Set|FieldMaxOutput
			}
		case "input_price", "output_price", "cache_read_price", "cache_write_price":
			p, err := tomlPrice(v)
			if err != nil {
				bad(k, "%v", err)
				continue
			}
			switch k {
			case "input_price":
				m.Input, m.Set = p, m.Set|FieldInputPrice
			case "output_price":
				m.Output, m.Set = p, m.Set|FieldOutputPrice
			case "cache_read_price":
				m.CacheRead, m.Set = p, m.Set|FieldCacheReadPrice
			default:
				m.CacheWrite, m.Set = p, m.Set|FieldCacheWritePrice
			}
		case "features":
			names, ok := stringList(v)
			if !ok {
				bad(k, "want an array of strings, got %s", typeName(v))
				continue
			}
			fs, err := parseFeatures(names)
			if err != nil {
				bad(k, "%v", err)
				continue
			}
			m.Features, m.Set = fs, m.Set|FieldFeatures
		case "quality":
			s, ok := v.(string)
			if !ok {
				bad(k, "want a string, got %s", typeName(v))
				continue
			}
			q, err := routing.ParseQuality(strings.TrimSpace(s))
			if err != nil {
				bad(k, "unknown tier %q (want minimum, low, medium, high or maximum)", s)
				continue
			}
			m.Quality, m.Set = q, m.Set|FieldQuality
		default:
			bad(k, "unknown key (known: %s)", strings.Join(StaticKeys, ", "))
		}
	}
	if m.ContextWindow > 0 && m.MaxOutput > m.ContextWindow {
		bad("max_output", "%d is larger than context_window %d", m.MaxOutput, m.ContextWindow)
	}
	for _, e := range errs {
		e.Model = m.ID
	}
	return m, errs
}

// parseFeatures reads a features list (routing's wire names and aliases,
// ignoring case and surrounding space). An unknown name is an error naming
// the known ones: a typo must not silently drop a capability.
func parseFeatures(names []string) (routing.FeatureSet, error) {
	trimmed := make([]string, len(names))
	for i, n := range names {
		trimmed[i] = strings.TrimSpace(n)
	}
	fs, unknown := routing.ParseFeatures(trimmed)
	if len(unknown) == 0 {
		return fs, nil
	}
	quoted := make([]string, len(unknown))
	for i, n := range unknown {
		quoted[i] = strconv.Quote(n)
	}
	what := "feature"
	if len(unknown) > 1 {
		what = "features"
	}
	return fs, fmt.Errorf("unknown %s %s (known: %s)", what, strings.Join(quoted, ", "),
		strings.Join(routing.AllFeatures.AppendNames(nil), ", "))
}

// tomlPrice reads a price given as a decimal string or a TOML number.
func tomlPrice(v any) (Price, error) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Unknown, errors.New("not a finite number")
		}
		// The shortest decimal that reads back as x: 0.7 is "0.7", not
		// 0.6999999999999999555910790149937.
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return Unknown, fmt.Errorf("want a decimal string (USD per million tokens), got %s", typeName(v))
	}
	p, err := ParsePrice(s)
	if err != nil {
		return Unknown, fmt.Errorf("want USD per million tokens: %w", err)
	}
	return p, nil
}

func stringList(v any) ([]string, bool) {
	switch x := v.(type) {
	case []string:
		return x, true
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case string:
		return "a string"
	case int64, int:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any, []string, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}
