//go:build !wasip1

package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/plugintest"
	"github.com/bardoinference/bardo/sdk/wire"
)

var route = wire.Route{Provider: "gemini", Model: "gemini-2.5-flash", BaseURL: "https://generativelanguage.googleapis.com"}

func text(s string) wire.Block { return wire.Block{Type: wire.BlockText, Text: s} }

func user(bs ...wire.Block) wire.Message      { return wire.Message{Role: "user", Content: bs} }
func assistant(bs ...wire.Block) wire.Message { return wire.Message{Role: "assistant", Content: bs} }

// encodeBody runs encode and returns the call and its body decoded generically.
func encodeBody(t *testing.T, h *plugintest.Host, req wire.Request) (*wire.UpstreamCall, map[string]any) {
	t.Helper()
	res := h.Encode(wire.EncodeInput{Route: route, Request: req})
	if res.Error != nil {
		t.Fatalf("encode error %+v", res.Error)
	}
	var m map[string]any
	if err := json.Unmarshal(res.Call.Body, &m); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, res.Call.Body)
	}
	return res.Call, m
}

// jsonEq compares v with the JSON text want.
func jsonEq(t *testing.T, what string, v any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %s: %v", want, err)
	}
	if !reflect.DeepEqual(v, w) {
		got, _ := json.Marshal(v)
		t.Fatalf("%s:\n got %s\nwant %s", what, got, want)
	}
}

func TestDescribe(t *testing.T) {
	h := plugintest.New(t, `{}`)
	if d := h.Describe(); d.Name != "gemini" || d.Kind != "provider" || d.ABI != plugin.ABIVersion {
		t.Fatalf("descriptor %+v", d)
	}
}

func TestEncodeRequest(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{
		Model:    "gemini-2.5-flash",
		System:   []wire.Block{text("Be brief."), text("Be kind.")},
		Messages: []wire.Message{user(text("hello")), assistant(text("hi")), user(text("how are you?"))},
		Params: wire.Params{Set: wire.HasMaxTokens | wire.HasTemperature | wire.HasTopP | wire.HasTopK | wire.HasSeed,
			MaxTokens: 100, Temperature: 0.5, TopP: 0.9, TopK: 40, Seed: 7, Stop: []string{"END"}},
	}
	call, body := encodeBody(t, h, req)
	if call.Method != "POST" || call.URL != "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent" {
		t.Fatalf("call %s %s", call.Method, call.URL)
	}
	if call.BodyMode != wire.BodyRaw || call.ResponseDialect != wire.DialectNone || call.Stream {
		t.Fatalf("call modes %+v", call)
	}
	if wire.Header(call.Headers, "x-goog-api-key") != "${credential}" || wire.Header(call.Headers, "Content-Type") != "application/json" ||
		strings.Contains(call.URL, "key=") {
		t.Fatalf("auth %v %s", call.Headers, call.URL)
	}
	jsonEq(t, "body", body, `{
		"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Be kind."}]},
		"contents":[
			{"role":"user","parts":[{"text":"hello"}]},
			{"role":"model","parts":[{"text":"hi"}]},
			{"role":"user","parts":[{"text":"how are you?"}]}],
		"generationConfig":{"maxOutputTokens":100,"temperature":0.5,"topP":0.9,"topK":40,"seed":7,"stopSequences":["END"]}}`)

	req.Stream = true
	call, _ = encodeBody(t, h, req)
	if call.URL != "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse" ||
		!call.Stream || wire.Header(call.Headers, "Accept") != "text/event-stream" {
		t.Fatalf("stream call %s %v", call.URL, call.Headers)
	}

	for base, want := range map[string]string{
		"":                                 "https://generativelanguage.googleapis.com/v1beta/models/m:generateContent",
		"http://127.0.0.1:9/":              "http://127.0.0.1:9/v1beta/models/m:generateContent",
		"https://proxy.example/gemini/v1":  "https://proxy.example/gemini/v1/models/m:generateContent",
		"https://proxy.example/api/v1beta": "https://proxy.example/api/v1beta/models/m:generateContent",
	} {
		res := h.Encode(wire.EncodeInput{Route: wire.Route{BaseURL: base, Model: "models/m"}, Request: wire.Request{Messages: []wire.Message{user(text("x"))}}})
		if res.Call.URL != want {
			t.Errorf("base %q: %s, want %s", base, res.Call.URL, want)
		}
	}

	h = plugintest.New(t, `{"api_version":"v1","headers":{"X-Goog-User-Project":"p1"}}`)
	call, _ = encodeBody(t, h, wire.Request{Messages: []wire.Message{user(text("x"))}})
	if !strings.Contains(call.URL, "/v1/models/") || wire.Header(call.Headers, "X-Goog-User-Project") != "p1" {
		t.Fatalf("config: %s %v", call.URL, call.Headers)
	}

	res := h.Encode(wire.EncodeInput{Route: route, Request: wire.Request{System: []wire.Block{text("only a system prompt")}}})
	if res.Error == nil || res.Error.Status != 400 || res.Call != nil {
		t.Fatalf("no contents: %+v", res)
	}
}

