// Command hashcache is layer L3, the exact-match cache: it normalizes the
// request (timestamps, UUIDs and ephemeral fields stripped, whitespace
// canonicalized, parallel tool calls and results in a deterministic order),
// hashes it with the host's SHA-256 together with the model and every
// parameter that changes the answer, and answers a repeated request from the
// key/value store without calling the upstream. Misses are stored from the
// response or stream phase, unless they are tool calls, errors or too short
// to be worth keeping. See README.md.
package main

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
	"unsafe"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Headers and annotations.
const (
	HeaderCache       = respcache.HeaderCache       // hash-hit | miss | stale
	HeaderSavedTokens = respcache.HeaderSavedTokens // on a hit: input+output tokens not sent upstream
	HeaderAge         = respcache.HeaderAge         // on a hit: seconds since the entry was stored
	HeaderKey         = "X-Bardo-Cache-Key"         // the first 16 hex digits of the key

	// AnnotationKey carries a miss's key (hex) from the request phase to the
	// response and stream phases of the same request.
	AnnotationKey = "hashcache.key"
	// AnnotationTTL carries the TTL (milliseconds) chosen for a miss.
	AnnotationTTL = "hashcache.ttl_ms"
	// AnnotationReplayPace paces the host's stream replay of a hit; every
	// cache layer reads it as "this answer came from a cache".
	AnnotationReplayPace = respcache.AnnotationReplayPace
)

// Metrics (exported as bardo_plugin_<name>{plugin="<layer name>"}).
const (
	metricHits        = "hashcache_hits_total"
	metricMisses      = "hashcache_misses_total"
	metricStores      = "hashcache_stores_total"
	metricSkips       = "hashcache_skips_total"
	metricSavedTokens = "hashcache_saved_tokens_total"
	metricErrors      = "hashcache_errors_total"
	// metricStale counts stale answers served because every provider
	// failed (the spec's bardo_cache_stale_served; alert when > 0).
	metricStale = "hashcache_stale_served_total"
)

type rawConfig struct {
	Isolation       string    `json:"isolation"`
	TTL             string    `json:"ttl"`
	TTLStatic       string    `json:"ttl_static"`
	VolatileMarkers *[]string `json:"volatile_markers"`
	MinTokens       *int64    `json:"min_tokens"`
	ReplayPaceMs    *int64    `json:"replay_pace_ms"`
	StripTimestamps *bool     `json:"strip_timestamps"`
	StripUUIDs      *bool     `json:"strip_uuids"`
	EphemeralFields *[]string `json:"ephemeral_fields"`
	IgnoreExtra     *[]string `json:"ignore_extra"`
	MaxEntryBytes   *int64    `json:"max_entry_bytes"`
	StaleIfError    string    `json:"stale_if_error"`
}

type config struct {
	shared        bool
	ttl           time.Duration
	ttlStatic     time.Duration // 0: every entry gets ttl
	ttlMs         string        // ttl and ttlStatic in milliseconds, as the TTL annotation's value
	ttlStaticMs   string
	markers       [][]byte // lower case
	minTokens     int64
	pace          string // replay_pace_ms as the annotation's value, "" for none
	maxEntryBytes int
	// staleIfError keeps an entry this long past its TTL, served only when
	// every provider failed (0: entries die at their TTL).
	staleIfError time.Duration
}

// Defaults.
var (
	defaultMarkers = []string{"price", "market", "quote", "rate", "apy", "apr", "tvl", "volume",
		"balance", "position", "liquidity", "gas", "volatility", "now", "today", "current", "latest", "live"}
	defaultFields = []string{"traceId", "requestId", "sessionCounter", "trace_id", "request_id", "session_counter"}
	defaultIgnore = []string{"metadata", "user", "stream_options", "prompt_cache_key", "prompt_cache_retention",
		"store", "service_tier", "safety_identifier", "client_metadata", "include"}
)

