// Command affinity is layer L6, session affinity: requests of one session
// go to the provider that served the session's previous request, within the
// provider's prompt-cache window, so its cached prefix is read instead of
// processed again. The request phase looks the session up and asks routing
// to try that provider first (annotation bardo.route.prefer); the response
// and stream phases record which provider actually answered. Affinity only
// reorders the candidates: it never makes a provider eligible that was not,
// and failover still happens. See README.md.
package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Headers.
const (
	HeaderAffinity    = "X-Bardo-Affinity"              // hit | miss | new
	HeaderSavedTokens = "X-Bardo-Affinity-Saved-Tokens" // on a hit: estimated input tokens saved by the warm cache
)

// Annotations. The routing ones are the host's (host/gateway).
const (
	AnnotationPrefer   = "bardo.route.prefer"
	AnnotationProvider = "bardo.route.provider"
	AnnotationModel    = "bardo.route.model"

	// AnnotationState is this request's lookup outcome (hit, miss, new).
	AnnotationState = "affinity.state"
	// AnnotationRecord carries what the response and stream phases need to
	// record the session: key, prompt tokens, prefix hash, the expected
	// provider and the estimated saving, newline-separated.
	AnnotationRecord = "affinity.record"
)

// Outcomes.
const (
	stateHit  = "hit"  // served by the session's previous provider, within the TTL
	stateMiss = "miss" // the session had a provider, but this request went elsewhere (failover, model change, provider not eligible)
	stateNew  = "new"  // no live entry: the session's first request, or its entry expired
)

// Metrics (exported as bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricHits        = "affinity_hits_total"
	metricMisses      = "affinity_misses_total"
	metricNew         = "affinity_new_total"
	metricSavedTokens = "affinity_saved_tokens_total"
	metricErrors      = "affinity_errors_total"
)

type rawConfig struct {
	TTL            string   `json:"ttl"`
	Discount       *float64 `json:"discount"`
	MinCacheTokens *int64   `json:"min_cache_tokens"`
	DeriveSession  *bool    `json:"derive_session"`
}

type config struct {
	ttl            time.Duration
	discount       float64
	minCacheTokens int64
	derive         bool
}

var cfg config

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:       "affinity",
		Version:    "1.0.0",
		Phases:     wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		Reads:      wire.PartModel | wire.PartSystem | wire.PartMessages | wire.PartTools,
		Init:       initLayer,
		OnRequest:  onRequest,
		OnResponse: onResponse,
		OnStream:   onStream, // for hosts before ABI v1.6
		// It only records who answered: a v1.6 host hands it a streamed
		// answer once, through onResponse, instead of every batch.
		WatchStream: true,
	})
}

func initLayer() error {
	var raw rawConfig
	if err := plugin.DecodeConfig(&raw); err != nil {
		return err
	}
	c, err := parseConfig(&raw)
	if err != nil {
		return err
	}
	cfg = c
	return nil
}

func parseConfig(raw *rawConfig) (config, error) {
	c := config{ttl: 300 * time.Second, discount: 0.9, minCacheTokens: 1024, derive: true}
	if raw.TTL != "" {
		d, err := time.ParseDuration(raw.TTL)
		if err != nil || d <= 0 {
			return c, errors.New("affinity: ttl must be a positive duration such as \"300s\"")
		}
		c.ttl = d
	}
	if raw.Discount != nil {
		if *raw.Discount < 0 || *raw.Discount > 1 || math.IsNaN(*raw.Discount) {
			return c, errors.New("affinity: discount must be between 0 and 1")
		}
		c.discount = *raw.Discount
	}
	if raw.MinCacheTokens != nil {
		if *raw.MinCacheTokens < 0 {
			return c, errors.New("affinity: min_cache_tokens must be >= 0")
		}
		c.minCacheTokens = *raw.MinCacheTokens
	}
	if raw.DeriveSession != nil {
		c.derive = *raw.DeriveSession
	}
	return c, nil
}

// entry is what the store keeps per session.
type entry struct {
	provider string
	model    string
	tokens   int64  // the prompt tokens of the session's last request (bytes/4)
	prefix   string // hex of the first 8 bytes of its prefix hash
}

func (e *entry) encode() []byte { return e.appendTo(nil) }

// appendTo appends the entry's stored form to b.
func (e *entry) appendTo(b []byte) []byte {
	b = append(b, "1\n"...)
	b = append(b, e.provider...)
	b = append(b, '\n')
	b = append(b, e.model...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, e.tokens, 10)
	b = append(b, '\n')
	return append(b, e.prefix...)
}