func TestEncodeToolRoundTrip(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{
		Messages: []wire.Message{
			user(text("weather in Paris and Rome?")),
			assistant(text("Checking."),
				wire.Block{Type: wire.BlockToolUse, ID: "call_a", Name: "get_weather", Data: []byte(`{"city":"Paris"}`)},
				wire.Block{Type: wire.BlockToolUse, ID: "toolu_b", Name: "get_time", Data: []byte(`""`)}),
			user(wire.Block{Type: wire.BlockToolResult, ID: "call_a", Text: "sunny"},
				wire.Block{Type: wire.BlockToolResult, ID: "toolu_b", Data: []byte(`[{"type":"text","text":"{\"time\":\"12:00\"}"}]`)}),
			user(wire.Block{Type: wire.BlockToolResult, ID: "call_a", Text: "boom", IsError: true}, text("and now?")),
		},
		Tools: []wire.Tool{{Name: "get_weather", Description: "Weather.", Schema: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)},
			{Name: "get_time", Schema: []byte(`{"type":"object","properties":{}}`)}},
		ToolChoice: []byte(`{"type":"auto"}`),
	}
	_, body := encodeBody(t, h, req)
	jsonEq(t, "contents", body["contents"], `[
		{"role":"user","parts":[{"text":"weather in Paris and Rome?"}]},
		{"role":"model","parts":[{"text":"Checking."},
			{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"skip_thought_signature_validator"},
			{"functionCall":{"name":"get_time","args":{}}}]},
		{"role":"user","parts":[
			{"functionResponse":{"name":"get_weather","response":{"output":"sunny"}}},
			{"functionResponse":{"name":"get_time","response":{"time":"12:00"}}},
			{"functionResponse":{"name":"get_weather","response":{"error":"boom"}}},
			{"text":"and now?"}]}]`)
	jsonEq(t, "tools", body["tools"], `[{"functionDeclarations":[
		{"name":"get_weather","description":"Weather.","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
		{"name":"get_time"}]}]`)
	jsonEq(t, "toolConfig", body["toolConfig"], `{"functionCallingConfig":{"mode":"AUTO"}}`)

	for choice, want := range map[string]string{
		`{"type":"any"}`:                    `{"functionCallingConfig":{"mode":"ANY"}}`,
		`{"type":"none"}`:                   `{"functionCallingConfig":{"mode":"NONE"}}`,
		`{"type":"tool","name":"get_time"}`: `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_time"]}}`,
		`{"type":"allowed_tools","allowed_tools":{"mode":"required","tools":[{"type":"function","function":{"name":"get_weather"}}]}}`: `{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}`,
	} {
		req.ToolChoice = []byte(choice)
		_, body := encodeBody(t, h, req)
		jsonEq(t, choice, body["toolConfig"], want)
	}
	req.ToolChoice = []byte(`{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[{"type":"function","function":{"name":"get_time"}}]}}`)
	_, body = encodeBody(t, h, req)
	jsonEq(t, "allowed auto", body["tools"], `[{"functionDeclarations":[{"name":"get_time"}]}]`)

	// An orphan tool result falls back to its id as the name rather than
	// sending an empty one.
	_, body = encodeBody(t, h, wire.Request{Messages: []wire.Message{user(wire.Block{Type: wire.BlockToolResult, ID: "lookup", Text: "x"})}})
	jsonEq(t, "orphan", body["contents"], `[{"role":"user","parts":[{"functionResponse":{"name":"lookup","response":{"output":"x"}}}]}]`)

	// No fallback signature when disabled.
	h = plugintest.New(t, `{"signature_fallback":""}`)
	_, body = encodeBody(t, h, wire.Request{Messages: req.Messages[:2]})
	if strings.Contains(fmt.Sprint(body), "thoughtSignature") {
		t.Fatalf("fallback sent: %v", body)
	}
}

