// Command toolprune is layer L4, tool pruning: when a request offers more
// tools than a threshold, it keeps only the most relevant ones (keyword
// overlap between what the user wrote and each tool's name and description,
// plus task-type hints), never removing an agent's core tools, a tool the
// conversation called or named, or one tool_choice names. The decision is
// taken on the session's first prompt, which every later request repeats,
// so a session is sent the same tools on every turn and the provider's
// prompt cache (tools come first in it) is never broken by the layer; it
// only grows when a later turn asks for a removed tool. Opt-in, for big
// catalogs, meta-tool mode (meta.go) shows the model three meta-tools
// instead and runs the search loop inside the gateway. See README.md.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/savings"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Response headers.
const (
	HeaderTools       = "X-Bardo-Tools"            // "<kept>/<total>"; "meta" or "meta-fallback" in meta-tool mode
	HeaderSavedTokens = savings.HeaderPrunedTokens // estimated prompt tokens removed
	HeaderRounds      = "X-Bardo-Tools-Rounds"     // meta-tool mode: internal completions run
	HeaderPruned      = "X-Bardo-Tools-Pruned"     // the removed tools' names, comma-separated
	HeaderReason      = "X-Bardo-Tools-Reason"     // why the tools are what they are (reason* below)
)

// X-Bardo-Tools-Reason values.
const (
	reasonThreshold = "threshold"     // at or under threshold (or max_tools): nothing removed
	reasonPinned    = "pinned"        // every tool is one the layer never removes
	reasonSmall     = "small-saving"  // removing would save fewer than min_saved_tokens
	reasonSession   = "session"       // pruned by the session's decision, on its first prompt
	reasonGrown     = "session-grown" // that, plus tools later turns asked for (grow = "add")
	reasonRestored  = "session-all"   // a later turn asked for a removed tool: all tools, for the rest of the session (grow = "all")
	reasonTurn      = "turn"          // stability "turn": pruned on this turn's words
)

// maxPrunedHeader bounds X-Bardo-Tools-Pruned; the names past it are counted.
const maxPrunedHeader = 1024

// Metrics (exported as bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricPruned      = "toolprune_pruned_total"        // requests whose tools were pruned
	metricPassed      = "toolprune_passed_total"        // requests with tools left untouched
	metricRemoved     = "toolprune_tools_removed_total" // tool definitions removed
	metricSavedTokens = "toolprune_saved_tokens_total"  // estimated prompt tokens removed
	metricMeta        = "toolprune_meta_total"          // requests answered in meta-tool mode
	metricMetaFalls   = "toolprune_meta_fallback_total" // meta-tool loops that fell back to pruning
	metricMetaRounds  = "toolprune_meta_rounds_total"   // internal completions run by meta-tool loops
	metricGrown       = "toolprune_grown_total"         // requests of sessions that asked for a removed tool
)

// defaultMinSaved is min_saved_tokens' default (README.md, "Cost model").
const defaultMinSaved = 1024

// toolOverhead approximates the JSON around one tool definition (keys,
// quotes, braces: `{"type":"function","function":{"name":…,"description":…,
// "parameters":…}}` is 70 bytes, Anthropic's shape about 45).
const toolOverhead = 50

type hintConfig struct {
	When  []string `json:"when"`
	Boost []string `json:"boost"`
}

type rawConfig struct {
	Threshold      *int          `json:"threshold"`
	MaxTools       *int          `json:"max_tools"`
	RecentMessages *int          `json:"recent_messages"`
	AlwaysKeep     []string      `json:"always_keep"`
	Hints          *[]hintConfig `json:"hints"`
	ExtraHints     []hintConfig  `json:"extra_hints"`
	MetaAbove      *int          `json:"meta_tools_above"`
	MetaRounds     *int          `json:"meta_max_rounds"`
	MetaResults    *int          `json:"meta_search_results"`
	Stability      *string       `json:"stability"`
	CoreTools      *[]string     `json:"core_tools"`
	KeepNamed      *bool         `json:"keep_system_named"`
	StripTags      *[]string     `json:"strip_tags"`
	MinSaved       *int          `json:"min_saved_tokens"`
	Grow           *string       `json:"grow"`
}

