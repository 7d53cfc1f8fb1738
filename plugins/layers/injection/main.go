// Command injection is layer L8, prompt-injection detection: it scores the
// text a caller or a tool controls — user messages and tool results, never
// the operator's system prompt — with a local classifier of the host, and
// blocks the request (an error in the caller's dialect), flags it in a
// header, or reroutes it to a safer model when the score reaches the
// threshold. Scores of texts already seen are kept per tenant, so a long
// conversation re-sent every turn is classified once per new message. See
// README.md.
package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Headers.
const (
	HeaderInjection = "X-Bardo-Injection"        // the highest score, 3 decimals
	HeaderAction    = "X-Bardo-Injection-Action" // blocked | flagged | rerouted | pass
	HeaderWhere     = "X-Bardo-Injection-Where"  // where the highest score came from
)

// Metrics (bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricScanned  = "injection_texts_scanned_total"
	metricCached   = "injection_scores_cached_total"
	metricBlocked  = "injection_blocked_total"
	metricFlagged  = "injection_flagged_total"
	metricRerouted = "injection_rerouted_total"
	metricScore    = "injection_score"
)

type rawConfig struct {
	Model       string    `json:"model"`
	Label       string    `json:"label"`
	Threshold   *float64  `json:"threshold"`
	Action      string    `json:"action"`
	SafeModel   string    `json:"safe_model"`
	Scan        string    `json:"scan"`
	ChunkBytes  *int      `json:"chunk_bytes"`
	MaxChunks   *int      `json:"max_chunks"`
	ScoreTTL    string    `json:"score_ttl"`
	HarnessTags *[]string `json:"harness_tags"`
	MemoBytes   *int      `json:"memo_bytes"`
}

type action uint8

const (
	actBlock action = iota
	actFlag
	actReroute
)

type config struct {
	model      string
	label      string
	threshold  float32
	action     action
	safeModel  string
	latestOnly bool
	chunkBytes int
	maxChunks  int
	scoreTTL   time.Duration
	harness    []string // tags whose sections in user text are the agent's own instructions
	memoBytes  int      // bound of an instance's score memo, in bytes of text
}

// defaultHarnessTags wrap what coding agents write into the user turn
// themselves: Claude Code's <system-reminder> blocks (CLAUDE.md, todo-list
// and date reminders), Codex's <user_instructions> (AGENTS.md) and
// <environment_context>. They are the agent's instructions, like a system
// prompt, and instruction text is what a bag-of-words classifier flags
// (0.89–0.99): scanning them flagged every agent request.
var defaultHarnessTags = []string{"system-reminder", "user_instructions", "environment_context"}

var cfg config

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:      "injection",
		Version:   "1.0.0",
		Phases:    wire.PhaseRequest,
		Reads:     wire.PartModel | wire.PartMessages,
		Writes:    wire.PartModel,
		Init:      initConfig,
		OnRequest: onRequest,
	})
}

func main() {}

func initConfig() error {
	var rc rawConfig
	if err := plugin.DecodeConfigStrict(&rc); err != nil {
		return fmt.Errorf("injection config: %w", err)
	}
	c, err := parseConfig(&rc)
	if err != nil {
		return fmt.Errorf("injection config: %w", err)
	}
	cfg = c
	scored = scoreMemo{} // scores of another model or config are not these
	return nil
}

func parseConfig(rc *rawConfig) (config, error) {
	c := config{model: rc.Model, label: rc.Label, threshold: 0.5, safeModel: rc.SafeModel,
		chunkBytes: 2000, maxChunks: 64, scoreTTL: time.Hour, harness: defaultHarnessTags,
		memoBytes: 256 << 10}
	if c.model == "" {
		c.model = "injection"
	}
	if c.label == "" {
		c.label = "INJECTION"
	}
	if rc.Threshold != nil {
		if *rc.Threshold <= 0 || *rc.Threshold > 1 {
			return c, fmt.Errorf("threshold = %v: want (0, 1]", *rc.Threshold)
		}
		c.threshold = float32(*rc.Threshold)
	}
	switch rc.Action {
	case "", "block":
	case "flag":
		c.action = actFlag
	case "route":
		c.action = actReroute
		if c.safeModel == "" {
			return c, fmt.Errorf(`action = "route" needs safe_model`)
		}
	default:
		return c, fmt.Errorf(`action = %q: want "block", "flag" or "route"`, rc.Action)
	}
	switch rc.Scan {
	case "", "all":
	case "latest":
		c.latestOnly = true
	default:
		return c, fmt.Errorf(`scan = %q: want "all" or "latest"`, rc.Scan)
	}
	if rc.ChunkBytes != nil {
		if *rc.ChunkBytes < 200 || *rc.ChunkBytes > 100_000 {
			return c, fmt.Errorf("chunk_bytes = %d: want 200–100000", *rc.ChunkBytes)
		}
		c.chunkBytes = *rc.ChunkBytes
	}
	if rc.MaxChunks != nil {
		if *rc.MaxChunks < 1 || *rc.MaxChunks > 256 {
			return c, fmt.Errorf("max_chunks = %d: want 1–256", *rc.MaxChunks)
		}
		c.maxChunks = *rc.MaxChunks
	}
	if rc.ScoreTTL != "" {
		d, err := time.ParseDuration(rc.ScoreTTL)
		if err != nil || d < 0 {
			return c, fmt.Errorf("score_ttl = %q: want a duration such as \"1h\" (\"0s\" keeps no scores)", rc.ScoreTTL)
		}
		c.scoreTTL = d
	}
	if rc.MemoBytes != nil {
		if *rc.MemoBytes < 0 || *rc.MemoBytes > 64<<20 {
			return c, fmt.Errorf("memo_bytes = %d: want 0–67108864", *rc.MemoBytes)
		}
		c.memoBytes = *rc.MemoBytes
	}
	if rc.HarnessTags != nil {
		for _, t := range *rc.HarnessTags {
			if t == "" || strings.ContainsAny(t, "<> \t\n") {
				return c, fmt.Errorf("harness_tags: %q is not a tag name", t)
			}
		}
		c.harness = *rc.HarnessTags
	}
	return c, nil
}

