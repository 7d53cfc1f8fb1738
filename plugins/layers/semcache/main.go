// Command semcache is layer L2, the semantic cache: it answers a request
// from a stored answer to the same question asked in the same context. The
// context (model, system prompt, tools, parameters, earlier turns, injected
// reminders) is hashed, never embedded; the question is the last user
// turn's own words, normalised (case, punctuation, framing words, a fronted
// phrase) so that a re-ask matches while a different number, identifier,
// operator or negation does not, and found by its key in the host's
// key/value store. With allow_rewording, requests without tools may also
// hit on a similar question (the host's embedding model and vector index)
// whose salient words agree. Misses are stored from the response or stream
// phase, with a TTL set by the market regime. See README.md.
package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Headers and annotations.
const (
	HeaderCache       = respcache.HeaderCache       // semantic-hit | miss
	HeaderSimilarity  = "X-Bardo-Cache-Similarity"  // on a hit: cosine similarity, 4 decimals
	HeaderSavedTokens = respcache.HeaderSavedTokens // on a hit
	HeaderAge         = respcache.HeaderAge         // on a hit: seconds since stored
	HeaderDomain      = "X-Bardo-Cache-Domain"      // the threshold domain used

	// AnnotationMiss carries a miss's entry id, vector, guard and TTL to the
	// response and stream phases of the same request.
	AnnotationMiss = "semcache.miss"
	// AnnotationReplayPace paces the host's replay of a hit as a stream.
	AnnotationReplayPace = respcache.AnnotationReplayPace
	// AnnotationRegime is the market regime the host sets for every request
	// (admin API), unless the request's X-Bardo-Regime header names one.
	AnnotationRegime = "bardo.market.regime"
	// Request headers reach layers as annotations "bardo.hdr.<lower name>".
	annotationHeaderDomain = "bardo.hdr.x-bardo-cache-domain"
	annotationHeaderRegime = "bardo.hdr.x-bardo-regime"
)

// Metrics (bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricHits        = "semcache_hits_total"
	metricMisses      = "semcache_misses_total"
	metricStores      = "semcache_stores_total"
	metricSkips       = "semcache_skips_total"
	metricGuardMisses = "semcache_guard_rejects_total"
	metricSavedTokens = "semcache_saved_tokens_total"
	metricInvalidated = "semcache_invalidations_total"
	metricErrors      = "semcache_errors_total"
	metricSimilarity  = "semcache_similarity"
)

// tagMarket marks entries about market state, dropped when the regime
// changes.
const tagMarket = "market-analysis"

type rawConfig struct {
	Model           string             `json:"model"`
	Isolation       string             `json:"isolation"`
	Domain          string             `json:"domain"`
	Thresholds      map[string]float64 `json:"thresholds"`
	BaseTTL         string             `json:"base_ttl"`
	Regime          string             `json:"regime"`
	MinTokens       *int64             `json:"min_tokens"`
	ReplayPaceMs    *int64             `json:"replay_pace_ms"`
	MaxEntryBytes   *int64             `json:"max_entry_bytes"`
	MaxQuestion     *int64             `json:"max_question_bytes"`
	Guard           *bool              `json:"guard"`
	AllowRewording  *bool              `json:"allow_rewording"`
	MatchModel      *bool              `json:"match_model"`
	MarketMarkers   *[]string          `json:"market_markers"`
	StrategyMarkers *[]string          `json:"strategy_markers"`
}

type isolation uint8

const (
	perAgent isolation = iota // the tenant's partition only (default)
	shared                    // every tenant's answers in one partition
	tiered                    // shared, except entries holding private material
)

type config struct {
	model         string
	isolation     isolation
	domain        string
	thresholds    map[string]float32
	baseTTL       time.Duration
	regime        string
	minTokens     int64
	pace          string
	maxEntryBytes int
	maxQuestion   int
	guard         bool
	rewording     bool
	matchModel    bool
	market        []string
	marketFirst   *markerFirsts // of market, for hasAnyFoldFirst
	strategy      []string
}

// Defaults: the spec's thresholds per domain and regime multipliers.
var (
	defaultThresholds = map[string]float32{"static": 0.90, "default": 0.92, "strategy": 0.95, "trade": 0.98}
	defaultMarket     = []string{"price", "market", "volatility", "apy", "apr", "tvl", "volume", "liquidity", "funding rate", "trend", "sentiment", "gas"}
	defaultStrategy   = []string{"my strategy", "my position", "stop loss", "take profit", "entry price", "position size", "rebalance", "my portfolio", "my wallet"}
)