// decodeEntry parses a stored entry. Its strings are views of b, which the
// caller must not change while the entry is in use.
func decodeEntry(b []byte) (entry, bool) {
	var f [5]string
	if !fields(unsafe.String(unsafe.SliceData(b), len(b)), &f) || f[0] != "1" || f[1] == "" {
		return entry{}, false
	}
	n, err := strconv.ParseInt(f[3], 10, 64)
	if err != nil {
		return entry{}, false
	}
	return entry{provider: f[1], model: f[2], tokens: n, prefix: f[4]}, true
}

// fields splits s at newlines into exactly len(f) fields (as strings.Split
// would, without its allocation): false for any other count.
func fields(s string, f *[5]string) bool {
	for i := range len(f) - 1 {
		j := strings.IndexByte(s, '\n')
		if j < 0 {
			return false
		}
		f[i], s = s[:j], s[j+1:]
	}
	if strings.IndexByte(s, '\n') >= 0 {
		return false
	}
	f[len(f)-1] = s
	return true
}

// Kept from call to call: inside wasm an allocation costs about a
// microsecond and leaves garbage for a later call's GC. What the request
// phase returns in them is encoded before the next call begins.
var (
	hashIn   []byte     // the prefix being hashed
	recBuf   []byte     // the request's record annotation; its key and saving are views of it
	entryBuf []byte     // the entry being stored
	entryIn  []byte     // the entry read
	resKV    [5]wire.KV // the request phase's headers and annotations
)

// prefixHash returns the hex of the first 16 bytes of SHA-256 over what
// makes a conversation's cacheable prefix: model, system text, tool names,
// first user message. An agent resends that prefix every turn, so it is
// remembered (prefixes, in memo.go) by its exact bytes and the tenant.
func prefixHash(tenant string, r *wire.Request) *[32]byte {
	b := binary.AppendUvarint(hashIn[:0], uint64(len(tenant)))
	b = append(b, tenant...)
	at := len(b)
	b = append(b, r.Model...)
	b = append(b, 0)
	for i := range r.System {
		b = append(b, r.System[i].Text...)
		b = append(b, '\n')
	}
	b = append(b, 0)
	for i := range r.Tools {
		b = append(b, r.Tools[i].Name...)
		b = append(b, '\n')
	}
	b = append(b, 0)
	for i := range r.Messages {
		if r.Messages[i].Role != "user" {
			continue
		}
		for _, bl := range r.Messages[i].Content {
			b = append(b, bl.Text...)
			b = append(b, bl.Data...)
			b = append(b, '\n')
		}
		break
	}
	hashIn = b
	return prefixOf(b, at)
}

// promptBytes estimates the prompt's size: all of it, and the part before
// its last message (what the previous request of an append-only
// conversation may have left in the provider's cache).
func promptBytes(r *wire.Request) (all, stable int64) {
	for i := range r.System {
		all += int64(len(r.System[i].Text))
	}
	for i := range r.Tools {
		all += int64(len(r.Tools[i].Name) + len(r.Tools[i].Description) + len(r.Tools[i].Schema))
	}
	for i := range r.Messages {
		if i == len(r.Messages)-1 {
			stable = all
		}
		for j := range r.Messages[i].Content {
			b := &r.Messages[i].Content[j]
			all += int64(len(b.Text) + len(b.Data) + len(b.Name))
		}
	}
	if len(r.Messages) == 0 {
		stable = all
	}
	return all, stable
}

// appendSessionKey appends the store key of the request's session to b:
// the caller's X-Bardo-Session (hashed when long), or, when derive_session
// is on, the prefix hash (sum: the hex of its first 16 bytes).
func appendSessionKey(b []byte, session string, sum *[32]byte) []byte {
	switch {
	case session != "" && len(session) <= 256:
		b = append(b, "s:"...)
		return append(b, session...)
	case session != "":
		h := plugin.SHA256([]byte(session))
		b = append(b, "s#"...)
		return hex.AppendEncode(b, h[:16])
	case cfg.derive:
		b = append(b, "p:"...)
		return append(b, sum[:]...)
	}
	return b
}