func TestEncodeThinkingSignatures(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{Messages: []wire.Message{
		user(text("q")),
		assistant(
			wire.Block{Type: wire.BlockThinking, Text: "plan", Signature: "gemini:S1"},
			text("answer"),
			wire.Block{Type: wire.BlockThinking, Signature: "gemini:S2"},
			wire.Block{Type: wire.BlockToolUse, ID: "c1", Name: "f", Data: []byte(`{}`)},
			wire.Block{Type: wire.BlockThinking, Signature: "gemini:S3"}),
		user(wire.Block{Type: wire.BlockToolResult, ID: "c1", Text: "ok"}),
		assistant(
			wire.Block{Type: wire.BlockThinking, Text: "claude thought", Signature: "EqQBCkgIBRABGAIiQL"}, // Anthropic's
			wire.Block{Type: wire.BlockThinking, Text: "openai reasoning"},                                // no signature
			wire.Block{Type: wire.BlockRedactedThinking, Data: []byte(`"xyz"`)},
			wire.Block{Type: wire.BlockThinking, Text: "gemini musing", Signature: "gemini:"}, // Gemini's, unsigned
			text("done")),
	}}
	_, body := encodeBody(t, h, req)
	jsonEq(t, "contents", body["contents"], `[
		{"role":"user","parts":[{"text":"q"}]},
		{"role":"model","parts":[
			{"text":"plan","thought":true,"thoughtSignature":"S1"},
			{"text":"answer"},
			{"functionCall":{"name":"f","args":{}},"thoughtSignature":"S2"},
			{"text":"","thoughtSignature":"S3"}]},
		{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok"}}}]},
		{"role":"model","parts":[{"text":"gemini musing","thought":true},{"text":"done"}]}]`)
}

func TestEncodeMediaAndExtra(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{
		Messages: []wire.Message{user(
			text("look"),
			wire.Block{Type: wire.BlockImage, Data: []byte(`{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}`)},
			wire.Block{Type: wire.BlockImage, Data: []byte(`{"type":"url","url":"https://example.com/cat.JPG?x=1","detail":"high"}`)},
			wire.Block{Type: wire.BlockDocument, Data: []byte(`{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}}`)},
			wire.Block{Type: wire.BlockDocument, Data: []byte(`{"type":"document","source":{"type":"url","url":"https://example.com/paper"}}`)},
			wire.Block{Type: wire.BlockDocument, Data: []byte(`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain doc"}}`)},
			wire.Block{Type: wire.BlockOther, Data: []byte(`{"type":"input_audio"}`)},
		)},
		Extra: []byte(`{"thinking":{"type":"enabled","budget_tokens":2048},"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":false}}}}`),
	}
	_, body := encodeBody(t, h, req)
	jsonEq(t, "parts", body["contents"], `[{"role":"user","parts":[
		{"text":"look"},
		{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
		{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/cat.JPG?x=1"}},
		{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}},
		{"fileData":{"mimeType":"application/pdf","fileUri":"https://example.com/paper"}},
		{"text":"plain doc"}]}]`)
	jsonEq(t, "generationConfig", body["generationConfig"], `{
		"responseMimeType":"application/json",
		"responseSchema":{"type":"object","properties":{"a":{"type":"integer"}}},
		"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}}`)

	req.Extra = []byte(`{"reasoning_effort":"medium","response_format":{"type":"json_object"}}`)
	_, body = encodeBody(t, h, req)
	jsonEq(t, "generationConfig", body["generationConfig"], `{"responseMimeType":"application/json","thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}`)

	// The Responses API's spellings (issue 16).
	req.Extra = []byte(`{"reasoning":{"effort":"medium","summary":"auto"},"text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}}`)
	_, body = encodeBody(t, h, req)
	jsonEq(t, "generationConfig", body["generationConfig"], `{
		"responseMimeType":"application/json",
		"responseSchema":{"type":"object","properties":{"a":{"type":"integer"}}},
		"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}`)

	req.Extra = []byte(`{"thinking":{"type":"disabled"},"metadata":{"user_id":"u"}}`)
	_, body = encodeBody(t, h, req)
	if _, ok := body["generationConfig"]; ok {
		t.Fatalf("disabled thinking: %v", body["generationConfig"])
	}

	h = plugintest.New(t, `{"include_thoughts":true,"safety_settings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`)
	_, body = encodeBody(t, h, wire.Request{Messages: []wire.Message{user(text("x"))}})
	jsonEq(t, "config", map[string]any{"g": body["generationConfig"], "s": body["safetySettings"]},
		`{"g":{"thinkingConfig":{"includeThoughts":true}},"s":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`)
}