var (
	cfg config
	enc wire.Encoder
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:       "semcache",
		Version:    "2.0.0",
		Phases:     wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		Reads:      wire.PartAll,
		Init:       initConfig,
		OnRequest:  onRequest,
		OnResponse: onResponse,
		OnStream:   onStream,
		// It only stores answers: a v1.6 host hands it a streamed one
		// whole, through onResponse (OnStream serves older hosts).
		WatchStream: true,
	})
}

func main() {}

func initConfig() error {
	var rc rawConfig
	if err := plugin.DecodeConfigStrict(&rc); err != nil {
		return fmt.Errorf("semcache config: %w", err)
	}
	c, err := parseConfig(&rc)
	if err != nil {
		return fmt.Errorf("semcache config: %w", err)
	}
	cfg = c
	return nil
}

func parseConfig(rc *rawConfig) (config, error) {
	c := config{model: rc.Model, domain: rc.Domain, regime: rc.Regime, guard: true, matchModel: true,
		minTokens: respcache.DefaultMinTokens, maxEntryBytes: 64 << 10, maxQuestion: defaultMaxQuestion,
		market: defaultMarket, strategy: defaultStrategy}
	if c.model == "" {
		c.model = "embed"
	}
	switch rc.Isolation {
	case "", "per-agent":
	case "shared":
		c.isolation = shared
	case "tiered":
		c.isolation = tiered
	default:
		return c, fmt.Errorf(`isolation = %q: want "per-agent", "shared" or "tiered"`, rc.Isolation)
	}
	c.thresholds = map[string]float32{}
	for k, v := range defaultThresholds {
		c.thresholds[k] = v
	}
	for k, v := range rc.Thresholds {
		if v < 0.5 || v > 1 {
			return c, fmt.Errorf("thresholds.%s = %v: want 0.5–1", k, v)
		}
		c.thresholds[k] = float32(v)
	}
	if c.domain == "" {
		c.domain = "default"
	}
	if _, ok := c.thresholds[c.domain]; !ok {
		return c, fmt.Errorf("domain = %q: no threshold for it (thresholds has %s)", c.domain, domainNames(c.thresholds))
	}
	c.baseTTL = 300 * time.Second
	if rc.BaseTTL != "" {
		d, err := time.ParseDuration(rc.BaseTTL)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("base_ttl = %q: want a duration of at least 1s", rc.BaseTTL)
		}
		c.baseTTL = d
	}
	if c.regime == "" {
		c.regime = "normal"
	}
	if _, ok := regimeTTL(c.regime, c.baseTTL); !ok {
		return c, fmt.Errorf(`regime = %q: want "calm", "normal", "volatile" or "crisis"`, c.regime)
	}
	if rc.MinTokens != nil {
		c.minTokens = *rc.MinTokens
	}
	pace := int64(30)
	if rc.ReplayPaceMs != nil {
		pace = *rc.ReplayPaceMs
	}
	if pace < 0 || pace > 1000 {
		return c, fmt.Errorf("replay_pace_ms = %d: want 0–1000", pace)
	}
	if pace > 0 {
		c.pace = strconv.FormatInt(pace, 10)
	}
	if rc.MaxEntryBytes != nil {
		if *rc.MaxEntryBytes < 1024 || *rc.MaxEntryBytes > 1<<20 {
			return c, fmt.Errorf("max_entry_bytes = %d: want 1024–1048576", *rc.MaxEntryBytes)
		}
		c.maxEntryBytes = int(*rc.MaxEntryBytes)
	}
	if rc.MaxQuestion != nil {
		if *rc.MaxQuestion < 256 || *rc.MaxQuestion > 1<<20 {
			return c, fmt.Errorf("max_question_bytes = %d: want 256–1048576", *rc.MaxQuestion)
		}
		c.maxQuestion = int(*rc.MaxQuestion)
	}
	if rc.Guard != nil {
		c.guard = *rc.Guard
	}
	if rc.AllowRewording != nil {
		c.rewording = *rc.AllowRewording
	}
	if rc.MatchModel != nil {
		c.matchModel = *rc.MatchModel
	}
	if rc.MarketMarkers != nil {
		c.market = lower(*rc.MarketMarkers)
	}
	if rc.StrategyMarkers != nil {
		c.strategy = lower(*rc.StrategyMarkers)
	}
	c.marketFirst = firstBytes(c.market)
	return c, nil
}

