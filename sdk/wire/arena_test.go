package wire

import (
	"reflect"
	"strings"
	"testing"
)

// agentRequest is shaped like the host's 4 KB agent fixture
// (host/testkit/fixtures.AgentRequest): a long system prompt, two tools, a
// tool call and its result, and seven turns.
func agentRequest(last string) LayerRequest {
	text := func(s string) []Block { return []Block{{Type: BlockText, Text: s}} }
	return LayerRequest{
		Meta: Meta{RequestID: "req_1", Tenant: "t", Dialect: DialectOpenAI, Model: "gpt-4o-mini",
			Annotations: []KV{{Key: "bardo.pii", Value: "0"}}},
		Request: Request{
			Model:  "gpt-4o-mini",
			System: text(strings.Repeat("You are a careful DeFi assistant. Cite the tools you used. ", 40)),
			Tools: []Tool{
				{Name: "get_position", Description: "Read a lending position.", Schema: []byte(`{"type":"object"}`)},
				{Name: "get_price", Description: "Read a spot price.", Schema: []byte(`{"type":"object"}`),
					Extra: []byte(`{"strict":true}`)},
			},
			Messages: []Message{
				{Role: "user", Content: text("What is my USDC position on Aave?")},
				{Role: "assistant", Content: []Block{{Type: BlockToolUse, ID: "call_1", Name: "get_position", Data: []byte(`{"protocol":"aave"}`)}}},
				{Role: "user", Content: []Block{{Type: BlockToolResult, ID: "call_1", Text: `{"supplied":"125000.00"}`}}},
				{Role: "assistant", Content: text(strings.Repeat("Your Aave position is healthy. ", 10))},
				{Role: "user", Content: text("Compare it with Morpho.")},
				{Role: "assistant", Content: text("I will read your Morpho position next."), Extra: []byte(`{"refusal":null}`)},
				{Role: "user", Content: text(last)},
			},
			Params: Params{Set: HasMaxTokens | HasTemperature, MaxTokens: 1024, Temperature: 0.2, Stop: []string{"END"}},
		},
	}
}

func encoded(m interface{ Encode(*Encoder) }) []byte {
	var e Encoder
	m.Encode(&e)
	return append([]byte(nil), e.Bytes()...)
}

// TestDecodeArenaMatchesDecode: a message decoded through an Arena equals
// the one Decode allocates, call after call on the same Arena — and nothing
// of an earlier call (a block's Extra, an optional error) shows through in
// a later one whose message lacks it.
func TestDecodeArenaMatchesDecode(t *testing.T) {
	var a Arena
	rich := agentRequest("first")
	plain := agentRequest("second")
	plain.Request.Tools[1].Extra, plain.Request.Messages[5].Extra = nil, nil
	plain.Meta.Annotations, plain.Request.Params.Stop = nil, nil
	for i, in := range []LayerRequest{rich, plain, rich} {
		b := encoded(&in)
		var want, got LayerRequest
		if err := want.Decode(b); err != nil {
			t.Fatal(err)
		}
		a.Reset()
		if err := got.DecodeArena(b, &a); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("call %d: arena decode differs:\n got %+v\nwant %+v", i, got, want)
		}
	}

	stream := LayerStream{Meta: rich.Meta, Events: []Event{
		{Type: EventDelta, Text: "hi"},
		{Type: EventError, Error: &Error{Status: 529, Kind: "overloaded", Message: "busy"}},
	}, State: []byte("s"), Final: true}
	noErr := LayerStream{Meta: rich.Meta, Events: []Event{{Type: EventDelta, Text: "a"}, {Type: EventDelta, Text: "b"}}}
	for i, in := range []LayerStream{stream, noErr} {
		b := encoded(&in)
		var want, got LayerStream
		if err := want.Decode(b); err != nil {
			t.Fatal(err)
		}
		a.Reset()
		if err := got.DecodeArena(b, &a); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("stream %d: arena decode differs:\n got %+v\nwant %+v", i, got, want)
		}
	}

	others := []interface {
		Encode(*Encoder)
	}{
		&LayerResponse{Meta: rich.Meta, Response: Response{ID: "r", Content: []Block{{Type: BlockText, Text: "ok"}}}},
		&EncodeInput{Meta: rich.Meta, Route: Route{Provider: "p"}, Request: rich.Request, Pristine: true},
		&DecodeInput{Meta: rich.Meta, Status: 200, Headers: []KV{{Key: "a", Value: "b"}}, Body: []byte("{}")},
		&DecodeStreamInput{Meta: rich.Meta, Events: []SSE{{Event: "e", Data: []byte("d")}}, Headers: []KV{{Key: "a", Value: "b"}}},
	}
	for _, in := range others {
		b := encoded(in)
		typ := reflect.TypeOf(in).Elem()
		want, got := reflect.New(typ), reflect.New(typ)
		if err := want.Interface().(interface{ Decode([]byte) error }).Decode(b); err != nil {
			t.Fatal(err)
		}
		a.Reset()
		if err := got.Interface().(interface {
			DecodeArena([]byte, *Arena) error
		}).DecodeArena(b, &a); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(want.Interface(), got.Interface()) {
			t.Fatalf("%s: arena decode differs:\n got %+v\nwant %+v", typ, got, want)
		}
	}
}

// TestDecodeArenaAllocs: once its slabs have grown, an Arena decodes the
// agent request without allocating (Decode makes eleven slices of it).
func TestDecodeArenaAllocs(t *testing.T) {
	in := agentRequest("hello")
	b := encoded(&in)
	var a Arena
	var req LayerRequest
	allocs := testing.AllocsPerRun(100, func() {
		a.Reset()
		req = LayerRequest{}
		if err := req.DecodeArena(b, &a); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations a decode, want 0", allocs)
	}
}

// TestArenaSlicesAreClipped: appending to one lent slice copies instead of
// writing over the next one lent from the same slab.
func TestArenaSlicesAreClipped(t *testing.T) {
	in := agentRequest("hello")
	var a Arena
	var req LayerRequest
	if err := req.DecodeArena(encoded(&in), &a); err != nil {
		t.Fatal(err)
	}
	m0 := req.Request.Messages[0]
	_ = append(m0.Content, Block{Text: "appended"})
	if got := req.Request.Messages[1].Content[0].Name; got != "get_position" {
		t.Fatalf("the next message's block was overwritten: %q", got)
	}
	_ = append(req.Request.Messages, Message{Role: "appended"})
	_ = append(req.Meta.Annotations, KV{Key: "k"})
	if got := req.Request.Params.Stop[0]; got != "END" {
		t.Fatalf("the stop list was overwritten: %q", got)
	}
}

// BenchmarkLayerRequestDecode is the SDK's decode of the agent request,
// allocating and through a reused Arena. Run it inside wasm for the guest's
// figure (docs/performance.md, "Cheaper calls inside the guest").
func BenchmarkLayerRequestDecode(b *testing.B) {
	in := agentRequest("hello")
	buf := encoded(&in)
	b.Run("alloc", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var req LayerRequest
			if err := req.Decode(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("arena", func(b *testing.B) {
		var a Arena
		var req LayerRequest
		b.ReportAllocs()
		for b.Loop() {
			a.Reset()
			req = LayerRequest{}
			if err := req.DecodeArena(buf, &a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
