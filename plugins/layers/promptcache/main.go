// Command promptcache is layer L1, prompt-cache alignment: it keeps the
// stable part of a request (tool definitions, the system prompt) first and in
// a deterministic order, marks the static/dynamic boundary with Anthropic
// cache_control breakpoints (within Anthropic's limit of four, the caller's
// own included, never moving or dropping the caller's), optionally sets an
// OpenAI-style prompt_cache_key, and reports the stable prefix's size and
// whether it matched the previous request of the same session. A request
// that needs nothing is left untouched, so its bytes pass through. See
// README.md.
package main

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/savings"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Headers and annotations.
const (
	HeaderPrefixTokens = "X-Bardo-Prefix-Tokens"        // estimated tokens of the stable prefix (bytes/4)
	HeaderPrefixBytes  = "X-Bardo-Prefix-Bytes"         // bytes of the stable prefix
	HeaderPrefixMatch  = "X-Bardo-Prefix-Match"         // hit | miss against the session's previous request
	HeaderBreakpoints  = savings.HeaderCacheBreakpoints // breakpoints this layer added

	AnnotationPrefixHash   = "promptcache.prefix_hash" // 32 hex digits, for routing (session/KV-cache affinity)
	AnnotationPrefixTokens = "promptcache.prefix_tokens"
)

// Metrics (exported as bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricBreakpoints    = "promptcache_breakpoints_added_total"
	metricPrefixHits     = "promptcache_prefix_hits_total"
	metricPrefixMisses   = "promptcache_prefix_misses_total"
	metricToolsReordered = "promptcache_tools_reordered_total"
	metricSystemMoved    = "promptcache_system_reordered_total"
	metricCacheKeys      = "promptcache_cache_keys_set_total"
)

// maxBreakpoints is Anthropic's limit of cache_control blocks per request.
const maxBreakpoints = 4

type rawConfig struct {
	Target             string `json:"target"`
	SortTools          *bool  `json:"sort_tools"`
	CacheTurns         *bool  `json:"cache_turns"`
	MoveVolatileSystem bool   `json:"move_volatile_system"`
	MinPrefixTokens    *int64 `json:"min_prefix_tokens"`
	CacheTTL           string `json:"cache_ttl"`
	PromptCacheKey     bool   `json:"prompt_cache_key"`
	AffinityTTL        string `json:"affinity_ttl"`
}

type config struct {
	target          wire.Dialect // DialectNone: auto
	sortTools       bool
	cacheTurns      bool
	moveVolatile    bool
	minPrefixTokens int64
	cacheControl    []byte
	promptCacheKey  bool
	affinityTTL     time.Duration
}

var (
	cfg config
	buf []byte // the stable prefix being hashed (reused)
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:      "promptcache",
		Version:   "1.0.0",
		Phases:    wire.PhaseRequest,
		Reads:     wire.PartModel | wire.PartSystem | wire.PartTools | wire.PartMessages | wire.PartExtra,
		Writes:    wire.PartSystem | wire.PartTools | wire.PartMessages | wire.PartExtra,
		Init:      initConfig,
		OnRequest: onRequest,
	})
}

func main() {}

func initConfig() error {
	var rc rawConfig
	if err := plugin.DecodeConfigStrict(&rc); err != nil {
		return fmt.Errorf("promptcache config: %w", err)
	}
	c, err := parseConfig(&rc)
	if err != nil {
		return fmt.Errorf("promptcache config: %w", err)
	}
	cfg = c
	return nil
}