// regimeTTL is the TTL of an entry stored in regime given the calm one,
// and whether regime is one (the spec's multipliers). A switch: inside
// wasm a Go map lookup of a string costs ~0.5 µs, two a request.
func regimeTTL(regime string, base time.Duration) (time.Duration, bool) {
	switch regime {
	case "calm":
		return base, true
	case "normal":
		return base * 7 / 10, true
	case "volatile":
		return base * 3 / 10, true
	case "crisis":
		return 30 * time.Second, true
	}
	return 0, false
}

func lower(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if s = strings.ToLower(strings.TrimSpace(s)); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func domainNames(m map[string]float32) string {
	var names []string
	for k := range m {
		names = append(names, k)
	}
	return strings.Join(names, ", ")
}

func annotation(m *wire.Meta, key string) string {
	for i := len(m.Annotations) - 1; i >= 0; i-- {
		if m.Annotations[i].Key == key {
			return m.Annotations[i].Value
		}
	}
	return ""
}

// requestAnnotations are the annotations the request phase reads, each the
// last of its key (as annotation finds it), in one pass over the meta's:
// an agent's request carries one per request header.
type requestAnnotations struct {
	hdrRegime, regime, hdrDomain string
}

func readAnnotations(m *wire.Meta) (a requestAnnotations) {
	var seen uint8
	for i := len(m.Annotations) - 1; i >= 0 && seen != 7; i-- {
		kv := &m.Annotations[i]
		// The keys differ in length: one compare each.
		switch kv.Key {
		case annotationHeaderRegime:
			if seen&1 == 0 {
				a.hdrRegime, seen = kv.Value, seen|1
			}
		case AnnotationRegime:
			if seen&2 == 0 {
				a.regime, seen = kv.Value, seen|2
			}
		case annotationHeaderDomain:
			if seen&4 == 0 {
				a.hdrDomain, seen = kv.Value, seen|4
			}
		}
	}
	return a
}

// regimeOf is the request's market regime: its own header, else the host's
// (admin API), else the configured default.
func regimeOf(a *requestAnnotations) string {
	for _, v := range [2]string{a.hdrRegime, a.regime} {
		if v = strings.ToLower(v); v != "" {
			if _, ok := regimeTTL(v, 0); ok {
				return v
			}
		}
	}
	return cfg.regime
}

// searchScopes are the partitions to search, in order.
func searchScopes() []plugin.VectorScope {
	switch cfg.isolation {
	case shared:
		return []plugin.VectorScope{plugin.SharedScope}
	case tiered:
		return []plugin.VectorScope{plugin.TenantScope, plugin.SharedScope}
	}
	return []plugin.VectorScope{plugin.TenantScope}
}

// storeScope is the partition an entry with this cache text goes to: in
// tiered mode, private material stays with its tenant.
func storeScope(text string) plugin.VectorScope {
	switch {
	case cfg.isolation == shared:
		return plugin.SharedScope
	case cfg.isolation == tiered && !private(text, cfg.strategy):
		return plugin.SharedScope
	}
	return plugin.TenantScope
}

// regimeBuf receives the regime read on every request (one buffer, not an
// allocation per read).
var regimeBuf []byte

// invalidateOnRegimeChange drops market-analysis entries of the partitions
// this tenant uses when the regime differs from the one the tenant last saw.
// Each tenant notices on its own next request, so no global sweep is needed.
func invalidateOnRegimeChange(regime string) {
	const key = "regime"
	prev, ok := plugin.KVGetAppend(regimeBuf[:0], key)
	regimeBuf = prev
	if ok && string(prev) == regime {
		return
	}
	if ok { // a change, not a first sight
		for _, sc := range []plugin.VectorScope{plugin.TenantScope, plugin.SharedScope} {
			gen := strconv.FormatInt(plugin.Now().UnixNano(), 36)
			if err := kvPut(sc, marketGenKey, []byte(gen), 0); err != nil {
				plugin.CounterAdd(metricErrors, 1)
			} else {
				plugin.CounterAdd(metricInvalidated, 1)
			}
			if cfg.rewording || !cfg.guard {
				if _, err := plugin.VectorDelete(sc, "", tagMarket); err != nil {
					plugin.CounterAdd(metricErrors, 1)
				}
			}
		}
	}
	if err := plugin.KVPut(key, []byte(regime), 24*time.Hour); err != nil {
		plugin.CounterAdd(metricErrors, 1)
	}
}

// searchK is how many neighbours a lookup weighs (the guard decides).
const searchK = 8

// defaultMaxQuestion bounds the question a lookup handles (bytes of the
// last user turn's own words): questions are sentences, not files.
const defaultMaxQuestion = 8 << 10

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	// Only a miss stores its answer (missOf): whatever else this call
	// decides, the answer phases have nothing to do.
	res.SkipAnswer = true
	text, ok := lookupQuestion(&req.Request)
	if !ok {
		plugin.CounterAdd(metricSkips, 1)
		return nil
	}
	anns := readAnnotations(&req.Meta)
	regime := regimeOf(&anns)
	invalidateOnRegimeChange(regime)

	domain := cfg.domain
	if d := anns.hdrDomain; d != "" {
		if _, ok := cfg.thresholds[d]; ok {
			domain = d
		}
	}
	// The result is encoded before the next call begins, so its header
	// slice can be scratch too.
	res.Headers = append(scratch.headers[:0], wire.KV{Key: HeaderDomain, Value: domain})
	if len(text) > cfg.maxQuestion {
		// A pasted document, not a question: normalising, guarding and
		// embedding it grow with its length (1 MB took 1.9 s), and
		// "similar" means little at that size. Neither looked up nor
		// stored; the hash cache still answers it repeated exactly.
		plugin.CounterAdd(metricSkips, 1)
		return nil
	}
	words := normalizeTo(scratch.words, text)
	defer func() {
		clear(words) // no reference into this request is kept
		scratch.words = words[:0]
		scratch.headers = res.Headers[:0]
	}()
	ctx := contextHashTo(&scratch.ctx, &req.Request, cfg.matchModel)
	id, qkey := entryID(words, ctx)
	market := hasAnyFoldFirst(text, cfg.market, cfg.marketFirst)

	// The same question in the same context: one read per partition. A
	// strict hit never needs the vector index, whose approximate search
	// can miss an entry far from the others.
	var keys keysByScope
	if cfg.guard {
		for _, sc := range searchScopes() {
			if p, ok := kvGet(sc, keys.of(sc, qkey, market)); ok && answer(res, p, ctx, words, false, 1) {
				return nil
			}
		}
	}

	// A similar question: only with allow_rewording (or the guard off), and
	// never for a tool-carrying request — whether a reworded question would
	// have sent the model to its tools instead is not something a
	// similarity can tell.
	var vec []float32
	if !cfg.guard || (cfg.rewording && len(req.Request.Tools) == 0) {
		content := contentText(words)
		vecs, err := plugin.Embed(cfg.model, []string{content})
		if err != nil {
			return fmt.Errorf("semcache: %w", err)
		}
		vec = known(vecs[0], content)
		threshold := cfg.thresholds[domain]
		for _, sc := range searchScopes() {
			// Several near neighbours: the nearest may fail the guard while
			// the next one passes it.
			ms, err := plugin.VectorSearch(sc, vec, searchK, threshold)
			if err != nil {
				return fmt.Errorf("semcache: %w", err)
			}
			for _, m := range ms {
				plugin.Observe(metricSimilarity, float64(m.Score))
				if answer(res, m.Payload, ctx, words, true, m.Score) {
					return nil
				}
			}
		}
	}

	ttl, _ := regimeTTL(regime, cfg.baseTTL) // regimeOf's are all known
	res.Headers = append(res.Headers, wire.KV{Key: HeaderCache, Value: "miss"})
	res.SkipAnswer = false
	// Nothing else annotates a miss: the slice can be scratch too.
	res.Annotations = append(scratch.anns[:0], wire.KV{Key: AnnotationMiss, Value: encodeMiss(&miss{
		id: id, key: keys.of(storeScope(text), qkey, market), vec: vec, ctx: ctx, text: text,
		ttl: ttl})})
	scratch.anns = res.Annotations[:0]
	plugin.CounterAdd(metricMisses, 1)
	return nil
}

