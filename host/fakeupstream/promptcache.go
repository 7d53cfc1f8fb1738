package fakeupstream

// Prompt caching as the providers bill it, so a test can price a replayed
// session sent directly and through the gateway by the same rules.
//
// Anthropic (docs.claude.com, "Prompt caching"): the prompt is read in the
// order tools → system → messages, one block per tool definition, system
// block and content block. A block carrying cache_control is a breakpoint
// (at most 4; a top-level cache_control puts one on the last block); the
// prefix up to and including it is cached when it holds at least the
// model's minimum (1,024 tokens for Sonnet-class models, 2,048 for Haiku 3
// and 3.5, 4,096 for Haiku 4.5 and Opus 4.5). A cache entry is keyed by the
// cumulative hash of every block up to its breakpoint, so any change before
// a breakpoint misses; each breakpoint looks back at most 20 block
// boundaries for an entry an earlier request wrote. An entry lives 5
// minutes ("ttl":"1h": an hour), refreshed at no cost by every read. A
// change of tool_choice or of the thinking parameters invalidates the
// messages' entries, not the tools' and system's. Usage: the longest hit is
// cache_read_input_tokens (billed 0.1× input), what lies between it and the
// last cacheable breakpoint cache_creation_input_tokens (1.25× input, 2× for
// a 1-hour entry), the rest input_tokens.
//
// OpenAI (platform.openai.com, "Prompt caching"): automatic for prompts of
// 1,024 tokens or more; the longest prefix the server processed recently is
// reused, in increments of 128 tokens (1024, 1152, …), reported as
// usage.prompt_tokens_details.cached_tokens (included in prompt_tokens) and
// billed at the model's cached price (half the input price for gpt-4o). The
// prompt is the tool definitions, then the messages. An entry stays while it
// is used at least every 5 minutes, an hour at most. The simulator routes
// every request to the server holding its prefix (what prompt_cache_key
// aims at), so it is the best case for both ways of sending.
//
// Tokens are estimated the fake's way, ceil(bytes/4), per block of the
// block's canonical JSON (keys sorted, cache_control removed, a string
// content read as one text block), so the same prompt counts the same
// whether a client sent it or the gateway re-encoded it.

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Bill is one generation call as the provider would bill it: token counts
// by price class. Input is the uncached prompt tokens; CacheWrite5m and
// CacheWrite1h are Anthropic cache writes by lifetime; CacheRead is
// Anthropic cache reads or OpenAI cached tokens.
type Bill struct {
	Time         time.Time
	Path         string // "/v1/messages" or "/v1/chat/completions"
	Model        string
	Input        int
	CacheWrite5m int
	CacheWrite1h int
	CacheRead    int
	Output       int
}

// WithPromptCaching makes the server simulate Anthropic's and OpenAI's
// prompt caches (the rules above) and report them in the real usage fields,
// replacing the plain estimate and any scripted CacheRead/CacheWrite. now is
// the caches' clock (nil: time.Now); a replay passes a virtual one to play
// the gaps between turns. Every answered generation call is recorded for
// Bills.
func WithPromptCaching(now func() time.Time) Option {
	if now == nil {
		now = time.Now
	}
	return func(c *config) {
		c.pcache = &promptCache{now: now, entries: map[[32]byte]*pcEntry{}}
	}
}

// Bills returns every generation call answered since the server started
// (Reset does not clear them), oldest first; nil without WithPromptCaching.
func (s *Server) Bills() []Bill {
	pc := s.cfg.pcache
	if pc == nil {
		return nil
	}
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return append([]Bill(nil), pc.bills...)
}

const (
	pcLookback   = 20 // block boundaries a breakpoint looks back (Anthropic)
	pcMaxBP      = 4  // cache_control blocks a request may carry (Anthropic)
	oaMinCached  = 1024
	oaCacheStep  = 128
	oaIdleTTL    = 5 * time.Minute
	oaMaxTTL     = time.Hour
	anDefaultTTL = 5 * time.Minute
)

type promptCache struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[[32]byte]*pcEntry // Anthropic, by cumulative prefix hash
	prompts []*oaPrompt           // OpenAI, every cacheable prompt seen
	bills   []Bill
}

type pcEntry struct {
	ttl     time.Duration
	expires time.Time
}

type oaPrompt struct {
	model            string
	text             []byte
	created, touched time.Time
}

// pcBlock is one cacheable unit of an Anthropic prompt.
type pcBlock struct {
	canon  []byte // canonical JSON, what identity and size are taken on
	tokens int
	bp     bool          // carries cache_control
	ttl    time.Duration // the breakpoint's lifetime
}