// A piece of text to classify, and where it came from (for the message):
// a kind of block ("user text", "tool result", "document") in message
// number msg, formatted by where only for the piece that is reported.
type piece struct {
	text string
	kind string
	msg  int
}

// where names the piece's place for the header and the block message:
// "tool result in message 3".
func (p piece) where() string {
	if p.msg >= len(whereCache) {
		return p.kind + " in message " + strconv.Itoa(p.msg)
	}
	c := &whereCache[p.msg]
	for i := range c {
		if c[i].kind == p.kind {
			return c[i].s
		}
		if c[i].kind == "" {
			c[i] = whereText{p.kind, p.kind + " in message " + strconv.Itoa(p.msg)}
			return c[i].s
		}
	}
	return p.kind + " in message " + strconv.Itoa(p.msg)
}

// whereText is a formatted where for one kind of block.
type whereText struct{ kind, s string }

// whereCache keeps where's strings, per message number and kind (there are
// three kinds): every request sends one, and inside wasm a string built is
// an allocation.
var whereCache [256][3]whereText

// pieceBuf is pieces' slice, reused: an instance serves one call at a time
// (its strings alias the call's input, and are overwritten the next call).
var pieceBuf []piece

// pieces collects the text the caller's user or a tool controls, every
// block of it: user text blocks (without the agent's own harness sections),
// tool results as a string, and every text inside a tool result sent as an
// array of blocks (Anthropic content blocks, OpenAI content parts). The
// system prompt and developer messages are the operator's, assistant turns
// the model's own: neither is scanned. Each piece is cut into chunks of at
// most chunkBytes (a classifier sees a bounded window; an injection buried
// in a long document still lands in one chunk).
func pieces(r *wire.Request, c *config) []piece {
	out := pieceBuf[:0]
	defer func() { pieceBuf = out[:0] }()
	add := func(text, kind string, msg int) {
		// Most texts are one chunk: no slice for them.
		if t := strings.TrimSpace(text); len(t) <= c.chunkBytes {
			if t != "" {
				out = append(out, piece{text: t, kind: kind, msg: msg})
			}
			return
		}
		for _, ch := range chunks(text, c.chunkBytes) {
			out = append(out, piece{text: ch, kind: kind, msg: msg})
		}
	}
	from := 0
	if c.latestOnly {
		for i := len(r.Messages) - 1; i >= 0; i-- {
			if r.Messages[i].Role == "user" {
				from = i
				break
			}
		}
	}
	for i := from; i < len(r.Messages); i++ {
		m := &r.Messages[i]
		if m.Role != "user" {
			continue
		}
		n := i + 1
		for j := range m.Content {
			bl := &m.Content[j] // not a copy: inside wasm a Block's is a memmove
			switch bl.Type {
			case wire.BlockText:
				add(stripHarness(bl.Text, c.harness), "user text", n)
			case wire.BlockToolResult:
				add(bl.Text, "tool result", n)
				for _, t := range blockTexts(bl.Data) {
					add(t, "tool result", n)
				}
			case wire.BlockDocument:
				// A document the caller attached: its text source, or
				// its content blocks, and its context.
				for _, t := range blockTexts(bl.Data) {
					add(t, "document", n)
				}
			}
		}
	}
	// The newest text matters most: when there is too much, keep the end.
	if len(out) > c.maxChunks {
		out = out[len(out)-c.maxChunks:]
	}
	return out
}