// scratch holds buffers the request phase keeps from call to call (an
// instance serves one call at a time): inside wasm an allocation costs
// about a microsecond, a tenth of a normalised question.
var scratch struct {
	words []qtoken
	ctx   [32]byte // the context hash (contextHashTo)
	// entryWords are a stored question's words (answer), entryNorm's.
	entryWords []qtoken
	headers    []wire.KV
	anns       []wire.KV
	id         []byte // entryID's input
	key        []byte // "q:" and the entry id
	enc        wire.Encoder
	miss       []byte // the miss annotation
	vec        []byte // a miss's vector, encoded
	entry      []byte // a stored answer's entry (store)
}

// entryNorm normalises stored questions (answer); the request's question
// has reqNorm.
var entryNorm normScratch

// keysByScope remembers a request's exact keys per partition: the miss
// stores under the key its lookup read (a market key costs a read of the
// partition's generation).
type keysByScope struct {
	n    int
	sc   [2]plugin.VectorScope
	keys [2]string
}

func (k *keysByScope) of(sc plugin.VectorScope, qkey string, market bool) string {
	for i := range k.n {
		if k.sc[i] == sc {
			return k.keys[i]
		}
	}
	key := exactKey(sc, qkey, market)
	if k.n < len(k.sc) {
		k.sc[k.n], k.keys[k.n] = sc, key
		k.n++
	}
	return key
}