// anthropicMinTokens is the smallest prefix a model caches.
func anthropicMinTokens(model string) int {
	switch {
	case strings.Contains(model, "haiku-4"), strings.Contains(model, "opus-4-5"), strings.Contains(model, "opus-4.5"):
		return 4096
	case strings.Contains(model, "haiku"):
		return 2048
	}
	return 1024
}

// anthropic sets rep's usage from the cache state for an Anthropic request
// body and records the bill. It returns an error message for a request the
// API refuses (too many breakpoints), which the caller answers with 400. A
// nil promptCache does nothing.
func (pc *promptCache) anthropic(model string, body []byte, rep *reply) string {
	if pc == nil {
		return ""
	}
	blocks, msgStart, salt, err := anthropicBlocks(body)
	if err != nil {
		return err.Error()
	}
	n := 0
	for _, b := range blocks {
		if b.bp {
			n++
		}
	}
	if n > pcMaxBP {
		return fmt.Sprintf("A maximum of %d blocks with cache_control may be provided. Found %d.", pcMaxBP, n)
	}

	// Cumulative hashes and token counts at every block boundary; the
	// tool_choice/thinking salt enters the chain where the messages begin.
	hashes := make([][32]byte, len(blocks))
	cum := make([]int, len(blocks))
	h := sha256.Sum256([]byte("anthropic\x00" + model))
	total := 0
	for i, b := range blocks {
		if i == msgStart {
			h = sha256.Sum256(append(h[:], salt...))
		}
		h = sha256.Sum256(append(h[:], b.canon...))
		hashes[i] = h
		total += b.tokens
		cum[i] = total
	}

	pc.mu.Lock()
	defer pc.mu.Unlock()
	now := pc.now()
	live := func(i int) *pcEntry {
		e := pc.entries[hashes[i]]
		if e == nil || !now.Before(e.expires) {
			return nil
		}
		return e
	}
	read, readAt := 0, -1
	for i, b := range blocks {
		if !b.bp {
			continue
		}
		for j := i; j >= 0 && j >= i-pcLookback; j-- {
			if live(j) != nil {
				if cum[j] > read {
					read, readAt = cum[j], j
				}
				break
			}
		}
	}
	if readAt >= 0 {
		e := live(readAt)
		e.expires = now.Add(e.ttl) // a read refreshes the entry for free
	}
	minTok := anthropicMinTokens(model)
	var w5, w1 int
	from := read
	for i, b := range blocks {
		if !b.bp || i <= readAt || cum[i] < minTok {
			continue
		}
		if cum[i] > from {
			if b.ttl >= time.Hour {
				w1 += cum[i] - from
			} else {
				w5 += cum[i] - from
			}
			from = cum[i]
		}
		pc.entries[hashes[i]] = &pcEntry{ttl: b.ttl, expires: now.Add(b.ttl)}
	}
	rep.cacheRead, rep.cacheWrite = read, w5+w1
	rep.inputTokens = total - read - w5 - w1
	pc.bills = append(pc.bills, Bill{Time: now, Path: "/v1/messages", Model: model, Input: rep.inputTokens,
		CacheWrite5m: w5, CacheWrite1h: w1, CacheRead: read, Output: rep.outputTokens})
	return ""
}