func TestSchemaSanitizer(t *testing.T) {
	h := plugintest.New(t, `{}`)
	schema := `{
		"$schema":"http://json-schema.org/draft-07/schema#",
		"type":"object",
		"title":"Args",
		"additionalProperties":false,
		"$defs":{"Unit":{"type":"string","enum":["c","f"],"description":"unit"},
		         "Node":{"type":"object","properties":{"child":{"$ref":"#/$defs/Node"}}}},
		"properties":{
			"city":{"type":["string","null"],"format":"email","minLength":1,"examples":["x"]},
			"unit":{"$ref":"#/$defs/Unit"},
			"opt":{"anyOf":[{"type":"integer","exclusiveMinimum":0},{"type":"null"}],"default":null},
			"kind":{"const":"fixed"},
			"level":{"type":"integer","enum":[1,2,3]},
			"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"},"uniqueItems":true},
			"either":{"oneOf":[{"type":"string"},{"type":"number","format":"double"}]},
			"tree":{"$ref":"#/$defs/Node"},
			"empty":{"type":"object","properties":{},"additionalProperties":{"type":"string"}}
		},
		"required":["city","ghost"]
	}`
	_, body := encodeBody(t, h, wire.Request{Messages: []wire.Message{user(text("x"))},
		Tools: []wire.Tool{{Name: "f", Schema: []byte(schema)}}})
	params := body["tools"].([]any)[0].(map[string]any)["functionDeclarations"].([]any)[0].(map[string]any)["parameters"]
	jsonEq(t, "parameters", params, `{
		"type":"object","title":"Args",
		"properties":{
			"city":{"type":"string","minLength":1,"nullable":true},
			"unit":{"type":"string","enum":["c","f"],"description":"unit"},
			"opt":{"default":null,"type":"integer","nullable":true},
			"kind":{"enum":["fixed"],"type":"string"},
			"level":{"type":"integer"},
			"tags":{"type":"array","items":{"type":"string","pattern":"^[a-z]+$"}},
			"either":{"anyOf":[{"type":"string"},{"type":"number","format":"double"}]},
			"tree":{"type":"object","properties":{"child":{"type":"object","properties":{"child":{"type":"object","properties":{"child":{"type":"object","properties":{"child":{"type":"object","properties":{"child":{"type":"object","properties":{"child":{"type":"object"}}}}}}}}}}}}},
			"empty":{"type":"object"}
		},
		"required":["city"]}`)

	// Key order is kept (Gemini orders properties alphabetically otherwise).
	res := h.Encode(wire.EncodeInput{Route: route, Request: wire.Request{Messages: []wire.Message{user(text("x"))},
		Tools: []wire.Tool{{Name: "f", Schema: []byte(`{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"}}}`)}}}})
	if !strings.Contains(string(res.Call.Body), `"properties":{"zeta":{"type":"string"},"alpha":{"type":"string"}}`) {
		t.Fatalf("order lost: %s", res.Call.Body)
	}

	// json_schema mode sends the schema untouched.
	h = plugintest.New(t, `{"schema_mode":"json_schema"}`)
	res = h.Encode(wire.EncodeInput{Route: route, Request: wire.Request{Messages: []wire.Message{user(text("x"))},
		Tools: []wire.Tool{{Name: "f", Schema: []byte(schema)}}}})
	if !strings.Contains(string(res.Call.Body), `"parametersJsonSchema":{`) || !strings.Contains(string(res.Call.Body), `"additionalProperties":false`) {
		t.Fatalf("json_schema mode: %s", res.Call.Body)
	}
}

// decodeStream runs the adapter's decode_stream export natively.
func decodeStreamCall(t *testing.T, in wire.DecodeStreamInput) wire.DecodeStreamResult {
	t.Helper()
	var enc wire.Encoder
	in.Encode(&enc)
	out := plugin.Call(plugin.OpDecodeStream, enc.Bytes())
	if len(out) == 0 || out[0] == plugin.StatusError {
		t.Fatalf("decode_stream failed: %s", out[min(1, len(out)):])
	}
	var res wire.DecodeStreamResult
	if err := res.Decode(out); err != nil {
		t.Fatal(err)
	}
	return res
}

// stream feeds chunks one SSE event per batch, as the host does, then the
// final batch, and returns every event (and the error of the final batch).
func stream(t *testing.T, chunks ...string) ([]wire.Event, *wire.Error) {
	t.Helper()
	var all []wire.Event
	var st []byte
	for _, c := range chunks {
		res := decodeStreamCall(t, wire.DecodeStreamInput{Route: route, Events: []wire.SSE{{Data: []byte(c)}}, State: st})
		if res.Error != nil {
			return all, res.Error
		}
		all = append(all, res.Events...)
		st = res.State
	}
	res := decodeStreamCall(t, wire.DecodeStreamInput{Route: route, State: st, Final: true})
	all = append(all, res.Events...)
	return all, res.Error
}