// answer answers the request from a stored payload when it was stored in
// the same context for the same question (or, with similar, a question
// that agrees on its salient words); it reports whether it did.
func answer(res *wire.LayerResult, payload []byte, ctx string, words []qtoken, similar bool, score float32) bool {
	entryCtx, entryText, entry, ok := splitPayload(payload)
	if !ok {
		plugin.CounterAdd(metricErrors, 1)
		return false
	}
	if entryCtx != ctx {
		plugin.CounterAdd(metricGuardMisses, 1)
		return false
	}
	if cfg.guard {
		// The stored question's words are compared and dropped here: kept
		// scratch apart from the request's.
		ew := entryNorm.normalize(scratch.entryWords, entryText)
		defer func() {
			clear(ew)
			scratch.entryWords = ew[:0]
		}()
		if !sameQuestion(words, ew) && !(similar && cfg.rewording && sameSalient(words, ew)) {
			plugin.CounterAdd(metricGuardMisses, 1)
			return false
		}
	}
	resp, storedMs, err := respcache.DecodeEntry(entry)
	if err != nil {
		plugin.CounterAdd(metricErrors, 1)
		return false
	}
	saved := respcache.Answer(res, &resp, respcache.VerdictSemanticHit, storedMs, plugin.Now().UnixMilli(), cfg.pace,
		wire.KV{Key: HeaderSimilarity, Value: strconv.FormatFloat(float64(score), 'f', 4, 32)})
	plugin.CounterAdd(metricHits, 1)
	plugin.CounterAdd(metricSavedTokens, float64(saved))
	return true
}

// exactKey is the key/value key of a question's entry in a partition,
// given qkey ("q:" and the entry id). An entry about the market carries the
// partition's market generation, which a regime change advances: the old
// entries are then never read again.
func exactKey(sc plugin.VectorScope, qkey string, market bool) string {
	if !market {
		return qkey
	}
	gen, _ := kvGet(sc, marketGenKey)
	return qkey + ":m" + string(gen)
}

// marketGenKey holds a partition's market generation.
const marketGenKey = "market-gen"

func kvGet(sc plugin.VectorScope, key string) ([]byte, bool) {
	if sc == plugin.SharedScope {
		return plugin.KVGetShared(key)
	}
	return plugin.KVGet(key)
}

func kvPut(sc plugin.VectorScope, key string, v []byte, ttl time.Duration) error {
	if sc == plugin.SharedScope {
		return plugin.KVPutShared(key, v, ttl)
	}
	return plugin.KVPut(key, v, ttl)
}

// known returns vec, or, when the model knew none of the words (a zero
// vector: "goroutine", "webhook" are not in GloVe's vocabulary), a unit
// vector drawn from the content words' hash, so that a re-ask still finds
// its entry and nothing else does.
func known(vec []float32, content string) []float32 {
	var n float32
	for _, f := range vec {
		n += f * f
	}
	if n > 1e-12 || len(vec) == 0 {
		return vec
	}
	seed := plugin.SHA256([]byte(content))
	state := binary.LittleEndian.Uint64(seed[:8]) | 1
	var sum float64
	for i := range vec {
		state ^= state << 13 // xorshift64
		state ^= state >> 7
		state ^= state << 17
		vec[i] = float32(int64(state)>>11) / float32(1<<52)
		sum += float64(vec[i]) * float64(vec[i])
	}
	inv := float32(1 / math.Sqrt(sum))
	for i := range vec {
		vec[i] *= inv
	}
	return vec
}

func hasAny(s string, markers []string) bool {
	for _, m := range markers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// entryID names an entry by its context and normalised question: the same
// question stored again replaces the old answer instead of adding a twin.
// It is the hash of ctx, a zero byte and contentText(words), built in
// scratch; qkey is "q:" and id, of which id is the tail. Both live in
// scratch until the next call (the result that carries them is encoded
// before it).
func entryID(words []qtoken, ctx string) (id, qkey string) {
	b := append(scratch.id[:0], ctx...)
	b = append(b, 0)
	for i, t := range words {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, t.w...)
	}
	sum := plugin.SHA256(b)
	if cap(b) <= maxKeptHashBuf {
		scratch.id = b[:0]
	}
	k := append(scratch.key[:0], "q:"...)
	k = hex.AppendEncode(k, sum[:16])
	scratch.key = k
	qkey = unsafe.String(unsafe.SliceData(k), len(k))
	return qkey[2:], qkey
}

