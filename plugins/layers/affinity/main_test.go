//go:build !wasip1

package main

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

func text(s string) []wire.Block { return []wire.Block{{Type: wire.BlockText, Text: s}} }

func get(kvs []wire.KV, key string) string {
	for i := len(kvs) - 1; i >= 0; i-- {
		if kvs[i].Key == key {
			return kvs[i].Value
		}
	}
	return ""
}

// conversation is an agent request: a long system prompt, two tools, and
// turns user/assistant/…/user.
func conversation(model string, turns ...string) wire.LayerRequest {
	r := wire.Request{
		Model:  model,
		System: text(strings.Repeat("You are a careful DeFi operations agent. ", 200)),
		Tools: []wire.Tool{
			{Name: "get_price", Description: "Spot price.", Schema: []byte(`{"type":"object"}`)},
			{Name: "swap", Description: "Swap tokens.", Schema: []byte(`{"type":"object"}`)},
		},
	}
	for i, t := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		r.Messages = append(r.Messages, wire.Message{Role: role, Content: text(t)})
	}
	return wire.LayerRequest{Meta: wire.Meta{RequestID: "r", Tenant: "t", Dialect: wire.DialectOpenAI, Model: model}, Request: r}
}

// served runs the request phase, then the response phase as the host would
// after provider answered: the layer's annotations plus the routing ones.
func served(h *plugintest.Host, req wire.LayerRequest, provider string) (wire.LayerResult, wire.LayerResponseResult) {
	res := h.OnRequest(req)
	m := req.Meta
	m.Annotations = append(append([]wire.KV(nil), res.Annotations...),
		wire.KV{Key: AnnotationProvider, Value: provider}, wire.KV{Key: AnnotationModel, Value: req.Request.Model})
	rr := h.OnResponse(wire.LayerResponse{Meta: m, Response: wire.Response{ID: "x", Content: text("ok")}})
	return res, rr
}

func withSession(req wire.LayerRequest, s string) wire.LayerRequest {
	req.Meta.Session = s
	return req
}

func TestSessionFollowsItsProvider(t *testing.T) {
	h := plugintest.New(t, `{}`)
	first := withSession(conversation("gpt-4o", "hello"), "s1")
	res, _ := served(h, first, "b")
	if get(res.Headers, HeaderAffinity) != stateNew || get(res.Annotations, AnnotationPrefer) != "" {
		t.Fatalf("first request: %+v", res)
	}
	if h.Metrics[metricNew] != 1 {
		t.Fatalf("metrics = %v", h.Metrics)
	}

	second := withSession(conversation("gpt-4o", "hello", "hi there", "and now?"), "s1")
	res, rr := served(h, second, "b")
	if get(res.Headers, HeaderAffinity) != stateHit || get(res.Annotations, AnnotationPrefer) != "b" {
		t.Fatalf("second request: %+v", res)
	}
	// The previous prompt (system ≈ 8200 bytes, tools, "hello") was cached:
	// about 2060 tokens, at most the stable part of this one, × 0.9.
	prev := int64(len(first.Request.System[0].Text)+len("get_price")+len("Spot price.")+len(`{"type":"object"}`)+len("swap")+len("Swap tokens.")+len(`{"type":"object"}`)+len("hello")) / 4
	if got := get(res.Headers, HeaderSavedTokens); got != strconv.FormatInt(int64(float64(prev)*0.9), 10) {
		t.Fatalf("saved = %s, want %d", got, int64(float64(prev)*0.9))
	}
	if len(rr.Headers) != 0 || h.Metrics[metricHits] != 1 || h.Metrics[metricSavedTokens] != float64(int64(float64(prev)*0.9)) {
		t.Fatalf("response headers %v, metrics %v", rr.Headers, h.Metrics)
	}

	// Another session is its own.
	res, _ = served(h, withSession(conversation("gpt-4o", "hello"), "s2"), "a")
	if get(res.Headers, HeaderAffinity) != stateNew || get(res.Annotations, AnnotationPrefer) != "" {
		t.Fatalf("other session: %+v", res)
	}

	// s1's provider fails and the request fails over: a miss, and the
	// session moves.
	res, rr = served(h, withSession(conversation("gpt-4o", "hello", "hi", "more"), "s1"), "a")
	if get(res.Annotations, AnnotationPrefer) != "b" {
		t.Fatalf("prefer = %q", get(res.Annotations, AnnotationPrefer))
	}
	if get(rr.Headers, HeaderAffinity) != stateMiss || get(rr.Headers, HeaderSavedTokens) != "0" {
		t.Fatalf("failover headers: %v", rr.Headers)
	}
	if h.Metrics[metricMisses] != 1 {
		t.Fatalf("metrics = %v", h.Metrics)
	}
	res = h.OnRequest(withSession(conversation("gpt-4o", "hello", "hi", "more", "ok", "go"), "s1"))
	if get(res.Annotations, AnnotationPrefer) != "a" || get(res.Headers, HeaderAffinity) != stateHit {
		t.Fatalf("after failover: %+v", res)
	}
}