// checkGrammar verifies the canonical event grammar: message_start first,
// blocks opened once with increasing indexes, deltas only inside open
// blocks, every block closed before the message_delta, message_stop last.
func checkGrammar(t *testing.T, evs []wire.Event) {
	t.Helper()
	if len(evs) < 3 || evs[0].Type != wire.EventMessageStart || evs[len(evs)-1].Type != wire.EventMessageStop ||
		evs[len(evs)-2].Type != wire.EventMessageDelta {
		t.Fatalf("frame of the stream: %+v", evs)
	}
	open := map[int64]bool{}
	next := int64(0)
	for _, ev := range evs[1 : len(evs)-2] {
		switch ev.Type {
		case wire.EventBlockStart:
			if ev.Index != next || len(open) != 0 {
				t.Fatalf("block %d started (want %d, open %v)", ev.Index, next, open)
			}
			open[ev.Index] = true
			next++
		case wire.EventDelta:
			if !open[ev.Index] {
				t.Fatalf("delta outside its block: %+v", ev)
			}
		case wire.EventBlockStop:
			if !open[ev.Index] {
				t.Fatalf("stop of a block not open: %+v", ev)
			}
			delete(open, ev.Index)
		default:
			t.Fatalf("unexpected event %+v", ev)
		}
	}
	if len(open) != 0 {
		t.Fatalf("blocks left open: %v", open)
	}
}

// accumulate folds events into blocks, as the host's accumulator does.
func accumulate(evs []wire.Event) []wire.Block { return fold(evs) }

const (
	chunkThought  = `{"candidates":[{"content":{"parts":[{"text":"Let me ","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`
	chunkThought2 = `{"candidates":[{"content":{"parts":[{"text":"think.","thought":true}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`
	chunkText1    = `{"candidates":[{"content":{"parts":[{"text":"Hello "}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`
	chunkText2    = `{"candidates":[{"content":{"parts":[{"text":"world"}],"role":"model"},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`
	chunkCall     = `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"SIG1"},{"functionCall":{"name":"get_time","args":{}}}],"role":"model"},"index":0}],"responseId":"resp-1"}`
	chunkEnd      = `{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"SIG2"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"totalTokenCount":40,"cachedContentTokenCount":4,"thoughtsTokenCount":23},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`
)

func TestDecodeStream(t *testing.T) {
	plugintest.New(t, `{}`)
	evs, werr := stream(t, chunkThought, chunkThought2, chunkText1, chunkText2, chunkCall, chunkEnd)
	if werr != nil {
		t.Fatal(werr)
	}
	checkGrammar(t, evs)
	start := evs[0]
	if start.ID != "resp-1" || start.Model != "gemini-2.5-flash" || start.Usage.InputTokens != 12 {
		t.Fatalf("message_start %+v", start)
	}
	md := evs[len(evs)-2]
	if md.StopReason != wire.StopToolUse || md.Usage != (wire.Usage{InputTokens: 8, CacheReadTokens: 4, OutputTokens: 28}) {
		t.Fatalf("message_delta %+v", md)
	}
	blocks := accumulate(evs)
	id1, id2 := callID("resp-1", 0, "get_weather", nil), callID("resp-1", 1, "get_time", nil)
	want := []wire.Block{
		{Type: wire.BlockThinking, Text: "Let me think.", Signature: "gemini:"},
		{Type: wire.BlockText, Text: "Hello world"},
		{Type: wire.BlockThinking, Signature: "gemini:SIG1"},
		{Type: wire.BlockToolUse, ID: id1, Name: "get_weather", Data: []byte(`{"city":"Paris"}`)},
		{Type: wire.BlockToolUse, ID: id2, Name: "get_time", Data: []byte(`{}`)},
		{Type: wire.BlockThinking, Signature: "gemini:SIG2"},
	}
	if !reflect.DeepEqual(blocks, want) {
		t.Fatalf("blocks\n got %+v\nwant %+v", blocks, want)
	}
	if id1 == id2 || !strings.HasPrefix(id1, "call_") || len(id1) != 21 {
		t.Fatalf("ids %q %q", id1, id2)
	}

	// The whole-response decoder gives the same blocks for the same parts.
	whole := `{"candidates":[{"content":{"parts":[{"text":"Let me think.","thought":true},{"text":"Hello world"},` +
		`{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"SIG1"},{"functionCall":{"name":"get_time","args":{}}},` +
		`{"text":"","thoughtSignature":"SIG2"}],"role":"model"},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":5,"totalTokenCount":40,"cachedContentTokenCount":4,"thoughtsTokenCount":23},"modelVersion":"gemini-2.5-flash","responseId":"resp-1"}`
	h := plugintest.New(t, `{}`)
	res := h.Decode(wire.DecodeInput{Route: route, Status: 200, Body: []byte(whole)})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	r := res.Response
	if !reflect.DeepEqual(r.Content, want) || r.StopReason != wire.StopToolUse || r.ID != "resp-1" || r.Model != "gemini-2.5-flash" ||
		r.Usage != md.Usage {
		t.Fatalf("response %+v", r)
	}

	// And those blocks, sent back as history, give Gemini its parts again.
	_, body := encodeBody(t, h, wire.Request{Messages: []wire.Message{user(text("q")), {Role: "assistant", Content: r.Content}}})
	jsonEq(t, "round trip", body["contents"].([]any)[1].(map[string]any)["parts"], `[
		{"text":"Let me think.","thought":true},
		{"text":"Hello world"},
		{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"SIG1"},
		{"functionCall":{"name":"get_time","args":{}}},
		{"text":"","thoughtSignature":"SIG2"}]`)
}