type config struct {
	threshold  int
	maxTools   int
	recent     int
	alwaysKeep []string // core_tools + always_keep

	session   bool // stability "session" (else "turn")
	keepNamed bool // keep the tools the system prompt names
	stripTags []string
	minSaved  int  // prune only when it removes at least this many tokens
	growAll   bool // a session that asks for a removed tool gets all its tools back

	metaAbove   int // meta-tool mode above this many tools; 0 = off
	metaRounds  int // internal completions per caller request
	metaResults int // tools per search_tools answer
}

// Bounds of the meta-tool settings.
const (
	maxMetaRounds  = 16
	maxMetaResults = 50
)

var cfg config

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:    "toolprune",
		Version: "1.2.0",
		Phases:  wire.PhaseRequest,
		// Model and params are for meta-tool mode's internal requests.
		Reads:     wire.PartModel | wire.PartSystem | wire.PartMessages | wire.PartTools | wire.PartParams,
		Writes:    wire.PartTools,
		Init:      initLayer,
		OnRequest: onRequest,
	})
}

func initLayer() error {
	var raw rawConfig
	if err := plugin.DecodeConfig(&raw); err != nil {
		return err
	}
	c, hints, err := parseConfig(&raw)
	if err != nil {
		return err
	}
	cfg = c
	setStripTags(c.stripTags)
	setHints(hints)
	return nil
}

func parseConfig(raw *rawConfig) (config, []hintConfig, error) {
	c := config{threshold: 16, maxTools: 12, recent: 6, metaRounds: 4, metaResults: 8,
		session: true, keepNamed: true, minSaved: defaultMinSaved, growAll: true}
	for _, f := range []struct {
		v   *int
		dst *int
	}{{raw.MetaAbove, &c.metaAbove}, {raw.MetaRounds, &c.metaRounds}, {raw.MetaResults, &c.metaResults}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	if raw.Threshold != nil {
		c.threshold = *raw.Threshold
	}
	if raw.MaxTools != nil {
		c.maxTools = *raw.MaxTools
	}
	if raw.RecentMessages != nil {
		c.recent = *raw.RecentMessages
	}
	if raw.MinSaved != nil {
		c.minSaved = *raw.MinSaved
	}
	if raw.KeepNamed != nil {
		c.keepNamed = *raw.KeepNamed
	}
	if raw.Stability != nil {
		switch *raw.Stability {
		case "session":
		case "turn":
			c.session = false
		default:
			return c, nil, errors.New(`toolprune: stability must be "session" or "turn"`)
		}
	}
	if raw.Grow != nil {
		switch *raw.Grow {
		case "all":
		case "add":
			c.growAll = false
		default:
			return c, nil, errors.New(`toolprune: grow must be "all" or "add"`)
		}
	}
	switch {
	case c.threshold < 0:
		return c, nil, errors.New("toolprune: threshold must be >= 0")
	case c.maxTools < 1:
		return c, nil, errors.New("toolprune: max_tools must be >= 1")
	case c.recent < 0:
		return c, nil, errors.New("toolprune: recent_messages must be >= 0")
	case c.minSaved < 0:
		return c, nil, errors.New("toolprune: min_saved_tokens must be >= 0")
	case c.metaAbove < 0:
		return c, nil, errors.New("toolprune: meta_tools_above must be >= 0 (0 = off)")
	case c.metaRounds < 1 || c.metaRounds > maxMetaRounds:
		return c, nil, errors.New("toolprune: meta_max_rounds must be 1.." + strconv.Itoa(maxMetaRounds))
	case c.metaResults < 1 || c.metaResults > maxMetaResults:
		return c, nil, errors.New("toolprune: meta_search_results must be 1.." + strconv.Itoa(maxMetaResults))
	}
	core := defaultCoreTools
	if raw.CoreTools != nil {
		core = *raw.CoreTools
	}
	c.alwaysKeep = append(append(c.alwaysKeep, core...), raw.AlwaysKeep...)
	c.stripTags = defaultStripTags
	if raw.StripTags != nil {
		c.stripTags = *raw.StripTags
	}
	for _, t := range c.stripTags {
		if t == "" || strings.ContainsAny(t, "<>/ \t\n") {
			return c, nil, errors.New("toolprune: strip_tags: " + strconv.Quote(t) + " is not a tag name")
		}
	}
	hints := defaultHints
	if raw.Hints != nil {
		hints = *raw.Hints
	}
	hints = append(append([]hintConfig(nil), hints...), raw.ExtraHints...)
	for i, h := range hints {
		if len(h.When) == 0 || len(h.Boost) == 0 {
			return c, nil, errors.New("toolprune: hint " + strconv.Itoa(i) + " needs both \"when\" and \"boost\" words")
		}
	}
	return c, hints, nil
}

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	if len(req.Request.Tools) == 0 {
		return nil
	}
	if cfg.metaAbove > 0 && len(req.Request.Tools) > cfg.metaAbove && metaEligible(&req.Request) {
		answer, rounds, err := runMeta(&req.Meta, &req.Request, cfg)
		plugin.CounterAdd(metricMetaRounds, float64(rounds))
		if err == nil {
			res.Action = wire.ActionAnswer
			res.Answer = answer
			res.Headers = append(res.Headers,
				wire.KV{Key: HeaderTools, Value: "meta"},
				wire.KV{Key: HeaderRounds, Value: strconv.Itoa(rounds)})
			plugin.CounterAdd(metricMeta, 1)
			return nil
		}
		// The request goes upstream as usual, pruned.
		plugin.Logf(plugin.LevelWarn, "toolprune: meta-tool mode fell back to pruning: %v", err)
		plugin.CounterAdd(metricMetaFalls, 1)
		prune(req, res)
		for i := range res.Headers {
			if res.Headers[i].Key == HeaderTools {
				res.Headers[i].Value = "meta-fallback"
			}
		}
		res.Headers = append(res.Headers, wire.KV{Key: HeaderRounds, Value: strconv.Itoa(rounds)})
		return nil
	}
	prune(req, res)
	return nil
}