// stripHarness removes the sections of a user text wrapped in one of tags
// (<system-reminder>…</system-reminder>). An unclosed section is kept: it
// was not written by the harness, which always closes them.
func stripHarness(s string, tags []string) string {
	if strings.IndexByte(s, '<') < 0 {
		return s // no tag at all, the usual case: nothing to build
	}
	for _, tag := range tags {
		open, end := "<"+tag+">", "</"+tag+">"
		for {
			i := strings.Index(s, open)
			if i < 0 {
				break
			}
			j := strings.Index(s[i:], end)
			if j < 0 {
				break
			}
			s = s[:i] + s[i+j+len(end):]
		}
	}
	return s
}

// blockTexts returns the texts of a tool result's structured content or of
// a document block: the "text" of every block or content part, also inside
// nested "content" arrays (search results), "content" strings, and a
// document's text source ("source": {"type": "text", "data": …}, or its
// "content" blocks) and "context". Images, PDFs and other binary sources
// are not text and are skipped.
func blockTexts(data []byte) []string {
	var out []string
	walkTexts(data, 0, &out)
	return out
}

// walkTexts appends the texts of one JSON value (see blockTexts). It walks
// the raw JSON with jsonscan (the host hands plugins valid JSON): inside
// wasm, encoding/json's reflection into a tree costs several times more.
func walkTexts(v []byte, depth int, out *[]string) {
	i := jsonscan.SkipSpace(v, 0)
	if i >= len(v) || depth > 8 {
		return
	}
	switch v[i] {
	case '"':
		if s, ok := jsonString(v[i:]); ok {
			*out = append(*out, s)
		}
	case '[':
		for i = jsonscan.SkipSpace(v, i+1); i < len(v) && v[i] != ']'; {
			e := jsonscan.SkipValue(v, i)
			if e < 0 {
				return
			}
			walkTexts(v[i:e], depth+1, out)
			i = jsonscan.SkipSpace(v, e)
			if i < len(v) && v[i] == ',' {
				i = jsonscan.SkipSpace(v, i+1)
			}
		}
	case '{':
		var typ, context []byte
		jsonscan.EachMember(v, func(key, val []byte) {
			switch string(key) {
			case "text":
				if val[0] == '"' {
					walkTexts(val, depth+1, out)
				}
			case "content":
				walkTexts(val, depth+1, out)
			case "source":
				walkSource(val, depth+1, out)
			case "type":
				typ = val
			case "context":
				context = val
			}
		})
		if string(typ) == `"document"` && len(context) > 0 && context[0] == '"' {
			walkTexts(context, depth+1, out)
		}
	}
}

// walkSource appends a document source's text: "data" of a text source,
// the blocks of a content source.
func walkSource(src []byte, depth int, out *[]string) {
	var typ, data, content []byte
	jsonscan.EachMember(src, func(key, val []byte) {
		switch string(key) {
		case "type":
			typ = val
		case "data":
			data = val
		case "content":
			content = val
		}
	})
	switch string(typ) {
	case `"text"`:
		if len(data) > 0 && data[0] == '"' {
			walkTexts(data, depth, out)
		}
	case `"content"`:
		walkTexts(content, depth, out)
	}
}

// jsonString decodes a JSON string literal; one without escapes is taken
// as it is.
func jsonString(lit []byte) (string, bool) {
	e := jsonscan.SkipString(lit, 0)
	if e < 2 {
		return "", false
	}
	body := lit[1 : e-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body), true
	}
	var s string
	if json.Unmarshal(lit[:e], &s) != nil {
		return "", false
	}
	return s, true
}