func TestModelChangeIsAMiss(t *testing.T) {
	h := plugintest.New(t, `{}`)
	served(h, withSession(conversation("gpt-4o", "hello"), "s"), "b")
	res, _ := served(h, withSession(conversation("gpt-4o-mini", "hello", "x", "y"), "s"), "a")
	if get(res.Headers, HeaderAffinity) != stateMiss || get(res.Annotations, AnnotationPrefer) != "" || get(res.Headers, HeaderSavedTokens) != "" {
		t.Fatalf("model change: %+v", res)
	}
	if h.Metrics[metricMisses] != 1 {
		t.Fatalf("metrics = %v", h.Metrics)
	}
	// Recorded for the new model.
	res = h.OnRequest(withSession(conversation("gpt-4o-mini", "hello", "x", "y", "z", "w"), "s"))
	if get(res.Annotations, AnnotationPrefer) != "a" {
		t.Fatalf("after the change: %+v", res)
	}
}

func TestTTL(t *testing.T) {
	h := plugintest.New(t, `{"ttl": "90s"}`)
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	h.Clock = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	served(h, withSession(conversation("gpt-4o", "hello"), "s"), "b")
	advance(80 * time.Second)
	// A hit refreshes the entry: the window slides, as a provider's cache does.
	if res, _ := served(h, withSession(conversation("gpt-4o", "hello"), "s"), "b"); get(res.Headers, HeaderAffinity) != stateHit {
		t.Fatalf("within the TTL: %+v", res.Headers)
	}
	advance(80 * time.Second)
	if res := h.OnRequest(withSession(conversation("gpt-4o", "hello"), "s")); get(res.Headers, HeaderAffinity) != stateHit {
		t.Fatalf("within the refreshed TTL: %+v", res.Headers)
	}
	advance(11 * time.Second)
	if res := h.OnRequest(withSession(conversation("gpt-4o", "hello"), "s")); get(res.Headers, HeaderAffinity) != stateNew {
		t.Fatalf("after the TTL: %+v", res.Headers)
	}
}

// Without X-Bardo-Session the session is the conversation's prefix: model,
// system, tool names and first user message.
func TestDerivedSession(t *testing.T) {
	h := plugintest.New(t, `{}`)
	served(h, conversation("gpt-4o", "plan my week"), "b")
	res := h.OnRequest(conversation("gpt-4o", "plan my week", "sure", "start with monday"))
	if get(res.Annotations, AnnotationPrefer) != "b" {
		t.Fatalf("same conversation: %+v", res)
	}
	for name, req := range map[string]wire.LayerRequest{
		"first message": conversation("gpt-4o", "plan my month"),
		"model":         conversation("gpt-4.1", "plan my week"),
		"system": func() wire.LayerRequest {
			r := conversation("gpt-4o", "plan my week")
			r.Request.System = text("Another agent.")
			return r
		}(),
		"tools": func() wire.LayerRequest {
			r := conversation("gpt-4o", "plan my week")
			r.Request.Tools = r.Request.Tools[:1]
			return r
		}(),
	} {
		if res := h.OnRequest(req); get(res.Headers, HeaderAffinity) != stateNew {
			t.Errorf("%s changed, still %q", name, get(res.Headers, HeaderAffinity))
		}
	}
	// Switched off: no session header, no affinity.
	h = plugintest.New(t, `{"derive_session": false}`)
	if res := h.OnRequest(conversation("gpt-4o", "plan my week")); len(res.Headers) != 0 || len(res.Annotations) != 0 {
		t.Fatalf("derive_session = false: %+v", res)
	}
	if res := h.OnRequest(withSession(conversation("gpt-4o", "plan my week"), "s")); get(res.Headers, HeaderAffinity) != stateNew {
		t.Fatalf("explicit session with derive_session = false: %+v", res)
	}
}