func TestDecodeStreamCutAndErrors(t *testing.T) {
	plugintest.New(t, `{}`)
	// Ends without a finishReason: an error, not a complete-looking answer.
	evs, werr := stream(t, chunkText1, chunkText2)
	if werr == nil || werr.Status != 502 || !strings.Contains(werr.Message, "finishReason") {
		t.Fatalf("cut stream: %+v", werr)
	}
	for _, ev := range evs {
		if ev.Type == wire.EventMessageStop || ev.Type == wire.EventMessageDelta {
			t.Fatalf("a cut stream must not end: %+v", ev)
		}
	}
	// Nothing at all.
	if _, werr := stream(t); werr == nil {
		t.Fatal("an empty stream must fail")
	}
	// Malformed chunk.
	if _, werr := stream(t, chunkText1, `{"candidates": [{"content": {"parts": [{"text": `); werr == nil || werr.Status != 502 {
		t.Fatalf("malformed: %+v", werr)
	}
	// An error object inside the stream.
	_, werr = stream(t, chunkText1, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
	if werr == nil || werr.Kind != wire.ErrOverloaded || !strings.Contains(werr.Message, "overloaded") {
		t.Fatalf("in-band error: %+v", werr)
	}
	// Several events in one batch work as well as one per batch.
	res := decodeStreamCall(t, wire.DecodeStreamInput{Route: route, Events: []wire.SSE{{Data: []byte(chunkText1)}, {Data: []byte(chunkText2)},
		{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"!"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":9}}`)}}})
	fin := decodeStreamCall(t, wire.DecodeStreamInput{Route: route, State: res.State, Final: true})
	all := append(res.Events, fin.Events...)
	checkGrammar(t, all)
	if b := accumulate(all); len(b) != 1 || b[0].Text != "Hello world!" || all[len(all)-2].StopReason != wire.StopMaxTokens {
		t.Fatalf("batch: %+v", all)
	}
}

func TestDecodeFinishReasonsAndUsage(t *testing.T) {
	h := plugintest.New(t, `{}`)
	for finish, want := range map[string]string{
		"STOP": wire.StopEndTurn, "MAX_TOKENS": wire.StopMaxTokens, "SAFETY": wire.StopContentFilter,
		"RECITATION": wire.StopContentFilter, "BLOCKLIST": wire.StopContentFilter, "PROHIBITED_CONTENT": wire.StopContentFilter,
		"SPII": wire.StopContentFilter, "MALFORMED_FUNCTION_CALL": wire.StopEndTurn, "OTHER": wire.StopEndTurn,
	} {
		body := `{"candidates":[{"content":{"parts":[{"text":"x"}],"role":"model"},"finishReason":"` + finish + `","index":0}],` +
			`"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":10,"cachedContentTokenCount":60,"thoughtsTokenCount":5,"totalTokenCount":115}}`
		res := h.Decode(wire.DecodeInput{Route: route, Status: 200, Body: []byte(body)})
		if res.Response == nil || res.Response.StopReason != want {
			t.Errorf("%s: %+v", finish, res.Response)
			continue
		}
		if u := res.Response.Usage; u != (wire.Usage{InputTokens: 40, CacheReadTokens: 60, OutputTokens: 15}) {
			t.Errorf("usage %+v", u)
		}
		if res.Response.Model != "gemini-2.5-flash" { // no modelVersion: the route's model
			t.Errorf("model %q", res.Response.Model)
		}
	}
	// A blocked prompt: no candidates.
	res := h.Decode(wire.DecodeInput{Route: route, Status: 200, Body: []byte(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}}`)})
	if r := res.Response; r == nil || r.StopReason != wire.StopContentFilter || len(r.Content) != 0 || r.Usage.InputTokens != 8 {
		t.Fatalf("blocked: %+v", res)
	}
	// A safety stop without content.
	res = h.Decode(wire.DecodeInput{Route: route, Status: 200, Body: []byte(`{"candidates":[{"finishReason":"SAFETY","index":0}]}`)})
	if r := res.Response; r == nil || r.StopReason != wire.StopContentFilter || len(r.Content) != 0 {
		t.Fatalf("safety: %+v", res)
	}
	// Image output and unknown parts.
	res = h.Decode(wire.DecodeInput{Route: route, Status: 200, Body: []byte(`{"candidates":[{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"AAAA"}},{"executableCode":{"language":"PYTHON","code":"1"}}],"role":"model"},"finishReason":"STOP"}]}`)})
	if r := res.Response; r == nil || len(r.Content) != 1 || r.Content[0].Type != wire.BlockImage ||
		string(r.Content[0].Data) != `{"type":"base64","media_type":"image/png","data":"AAAA"}` {
		t.Fatalf("image: %+v", res.Response)
	}
	// Not JSON.
	res = h.Decode(wire.DecodeInput{Route: route, Status: 200, Body: []byte(`<html>`)})
	if res.Error == nil || res.Error.Status != 502 {
		t.Fatalf("not JSON: %+v", res)
	}
}

func TestDecodeErrors(t *testing.T) {
	h := plugintest.New(t, `{}`)
	decodeErr := func(status int64, body string) *wire.Error {
		t.Helper()
		res := h.Decode(wire.DecodeInput{Route: route, Status: status, Body: []byte(body)})
		if res.Error == nil || res.Response != nil {
			t.Fatalf("status %d: %+v", status, res)
		}
		return res.Error
	}
	e := decodeErr(429, `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[`+
		`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"7.5s"}]}}`)
	if e.Status != 429 || e.Kind != wire.ErrRateLimit || !e.Retryable || e.RetryAfterMs != 7500 || !strings.Contains(e.Message, "exceeded your current quota") {
		t.Fatalf("429: %+v", e)
	}
	e = decodeErr(400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}`)
	if e.Status != 502 || e.Kind != wire.ErrUpstream || !strings.Contains(e.Message, "refused the gateway's credentials") {
		t.Fatalf("bad key: %+v", e)
	}
	e = decodeErr(403, `{"error":{"code":403,"message":"Method doesn't allow unregistered callers","status":"PERMISSION_DENIED"}}`)
	if e.Status != 502 || e.Kind != wire.ErrUpstream {
		t.Fatalf("403: %+v", e)
	}
	e = decodeErr(400, `{"error":{"code":400,"message":"* GenerateContentRequest.contents: contents is not specified\n","status":"INVALID_ARGUMENT"}}`)
	if e.Status != 400 || e.Kind != wire.ErrInvalidRequest || !strings.Contains(e.Message, "contents is not specified") {
		t.Fatalf("400: %+v", e)
	}
	e = decodeErr(503, `[{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}]`)
	if e.Status != 502 || e.Kind != wire.ErrOverloaded || !e.Retryable || !strings.Contains(e.Message, "overloaded") {
		t.Fatalf("503 (array body): %+v", e)
	}
	e = decodeErr(500, `{"error":{"code":500,"message":"An internal error has occurred.","status":"INTERNAL"}}`)
	if e.Status != 502 || !e.Retryable {
		t.Fatalf("500: %+v", e)
	}
	// A retry-after header wins over the body.
	res := h.Decode(wire.DecodeInput{Route: route, Status: 429, Headers: []wire.KV{{Key: "Retry-After", Value: "3"}},
		Body: []byte(`{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"9s"}]}}`)})
	if res.Error.RetryAfterMs != 3000 {
		t.Fatalf("retry-after: %+v", res.Error)
	}
}