var (
	cfg  config
	keys keyBuilder
	enc  wire.Encoder
)

func init() {
	plugin.RegisterLayer(plugin.Layer{
		Name:       "hashcache",
		Version:    "1.0.0",
		Phases:     wire.PhaseRequest | wire.PhaseResponse | wire.PhaseStream,
		Reads:      wire.PartAll,
		Init:       initConfig,
		OnRequest:  onRequest,
		OnResponse: onResponse,
		OnStream:   onStream,
		// It only stores answers: a v1.6 host hands it a streamed one
		// whole, through onResponse (OnStream serves older hosts).
		WatchStream: true,
		OnFallback:  onFallback,
	})
}

func main() {}

func initConfig() error {
	var rc rawConfig
	if err := plugin.DecodeConfigStrict(&rc); err != nil {
		return fmt.Errorf("hashcache config: %w", err)
	}
	c, n, ignore, err := parseConfig(&rc)
	if err != nil {
		return fmt.Errorf("hashcache config: %w", err)
	}
	cfg = c
	keys = keyBuilder{n: n, ignore: ignore}
	if c.ttlStatic > 0 {
		keys.markers = c.markers
	}
	warmUp()
	return nil
}

// warmUp runs the key builder once on a small request with every kind of
// block, at Init, so the first real request of a fresh instance does not
// pay first-use costs (the builder's buffers, the guest heap's first
// growth) inside its timeout.
func warmUp() {
	req := wire.Request{
		Model:  "warm-up",
		System: []wire.Block{{Type: wire.BlockText, Text: "system 2025-01-01T00:00:00Z"}},
		Messages: []wire.Message{
			{Role: "user", Content: []wire.Block{{Type: wire.BlockText, Text: `{"traceId":"x"} 123e4567-e89b-12d3-a456-426614174000`}}},
			{Role: "assistant", Content: []wire.Block{
				{Type: wire.BlockToolUse, ID: "a", Name: "t1", Data: []byte(`{}`)},
				{Type: wire.BlockToolUse, ID: "b", Name: "t0", Data: []byte(`{}`)}}},
			{Role: "user", Content: []wire.Block{
				{Type: wire.BlockToolResult, ID: "a", Text: "1"},
				{Type: wire.BlockToolResult, ID: "b", Text: "2"},
				{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"x"}`)}}},
		},
		Tools:  []wire.Tool{{Name: "t1"}, {Name: "t0"}},
		Params: wire.Params{Set: wire.HasTemperature | wire.HasMaxTokens, Temperature: 0.5, MaxTokens: 10, Stop: []string{"x"}},
		Extra:  []byte(`{"a":1}`),
	}
	sum := plugin.SHA256(keys.build(&req))
	_ = storeKeyOf(&sum)
	pieces.reset() // the warm-up's pieces are no tenant's
}

func parseConfig(rc *rawConfig) (c config, n *normalizer, ignore []string, err error) {
	switch rc.Isolation {
	case "", "tenant":
	case "shared":
		c.shared = true
	default:
		return c, nil, nil, fmt.Errorf(`isolation = %q: want "tenant" or "shared"`, rc.Isolation)
	}
	dur := func(name, s, def string) (time.Duration, error) {
		if s == "" {
			s = def
		}
		if s == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%s = %q: want a duration such as \"300s\"", name, s)
		}
		return d, nil
	}
	if c.ttl, err = dur("ttl", rc.TTL, "300s"); err != nil {
		return
	}
	if c.ttl < time.Second {
		return c, nil, nil, fmt.Errorf("ttl = %q: at least 1s", rc.TTL)
	}
	if c.ttlStatic, err = dur("ttl_static", rc.TTLStatic, ""); err != nil {
		return
	}
	c.ttlMs = strconv.FormatInt(c.ttl.Milliseconds(), 10)
	c.ttlStaticMs = strconv.FormatInt(c.ttlStatic.Milliseconds(), 10)
	if c.staleIfError, err = dur("stale_if_error", rc.StaleIfError, "1h"); err != nil {
		return
	}
	markers := defaultMarkers
	if rc.VolatileMarkers != nil {
		markers = *rc.VolatileMarkers
	}
	for _, m := range markers {
		if m = string(bytes.ToLower([]byte(m))); m != "" {
			c.markers = append(c.markers, []byte(m))
		}
	}
	c.minTokens = 10
	if rc.MinTokens != nil {
		c.minTokens = *rc.MinTokens
	}
	pace := int64(30)
	if rc.ReplayPaceMs != nil {
		pace = *rc.ReplayPaceMs
	}
	if pace < 0 || pace > 1000 {
		return c, nil, nil, fmt.Errorf("replay_pace_ms = %d: want 0–1000", pace)
	}
	if pace > 0 {
		c.pace = strconv.FormatInt(pace, 10)
	}
	c.maxEntryBytes = 1 << 20
	if rc.MaxEntryBytes != nil {
		if *rc.MaxEntryBytes < 1024 || *rc.MaxEntryBytes > 16<<20 {
			return c, nil, nil, fmt.Errorf("max_entry_bytes = %d: want 1024–16777216", *rc.MaxEntryBytes)
		}
		c.maxEntryBytes = int(*rc.MaxEntryBytes)
	}
	fields := defaultFields
	if rc.EphemeralFields != nil {
		fields = *rc.EphemeralFields
	}
	for _, f := range fields {
		if f == "" || bytes.ContainsAny([]byte(f), "\"\\") {
			return c, nil, nil, fmt.Errorf("ephemeral_fields: %q is not a plain field name", f)
		}
	}
	ignore = defaultIgnore
	if rc.IgnoreExtra != nil {
		ignore = *rc.IgnoreExtra
	}
	n = newNormalizer(rc.StripTimestamps == nil || *rc.StripTimestamps, rc.StripUUIDs == nil || *rc.StripUUIDs, fields)
	return c, n, ignore, nil
}

func kvGet(key string) ([]byte, bool) {
	if cfg.shared {
		return plugin.KVGetShared(key)
	}
	return plugin.KVGet(key)
}

func kvPut(key string, val []byte, ttl time.Duration) error {
	if cfg.shared {
		return plugin.KVPutShared(key, val, ttl)
	}
	return plugin.KVPut(key, val, ttl)
}

func kvDelete(key string) {
	if cfg.shared {
		plugin.KVDeleteShared(key)
	} else {
		plugin.KVDelete(key)
	}
}

// storePrefix starts the kv key of an entry.
const storePrefix = "r:"

// keyBuf holds the kv key of the call's entry. Inside wasm an allocation
// costs about a microsecond and leaves garbage for the guest's GC; the
// strings made from it are used within the call only (the host copies a
// kv key, and a result's headers and annotations are encoded before the
// next call builds another key).
var keyBuf [len(storePrefix) + 64]byte

// storeKey is the kv key of a hex cache key, valid until the next
// storeKey or storeKeyOf.
func storeKey(hexKey string) string {
	n := copy(keyBuf[:], storePrefix)
	n += copy(keyBuf[n:], hexKey)
	return unsafe.String(&keyBuf[0], n)
}

// storeKeyOf is the kv key of a cache key, valid until the next storeKey
// or storeKeyOf.
func storeKeyOf(sum *[32]byte) string {
	copy(keyBuf[:], storePrefix)
	hex.Encode(keyBuf[len(storePrefix):], sum[:])
	return unsafe.String(&keyBuf[0], len(keyBuf))
}

// entryBuf is the entry being stored, kept between calls (kv_put copies
// it).
var entryBuf []byte

// resKV holds a miss's headers (the key's, the verdict) and annotations
// (key, TTL): the SDK hands each call a result with nil slices, and
// appending to them allocated three times a miss. A result is encoded
// before the next call reuses the array; the slices are capped, so an
// append (respcache.Answer's on a hit) copies.
var resKV [4]wire.KV

func onRequest(req *wire.LayerRequest, res *wire.LayerResult) error {
	keys.tenant = req.Meta.Tenant
	canon := keys.build(&req.Request)
	sum := plugin.SHA256(canon)
	// The kv key, the key annotation and its header are one string (inside
	// wasm each allocation costs about a microsecond).
	skey := storeKeyOf(&sum)
	hexKey := skey[len(storePrefix):]
	kv := &resKV
	kv[0] = wire.KV{Key: HeaderKey, Value: hexKey[:16]}
	res.Headers = kv[0:1:1]

	ttl, ttlMs := cfg.ttl, cfg.ttlMs
	if cfg.ttlStatic > 0 && !keys.volatile {
		ttl, ttlMs = cfg.ttlStatic, cfg.ttlStaticMs
	}
	if v, ok := kvGet(skey); ok && serve(res, v, skey, ttl) {
		return nil
	}

	kv[1] = wire.KV{Key: HeaderCache, Value: "miss"}
	kv[2] = wire.KV{Key: AnnotationKey, Value: hexKey}
	kv[3] = wire.KV{Key: AnnotationTTL, Value: ttlMs}
	res.Headers = kv[0:2:2]
	res.Annotations = kv[2:4:4]
	plugin.CounterAdd(metricMisses, 1)
	return nil
}

// serve answers the request with the entry v found under skey, if it is
// within ttl, and reports whether it did. Out of line, like every path a
// miss does not take: inside wasm every jump of a function is a dispatch
// through its one jump table, whose cost grows with the function's size.
//
//go:noinline
func serve(res *wire.LayerResult, v []byte, skey string, ttl time.Duration) bool {
	resp, storedMs, err := respcache.DecodeEntry(v)
	if err != nil {
		// An entry this version cannot read: drop it and treat as a miss.
		kvDelete(skey)
		plugin.CounterAdd(metricErrors, 1)
		return false
	}
	// An entry past its TTL is kept only for the fallback phase
	// (stale_if_error): here it is a miss, and the answer that replaces
	// it is stored over it.
	if plugin.Now().UnixMilli()-storedMs >= ttl.Milliseconds() {
		return false
	}
	// A fresh id in the caller's dialect: the host makes one for an
	// answer that has none.
	saved := respcache.Answer(res, &resp, respcache.VerdictHashHit, storedMs, plugin.Now().UnixMilli(), cfg.pace)
	res.SkipAnswer = true // a hit is not stored again
	plugin.CounterAdd(metricHits, 1)
	plugin.CounterAdd(metricSavedTokens, float64(saved))
	return true
}

// missOf returns the key and TTL the request phase chose for this request, or
// ok false when there is nothing to store: the request was a hit, this layer
// did not see the request, or another layer answered it locally (a cached
// answer is never stored again).
func missOf(m *wire.Meta) (hexKey string, ttl time.Duration, ok bool) {
	ttl = cfg.ttl
	for i := len(m.Annotations) - 1; i >= 0; i-- {
		a := &m.Annotations[i]
		switch a.Key {
		case AnnotationReplayPace:
			return "", 0, false
		case AnnotationTTL:
			if ms, err := strconv.ParseInt(a.Value, 10, 64); err == nil && ms > 0 {
				ttl = time.Duration(ms) * time.Millisecond
			}
		case AnnotationKey:
			if len(a.Value) != 64 {
				return "", 0, false
			}
			hexKey, ok = a.Value, true
		}
	}
	return hexKey, ttl, ok
}

func store(hexKey string, ttl time.Duration, r *wire.Response) {
	if !respcache.Storable(r, cfg.minTokens) {
		plugin.CounterAdd(metricSkips, 1)
		return
	}
	// Encoded, not copied as the span of the input the answer was decoded
	// from: that path measured cheaper in the wazero benchmark but not
	// live, where semcache has just run this encoder's code in the same
	// answer phase and the span's checks are code found cold (issue 14).
	v := respcache.AppendEntry(entryBuf[:0], &enc, r, plugin.Now().UnixMilli())
	if cap(v) <= 64<<10 {
		entryBuf = v // a larger one is not kept: it would stay in memory
	}
	if len(v) > cfg.maxEntryBytes {
		plugin.CounterAdd(metricSkips, 1)
		return
	}
	// The store keeps the entry for its stale-if-error window too; the
	// request phase judges freshness by the entry's age.
	if err := kvPut(storeKey(hexKey), v, ttl+cfg.staleIfError); err != nil {
		plugin.CounterAdd(metricErrors, 1)
		plugin.Logf(plugin.LevelWarn, "hashcache: storing an entry failed: %v", err)
		return
	}
	plugin.CounterAdd(metricStores, 1)
}

// onFallback serves this request's entry when every provider failed, if it
// is within its TTL plus stale_if_error: the request phase noted the key
// and TTL (a miss, or an entry past its TTL).
func onFallback(req *wire.LayerRequest, res *wire.LayerResult) error {
	if cfg.staleIfError <= 0 {
		return nil
	}
	hexKey, ttl, ok := missOf(&req.Meta)
	if !ok {
		return nil
	}
	v, ok := kvGet(storeKey(hexKey))
	if !ok {
		return nil
	}
	resp, storedMs, err := respcache.DecodeEntry(v)
	if err != nil {
		return nil
	}
	age := plugin.Now().UnixMilli() - storedMs
	if age >= (ttl + cfg.staleIfError).Milliseconds() {
		return nil
	}
	resp.ID = ""
	pace := cfg.pace
	if pace == "" {
		pace = "0" // still marks the answer as cached: never stored again
	}
	res.Action = wire.ActionAnswer
	res.Answer = &resp
	res.Headers = append(res.Headers,
		wire.KV{Key: HeaderCache, Value: "stale"},
		wire.KV{Key: HeaderAge, Value: strconv.FormatInt(max(age/1000, 0), 10)})
	res.Annotations = append(res.Annotations, wire.KV{Key: AnnotationReplayPace, Value: pace})
	plugin.CounterAdd(metricStale, 1)
	return nil
}

func onResponse(in *wire.LayerResponse, res *wire.LayerResponseResult) error {
	if hexKey, ttl, ok := missOf(&in.Meta); ok {
		store(hexKey, ttl, &in.Response)
	}
	return nil
}

func onStream(in *wire.LayerStream, res *wire.LayerStreamResult) error {
	res.Events = in.Events // the events pass unchanged
	st := in.State
	if len(st) == 0 {
		hexKey, ttl, ok := missOf(&in.Meta)
		if !ok {
			res.State = respcache.Skip()
			return nil
		}
		st = respcache.StartStream([]byte(hexKey), ttl)
	}
	if !respcache.Collecting(st) {
		res.State = st[:1]
		return nil
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
	if key, ttl, resp, ok := respcache.Finish(st); ok {
		store(string(key), ttl, &resp)
	} else {
		plugin.CounterAdd(metricSkips, 1)
	}
	res.State = respcache.Skip()
	return nil
}

// hasMarker reports whether text holds one of the (lower-case) markers at the
// start of a word, case-insensitively ("price" matches "Prices").
func hasMarker(text []byte, markers [][]byte) bool {
	if len(markers) == 0 {
		return false
	}
	for i := 0; i < len(text); {
		for i < len(text) && !isWord(text[i]) {
			i++
		}
		w := i
		for i < len(text) && isWord(text[i]) {
			i++
		}
		word := text[w:i]
		for _, m := range markers {
			if len(word) >= len(m) && equalFoldASCII(word[:len(m)], m) {
				return true
			}
		}
	}
	return false
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func equalFoldASCII(a, lower []byte) bool {
	for i := range lower {
		c := a[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