// prune keeps the most relevant tools (README.md, "Relevance").
func prune(req *wire.LayerRequest, res *wire.LayerResult) {
	tools := req.Request.Tools
	total := len(tools)
	if total <= cfg.threshold || total <= cfg.maxTools {
		pass(res, total, reasonThreshold)
		return
	}
	keep, grown, asked := selectTools(&req.Request, &cfg)
	if grown {
		plugin.CounterAdd(metricGrown, 1)
		if asked && cfg.growAll {
			pass(res, total, reasonRestored)
			return
		}
	}
	kept, removedBytes := 0, 0
	for i := range tools {
		if keep[i] {
			kept++
		} else {
			removedBytes += toolBytes(&tools[i])
		}
	}
	saved := removedBytes / 4
	switch {
	case kept == total:
		pass(res, total, reasonPinned)
		return
	case saved < cfg.minSaved:
		pass(res, total, reasonSmall)
		return
	}
	out := make([]wire.Tool, 0, kept)
	for i := range tools {
		if keep[i] {
			out = append(out, tools[i])
		}
	}
	moveCacheControl(tools, keep, out)
	reason := reasonTurn
	if cfg.session {
		reason = reasonSession
		if grown {
			reason = reasonGrown
		}
	}

	res.Patched = wire.PartTools
	res.Request.Tools = out
	res.Request.ToolChoice = req.Request.ToolChoice // the part is tools + tool_choice
	res.Headers = append(res.Headers,
		wire.KV{Key: HeaderTools, Value: strconv.Itoa(kept) + "/" + strconv.Itoa(total)},
		wire.KV{Key: HeaderSavedTokens, Value: strconv.Itoa(saved)},
		wire.KV{Key: HeaderPruned, Value: prunedList(tools, keep)},
		wire.KV{Key: HeaderReason, Value: reason})
	plugin.CounterAdd(metricPruned, 1)
	plugin.CounterAdd(metricRemoved, float64(total-kept))
	plugin.CounterAdd(metricSavedTokens, float64(saved))
}