func TestLongSessionIDIsHashed(t *testing.T) {
	h := plugintest.New(t, `{}`)
	long := strings.Repeat("x", 2000) // kv keys are limited to 1 KiB
	res, _ := served(h, withSession(conversation("gpt-4o", "hi"), long), "b")
	rec := get(res.Annotations, AnnotationRecord)
	if key := rec[:strings.IndexByte(rec, '\n')]; !strings.HasPrefix(key, "s#") || len(key) != 34 {
		t.Fatalf("key %q", key)
	}
	if res := h.OnRequest(withSession(conversation("gpt-4o", "hi"), long)); get(res.Annotations, AnnotationPrefer) != "b" {
		t.Fatalf("long session: %+v", res)
	}
}

func TestSavedEstimate(t *testing.T) {
	h := plugintest.New(t, `{"discount": 0.5, "min_cache_tokens": 1000}`)
	served(h, withSession(conversation("gpt-4o", "hi"), "s"), "b")
	// The cached part is at most this request's prompt before its last
	// message: with one message, that is system and tools only.
	res := h.OnRequest(withSession(conversation("gpt-4o", "hi"), "s"))
	r := conversation("gpt-4o", "hi").Request
	stable := int64(len(r.System[0].Text)+len("get_price")+len("Spot price.")+len(`{"type":"object"}`)*2+len("swap")+len("Swap tokens.")) / 4
	if got := get(res.Headers, HeaderSavedTokens); got != strconv.FormatInt(stable/2, 10) {
		t.Fatalf("saved %s, want %d", got, stable/2)
	}
	// Another conversation in the same session: its prefix differs, the
	// provider's cache has nothing for it.
	res = h.OnRequest(withSession(conversation("gpt-4o", "a different opening"), "s"))
	if get(res.Headers, HeaderAffinity) != stateHit || get(res.Headers, HeaderSavedTokens) != "0" {
		t.Fatalf("other prefix: %v", res.Headers)
	}
	// Below the providers' minimum cacheable prompt: nothing is cached.
	short := withSession(conversation("gpt-4o", "hi"), "short")
	short.Request.System = text("Be brief.")
	served(h, short, "b")
	if res := h.OnRequest(short); get(res.Headers, HeaderSavedTokens) != "0" {
		t.Fatalf("short prompt: %v", res.Headers)
	}
}

func TestStreamRecordsOnFinal(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := withSession(conversation("gpt-4o", "hello"), "s")
	res := h.OnRequest(req)
	m := req.Meta
	m.Annotations = append(res.Annotations, wire.KV{Key: AnnotationProvider, Value: "b"}, wire.KV{Key: AnnotationModel, Value: "gpt-4o"})
	evs := []wire.Event{{Type: wire.EventDelta, Delta: wire.DeltaText, Text: "hel"}, {Type: wire.EventDelta, Delta: wire.DeltaText, Text: "lo"}}
	out := h.OnStream(wire.LayerStream{Meta: m, Events: evs})
	if len(out.Events) != 2 || out.Events[1].Text != "lo" {
		t.Fatalf("events changed: %+v", out.Events)
	}
	if r := h.OnRequest(req); get(r.Annotations, AnnotationPrefer) != "" {
		t.Fatal("recorded before the stream ended")
	}
	out = h.OnStream(wire.LayerStream{Meta: m, Events: []wire.Event{{Type: wire.EventMessageStop}}, Final: true})
	if len(out.Events) != 1 || out.Events[0].Type != wire.EventMessageStop {
		t.Fatalf("final events: %+v", out.Events)
	}
	if r := h.OnRequest(req); get(r.Annotations, AnnotationPrefer) != "b" {
		t.Fatalf("not recorded at the end of the stream: %+v", r)
	}
}