func parseConfig(rc *rawConfig) (c config, err error) {
	switch rc.Target {
	case "", "auto":
	case "anthropic":
		c.target = wire.DialectAnthropic
	case "openai":
		c.target = wire.DialectOpenAI
	default:
		return c, fmt.Errorf(`target = %q: want "auto", "anthropic" or "openai"`, rc.Target)
	}
	c.sortTools = rc.SortTools == nil || *rc.SortTools
	c.cacheTurns = rc.CacheTurns == nil || *rc.CacheTurns
	c.moveVolatile = rc.MoveVolatileSystem
	c.minPrefixTokens = 1024
	if rc.MinPrefixTokens != nil {
		if *rc.MinPrefixTokens < 0 {
			return c, fmt.Errorf("min_prefix_tokens = %d: not negative", *rc.MinPrefixTokens)
		}
		c.minPrefixTokens = *rc.MinPrefixTokens
	}
	switch rc.CacheTTL {
	case "", "5m":
		c.cacheControl = []byte(`{"type":"ephemeral"}`)
	case "1h":
		c.cacheControl = []byte(`{"type":"ephemeral","ttl":"1h"}`)
	default:
		return c, fmt.Errorf(`cache_ttl = %q: Anthropic offers "5m" (the default) and "1h"`, rc.CacheTTL)
	}
	c.promptCacheKey = rc.PromptCacheKey
	ttl := rc.AffinityTTL
	if ttl == "" {
		ttl = "300s"
	}
	if c.affinityTTL, err = time.ParseDuration(ttl); err != nil || c.affinityTTL < time.Second {
		return c, fmt.Errorf("affinity_ttl = %q: want a duration of at least 1s, such as \"300s\"", rc.AffinityTTL)
	}
	return c, nil
}

// targetOf decides whose prompt cache the request is shaped for: the
// configured target, else Anthropic when the caller speaks Anthropic or the
// model is a Claude model (also under a router's vendor/ prefix), else OpenAI.
func targetOf(m *wire.Meta, model string) wire.Dialect {
	if cfg.target != wire.DialectNone {
		return cfg.target
	}
	if m.Dialect == wire.DialectAnthropic || strings.Contains(model, "claude") || strings.Contains(m.Model, "claude") {
		return wire.DialectAnthropic
	}
	return wire.DialectOpenAI
}

func onRequest(in *wire.LayerRequest, res *wire.LayerResult) error {
	req := &in.Request
	target := targetOf(&in.Meta, req.Model)
	var patched wire.Part

	// Tool definitions in name order: offering tools in a different order
	// would start a new prefix. A caller who placed its own breakpoint among
	// the tools chose their layout; it is kept.
	tools := req.Tools
	if cfg.sortTools && len(tools) > 1 && !toolsSorted(tools) {
		tools, patched = sortTools(tools)
	}

	// The system prompt up to its first volatile block (a timestamp or a
	// UUID in it) is stable. Optionally, volatile blocks move after the
	// stable ones, unless the caller placed breakpoints in the system prompt.
	sys := req.System
	stable := stableBlocks(sys)
	if cfg.moveVolatile && stable < len(sys) {
		sys, stable, patched = moveSystem(sys, stable, patched)
	}

	p := stablePrefix(in.Meta.Tenant, req.Model, tools, sys[:stable])

	// Breakpoints, Anthropic only (out of line: inside wasm every jump of
	// a function is a dispatch through its one jump table, whose cost
	// grows with the function's size).
	added := 0
	if target == wire.DialectAnthropic {
		sys, tools, added, patched = breakpoints(req, sys, tools, stable, p.tokens, patched)
	}

	// prompt_cache_key (OpenAI, Venice): not for Anthropic, whose API
	// refuses unknown top-level fields.
	extra := req.Extra
	if cfg.promptCacheKey && target != wire.DialectAnthropic {
		extra, patched = cacheKey(extra, &p.sum, patched)
	}

	// "p:" and the hash's hex, in one string: the hex is the prefix_hash
	// annotation, the whole the key of a request without a session.
	pkey := p.key
	match := prefixMatch(&in.Meta, p.sum[:16], pkey)

	res.Patched = patched
	res.Request.System, res.Request.Tools, res.Request.ToolChoice = sys, tools, req.ToolChoice
	res.Request.Messages, res.Request.Extra = req.Messages, extra
	// The result is encoded before the next call begins, so its headers
	// and annotations can live in one kept array (inside wasm each
	// allocation costs about a microsecond).
	kv := &scratchKV
	*kv = [6]wire.KV{
		{Key: HeaderPrefixTokens, Value: p.tokensText},
		{Key: HeaderPrefixBytes, Value: p.bytesText},
		{Key: HeaderPrefixMatch, Value: match},
		{Key: HeaderBreakpoints, Value: strconv.Itoa(added)},
		{Key: AnnotationPrefixHash, Value: pkey[2:]},
		{Key: AnnotationPrefixTokens, Value: p.tokensText},
	}
	res.Headers = kv[:4:4]
	res.Annotations = kv[4:6:6]
	if added > 0 {
		plugin.CounterAdd(metricBreakpoints, float64(added))
	}
	return nil
}