// prunedList is the X-Bardo-Tools-Pruned value: the removed tools' names,
// in order, comma-separated; past maxPrunedHeader bytes the rest are
// counted ("…,+12 more").
func prunedList(tools []wire.Tool, keep []bool) string {
	var b strings.Builder
	b.Grow(maxPrunedHeader + 16)
	left := 0
	for i := range tools {
		if !keep[i] {
			left++
		}
	}
	for i := range tools {
		if keep[i] {
			continue
		}
		name := tools[i].Name
		if b.Len()+len(name)+1 > maxPrunedHeader || !headerSafe(name) {
			b.WriteString(",+" + strconv.Itoa(left) + " more")
			break
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(name)
		left--
	}
	return strings.TrimPrefix(b.String(), ",")
}

// headerSafe reports whether s can go in a header value as it is.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == ',' {
			return false
		}
	}
	return true
}

// pass leaves the tools as they are: no patch, so the caller's bytes can
// still be forwarded untouched.
func pass(res *wire.LayerResult, total int, reason string) {
	// An agent offers the same tools every turn: the header's value is
	// kept for the last count (inside wasm an allocation costs about a
	// microsecond, the whole of this path's own work).
	if total != passedTotal || passedText == "" {
		n := strconv.Itoa(total)
		passedTotal, passedText = total, n+"/"+n
	}
	res.Headers = append(res.Headers,
		wire.KV{Key: HeaderTools, Value: passedText},
		wire.KV{Key: HeaderReason, Value: reason})
	plugin.CounterAdd(metricPassed, 1)
}

// passedTotal and passedText are the last count pass was given and its
// header value.
var (
	passedTotal int
	passedText  string
)

// toolBytes estimates the size of a tool's definition as JSON.
func toolBytes(t *wire.Tool) int {
	return len(t.Name) + len(t.Description) + len(t.Schema) + len(t.CacheControl) + toolOverhead
}

// moveCacheControl keeps prompt-cache breakpoints that sat on removed tools:
// each moves to the nearest kept tool before it (or, if none, the first kept
// tool), unless that tool already carries one. out holds the kept tools in
// order; their CacheControl fields are updated in place.
func moveCacheControl(tools []wire.Tool, keep []bool, out []wire.Tool) {
	if len(out) == 0 {
		return
	}
	j := -1 // index in out of the last kept tool seen
	for i := range tools {
		if keep[i] {
			j++
			continue
		}
		if len(tools[i].CacheControl) == 0 {
			continue
		}
		dst := &out[max(j, 0)]
		if len(dst.CacheControl) == 0 {
			dst.CacheControl = tools[i].CacheControl
		}
	}
}

// Scratch reused by every request of the instance.
var (
	keepScratch  []bool
	orderScratch []int
	pinScratch   []string
)

// selectTools returns, per tool, whether it is kept (valid until the next
// call); whether, in a session, tools were added to the first prompt's
// choice; and whether some were because a later turn asked for them (not
// only called them, or named them in tool_choice).
//
// Kept, always: core_tools and always_keep, the tools the system prompt or
// a user message names (needsOf), the tools the conversation called and the
// one tool_choice names. The rest of max_tools goes to the best scores.
// With stability "session" the choice is made on the session's first prompt
// alone, the same on every turn; what later turns call, name or ask for in
// so many words is added to it, never swapped in (and with grow = "all",
// an ask sends all the tools).
func selectTools(r *wire.Request, c *config) (keep []bool, grown, asked bool) {
	tools := r.Tools
	keep = append(keepScratch[:0], make([]bool, len(tools))...)
	keepScratch = keep
	scores := scoreTools(r, c)
	for i, tt := range termsScratch {
		keep[i] = tt.core
	}
	if c.keepNamed {
		markNamedInSystem(r, keep)
	}
	called := pinnedNames(r)
	if !c.session {
		pin(keep, tools, called)
		markNeeds(r.Messages[max(0, len(r.Messages)-c.recent):], keep, false)
		fillTop(keep, scores, c.maxTools)
		return keep, false, false
	}
	from, to := firstPrompt(r.Messages)
	markNeeds(r.Messages[from:to], keep, false)
	fillTop(keep, scores, c.maxTools)
	n := pin(keep, tools, called)
	a := markNeeds(r.Messages[to:], keep, true)
	return keep, n+a > 0, a > 0
}