// hasAnyFold is hasAny(strings.ToLower(s), markers) in one pass over s,
// folding ASCII case as it goes: a marker is compared only where s has its
// first byte, and only over ASCII (at the first other byte not yet past a
// match, the whole text is lower-cased as before). Inside wasm a loop
// costs several nanoseconds a byte: lower-casing a copy and a
// strings.Contains per marker cost 3 µs a request.
func hasAnyFold(s string, markers []string) bool {
	return hasAnyFoldFirst(s, markers, nil)
}

// markerFirsts are the first bytes of a list of markers; all is set when
// one is empty (strings.Contains(s, "") holds for every s). Of a list of
// at most 64, by holds for each first byte the markers that start with it
// and second for each byte the markers it may be the second byte of (bit
// i: markers[i]; a marker of one byte may be followed by any), so a byte
// is compared only with the markers that start with it and the byte after
// it: the market markers start with nine common letters, and a call to
// compare one marker at each of them cost more than the rest of the scan.
type markerFirsts struct {
	first  [256]bool
	all    bool
	many   bool // more than 64 markers: by and second are not set
	by     [256]uint64
	second [256]uint64
}

func firstBytes(markers []string) *markerFirsts {
	f := &markerFirsts{many: len(markers) > 64}
	for i, m := range markers {
		if m == "" {
			f.all = true
			continue
		}
		f.first[m[0]] = true
		if f.many {
			continue
		}
		f.by[m[0]] |= 1 << i
		if len(m) == 1 {
			for c := range f.second {
				f.second[c] |= 1 << i
			}
		} else {
			f.second[m[1]] |= 1 << i
		}
	}
	return f
}

// hasAnyFoldFirst is hasAnyFold with the markers' firstBytes made once (nil:
// made now).
func hasAnyFoldFirst(s string, markers []string, f *markerFirsts) bool {
	if f == nil {
		f = firstBytes(markers)
	}
	if f.all {
		return true
	}
	if f.many {
		return hasAnyFoldMany(s, markers, f)
	}
	if len(s) == 0 {
		return false
	}
	// Each byte and the next, lowered, pick the markers to compare there:
	// table reads, no branch but the loop's and a rare candidate's (inside
	// wasm each branch taken costs more than the byte's test). A byte
	// that is not ASCII is noted and the text decided at the end as
	// before: a match among ASCII bytes is one in the lowered text too.
	// The loop stops before the last byte, so the next one is always
	// there (past the end only a marker of one byte may match: the byte
	// 0's set), and a candidate's compare is out of line: the loop's body
	// is a few blocks.
	var high byte
	c := lowerASCII[s[0]]
	last := len(s) - 1
	for i := 0; i < last; i++ {
		c2 := lowerASCII[s[i+1]]
		high |= s[i]
		if set := f.by[c] & f.second[c2]; set != 0 && markerAt(s[i:], markers, set) {
			return true
		}
		c = c2
	}
	high |= s[last]
	if set := f.by[c] & f.second[0]; set != 0 && markerAt(s[last:], markers, set) {
		return true
	}
	if high >= utf8.RuneSelf {
		return hasAny(strings.ToLower(s), markers)
	}
	return false
}

// markerAt reports whether s starts with one of the markers in set (bit
// i: markers[i]), ASCII case folded.
//
//go:noinline
func markerAt(s string, markers []string, set uint64) bool {
	for ; set != 0; set &= set - 1 {
		if foldPrefixASCII(s, markers[bits.TrailingZeros64(set)]) {
			return true
		}
	}
	return false
}

// hasAnyFoldMany is hasAnyFoldFirst for more than 64 markers (by and
// second are not set).
func hasAnyFoldMany(s string, markers []string, f *markerFirsts) bool {
	first := &f.first
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return hasAny(strings.ToLower(s), markers)
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if !first[c] {
			continue
		}
		for _, m := range markers {
			if m[0] == c && foldPrefixASCII(s[i:], m) {
				return true
			}
		}
	}
	return false
}