// view is b as a string, without a copy: for the kept buffers above, whose
// bytes stay as they are until the call's result is encoded.
func view(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	if req.Meta.Session == "" && !cfg.derive {
		res.SkipAnswer = true // no session: nothing to record
		return nil
	}
	sum := prefixHash(req.Meta.Tenant, &req.Request)
	all, stable := promptBytes(&req.Request)

	// The record annotation, built in place: key, tokens, prefix, expected
	// provider, saving.
	rec := appendSessionKey(recBuf[:0], req.Meta.Session, sum)
	key := view(rec)
	rec = append(rec, '\n')
	rec = strconv.AppendInt(rec, all/4, 10)
	rec = append(rec, '\n')
	at := len(rec)
	rec = append(rec, sum[:16]...) // the hex of the hash's first 8 bytes
	prefix := view(rec[at:])
	rec = append(rec, '\n')

	kv := &resKV
	n := 0
	state, saved := stateNew, int64(0)
	if v, ok := plugin.KVGetAppend(entryIn[:0], key); ok {
		entryIn = v // the entry's strings are views of it until the next request
		if e, ok := decodeEntry(v); ok {
			if e.model != req.Request.Model {
				// The cached prefix belongs to another model.
				state = stateMiss
			} else {
				state = stateHit
				saved = estimateSaved(&e, prefix, stable/4)
				rec = append(rec, e.provider...)
				kv[n] = wire.KV{Key: AnnotationPrefer, Value: e.provider}
				n++
			}
		}
	}
	rec = append(rec, '\n')
	at = len(rec)
	rec = strconv.AppendInt(rec, saved, 10)
	recBuf = rec
	kv[n] = wire.KV{Key: AnnotationState, Value: state}
	kv[n+1] = wire.KV{Key: AnnotationRecord, Value: view(rec)}
	kv[n+2] = wire.KV{Key: HeaderAffinity, Value: state}
	res.Annotations = kv[: n+2 : n+2]
	if state == stateHit {
		kv[n+3] = wire.KV{Key: HeaderSavedTokens, Value: view(rec[at:])}
		res.Headers = kv[n+2 : n+4 : n+4]
	} else {
		res.Headers = kv[n+2 : n+3 : n+3]
	}
	return nil
}

// estimateSaved estimates the input tokens a hit reads from the provider's
// cache instead of processing, times the cache-read discount: the previous
// request's prompt, at most this request's prompt before its last message,
// when the conversation's prefix is unchanged and long enough to be cached.
func estimateSaved(e *entry, prefix string, stableTokens int64) int64 {
	if e.prefix != prefix {
		return 0
	}
	cached := min(e.tokens, stableTokens)
	if cached < cfg.minCacheTokens || cached <= 0 {
		return 0
	}
	return int64(float64(cached) * cfg.discount)
}

func annotation(anns []wire.KV, key string) string {
	for i := len(anns) - 1; i >= 0; i-- {
		if anns[i].Key == key {
			return anns[i].Value
		}
	}
	return ""
}

// finish records the provider that answered for the session and counts the
// outcome; it returns the final outcome and the saving, or "" when there is
// nothing to record (no session, or an answer no provider gave).
func finish(m *wire.Meta) (string, int64) {
	rec := annotation(m.Annotations, AnnotationRecord)
	provider := annotation(m.Annotations, AnnotationProvider)
	if rec == "" || provider == "" {
		return "", 0
	}
	var f [5]string
	if !fields(rec, &f) {
		plugin.CounterAdd(metricErrors, 1)
		return "", 0
	}
	key, prefix, expect := f[0], f[2], f[3]
	tokens, _ := strconv.ParseInt(f[1], 10, 64)
	saved, _ := strconv.ParseInt(f[4], 10, 64)

	state := annotation(m.Annotations, AnnotationState)
	if state == stateHit && provider != expect {
		state, saved = stateMiss, 0 // failed over, or the provider was not eligible
	}
	switch state {
	case stateHit:
		plugin.CounterAdd(metricHits, 1)
		if saved > 0 {
			plugin.CounterAdd(metricSavedTokens, float64(saved))
		}
	case stateMiss:
		plugin.CounterAdd(metricMisses, 1)
	default:
		plugin.CounterAdd(metricNew, 1)
	}
	// The model the caller asked for: the next request of the session asks
	// for it again. (For "auto", routing chose the served model; the same
	// intent resolves the same model at the preferred provider.)
	model := m.Model
	if model == "" {
		model = annotation(m.Annotations, AnnotationModel)
	}
	e := entry{provider: provider, model: model, tokens: tokens, prefix: prefix}
	entryBuf = e.appendTo(entryBuf[:0])
	if err := plugin.KVPut(key, entryBuf, cfg.ttl); err != nil {
		plugin.CounterAdd(metricErrors, 1)
		plugin.Logf(plugin.LevelWarn, "affinity: storing session: %v", err)
	}
	return state, saved
}

func onResponse(in *wire.LayerResponse, res *wire.LayerResponseResult) error {
	state, saved := finish(&in.Meta)
	// The request phase's headers guessed a hit; after a failover the
	// caller learns the truth (a stream's headers are gone by then).
	if state == stateMiss && annotation(in.Meta.Annotations, AnnotationState) == stateHit {
		res.Headers = append(res.Headers,
			wire.KV{Key: HeaderAffinity, Value: state},
			wire.KV{Key: HeaderSavedTokens, Value: strconv.FormatInt(saved, 10)})
	}
	return nil
}

func onStream(in *wire.LayerStream, res *wire.LayerStreamResult) error {
	res.Events = in.Events
	if in.Final {
		finish(&in.Meta)
	}
	return nil
}

func main() {}