// pin keeps the tools named in names and returns how many it added.
func pin(keep []bool, tools []wire.Tool, names []string) int {
	n := 0
	for i := range tools {
		if !keep[i] && isPinned(names, tools[i].Name) {
			keep[i] = true
			n++
		}
	}
	return n
}

// fillTop keeps the best-scoring tools until maxTools are kept: highest
// score first, ties to the earlier tool.
func fillTop(keep []bool, scores []int, maxTools int) {
	room := maxTools
	for _, k := range keep {
		if k {
			room--
		}
	}
	if room <= 0 {
		return
	}
	// top stays sorted best first; scanning in original order, a tool
	// enters only if it beats the last of a full top.
	top := orderScratch[:0]
	for i := range keep {
		if keep[i] {
			continue
		}
		if len(top) == room && scores[i] <= scores[top[room-1]] {
			continue
		}
		if len(top) < room {
			top = append(top, i)
		} else {
			top[room-1] = i
		}
		for b := len(top) - 1; b > 0 && scores[top[b]] > scores[top[b-1]]; b-- {
			top[b], top[b-1] = top[b-1], top[b]
		}
	}
	orderScratch = top
	for _, i := range top {
		keep[i] = true
	}
}

// isPinned reports whether name is in pinned: a handful of names, compared
// faster than map lookups of every tool's name inside wasm.
func isPinned(pinned []string, name string) bool {
	for _, p := range pinned {
		if len(p) == len(name) && p == name {
			return true
		}
	}
	return false
}

// pinnedNames names the tools that must never be removed: every tool the
// conversation already called, and whatever tool_choice names.
func pinnedNames(r *wire.Request) []string {
	pinned := pinScratch[:0]
	for i := range r.Messages {
		for j := range r.Messages[i].Content {
			if b := &r.Messages[i].Content[j]; b.Type == wire.BlockToolUse && b.Name != "" && !isPinned(pinned, b.Name) {
				pinned = append(pinned, b.Name) // distinct: a long agent loop calls the same few tools
			}
		}
	}
	pinned = append(pinned, toolChoiceNames(r.ToolChoice)...)
	pinScratch = pinned
	return pinned
}

type nameOnly struct {
	Name string `json:"name"`
}

type namedTool struct {
	Name     string    `json:"name"`
	Function *nameOnly `json:"function"`
	Custom   *nameOnly `json:"custom"`
}

type toolChoice struct {
	Name         string    `json:"name"`
	Function     *nameOnly `json:"function"`
	Custom       *nameOnly `json:"custom"`
	AllowedTools *struct {
		Tools []namedTool `json:"tools"`
	} `json:"allowed_tools"`
}

// toolChoiceNames returns the tool names a tool_choice refers to: the
// canonical {"type":"tool","name":…}, and the OpenAI forms kept verbatim
// ({"type":"custom","custom":{"name":…}}, {"type":"allowed_tools",…}).
// The fixed forms ({"type":"auto"} …) name none and are not parsed.
func toolChoiceNames(tc []byte) []string {
	if len(tc) == 0 || !bytes.Contains(tc, []byte(`"name"`)) {
		return nil
	}
	var c toolChoice
	if json.Unmarshal(tc, &c) != nil {
		return nil
	}
	var names []string
	add := func(n string, fn, custom *nameOnly) {
		if n != "" {
			names = append(names, n)
		}
		if fn != nil && fn.Name != "" {
			names = append(names, fn.Name)
		}
		if custom != nil && custom.Name != "" {
			names = append(names, custom.Name)
		}
	}
	add(c.Name, c.Function, c.Custom)
	if c.AllowedTools != nil {
		for _, t := range c.AllowedTools.Tools {
			add(t.Name, t.Function, t.Custom)
		}
	}
	return names
}

func main() {}
