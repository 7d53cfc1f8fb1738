// Package catalog holds the model catalogs of the gateway's backends: which
// models each provider serves, at what price per million tokens, with which
// context window, output limit and features.
//
// A catalog comes from two places and nowhere else — no model id or price
// is compiled into the binary:
//
//   - static entries in pipeline.toml, built with FromTOML;
//   - the backend's own GET <base_url>/models, fetched by a Refresher
//     (hourly by default, jittered, with a timeout), which understands the
//     OpenAI, OpenRouter, Venice and BlockRun list shapes (see Decode).
//
// Merge combines them: a static entry overrides exactly the fields it sets.
// A failed refresh keeps the last good catalog and records the error and
// the catalog's age. Readers get an immutable *Catalog through an atomic
// pointer, so a lookup on the request path takes no lock. README.md in
// this directory is the operator reference.
//
// Features and quality levels are the intent resolver's own
// (routing.FeatureSet, routing.Quality from sdk/routing): one vocabulary,
// no translation; Model.Info gives the resolver's view of a model.
package catalog

import (
	"slices"
	"strings"
	"time"
)

// Catalog is one provider's models at one moment. It is immutable: a
// refresh builds a new one and swaps it in, so a reader may keep using the
// one it holds.
type Catalog struct {
	provider  string
	models    []Model // sorted by ID, unique
	index     map[string]int32
	fetchedAt time.Time
}

// NewCatalog returns the catalog of provider holding models (copied, sorted
// by id; of duplicate ids the first is kept). fetchedAt is when its dynamic
// part was fetched, zero for a static-only catalog.
func NewCatalog(provider string, models []Model, fetchedAt time.Time) *Catalog {
	ms := make([]Model, 0, len(models))
	seen := make(map[string]bool, len(models))
	for _, m := range models {
		if m.ID == "" || seen[m.ID] {
			continue
		}
		seen[m.ID] = true
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b Model) int { return strings.Compare(a.ID, b.ID) })
	idx := make(map[string]int32, len(ms))
	for i := range ms {
		idx[ms[i].ID] = int32(i)
	}
	return &Catalog{provider: provider, models: ms, index: idx, fetchedAt: fetchedAt}
}

// Provider returns the provider's name.
func (c *Catalog) Provider() string { return c.provider }

// Len returns the number of models.
func (c *Catalog) Len() int { return len(c.models) }

// FetchedAt returns when the dynamic part was fetched (zero: static only).
func (c *Catalog) FetchedAt() time.Time { return c.fetchedAt }

// Lookup returns the model with exactly this id.
func (c *Catalog) Lookup(id string) (*Model, bool) {
	i, ok := c.index[id]
	if !ok {
		return nil, false
	}
	return &c.models[i], true
}

// Models returns every model, sorted by id. The slice and the *Model
// Lookup returns belong to the catalog: read them, never modify them.
func (c *Catalog) Models() []Model { return c.models }

// Merge combines a provider's static entries (from config) with the dynamic
// ones its backend listed, by id:
//
//   - an id in both: the dynamic entry with every field the static entry
//     set (Model.Set) replaced by the static value: config wins for what it
//     says and the backend fills in the rest (Origin merged);
//   - only in dynamic: kept as listed (Origin dynamic);
//   - only in static: kept (Origin static), even though the backend did not
//     list it: the operator declared it.
//
// Features are one field: a static features list replaces the backend's
// rather than adding to it, so config can also take a feature away.
func Merge(static, dynamic []Model) []Model {
	byID := make(map[string]int, len(static))
	for i, s := range static {
		byID[s.ID] = i
	}
	used := make([]bool, len(static))
	out := make([]Model, 0, len(dynamic)+len(static))
	for _, d := range dynamic {
		if i, ok := byID[d.ID]; ok {
			used[i] = true
			m := overlay(d, static[i])
			m.Origin = OriginMerged
			out = append(out, m)
			continue
		}
		out = append(out, d)
	}
	for i, s := range static {
		if !used[i] {
			out = append(out, s)
		}
	}
	return out
}