// The gateway's inference profile reaches this BodyRaw adapter as
// annotations; it becomes thinkingConfig unless the caller set its own.
func TestEncodeProfileReasoning(t *testing.T) {
	h := plugintest.New(t, `{}`)
	msgs := []wire.Message{user(text("assess"))}
	anns := func(kv ...string) []wire.KV {
		var out []wire.KV
		for i := 0; i < len(kv); i += 2 {
			out = append(out, wire.KV{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	genConfig := func(req wire.Request, a []wire.KV) any {
		t.Helper()
		res := h.Encode(wire.EncodeInput{Route: route, Request: req, Meta: wire.Meta{Annotations: a}})
		if res.Error != nil {
			t.Fatalf("encode error %+v", res.Error)
		}
		var m map[string]any
		if err := json.Unmarshal(res.Call.Body, &m); err != nil {
			t.Fatal(err)
		}
		return m["generationConfig"]
	}
	for _, c := range []struct {
		name  string
		extra string
		anns  []wire.KV
		want  string // generationConfig; "" = none
	}{
		{"high", "", anns("bardo.profile.reasoning_effort", "high"), `{"thinkingConfig":{"thinkingBudget":24576}}`},
		{"xhigh", "", anns("bardo.profile.reasoning_effort", "xhigh"), `{"thinkingConfig":{"thinkingBudget":24576}}`},
		{"max", "", anns("bardo.profile.reasoning_effort", "max"), `{"thinkingConfig":{"thinkingBudget":24576}}`},
		{"low, visible", "", anns("bardo.profile.reasoning_effort", "low", "bardo.profile.visible_thinking", "true"),
			`{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}`},
		{"none: the model's default", "", anns("bardo.profile.reasoning_effort", "none"), ""},
		{"no annotation", "", nil, ""},
		{"unknown level", "", anns("bardo.profile.reasoning_effort", "extreme"), ""},
		{"caller's effort wins", `{"reasoning_effort":"low"}`, anns("bardo.profile.reasoning_effort", "high"),
			`{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":1024}}`},
		{"caller's budget wins", `{"thinking":{"type":"enabled","budget_tokens":2048}}`, anns("bardo.profile.reasoning_effort", "high"),
			`{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}}`},
		{"caller's disabled wins", `{"thinking":{"type":"disabled"}}`, anns("bardo.profile.reasoning_effort", "high"), ""},
		{"other extra fields do not count", `{"metadata":{"user_id":"u"}}`, anns("bardo.profile.reasoning_effort", "medium"),
			`{"thinkingConfig":{"thinkingBudget":8192}}`},
	} {
		req := wire.Request{Messages: msgs}
		if c.extra != "" {
			req.Extra = []byte(c.extra)
		}
		got := genConfig(req, c.anns)
		if c.want == "" {
			if got != nil {
				t.Errorf("%s: generationConfig %v, want none", c.name, got)
			}
			continue
		}
		jsonEq(t, c.name, got, c.want)
	}

	// include_thoughts adds summaries to the profile's budget.
	h = plugintest.New(t, `{"include_thoughts":true}`)
	jsonEq(t, "include_thoughts", genConfig(wire.Request{Messages: msgs}, anns("bardo.profile.reasoning_effort", "medium")),
		`{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}`)
}

// TestEncodeMidConversationSystem: Gemini has no system turn inside the
// conversation; one is sent as marked user text, in its place, and the
// adapter says so (X-Bardo-Degraded: system-as-user).
func TestEncodeMidConversationSystem(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{Model: "gemini-2.5-flash", System: []wire.Block{text("top")}, Messages: []wire.Message{
		user(text("hi")),
		{Role: "system", Content: []wire.Block{text("be brief")}},
		assistant(text("ok")),
		user(text("q")),
	}}
	res := h.Encode(wire.EncodeInput{Route: route, Request: req})
	if res.Error != nil || res.Call == nil {
		t.Fatalf("%+v", res)
	}
	var m map[string]any
	if err := json.Unmarshal(res.Call.Body, &m); err != nil {
		t.Fatal(err)
	}
	jsonEq(t, "contents", m["contents"], `[{"role":"user","parts":[{"text":"hi"},{"text":"<system-reminder>\nbe brief\n</system-reminder>"}]},{"role":"model","parts":[{"text":"ok"}]},{"role":"user","parts":[{"text":"q"}]}]`)
	jsonEq(t, "systemInstruction", m["systemInstruction"], `{"parts":[{"text":"top"}]}`)
	if len(res.Degraded) != 1 || res.Degraded[0] != DegradedSystemAsUser {
		t.Fatalf("degraded %v", res.Degraded)
	}
	req.Messages = []wire.Message{user(text("hi"))}
	if res = h.Encode(wire.EncodeInput{Route: route, Request: req}); res.Degraded != nil {
		t.Fatalf("degraded without a system message: %v", res.Degraded)
	}
}

// TestEncodeHostedTools: a caller's hosted tools (the Responses API's
// web_search and namespaces, which Codex always offers) are not declared as
// functions, and the answer says they were dropped.
func TestEncodeHostedTools(t *testing.T) {
	h := plugintest.New(t, `{}`)
	req := wire.Request{
		Messages: []wire.Message{user(text("hi"))},
		Tools: []wire.Tool{
			{Name: "get_weather", Schema: []byte(`{"type":"object"}`)},
			{Name: "web_search", Extra: []byte(`{"type":"web_search","external_web_access":false}`)},
		},
	}
	_, body := encodeBody(t, h, req)
	res := h.Encode(wire.EncodeInput{Route: route, Request: req})
	jsonEq(t, "tools", body["tools"], `[{"functionDeclarations":[{"name":"get_weather"}]}]`)
	if len(res.Degraded) != 1 || res.Degraded[0] != "hosted-tool-dropped:web_search" {
		t.Errorf("degraded %v", res.Degraded)
	}
}