// sortTools returns the tools in name order, unless the caller marked one.
//
//go:noinline
func sortTools(tools []wire.Tool) ([]wire.Tool, wire.Part) {
	if toolsMarked(tools) {
		return tools, 0
	}
	tools = slices.Clone(tools)
	slices.SortStableFunc(tools, func(a, b wire.Tool) int { return strings.Compare(a.Name, b.Name) })
	plugin.CounterAdd(metricToolsReordered, 1)
	return tools, wire.PartTools
}

// stableBlocks returns how many system blocks come before the first
// volatile one.
func stableBlocks(sys []wire.Block) int {
	for i := range sys {
		if volatile(&sys[i]) {
			return i
		}
	}
	return len(sys)
}

// moveSystem moves the volatile system blocks after the stable ones,
// unless the caller marked a system block.
//
//go:noinline
func moveSystem(sys []wire.Block, stable int, patched wire.Part) ([]wire.Block, int, wire.Part) {
	if blocksMarked(sys) {
		return sys, stable, patched
	}
	if moved, n := moveVolatile(sys); n > stable {
		plugin.CounterAdd(metricSystemMoved, 1)
		return moved, n, patched | wire.PartSystem
	}
	return sys, stable, patched
}

// stablePrefix builds the stable prefix (model, tools, stable system
// blocks) in buf, after the tenant, length-prefixed, the memo's partition
// (prefix.go), and the model's length (the sizes leave it out), which are
// not hashed, and returns what is derived from it.
func stablePrefix(tenant, model string, tools []wire.Tool, sys []wire.Block) *prefix {
	b := binary.AppendUvarint(buf[:0], uint64(len(tenant)))
	b = append(b, tenant...)
	b = binary.AppendUvarint(b, uint64(len(model)))
	at := len(b)
	b = append(b, model...)
	b = append(b, 0)
	for i := range tools {
		t := &tools[i]
		b = append(b, t.Name...)
		b = append(b, 0x1f)
		b = append(b, t.Description...)
		b = append(b, 0x1f)
		b = append(b, t.Schema...)
		b = append(b, 0x1e)
	}
	b = append(b, 0x1d)
	for i := range sys {
		b = strconv.AppendInt(b, int64(sys[i].Type), 10)
		b = append(b, ':')
		b = append(b, sys[i].Text...)
		b = append(b, sys[i].Data...)
		b = append(b, 0x1e)
	}
	buf = b
	return prefixOf(b, at, len(model)+1)
}

// breakpoints adds Anthropic breakpoints: the last stable system block (it
// caches tools and system), the last tool (tools survive a system
// change), then the last turn before the newest message (the conversation
// so far). Never more than four in all, the caller's own included.
//
//go:noinline
func breakpoints(req *wire.Request, sys []wire.Block, tools []wire.Tool, stable int, prefixTokens int64, patched wire.Part) ([]wire.Block, []wire.Tool, int, wire.Part) {
	added := 0
	slots := maxBreakpoints - countMarks(sys, tools, req.Messages)
	if slots > 0 && prefixTokens >= cfg.minPrefixTokens && stable > 0 && markable(&sys[stable-1]) {
		if patched&wire.PartSystem == 0 {
			sys = slices.Clone(sys)
		}
		sys[stable-1].CacheControl = cfg.cacheControl
		patched |= wire.PartSystem
		slots--
		added++
	}
	if n := len(tools); slots > 0 && prefixTokens >= cfg.minPrefixTokens && n > 0 && tools[n-1].CacheControl == nil {
		if patched&wire.PartTools == 0 {
			tools = slices.Clone(tools)
		}
		tools[n-1].CacheControl = cfg.cacheControl
		patched |= wire.PartTools
		slots--
		added++
	}
	if slots > 0 && cfg.cacheTurns && len(req.Messages) >= 3 {
		turn := &req.Messages[len(req.Messages)-2]
		if b := lastMarkable(turn.Content); b >= 0 && turn.Content[b].CacheControl == nil &&
			prefixTokens+historyBytes(req.Messages[:len(req.Messages)-1])/4 >= cfg.minPrefixTokens {
			turn.Content[b].CacheControl = cfg.cacheControl
			patched |= wire.PartMessages
			added++
		}
	}
	return sys, tools, added, patched
}

