//go:build !wasip1

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/respcache"
	"github.com/bardoinference/bardo/sdk/wire"
)

func text(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

func user(bs ...wire.Block) wire.Message      { return wire.Message{Role: "user", Content: bs} }
func assistant(bs ...wire.Block) wire.Message { return wire.Message{Role: "assistant", Content: bs} }

func baseRequest() wire.Request {
	return wire.Request{
		Model:  "gpt-4o",
		System: []wire.Block{text("You are a careful DeFi agent.\nBe brief.")},
		Tools: []wire.Tool{
			{Name: "get_price", Description: "Spot price.", Schema: []byte(`{"type":"object"}`)},
			{Name: "get_position", Description: "A position.", Schema: []byte(`{"type":"object"}`)},
		},
		Messages: []wire.Message{user(text("What is the health factor of my Aave position?"))},
		Params:   wire.Params{Set: wire.HasTemperature | wire.HasMaxTokens, Temperature: 0.2, MaxTokens: 256},
	}
}

func annotation(kvs []wire.KV, key string) string {
	for i := len(kvs) - 1; i >= 0; i-- {
		if kvs[i].Key == key {
			return kvs[i].Value
		}
	}
	return ""
}

func header(kvs []wire.KV, key string) string { return annotation(kvs, key) }

// keyOf runs the request phase on a miss and returns the full key.
func keyOf(t *testing.T, h *plugintest.Host, req wire.Request) string {
	t.Helper()
	res := h.OnRequest(wire.LayerRequest{Meta: wire.Meta{RequestID: "r", Tenant: "t"}, Request: req})
	if res.Action != wire.ActionContinue {
		t.Fatalf("action %d on a fresh cache", res.Action)
	}
	k := annotation(res.Annotations, AnnotationKey)
	if len(k) != 64 {
		t.Fatalf("no key annotation: %+v", res.Annotations)
	}
	return k
}

func TestNormalizeText(t *testing.T) {
	n := newNormalizer(true, true, defaultFields)
	for _, tc := range []struct{ in, want string }{
		{"  hello \n\n\t world  ", "hello world"},
		{"a\x00b\x1fc", "a b c"},
		{"at 2025-01-15T10:00:00Z ok", "at ok"},
		{"at 2025-01-15T10:00:00.123456+02:00, ok", "at , ok"},
		{"at 2025-01-15 10:00:00 ok", "at ok"},
		{"at 2025-01-15T10:00:00-0500 ok", "at ok"},
		{"(2025-01-15T10:00:00Z)", "()"},
		{"12025-01-15T10:00:00Z", "1"},
		{"date 2025-01-15 only", "date 2025-01-15 only"}, // a bare date can change the answer
		{"2025-01-15T10:00", "2025-01-15T10:00"},
		{"id 123e4567-e89b-12d3-a456-426614174000 end", "id end"},
		{"ID=123E4567-E89B-12D3-A456-426614174000;", "ID=;"},
		{"not-a-uuid 123e4567-e89b-12d3-a456-42661417400", "not-a-uuid 123e4567-e89b-12d3-a456-42661417400"},
		{`{"a":1,"traceId":"abc-123","b":2}`, `{"a":1,"b":2}`},
		{`{"requestId" : 42 , "b":2}`, `{"b":2}`},
		{`{"b":2, "sessionCounter": 7}`, `{"b":2, }`},
		{`{"trace_id":"x\"y","ok":true}`, `{"ok":true}`},
		{`{"traceIdX":"keep"}`, `{"traceIdX":"keep"}`},
		{`{"traceId": {"nested":1}}`, `{"traceId": {"nested":1}}`}, // only scalar values
		{`say "requestId" please`, `say "requestId" please`},
		{"x - y -- z", "x - y -- z"},
		{"ünïcode  text", "ünïcode text"},
		{"", ""},
	} {
		if got := string(n.text(nil, tc.in)); got != tc.want {
			t.Errorf("text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Off switches.
	off := newNormalizer(false, false, nil)
	in := `at 2025-01-15T10:00:00Z id 123e4567-e89b-12d3-a456-426614174000 {"traceId":"x"}`
	if got := string(off.text(nil, in)); got != in {
		t.Errorf("with stripping off: %q", got)
	}
}

func TestEachMember(t *testing.T) {
	var got []string
	jsonscan.EachMember([]byte(` { "a" : 1, "b":{"x":[1,"}"]}, "c\"d":"s" ,"e":null} `), func(k, v []byte) {
		got = append(got, string(k)+"="+string(v))
	})
	want := `a=1|b={"x":[1,"}"]}|c\"d="s"|e=null`
	if strings.Join(got, "|") != want {
		t.Fatalf("members %q", strings.Join(got, "|"))
	}
}

// Requests that mean the same get the same key; requests whose answer may
// differ get different keys.
func TestKeyNormalization(t *testing.T) {
	h := plugintest.New(t, `{}`)
	base := keyOf(t, h, baseRequest())

	same := map[string]func(r *wire.Request){
		"whitespace": func(r *wire.Request) {
			r.System[0].Text = "  You are a careful   DeFi agent. Be brief.\n"
			r.Messages[0].Content[0].Text = "What is the health factor\n of my  Aave position? "
		},
		"tool definition order": func(r *wire.Request) { r.Tools[0], r.Tools[1] = r.Tools[1], r.Tools[0] },
		"cache_control":         func(r *wire.Request) { r.System[0].CacheControl = []byte(`{"type":"ephemeral"}`) },
		"ignored extra": func(r *wire.Request) {
			r.Extra = []byte(`{"metadata":{"user_id":"u1"},"user":"u2","stream_options":{"include_usage":true}}`)
		},
		"responses per-turn ids": func(r *wire.Request) {
			// Codex over the Responses API: new ids every run.
			r.Extra = []byte(`{"client_metadata":{"turn_id":"01a2"},"prompt_cache_key":"01a1","include":["reasoning.encrypted_content"],"store":false}`)
		},
		"stream flag": func(r *wire.Request) { r.Stream = true },
		"nested cache_control": func(r *wire.Request) {
			r.Messages[0].Extra = []byte(`{"cache_control":{"type":"ephemeral"}}`)
		},
	}
	for name, f := range same {
		r := baseRequest()
		f(&r)
		if k := keyOf(t, h, r); k != base {
			t.Errorf("%s: key changed", name)
		}
	}

	differ := map[string]func(r *wire.Request){
		"model":       func(r *wire.Request) { r.Model = "gpt-4o-mini" },
		"temperature": func(r *wire.Request) { r.Params.Temperature = 0.7 },
		"no temp":     func(r *wire.Request) { r.Params.Set &^= wire.HasTemperature },
		"top_p":       func(r *wire.Request) { r.Params.Set |= wire.HasTopP; r.Params.TopP = 0.9 },
		"top_k":       func(r *wire.Request) { r.Params.Set |= wire.HasTopK; r.Params.TopK = 5 },
		"max_tokens":  func(r *wire.Request) { r.Params.MaxTokens = 512 },
		"seed":        func(r *wire.Request) { r.Params.Set |= wire.HasSeed; r.Params.Seed = 7 },
		"stop":        func(r *wire.Request) { r.Params.Stop = []string{"\n\n"} },
		"stop ws":     func(r *wire.Request) { r.Params.Stop = []string{"\n"} },
		"tool_choice": func(r *wire.Request) { r.ToolChoice = []byte(`{"type":"any"}`) },
		"extra":       func(r *wire.Request) { r.Extra = []byte(`{"response_format":{"type":"json_object"}}`) },
		"system":      func(r *wire.Request) { r.System[0].Text = "You are a reckless DeFi agent." },
		"message": func(r *wire.Request) {
			r.Messages[0].Content[0].Text = "What is the health factor of my Morpho position?"
		},
		"role":        func(r *wire.Request) { r.Messages[0].Role = "assistant" },
		"tool schema": func(r *wire.Request) { r.Tools[0].Schema = []byte(`{"type":"object","required":["a"]}`) },
		"no tools":    func(r *wire.Request) { r.Tools = nil },
		"more turns": func(r *wire.Request) {
			r.Messages = append(r.Messages, assistant(text("1.8")), user(text("and now?")))
		},
		// Members the canonical model does not name (ABI v1.4 Extra) may
		// change the answer at every level, not only the top one.
		"block extra":   func(r *wire.Request) { r.Messages[0].Content[0].Extra = []byte(`{"citations":{"enabled":true}}`) },
		"message extra": func(r *wire.Request) { r.Messages[0].Extra = []byte(`{"name_hint":"ops"}`) },
		"tool extra":    func(r *wire.Request) { r.Tools[0].Extra = []byte(`{"strict":true}`) },
		"text moved between blocks": func(r *wire.Request) {
			r.Messages[0].Content = []wire.Block{text("What is the health factor"), text("of my Aave position?")}
		},
	}
	seen := map[string]string{base: "base"}
	for name, f := range differ {
		r := baseRequest()
		f(&r)
		k := keyOf(t, h, r)
		if prev, dup := seen[k]; dup {
			t.Errorf("%s: same key as %s", name, prev)
		}
		seen[k] = name
	}
}

func toolConversation(callIDs [2]string, stamp, order string) wire.Request {
	r := baseRequest()
	uses := []wire.Block{
		{Type: wire.BlockToolUse, ID: callIDs[0], Name: "get_price", Data: []byte(`{"asset":"ETH"}`)},
		{Type: wire.BlockToolUse, ID: callIDs[1], Name: "get_position", Data: []byte(`{"protocol":"aave"}`)},
	}
	results := []wire.Block{
		{Type: wire.BlockToolResult, ID: callIDs[0], Text: `{"usd":"3847.22","asOf":"` + stamp + `","traceId":"` + callIDs[0] + `"}`},
		{Type: wire.BlockToolResult, ID: callIDs[1], Text: `{"health_factor":"1.84","requestId":"r-` + callIDs[1] + `"}`},
	}
	if order == "reversed" {
		uses[0], uses[1] = uses[1], uses[0]
		results[0], results[1] = results[1], results[0]
	}
	r.Messages = append(r.Messages, assistant(uses...), user(results...))
	return r
}

// Tool ids, timestamps and ephemeral fields inside tool results, and the order
// of parallel calls and results do not change the key; a result's content does.
func TestKeyToolResults(t *testing.T) {
	h := plugintest.New(t, `{}`)
	a := keyOf(t, h, toolConversation([2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", ""))
	b := keyOf(t, h, toolConversation([2]string{"toolu_X", "toolu_Y"}, "2025-06-02T08:30:12.5Z", "reversed"))
	if a != b {
		t.Fatal("ids, timestamps, ephemeral fields or the order of parallel results changed the key")
	}
	r := toolConversation([2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", "")
	r.Messages[2].Content[0].Text = strings.Replace(r.Messages[2].Content[0].Text, "3847.22", "3900.00", 1)
	if keyOf(t, h, r) == a {
		t.Fatal("a different tool result kept the key")
	}
	// Results swapped between calls (the price result answering the
	// position call) mean something else.
	r = toolConversation([2]string{"call_1", "call_2"}, "2025-06-01T12:00:00Z", "")
	r.Messages[2].Content[0].ID, r.Messages[2].Content[1].ID = "call_2", "call_1"
	if keyOf(t, h, r) == a {
		t.Fatal("results attached to the other call kept the key")
	}
}

func answer(textOut string, out int64) wire.Response {
	return wire.Response{ID: "chatcmpl-1", Model: "gpt-4o-2024", Content: []wire.Block{text(textOut)},
		StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 120, OutputTokens: out, CacheReadTokens: 30}}
}

func TestMissStoreHit(t *testing.T) {
	h := plugintest.New(t, `{}`)
	meta := wire.Meta{RequestID: "r1", Tenant: "t", Dialect: wire.DialectOpenAI}
	res := h.OnRequest(wire.LayerRequest{Meta: meta, Request: baseRequest()})
	if res.Action != wire.ActionContinue || header(res.Headers, HeaderCache) != "miss" {
		t.Fatalf("first request: %+v", res)
	}
	key := annotation(res.Annotations, AnnotationKey)
	if header(res.Headers, HeaderKey) != key[:16] || annotation(res.Annotations, AnnotationTTL) != "300000" {
		t.Fatalf("headers %+v annotations %+v", res.Headers, res.Annotations)
	}
	if res.Patched != 0 {
		t.Fatal("the cache must not change the request")
	}
	meta.Annotations = res.Annotations
	out := h.OnResponse(wire.LayerResponse{Meta: meta, Response: answer("Your health factor is 1.84, which is safe for now.", 14)})
	if out.Replaced {
		t.Fatal("the response phase must not replace the response")
	}
	if h.Metrics[metricStores] != 1 || h.Metrics[metricMisses] != 1 {
		t.Fatalf("metrics %v", h.Metrics)
	}

	meta2 := wire.Meta{RequestID: "r2", Tenant: "t", Dialect: wire.DialectAnthropic, Stream: true}
	res = h.OnRequest(wire.LayerRequest{Meta: meta2, Request: baseRequest()})
	if res.Action != wire.ActionAnswer || res.Answer == nil {
		t.Fatalf("second request not a hit: %+v", res)
	}
	a := res.Answer
	if a.ID != "" || a.Model != "gpt-4o-2024" || len(a.Content) != 1 || a.Content[0].Text != "Your health factor is 1.84, which is safe for now." ||
		a.StopReason != wire.StopEndTurn || a.Usage.OutputTokens != 14 {
		t.Fatalf("answer %+v", a)
	}
	if header(res.Headers, HeaderCache) != "hash-hit" || header(res.Headers, HeaderSavedTokens) != "164" || header(res.Headers, HeaderAge) != "0" {
		t.Fatalf("hit headers %+v", res.Headers)
	}
	if annotation(res.Annotations, AnnotationReplayPace) != "30" || annotation(res.Annotations, AnnotationKey) != "" {
		t.Fatalf("hit annotations %+v", res.Annotations)
	}
	// The hit goes through the response phase too: it is not stored again.
	meta2.Annotations = res.Annotations
	h.OnResponse(wire.LayerResponse{Meta: meta2, Response: *a})
	if h.Metrics[metricHits] != 1 || h.Metrics[metricStores] != 1 || h.Metrics[metricSavedTokens] != 164 {
		t.Fatalf("metrics %v", h.Metrics)
	}
}

func TestTTL(t *testing.T) {
	h := plugintest.New(t, `{"ttl":"60s","replay_pace_ms":0}`)
	now := time.Unix(1_700_000_000, 0)
	h.Clock = func() time.Time { return now }
	res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
	h.OnResponse(wire.LayerResponse{Meta: wire.Meta{Annotations: res.Annotations}, Response: answer(strings.Repeat("word ", 20), 20)})
	now = now.Add(59 * time.Second)
	res = h.OnRequest(wire.LayerRequest{Request: baseRequest()})
	if res.Action != wire.ActionAnswer || header(res.Headers, HeaderAge) != "59" || annotation(res.Annotations, AnnotationReplayPace) != "" {
		t.Fatalf("within the TTL: %+v", res)
	}
	now = now.Add(time.Second)
	if res = h.OnRequest(wire.LayerRequest{Request: baseRequest()}); res.Action != wire.ActionContinue {
		t.Fatal("served after the TTL")
	}
}

func TestStaticTTLAndVolatileMarkers(t *testing.T) {
	h := plugintest.New(t, `{"ttl":"300s","ttl_static":"3600s","volatile_markers":["price","Market"]}`)
	ttlOf := func(msg, system string) string {
		r := baseRequest()
		r.System[0].Text = system
		r.Messages[0].Content[0].Text = msg
		return annotation(h.OnRequest(wire.LayerRequest{Request: r}).Annotations, AnnotationTTL)
	}
	if got := ttlOf("Explain how Aave liquidations work.", "x"); got != "3600000" {
		t.Errorf("static question: ttl %s", got)
	}
	if got := ttlOf("What are ETH Prices doing?", "x"); got != "300000" {
		t.Errorf("volatile question: ttl %s", got)
	}
	if got := ttlOf("How is the MARKET?", "x"); got != "300000" {
		t.Errorf("upper-case marker: ttl %s", got)
	}
	if got := ttlOf("Explain the supermarket analogy.", "x"); got != "3600000" {
		t.Errorf("a marker inside a word matched: ttl %s", got)
	}
	// Only the conversation decides: a system prompt mentioning prices does not.
	if got := ttlOf("Explain how Aave liquidations work.", "You track prices."); got != "3600000" {
		t.Errorf("system prompt decided the TTL: %s", got)
	}
}

func storedAfter(t *testing.T, h *plugintest.Host, resp wire.Response) bool {
	t.Helper()
	res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
	if res.Action == wire.ActionAnswer {
		t.Fatal("already cached")
	}
	h.OnResponse(wire.LayerResponse{Meta: wire.Meta{Annotations: res.Annotations}, Response: resp})
	return h.OnRequest(wire.LayerRequest{Request: baseRequest()}).Action == wire.ActionAnswer
}

func TestNotStored(t *testing.T) {
	long := strings.Repeat("fine words here ", 10)
	cases := map[string]wire.Response{
		"tool call": {Content: []wire.Block{text("Let me check."), {Type: wire.BlockToolUse, ID: "c", Name: "get_price", Data: []byte(`{}`)}},
			StopReason: wire.StopToolUse, Usage: wire.Usage{OutputTokens: 40}},
		"tool_use stop only": {Content: []wire.Block{text(long)}, StopReason: wire.StopToolUse, Usage: wire.Usage{OutputTokens: 40}},
		"short":              answer("Yes.", 2),
		"9 tokens":           answer(long, 9),
		"short, no usage":    answer("Yes, it is.", 0),
		"refusal":            {Content: []wire.Block{text(long)}, StopReason: wire.StopRefusal, Usage: wire.Usage{OutputTokens: 40}},
		"content filter":     {Content: []wire.Block{text(long)}, StopReason: wire.StopContentFilter, Usage: wire.Usage{OutputTokens: 40}},
		"empty":              {StopReason: wire.StopEndTurn, Usage: wire.Usage{OutputTokens: 40}},
	}
	for name, resp := range cases {
		t.Run(name, func(t *testing.T) {
			h := plugintest.New(t, `{}`)
			if storedAfter(t, h, resp) {
				t.Fatal("stored")
			}
			if h.Metrics[metricSkips] != 1 || h.Metrics[metricStores] != 0 {
				t.Fatalf("metrics %v", h.Metrics)
			}
		})
	}
	t.Run("10 tokens is enough", func(t *testing.T) {
		h := plugintest.New(t, `{}`)
		if !storedAfter(t, h, answer(long, 10)) {
			t.Fatal("not stored")
		}
	})
	t.Run("no usage, long text", func(t *testing.T) {
		h := plugintest.New(t, `{}`)
		if !storedAfter(t, h, answer(long, 0)) {
			t.Fatal("not stored")
		}
	})
	t.Run("min_tokens", func(t *testing.T) {
		h := plugintest.New(t, `{"min_tokens":1}`)
		if !storedAfter(t, h, answer("Yes.", 2)) {
			t.Fatal("not stored with min_tokens = 1")
		}
	})
	t.Run("max_entry_bytes", func(t *testing.T) {
		h := plugintest.New(t, `{"max_entry_bytes":1024}`)
		if storedAfter(t, h, answer(strings.Repeat("x", 2000), 500)) {
			t.Fatal("stored an entry over max_entry_bytes")
		}
	})
	t.Run("another layer's local answer", func(t *testing.T) {
		h := plugintest.New(t, `{}`)
		res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
		anns := append(res.Annotations, wire.KV{Key: AnnotationReplayPace, Value: "30"})
		h.OnResponse(wire.LayerResponse{Meta: wire.Meta{Annotations: anns}, Response: answer(long, 40)})
		if h.OnRequest(wire.LayerRequest{Request: baseRequest()}).Action == wire.ActionAnswer {
			t.Fatal("a locally answered (cached) response was stored again")
		}
	})
}

// streamEvents is the canonical stream of resp, cut into batches of n events.
func streamEvents(resp wire.Response) []wire.Event {
	evs := []wire.Event{{Type: wire.EventMessageStart, ID: resp.ID, Model: resp.Model, Usage: wire.Usage{InputTokens: resp.Usage.InputTokens}}}
	for i, b := range resp.Content {
		idx := int64(i)
		evs = append(evs, wire.Event{Type: wire.EventBlockStart, Index: idx, Block: wire.Block{Type: b.Type, ID: b.ID, Name: b.Name}})
		switch b.Type {
		case wire.BlockText, wire.BlockThinking:
			kind := wire.DeltaText
			if b.Type == wire.BlockThinking {
				kind = wire.DeltaThinking
			}
			for s := b.Text; s != ""; {
				n := min(7, len(s))
				evs = append(evs, wire.Event{Type: wire.EventDelta, Index: idx, Delta: kind, Text: s[:n]})
				s = s[n:]
			}
			if b.Signature != "" {
				evs = append(evs, wire.Event{Type: wire.EventDelta, Index: idx, Delta: wire.DeltaSignature, Text: b.Signature})
			}
		case wire.BlockToolUse:
			evs = append(evs, wire.Event{Type: wire.EventDelta, Index: idx, Delta: wire.DeltaInputJSON, Text: string(b.Data)})
		}
		evs = append(evs, wire.Event{Type: wire.EventBlockStop, Index: idx})
	}
	return append(evs,
		wire.Event{Type: wire.EventPing},
		wire.Event{Type: wire.EventMessageDelta, StopReason: resp.StopReason, Usage: wire.Usage{OutputTokens: resp.Usage.OutputTokens}},
		wire.Event{Type: wire.EventMessageStop})
}

// runStream feeds events one per batch (plus an empty final batch, as the host
// does after an upstream stream ends), checking they pass unchanged.
func runStream(t *testing.T, h *plugintest.Host, meta wire.Meta, evs []wire.Event, final bool) {
	t.Helper()
	var state []byte
	for i := range evs {
		out := h.OnStream(wire.LayerStream{Meta: meta, Events: evs[i : i+1], State: state})
		if len(out.Events) != 1 || out.Events[0].Type != evs[i].Type || out.Events[0].Text != evs[i].Text {
			t.Fatalf("event %d changed: %+v", i, out.Events)
		}
		state = out.State
	}
	if final {
		h.OnStream(wire.LayerStream{Meta: meta, State: state, Final: true})
	}
}

func TestStreamStoreThenHit(t *testing.T) {
	h := plugintest.New(t, `{}`)
	res := h.OnRequest(wire.LayerRequest{Meta: wire.Meta{Stream: true}, Request: baseRequest()})
	resp := wire.Response{ID: "msg_1", Model: "claude-x",
		Content: []wire.Block{
			{Type: wire.BlockThinking, Text: "Let me think about the factor.", Signature: "sig=="},
			text("Your health factor is 1.84; a 20% drawdown leaves it above 1.4."),
		},
		StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 50, OutputTokens: 30}}
	runStream(t, h, wire.Meta{Stream: true, Annotations: res.Annotations}, streamEvents(resp), true)
	if h.Metrics[metricStores] != 1 {
		t.Fatalf("metrics %v", h.Metrics)
	}
	hit := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
	if hit.Action != wire.ActionAnswer {
		t.Fatal("not a hit after a streamed miss")
	}
	a := hit.Answer
	if len(a.Content) != 2 || a.Content[0].Type != wire.BlockThinking || a.Content[0].Text != resp.Content[0].Text ||
		a.Content[0].Signature != "sig==" || a.Content[1].Text != resp.Content[1].Text ||
		a.StopReason != wire.StopEndTurn || a.Usage != resp.Usage || a.Model != "claude-x" {
		t.Fatalf("rebuilt answer %+v", a)
	}
	// The hit replayed as a stream passes through without being stored again.
	runStream(t, h, wire.Meta{Stream: true, Annotations: hit.Annotations}, streamEvents(*a), true)
	if h.Metrics[metricStores] != 1 || h.Metrics[metricSkips] != 0 {
		t.Fatalf("metrics %v", h.Metrics)
	}
}

func TestStreamNotStored(t *testing.T) {
	long := strings.Repeat("many words ", 10)
	for name, tc := range map[string]struct {
		resp  wire.Response
		final bool
		cut   int
	}{
		"tool call": {resp: wire.Response{Content: []wire.Block{text("checking"), {Type: wire.BlockToolUse, ID: "t1", Name: "get_price", Data: []byte(`{"a":1}`)}},
			StopReason: wire.StopToolUse, Usage: wire.Usage{OutputTokens: 30}}, final: true},
		"short":                   {resp: answer("Yes.", 2), final: true},
		"no final":                {resp: answer(long, 30)},
		"cut before message_stop": {resp: answer(long, 30), final: true, cut: 1},
	} {
		t.Run(name, func(t *testing.T) {
			h := plugintest.New(t, `{}`)
			res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
			evs := streamEvents(tc.resp)
			runStream(t, h, wire.Meta{Annotations: res.Annotations}, evs[:len(evs)-tc.cut], tc.final)
			if h.OnRequest(wire.LayerRequest{Request: baseRequest()}).Action == wire.ActionAnswer {
				t.Fatal("stored")
			}
		})
	}
	t.Run("error event", func(t *testing.T) {
		h := plugintest.New(t, `{}`)
		res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
		evs := streamEvents(answer(long, 30))
		evs = append(evs[:3:3], append([]wire.Event{{Type: wire.EventError, Error: &wire.Error{Status: 502, Message: "x"}}}, evs[3:]...)...)
		runStream(t, h, wire.Meta{Annotations: res.Annotations}, evs, true)
		if h.OnRequest(wire.LayerRequest{Request: baseRequest()}).Action == wire.ActionAnswer || h.Metrics[metricSkips] != 1 {
			t.Fatalf("stored after an error event; metrics %v", h.Metrics)
		}
	})
	t.Run("over max_entry_bytes", func(t *testing.T) {
		h := plugintest.New(t, `{"max_entry_bytes":1024}`)
		res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
		runStream(t, h, wire.Meta{Annotations: res.Annotations}, streamEvents(answer(strings.Repeat("y", 3000), 800)), true)
		if h.OnRequest(wire.LayerRequest{Request: baseRequest()}).Action == wire.ActionAnswer {
			t.Fatal("stored")
		}
	})
}

func TestSharedIsolation(t *testing.T) {
	h := plugintest.New(t, `{"isolation":"shared"}`)
	res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
	key := annotation(res.Annotations, AnnotationKey)
	h.OnResponse(wire.LayerResponse{Meta: wire.Meta{Annotations: res.Annotations}, Response: answer(strings.Repeat("ok ", 20), 20)})
	if _, ok := h.KVGetShared("r:" + key); !ok {
		t.Fatal("not in the shared space")
	}
	if _, ok := h.KVGet("r:" + key); ok {
		t.Fatal("in the tenant space")
	}
	if h.OnRequest(wire.LayerRequest{Request: baseRequest()}).Action != wire.ActionAnswer {
		t.Fatal("no hit from the shared space")
	}
}

func TestCorruptEntryIsAMiss(t *testing.T) {
	h := plugintest.New(t, `{}`)
	key := keyOf(t, h, baseRequest())
	h.KVPut("r:"+key, []byte("HC1garbage-garbage"), time.Minute)
	res := h.OnRequest(wire.LayerRequest{Request: baseRequest()})
	if res.Action != wire.ActionContinue || h.Metrics[metricErrors] != 1 {
		t.Fatalf("corrupt entry: %+v %v", res, h.Metrics)
	}
	if _, ok := h.KVGet("r:" + key); ok {
		t.Fatal("corrupt entry kept")
	}
}

// cfgHost serves another config to a second Init.
type cfgHost struct {
	*plugintest.Host
	cfg string
}

func (c cfgHost) Config() []byte { return []byte(c.cfg) }

func TestConfigErrors(t *testing.T) {
	h := plugintest.New(t, `{}`)
	for _, bad := range []string{
		`{"isolation":"global"}`,
		`{"ttl":"5 minutes"}`,
		`{"ttl":300}`,
		`{"ttl":"100ms"}`,
		`{"ttl_static":"-1s"}`,
		`{"replay_pace_ms":5000}`,
		`{"max_entry_bytes":10}`,
		`{"ephemeral_fields":["a\"b"]}`,
		`{"tll":"300s"}`, // a typo is an error, not a silent default
	} {
		plugin.SetHost(cfgHost{h, bad})
		out := plugin.Call(plugin.OpInit, nil)
		if len(out) == 0 || out[0] != plugin.StatusError {
			t.Errorf("config %s accepted", bad)
		}
	}
	plugin.SetHost(cfgHost{h, `{"isolation":"tenant","ttl":"10m","ttl_static":"1h","min_tokens":0,"replay_pace_ms":0,` +
		`"strip_timestamps":false,"strip_uuids":false,"ephemeral_fields":[],"ignore_extra":[],"volatile_markers":[],"max_entry_bytes":2048}`})
	if out := plugin.Call(plugin.OpInit, nil); len(out) == 0 || out[0] == plugin.StatusError {
		t.Fatalf("full config refused: %s", out)
	}
	if cfg.ttl != 10*time.Minute || cfg.ttlStatic != time.Hour || cfg.minTokens != 0 || cfg.pace != "" || cfg.maxEntryBytes != 2048 {
		t.Fatalf("cfg %+v", cfg)
	}
}

// fieldsASCII is the whitespace rule alone, written the obvious way: split on
// spaces and control characters, join with one space.
func fieldsASCII(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r <= ' ' }), " ")
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"", " ", "a  b", " a\n\tb ", "x -- y", `{"traceId":"a", "b":1}`,
		"at 2025-01-15T10:00:00Z ok", "id 123e4567-e89b-12d3-a456-426614174000.", "12345678 -abcd",
		"        eight spaces        then", "a\x00\x01\x1f b", "trailing ", "ü  ñ"} {
		f.Add(s)
	}
	plain := newNormalizer(false, false, nil)
	full := newNormalizer(true, true, defaultFields)
	f.Fuzz(func(t *testing.T, s string) {
		// Whitespace alone: exactly the obvious rule.
		if got, want := string(plain.text(nil, s)), fieldsASCII(s); got != want {
			t.Fatalf("text(%q) = %q, want %q", s, got, want)
		}
		// With every rule: canonical whitespace, appended after what is there.
		got := string(full.text([]byte("prefix"), s))
		if !strings.HasPrefix(got, "prefix") {
			t.Fatalf("text(%q) overwrote its destination: %q", s, got)
		}
		out := got[len("prefix"):]
		if strings.Contains(out, "  ") || strings.HasPrefix(out, " ") || strings.HasSuffix(out, " ") {
			t.Fatalf("text(%q) = %q: whitespace not canonical", s, out)
		}
		for i := 0; i < len(out); i++ {
			if out[i] < ' ' {
				t.Fatalf("text(%q) = %q: control byte left", s, out)
			}
		}
		if len(out) > len(s) {
			t.Fatalf("text(%q) = %q grew", s, out)
		}
	})
}

// The entry's kv key and its encoding are built in kept buffers: inside
// wasm each allocation costs about a microsecond and leaves garbage for the
// guest's GC, on every miss and every store. The key and the entry are
// those the code before built.
func TestKeyAndEntryAllocateNothing(t *testing.T) {
	plugintest.New(t, `{}`)
	sum := plugin.SHA256([]byte("x"))
	hexKey := storeKeyOf(&sum)[len(storePrefix):]
	if got, want := storeKeyOf(&sum), "r:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"; got != want {
		t.Fatalf("storeKeyOf = %q, want %q", got, want)
	}
	if got := storeKey(strings.Repeat("a", 64)); got != "r:"+strings.Repeat("a", 64) {
		t.Fatalf("storeKey = %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { hexKey = storeKeyOf(&sum)[len(storePrefix):] }); n != 0 {
		t.Errorf("storeKeyOf: %v allocations, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = storeKey(hexKey) }); n != 0 {
		t.Errorf("storeKey: %v allocations, want 0", n)
	}
	r := &wire.Response{ID: "r", Model: "m", Content: []wire.Block{text(strings.Repeat("an answer ", 40))},
		StopReason: wire.StopEndTurn, Usage: wire.Usage{InputTokens: 100, OutputTokens: 50}}
	var enc wire.Encoder
	want := string(respcache.EncodeEntry(&enc, r, 1700000000000))
	var buf []byte
	if n := testing.AllocsPerRun(100, func() { buf = respcache.AppendEntry(buf[:0], &enc, r, 1700000000000) }); n != 0 {
		t.Errorf("AppendEntry into a kept buffer: %v allocations, want 0", n)
	}
	if string(buf) != want {
		t.Fatal("AppendEntry differs from EncodeEntry")
	}
}

// A miss's headers and annotations live in a kept array: the SDK hands
// every call a result with nil slices, and appending to them allocated
// three times a miss (inside wasm ~1 µs each, with the garbage). Called
// natively on a seen history with a new last turn, as an agent sends it;
// the test host's metrics allocate of their own.
func TestMissAllocatesNothing(t *testing.T) {
	plugintest.New(t, `{}`)
	req := baseRequest()
	req.System = []wire.Block{text(strings.Repeat("You are a careful DeFi agent. Be brief. ", 30))}
	req.Messages = append(req.Messages, assistant(text(strings.Repeat("Your health factor is 1.84. ", 25))), user(text("and now?")))
	in := wire.LayerRequest{Meta: wire.Meta{RequestID: "r", Tenant: "t"}, Request: req}
	var res wire.LayerResult
	if err := onRequest(&in, &res); err != nil || res.Action != wire.ActionContinue {
		t.Fatalf("first request: %v, action %d", err, res.Action)
	}
	allocs := testing.AllocsPerRun(50, func() {
		res = wire.LayerResult{}
		if err := onRequest(&in, &res); err != nil {
			t.Fatal(err)
		}
	})
	host := testing.AllocsPerRun(50, func() { plugin.CounterAdd(metricMisses, 1) })
	if header(res.Headers, HeaderCache) != "miss" || len(annotation(res.Annotations, AnnotationKey)) != 64 || annotation(res.Annotations, AnnotationTTL) == "" {
		t.Fatalf("not a miss's result: %+v", res)
	}
	if allocs > host {
		t.Fatalf("request phase, miss: %v allocations, the host's %v", allocs, host)
	}
}