// anthropicBlocks flattens a Messages request into its cacheable blocks in
// the order the API reads them. msgStart is the index of the first message
// block; salt what else keys the messages' entries (tool_choice, thinking).
func anthropicBlocks(body []byte) (blocks []pcBlock, msgStart int, salt []byte, err error) {
	var req struct {
		Tools        []json.RawMessage `json:"tools"`
		System       json.RawMessage   `json:"system"`
		Messages     []json.RawMessage `json:"messages"`
		ToolChoice   json.RawMessage   `json:"tool_choice"`
		Thinking     json.RawMessage   `json:"thinking"`
		CacheControl json.RawMessage   `json:"cache_control"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, 0, nil, err
	}
	add := func(prefix string, raw json.RawMessage) error {
		b, err := canonBlock(prefix, raw)
		if err != nil {
			return err
		}
		blocks = append(blocks, b)
		return nil
	}
	for _, t := range req.Tools {
		if err := add("tool\x00", t); err != nil {
			return nil, 0, nil, err
		}
	}
	for _, raw := range contentBlocks(req.System) {
		if err := add("system\x00", raw); err != nil {
			return nil, 0, nil, err
		}
	}
	msgStart = len(blocks)
	for _, m := range req.Messages {
		var msg struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &msg); err != nil {
			return nil, 0, nil, err
		}
		for _, raw := range contentBlocks(msg.Content) {
			if err := add(msg.Role+"\x00", raw); err != nil {
				return nil, 0, nil, err
			}
		}
	}
	if len(req.CacheControl) > 0 && string(req.CacheControl) != "null" && len(blocks) > 0 {
		last := &blocks[len(blocks)-1]
		if !last.bp {
			last.bp, last.ttl = true, cacheTTL(req.CacheControl)
		}
	}
	salt = append(canonJSON(req.ToolChoice), canonJSON(req.Thinking)...)
	return blocks, msgStart, salt, nil
}

// contentBlocks returns a content value's blocks; a string is one text block.
func contentBlocks(raw json.RawMessage) []json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b, _ := json.Marshal(map[string]string{"type": "text", "text": s})
		return []json.RawMessage{b}
	}
	var arr []json.RawMessage
	_ = json.Unmarshal(raw, &arr)
	return arr
}

// canonBlock reads one block: its cache_control is taken off and becomes
// the breakpoint; the rest, keys sorted, is its identity and size.
func canonBlock(prefix string, raw json.RawMessage) (pcBlock, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return pcBlock{}, errors.New("a tool, system or content block is not an object")
	}
	var b pcBlock
	if cc, ok := m["cache_control"]; ok && cc != nil {
		raw, _ := json.Marshal(cc)
		b.bp, b.ttl = true, cacheTTL(raw)
	}
	delete(m, "cache_control")
	canon, _ := json.Marshal(m) // map keys come out sorted
	b.canon = append([]byte(prefix), canon...)
	b.tokens = estimateTokens(string(canon))
	return b, nil
}

// cacheTTL reads a cache_control object's lifetime: "1h" or the default 5m.
func cacheTTL(raw json.RawMessage) time.Duration {
	var cc struct {
		TTL string `json:"ttl"`
	}
	if json.Unmarshal(raw, &cc) == nil && cc.TTL == "1h" {
		return time.Hour
	}
	return anDefaultTTL
}

// canonJSON re-encodes a JSON value with sorted keys (nil for absent/null).
func canonJSON(raw json.RawMessage) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, _ := json.Marshal(v)
	return b
}

// openAI sets rep's usage from the cache state for a Chat Completions
// request body and records the bill. A nil promptCache does nothing.
func (pc *promptCache) openAI(model string, body []byte, rep *reply) {
	if pc == nil {
		return
	}
	text := openAIPrompt(body)
	total := estimateTokens(string(text))

	pc.mu.Lock()
	defer pc.mu.Unlock()
	now := pc.now()
	live := pc.prompts[:0]
	var best *oaPrompt
	bestLen := 0
	for _, p := range pc.prompts {
		if !now.Before(p.touched.Add(oaIdleTTL)) || !now.Before(p.created.Add(oaMaxTTL)) {
			continue // evicted
		}
		live = append(live, p)
		if p.model != model {
			continue
		}
		if n := commonPrefix(p.text, text); n > bestLen {
			best, bestLen = p, n
		}
	}
	pc.prompts = live
	cached := 0
	if total >= oaMinCached && bestLen/4 >= oaMinCached {
		cached = oaMinCached + (bestLen/4-oaMinCached)/oaCacheStep*oaCacheStep
		best.touched = now
	}
	if total >= oaMinCached {
		pc.prompts = append(pc.prompts, &oaPrompt{model: model, text: text, created: now, touched: now})
	}
	rep.cacheRead, rep.cacheWrite = cached, 0
	rep.inputTokens = total - cached
	pc.bills = append(pc.bills, Bill{Time: now, Path: "/v1/chat/completions", Model: model,
		Input: rep.inputTokens, CacheRead: cached, Output: rep.outputTokens})
}

// openAIPrompt is the canonical text of a Chat Completions prompt: the tool
// definitions, then each message (keys sorted; content given as an array of
// text parts read as the string they join to).
func openAIPrompt(body []byte) []byte {
	var req struct {
		Tools    []json.RawMessage            `json:"tools"`
		Messages []map[string]json.RawMessage `json:"messages"`
	}
	_ = json.Unmarshal(body, &req)
	var out []byte
	for _, t := range req.Tools {
		out = append(out, "tool\x00"...)
		out = append(out, canonJSON(t)...)
	}
	for _, m := range req.Messages {
		if c, ok := m["content"]; ok {
			if s := textParts(c); s != nil {
				m["content"] = s
			}
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out = append(out, "msg\x00"...)
		for _, k := range keys {
			out = append(out, k...)
			out = append(out, ':')
			out = append(out, canonJSON(m[k])...)
			out = append(out, 0)
		}
	}
	return out
}

// textParts returns an array of only text parts as the JSON string they
// join to, else nil.
func textParts(raw json.RawMessage) json.RawMessage {
	var parts []map[string]any
	if json.Unmarshal(raw, &parts) != nil || len(parts) == 0 {
		return nil
	}
	var sb strings.Builder
	for _, p := range parts {
		t, ok := p["text"].(string)
		if p["type"] != "text" || !ok || len(p) != 2 {
			return nil
		}
		sb.WriteString(t)
	}
	b, _ := json.Marshal(sb.String())
	return b
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