// cacheKey adds prompt_cache_key to the request's extra fields, unless the
// caller set its own.
//
//go:noinline
func cacheKey(extra []byte, sum *[32]byte, patched wire.Part) ([]byte, wire.Part) {
	if jsonscan.HasMember(extra, "prompt_cache_key") {
		return extra, patched
	}
	plugin.CounterAdd(metricCacheKeys, 1)
	return withMember(extra, "prompt_cache_key", "bardo-"+hex.EncodeToString(sum[:12])), patched | wire.PartExtra
}

// scratchKV holds a result's headers and annotations until it is encoded.
var scratchKV [6]wire.KV

// sessionKey holds the kv key of a request's session.
var sessionKey []byte

// prevBuf receives the session's previous prefix hash, read on every
// request with a session.
var prevBuf []byte

// prefixKey is "p:" and the hex of sum, built in one allocation.
func prefixKey(sum []byte) string {
	var b [2 + 2*16]byte
	b[0], b[1] = 'p', ':'
	hex.Encode(b[2:], sum)
	return string(b[:2+hex.EncodedLen(len(sum))])
}

// prefixMatch compares the stable prefix with the previous request of the
// same session (Meta.Session; without one, requests with the same prefix
// are one session: pkey, "p:" and the prefix's hash) and remembers it for
// affinity_ttl, which is refreshed on every request like a provider's
// cache.
func prefixMatch(m *wire.Meta, sum []byte, pkey string) string {
	key := pkey
	if m.Session != "" {
		key = sessionKeyOf(m.Session)
	}
	prev, ok := plugin.KVGetAppend(prevBuf[:0], key)
	prevBuf = prev
	hit := ok && bytes.Equal(prev, sum)
	if err := plugin.KVPut(key, sum, cfg.affinityTTL); err != nil {
		putFailed(err)
	}
	if hit {
		plugin.CounterAdd(metricPrefixHits, 1)
		return "hit"
	}
	plugin.CounterAdd(metricPrefixMisses, 1)
	return "miss"
}

// sessionKeyOf returns the kv key of a session, built in a kept buffer
// (the host copies it): "s:" and the session, or "s#" and the hex of its
// hash when it is long.
//
//go:noinline
func sessionKeyOf(session string) string {
	if len(session) > 200 {
		s := plugin.SHA256([]byte(session))
		sessionKey = hex.AppendEncode(append(sessionKey[:0], "s#"...), s[:16])
	} else {
		sessionKey = append(append(sessionKey[:0], "s:"...), session...)
	}
	return unsafe.String(unsafe.SliceData(sessionKey), len(sessionKey))
}

//go:noinline
func putFailed(err error) {
	plugin.Logf(plugin.LevelWarn, "promptcache: remembering the prefix failed: %v", err)
}

func toolsSorted(ts []wire.Tool) bool {
	for i := 1; i < len(ts); i++ {
		if ts[i].Name < ts[i-1].Name {
			return false
		}
	}
	return true
}

func toolsMarked(ts []wire.Tool) bool {
	for i := range ts {
		if ts[i].CacheControl != nil {
			return true
		}
	}
	return false
}

func blocksMarked(bs []wire.Block) bool {
	for i := range bs {
		if bs[i].CacheControl != nil {
			return true
		}
	}
	return false
}