// chunks cuts s at whitespace into pieces of at most n bytes (a word longer
// than n is cut hard).
func chunks(s string, n int) []string {
	s = strings.TrimSpace(s)
	var out []string
	for len(s) > n {
		cut := strings.LastIndexAny(s[:n], " \n\t")
		if cut <= 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = strings.TrimSpace(s[cut:])
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// keyBuf holds what scoreKey hashes; an instance serves one call at a
// time, so one buffer serves every piece without copying each text anew.
var keyBuf []byte

// scoreKey is the kv key of text's score: "s:" and the hex of the first 16
// bytes of SHA-256(model, 0, text).
func scoreKey(text string) (key [2 + 32]byte) {
	keyBuf = append(append(append(keyBuf[:0], cfg.model...), 0), text...)
	sum := plugin.SHA256(keyBuf)
	key[0], key[1] = 's', ':'
	hex.Encode(key[2:], sum[:16])
	return key
}

// view is b as a string for a call that does not keep it (no copy).
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// Per-call scratch, reused: an instance serves one call at a time.
var (
	// kvValue holds a score KVPut sends: a local array handed to a host
	// call escapes, and would be allocated for every classified text.
	kvValue  [16]byte
	scoreBuf []float32
	todoBuf  []int
	textBuf  []string
	keysBuf  [][2 + 32]byte
	gotBuf   []float32
)

// scores classifies the pieces, reusing scores this tenant's earlier
// requests already paid for: from the instance's memo, else the tenant's
// kv, else the classifier (one host call for every new text).
func scores(tenant string, ps []piece) ([]float32, error) {
	out := slices.Grow(scoreBuf[:0], len(ps))[:len(ps)]
	scoreBuf = out
	todo, texts, keys := todoBuf[:0], textBuf[:0], keysBuf[:0]
	defer func() {
		// Drop the references into the call's input; keep the capacity.
		clear(texts)
		todoBuf, textBuf, keysBuf = todo[:0], texts[:0], keys[:0]
	}()
	cached := 0
	var now int64
	var th uint64
	memoOn := cfg.scoreTTL > 0 && cfg.memoBytes > 0
	if memoOn {
		now = plugin.Now().UnixNano()
		if scored.len() > 0 && now-scored.since >= int64(cfg.scoreTTL) {
			scored.reset(now)
		}
		th = tenantHash(tenant)
	}
	for i, p := range ps {
		if cfg.scoreTTL > 0 {
			if memoOn {
				if v, ok := scored.get(th, tenant, p.text); ok {
					out[i] = v
					cached++
					continue
				}
			}
			// The key goes where KVPut will want it, if the text is new.
			keys = append(keys, scoreKey(p.text))
			if v, ok := plugin.KVGet(view(keys[len(keys)-1][:])); ok {
				if f, ok := parseScore4(view(v)); ok {
					out[i] = f
					cached++
					keys = keys[:len(keys)-1]
					if memoOn {
						scored.put(th, tenant, p.text, f, now)
					}
					continue
				}
			}
		}
		todo = append(todo, i)
		texts = append(texts, p.text)
	}
	if cached > 0 {
		// One host call for the request, not one per piece.
		plugin.CounterAdd(metricCached, float64(cached))
	}
	if len(texts) == 0 {
		return out, nil
	}
	got, err := plugin.ClassifyLabel(cfg.model, cfg.label, texts, gotBuf[:0])
	if err != nil {
		return nil, err
	}
	gotBuf = got
	plugin.CounterAdd(metricScanned, float64(len(texts)))
	for j, i := range todo {
		out[i] = got[j]
		// Each text's score is observed once, when it is classified, not
		// again on every turn that resends it.
		plugin.Observe(metricScore, float64(out[i]))
		if cfg.scoreTTL > 0 {
			_ = plugin.KVPut(view(keys[j][:]), appendScore4(kvValue[:0], out[i]), cfg.scoreTTL)
			if memoOn {
				// What the kv gives back, so a score reused from either
				// is the same number.
				scored.put(th, tenant, texts[j], rounded4(out[i]), now)
			}
		}
	}
	return out, nil
}

// headers is the result's headers, reused: the SDK encodes a result
// before the next call.
var headers [3]wire.KV

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	ps := pieces(&req.Request, &cfg)
	if len(ps) == 0 {
		return nil
	}
	sc, err := scores(req.Meta.Tenant, ps)
	if err != nil {
		// The host applies on_error (fail-closed by default): a request that
		// could not be checked does not go upstream.
		return fmt.Errorf("injection: %w", err)
	}
	worst := 0
	for i := range sc {
		if sc[i] > sc[worst] {
			worst = i
		}
	}
	top := sc[worst]
	res.Headers = append(headers[:0], wire.KV{Key: HeaderInjection, Value: scoreText(top)},
		wire.KV{Key: HeaderWhere, Value: ps[worst].where()})
	if top < cfg.threshold {
		res.Headers = append(res.Headers, wire.KV{Key: HeaderAction, Value: "pass"})
		return nil
	}
	switch cfg.action {
	case actFlag:
		plugin.CounterAdd(metricFlagged, 1)
		res.Headers = append(res.Headers, wire.KV{Key: HeaderAction, Value: "flagged"})
	case actReroute:
		plugin.CounterAdd(metricRerouted, 1)
		res.Headers = append(res.Headers, wire.KV{Key: HeaderAction, Value: "rerouted"})
		res.Patched = wire.PartModel
		res.Request.Model = cfg.safeModel
	default:
		plugin.CounterAdd(metricBlocked, 1)
		res.Headers = append(res.Headers, wire.KV{Key: HeaderAction, Value: "blocked"})
		res.Action = wire.ActionReject
		// The message names where, never echoes the text: it may be an
		// attacker's payload or carry the caller's secrets.
		res.Error = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: fmt.Sprintf(
			"request blocked: possible prompt injection in the %s (score %.2f, threshold %.2f)",
			ps[worst].where(), top, cfg.threshold)}
	}
	return nil
}