// foldPrefixASCII reports whether s starts with m once its ASCII capitals
// are lowered, comparing ASCII bytes of s only.
func foldPrefixASCII(s, m string) bool {
	if len(s) < len(m) {
		return false
	}
	for j := 0; j < len(m); j++ {
		c := s[j]
		if c >= utf8.RuneSelf {
			return false
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != m[j] {
			return false
		}
	}
	return true
}

// miss is what the request phase hands the response and stream phases.
type miss struct {
	id   string
	key  string // the key/value key of the entry
	vec  []float32
	ctx  string // the context hash
	text string
	ttl  time.Duration
}

// encodeMiss packs a miss into an annotation value: the TTL in
// milliseconds and the lengths of the key, context hash, id and vector (in
// decimal, each followed by a comma), then the key, context hash, id, the
// vector (base64 of its little-endian float32s; none in the strict mode)
// and the question, as they are. Inside wasm, base64 and the wire encoding
// of the whole miss (and their decoding in the answer phase) cost a loop
// step every few bytes of the question. The numbers are written by
// appendDec and the vector's steps are skipped when there is none:
// strconv.AppendInt, a loop over the lengths and base64's calls for an
// empty vector cost ~0.5 µs a miss (hot, under wazero). The value lives in
// scratch until the next encodeMiss: the result that carries it is encoded
// before the next call.
func encodeMiss(m *miss) string {
	b := appendTTL(scratch.miss[:0], m.ttl)
	b = appendDec(append(b, ','), uint64(len(m.key)))
	b = appendDec(append(b, ','), uint64(len(m.ctx)))
	b = appendDec(append(b, ','), uint64(len(m.id)))
	if len(m.vec) > 0 {
		b = appendMissVec(b, m)
	} else {
		b = append(b, ",0,"...)
		b = append(b, m.key...)
		b = append(b, m.ctx...)
		b = append(b, m.id...)
	}
	b = append(b, m.text...)
	scratch.miss = b
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// appendMissVec is encodeMiss's tail from the vector's length to the
// vector, out of line: the strict mode has none, and inside wasm every
// block of a function is a dispatch through its one br_table.
//
//go:noinline
func appendMissVec(b []byte, m *miss) []byte {
	vb := scratch.vec[:0]
	for _, f := range m.vec {
		vb = binary.LittleEndian.AppendUint32(vb, math.Float32bits(f))
	}
	scratch.vec = vb[:0]
	nv := base64.RawStdEncoding.EncodedLen(len(vb))
	b = appendDec(append(b, ','), uint64(nv))
	b = append(b, ',')
	b = append(b, m.key...)
	b = append(b, m.ctx...)
	b = append(b, m.id...)
	at := len(b)
	b = slices.Grow(b, nv)[:at+nv]
	base64.RawStdEncoding.Encode(b[at:], vb)
	return b
}

// appendDec appends n in decimal, as strconv.AppendUint(b, n, 10) does.
// A miss's lengths are under 100: their digits are stored bytes, not a
// memmove of strconv's small strings, nor a loop of divisions by ten
// (inside wasm, which has no 64-bit multiply-high, each is a multiply by
// the reciprocal emulated with four multiplies of 32-bit halves).
func appendDec(b []byte, n uint64) []byte {
	switch {
	case n < 10:
		return append(b, byte('0'+n))
	case n < 100:
		return append(b, tens[n], byte('0'+n-10*uint64(tens[n]-'0')))
	}
	return strconv.AppendUint(b, n, 10)
}

// tens is the tens digit of each number under 100.
var tens = func() (t [100]byte) {
	for i := range t {
		t[i] = byte('0' + i/10)
	}
	return t
}()

// appendTTL appends ttl in milliseconds, in decimal: a request's TTL is
// one of the regimes' few, so the last one's digits are kept.
func appendTTL(b []byte, ttl time.Duration) []byte {
	if ttl != lastTTL.d || lastTTL.dec == nil {
		lastTTL.d = ttl
		lastTTL.dec = strconv.AppendUint(lastTTL.dec[:0], uint64(max(ttl.Milliseconds(), 0)), 10)
	}
	return append(b, lastTTL.dec...)
}

var lastTTL struct {
	d   time.Duration
	dec []byte
}

// decodeMiss unpacks encodeMiss's value; the miss's strings view s.
func decodeMiss(s string) (m miss, ok bool) {
	var n [5]int // the TTL and the four lengths
	i := 0
	for k := range n {
		j := i
		for ; j < len(s) && j-i < 12 && '0' <= s[j] && s[j] <= '9'; j++ {
			n[k] = n[k]*10 + int(s[j]-'0')
		}
		if j == i || j >= len(s) || s[j] != ',' {
			return m, false
		}
		i = j + 1
	}
	rest := s[i:]
	nk, nc, ni, nv := n[1], n[2], n[3], n[4]
	if nk == 0 || nv > base64.RawStdEncoding.EncodedLen(4*8192) || nk+nc+ni+nv > len(rest) {
		return m, false
	}
	m.ttl = time.Duration(n[0]) * time.Millisecond
	m.key, rest = rest[:nk], rest[nk:]
	m.ctx, rest = rest[:nc], rest[nc:]
	m.id, rest = rest[:ni], rest[ni:]
	vs, text := rest[:nv], rest[nv:]
	m.text = text
	if nv == 0 {
		return m, true
	}
	vb := make([]byte, base64.RawStdEncoding.DecodedLen(nv))
	k, err := base64.RawStdEncoding.Decode(vb, unsafe.Slice(unsafe.StringData(vs), nv))
	if err != nil || k%4 != 0 {
		return m, false
	}
	m.vec = make([]float32, k/4)
	for i := range m.vec {
		m.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(vb[4*i:]))
	}
	return m, true
}

// The payload stored beside a vector (wire-encoded): the context hash, the
// question (for the guard of later lookups), then the entry.
// It is built in scratch.enc: the host copies what it stores, and the
// request phase that also uses it is another call.
func joinPayload(ctx, text string, entry []byte) []byte {
	e := &scratch.enc
	e.Reset()
	e.String(ctx)
	e.String(text)
	e.Raw(entry)
	return e.Bytes()
}

func splitPayload(p []byte) (ctx, text string, entry []byte, ok bool) {
	d := wire.NewDecoder(p)
	ctx, text, entry = d.String(), d.String(), d.Raw()
	return ctx, text, entry, d.Err() == nil
}

func store(m miss, r *wire.Response) {
	if !respcache.Storable(r, cfg.minTokens) {
		plugin.CounterAdd(metricSkips, 1)
		return
	}
	// In a kept buffer: kv_put copies what it stores.
	entry := respcache.AppendEntry(scratch.entry[:0], &enc, r, plugin.Now().UnixMilli())
	if cap(entry) <= maxKeptHashBuf {
		scratch.entry = entry[:0]
	}
	if len(entry)+len(m.text) > cfg.maxEntryBytes {
		plugin.CounterAdd(metricSkips, 1)
		return
	}
	sc := storeScope(m.text)
	payload := joinPayload(m.ctx, m.text, entry)
	if err := kvPut(sc, m.key, payload, m.ttl); err != nil {
		plugin.CounterAdd(metricErrors, 1)
		plugin.Logf(plugin.LevelWarn, "semcache: storing an entry failed: %v", err)
		return
	}
	if len(m.vec) > 0 { // similar questions are looked up too
		var tags []string
		if hasAnyFold(m.text, cfg.market) {
			tags = append(tags, tagMarket)
		}
		if err := plugin.VectorInsert(sc, m.id, m.vec, m.ttl, tags, payload); err != nil {
			plugin.CounterAdd(metricErrors, 1)
			plugin.Logf(plugin.LevelWarn, "semcache: storing an entry's vector failed: %v", err)
		}
	}
	plugin.CounterAdd(metricStores, 1)
}

// missOf returns the request phase's miss, unless another layer answered
// the request locally (a cached answer is never stored again).
func missOf(meta *wire.Meta) (miss, bool) {
	if annotation(meta, AnnotationReplayPace) != "" {
		return miss{}, false
	}
	v := annotation(meta, AnnotationMiss)
	if v == "" {
		return miss{}, false
	}
	return decodeMiss(v)
}

func onResponse(in *wire.LayerResponse, _ *wire.LayerResponseResult) error {
	if m, ok := missOf(&in.Meta); ok {
		store(m, &in.Response)
	}
	return nil
}

func onStream(in *wire.LayerStream, res *wire.LayerStreamResult) error {
	res.Events = in.Events
	st := in.State
	if len(st) == 0 {
		if _, ok := missOf(&in.Meta); !ok {
			res.State = respcache.Skip()
			return nil
		}
		// The miss itself stays in the annotations; the state carries only
		// the answer being collected.
		st = respcache.StartStream(nil, 0)
	}
	st, ok := respcache.Collect(st, in.Events, cfg.maxEntryBytes)
	if !ok {
		plugin.CounterAdd(metricSkips, 1)
		res.State = st
		return nil
	}
	if !in.Final {
		res.State = st
		return nil
	}
	if _, _, resp, ok := respcache.Finish(st); ok {
		if m, ok := missOf(&in.Meta); ok {
			store(m, &resp)
		}
	} else {
		plugin.CounterAdd(metricSkips, 1)
	}
	res.State = respcache.Skip()
	return nil
}