// countMarks counts the cache_control breakpoints already in the request.
func countMarks(sys []wire.Block, tools []wire.Tool, msgs []wire.Message) int {
	n := 0
	for i := range sys {
		if sys[i].CacheControl != nil {
			n++
		}
	}
	for i := range tools {
		if tools[i].CacheControl != nil {
			n++
		}
	}
	for i := range msgs {
		for j := range msgs[i].Content {
			if msgs[i].Content[j].CacheControl != nil {
				n++
			}
		}
	}
	return n
}

// markable reports whether a block may carry a new breakpoint: a non-empty
// text block, or an image, document, tool_use or tool_result block (Anthropic
// refuses cache_control on thinking blocks and empty text), not marked yet.
func markable(b *wire.Block) bool {
	if b.CacheControl != nil {
		return false
	}
	switch b.Type {
	case wire.BlockText:
		return b.Text != ""
	case wire.BlockImage, wire.BlockDocument, wire.BlockToolUse, wire.BlockToolResult:
		return true
	}
	return false
}

// lastMarkable returns the index of the last block that can carry a
// breakpoint, or -1; a block the caller marked already counts as the last.
func lastMarkable(bs []wire.Block) int {
	for i := len(bs) - 1; i >= 0; i-- {
		if bs[i].CacheControl != nil || markable(&bs[i]) {
			return i
		}
	}
	return -1
}

func historyBytes(msgs []wire.Message) int64 {
	var n int64
	for i := range msgs {
		for j := range msgs[i].Content {
			b := &msgs[i].Content[j]
			n += int64(len(b.Text) + len(b.Data))
		}
	}
	return n
}

// moveVolatile returns the system blocks with the volatile ones after the
// stable ones (each group in its order) and the number of stable blocks.
func moveVolatile(sys []wire.Block) ([]wire.Block, int) {
	out := make([]wire.Block, 0, len(sys))
	for i := range sys {
		if !volatile(&sys[i]) {
			out = append(out, sys[i])
		}
	}
	n := len(out)
	for i := range sys {
		if volatile(&sys[i]) {
			out = append(out, sys[i])
		}
	}
	return out, n
}

// volatile reports whether a system block changes from request to request:
// it holds a timestamp (YYYY-MM-DD[T ]hh:mm:ss) or a UUID.
func volatile(b *wire.Block) bool {
	s := b.Text
	for off := 0; ; {
		i := strings.IndexByte(s[off:], '-')
		if i < 0 {
			return false
		}
		j := off + i
		if digits(s, j-4, 4) && timestampTail(s[j:]) {
			return true
		}
		if hexes(s, j-8, 8) && uuidTail(s[j:]) {
			return true
		}
		off = j + 1
	}
}

func timestampTail(t string) bool {
	return len(t) >= 15 && t[3] == '-' && digits(t, 1, 2) && digits(t, 4, 2) &&
		(t[6] == 'T' || t[6] == ' ') && digits(t, 7, 2) && t[9] == ':' &&
		digits(t, 10, 2) && t[12] == ':' && digits(t, 13, 2)
}

func uuidTail(t string) bool {
	return len(t) >= 28 && t[5] == '-' && t[10] == '-' && t[15] == '-' &&
		hexes(t, 1, 4) && hexes(t, 6, 4) && hexes(t, 11, 4) && hexes(t, 16, 12)
}

func digits(s string, at, n int) bool {
	if at < 0 || at+n > len(s) {
		return false
	}
	for i := at; i < at+n; i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func hexes(s string, at, n int) bool {
	if at < 0 || at+n > len(s) {
		return false
	}
	for i := at; i < at+n; i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// withMember returns obj (a JSON object, or empty) with "key":"value" added
// first. key and value must not need escaping.
func withMember(obj []byte, key, value string) []byte {
	member := `"` + key + `":"` + value + `"`
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return []byte("{" + member + "}")
	}
	out := make([]byte, 0, len(obj)+len(member)+1)
	out = append(out, obj[:i+1]...)
	out = append(out, member...)
	if j := jsonscan.SkipSpace(obj, i+1); j < len(obj) && obj[j] != '}' {
		out = append(out, ',')
	}
	return append(out, obj[i+1:]...)
}