// An answer no provider gave (another layer's cache hit) records nothing.
func TestLocalAnswerRecordsNothing(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := withSession(conversation("gpt-4o", "hello"), "s")
	res := h.OnRequest(req)
	m := req.Meta
	m.Annotations = res.Annotations
	h.OnResponse(wire.LayerResponse{Meta: m, Response: wire.Response{Content: text("cached")}})
	// Nor does a response phase without the request phase's annotations.
	h.OnResponse(wire.LayerResponse{Meta: wire.Meta{Annotations: []wire.KV{{Key: AnnotationProvider, Value: "b"}}}})
	if r := h.OnRequest(req); get(r.Headers, HeaderAffinity) != stateNew || len(h.Metrics) != 0 {
		t.Fatalf("%+v, metrics %v", r, h.Metrics)
	}
}

func TestConfig(t *testing.T) {
	bad, neg := 1.5, int64(-1)
	for _, raw := range []rawConfig{{TTL: "soon"}, {TTL: "-1s"}, {TTL: "0s"}, {Discount: &bad}, {MinCacheTokens: &neg}} {
		if _, err := parseConfig(&raw); err == nil {
			t.Errorf("%+v accepted", raw)
		}
	}
	c, err := parseConfig(&rawConfig{})
	if err != nil || c.ttl != 300*time.Second || c.discount != 0.9 || c.minCacheTokens != 1024 || !c.derive {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if e, ok := decodeEntry((&entry{provider: "p", model: "m", tokens: 7, prefix: "ab"}).encode()); !ok || e.provider != "p" || e.model != "m" || e.tokens != 7 || e.prefix != "ab" {
		t.Fatalf("entry round trip: %+v %v", e, ok)
	}
	for _, junk := range []string{"", "2\np\nm\n1\nab", "1\n\nm\n1\nab", "1\np\nm\nx\nab", "1\np"} {
		if _, ok := decodeEntry([]byte(junk)); ok {
			t.Errorf("%q decoded", junk)
		}
	}
}

// fields splits exactly as strings.Split does when that gives five fields,
// and refuses every other count (the record and the stored entry).
func TestFieldsIsSplit(t *testing.T) {
	for _, s := range []string{"", "a", "a\nb\nc\nd", "a\nb\nc\nd\ne", "\n\n\n\n", "a\nb\nc\nd\ne\n", "s:x\n12\nab\n\n0", "\n\n\n\n\n\n"} {
		var f [5]string
		ok := fields(s, &f)
		want := strings.Split(s, "\n")
		if ok != (len(want) == 5) || ok && f != [5]string(want) {
			t.Errorf("%q: %v %q, strings.Split %q", s, ok, f, want)
		}
	}
}

// The phases' own work allocates only the stored entry's copy that KVGet
// returns: the record, key, headers and entry live in kept buffers (inside
// wasm each allocation costs about a microsecond). Called natively, without
// the SDK's decoding.
func TestHooksAllocate(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := conversation("gpt-4o", "hello", "hi there", "and now?")
	served(h, req, "b") // a live entry: the next requests are hits
	var res wire.LayerResult
	allocs := testing.AllocsPerRun(50, func() {
		res = wire.LayerResult{}
		if err := onRequest(&req, &res); err != nil {
			t.Fatal(err)
		}
	})
	if get(res.Headers, HeaderAffinity) != stateHit || allocs > 1 {
		t.Fatalf("request phase, hit: %v allocations, %+v", allocs, res)
	}
	m := req.Meta
	m.Annotations = append(slices.Clone(res.Annotations), wire.KV{Key: AnnotationProvider, Value: "b"}, wire.KV{Key: AnnotationModel, Value: "gpt-4o"})
	in := wire.LayerResponse{Meta: m, Response: wire.Response{ID: "x", Content: text("ok")}}
	allocs = testing.AllocsPerRun(50, func() {
		var out wire.LayerResponseResult
		if err := onResponse(&in, &out); err != nil {
			t.Fatal(err)
		}
	})
	// Natively, the test host's kv store and metrics allocate of their own.
	val := []byte("1\nb\ngpt-4o\n100\n0123456789abcdef")
	host := testing.AllocsPerRun(50, func() {
		if err := plugin.KVPut("s:x", val, time.Minute); err != nil {
			t.Fatal(err)
		}
		plugin.CounterAdd(metricHits, 1)
		plugin.CounterAdd(metricSavedTokens, 1)
	})
	if allocs > host {
		t.Fatalf("response phase: %v allocations, the host's %v", allocs, host)
	}
}
