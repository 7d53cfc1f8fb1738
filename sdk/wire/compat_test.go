package wire

import "testing"

// TestAppendedFieldsCompat: a message written by a v1.2 peer (without the
// fields v1.3 appended) still decodes, with those fields at zero, and a v1.3
// message round-trips them.
func TestAppendedFieldsCompat(t *testing.T) {
	var e Encoder
	call := &UpstreamCall{Method: "POST", URL: "https://x/v1/chat/completions", BodyMode: BodyNative,
		BodyDialect: DialectOpenAI, BodyMerge: []byte(`{"provider":{"sort":"price"}}`), VerifySuccess: true}
	(&EncodeResult{Call: call}).Encode(&e)
	full := append([]byte(nil), e.Bytes()...)

	var got EncodeResult
	if err := got.Decode(full); err != nil || string(got.Call.BodyMerge) != string(call.BodyMerge) || !got.Call.VerifySuccess {
		t.Fatalf("v1.3 round trip: %v %q", err, got.Call.BodyMerge)
	}
	// A v1.2 encoder stops after the error: cut the appended field off.
	old := full[:len(full)-2-len(call.BodyMerge)]
	got = EncodeResult{}
	if err := got.Decode(old); err != nil || got.Call == nil || got.Call.BodyMerge != nil || got.Call.URL != call.URL {
		t.Fatalf("v1.2 message: %v %+v", err, got.Call)
	}

	in := DecodeStreamInput{Events: []SSE{{Data: []byte("{}")}}, Final: true,
		Headers: []KV{{Key: "X-Venice-Privacy", Value: "no-retention"}}}
	in.Encode(&e)
	full = append([]byte(nil), e.Bytes()...)
	var gi DecodeStreamInput
	if err := gi.Decode(full); err != nil || len(gi.Headers) != 1 || gi.Headers[0].Value != "no-retention" || !gi.Final {
		t.Fatalf("stream input round trip: %v %+v", err, gi)
	}
	in.Headers = nil
	in.Encode(&e)
	old = e.Bytes()[: len(e.Bytes())-1 : len(e.Bytes())-1] // a v1.2 peer wrote no header count
	gi = DecodeStreamInput{}
	if err := gi.Decode(old); err != nil || gi.Headers != nil || !gi.Final {
		t.Fatalf("v1.2 stream input: %v %+v", err, gi)
	}
}

// TestRequestExtrasSection: the nested Extra members (v1.4) round-trip in
// LayerRequest, LayerResult and EncodeInput, only for the parts sent; a
// request without any encodes exactly as a v1.3 peer wrote it, and a v1.3
// message decodes with them nil.
func TestRequestExtrasSection(t *testing.T) {
	req := Request{
		Model:  "m",
		System: []Block{{Type: BlockText, Text: "s", Extra: []byte(`{"citations":null}`)}},
		Messages: []Message{
			{Role: "user", Content: []Block{{Type: BlockText, Text: "hi"}, {Type: BlockText, Text: "x", Extra: []byte(`{"k":1}`)}}},
			{Role: "system", Extra: []byte(`{"cache_control":{"type":"ephemeral"}}`), Content: []Block{{Type: BlockText, Text: "be brief"}}},
		},
		Tools: []Tool{{Name: "a"}, {Name: "b", Extra: []byte(`{"defer_loading":true}`)}},
	}
	var e Encoder
	EncodeLayerRequest(&e, &Meta{}, &req, PartAll)
	var lr LayerRequest
	if err := lr.Decode(append([]byte(nil), e.Bytes()...)); err != nil {
		t.Fatal(err)
	}
	r := &lr.Request
	if string(r.System[0].Extra) != `{"citations":null}` || r.Messages[0].Content[0].Extra != nil ||
		string(r.Messages[0].Content[1].Extra) != `{"k":1}` || string(r.Messages[1].Extra) != `{"cache_control":{"type":"ephemeral"}}` ||
		r.Tools[0].Extra != nil || string(r.Tools[1].Extra) != `{"defer_loading":true}` {
		t.Fatalf("layer request extras: %+v", r)
	}

	// Only the parts sent carry their section; tools alone here.
	EncodeLayerRequest(&e, &Meta{}, &req, PartTools)
	lr = LayerRequest{}
	if err := lr.Decode(append([]byte(nil), e.Bytes()...)); err != nil || string(lr.Request.Tools[1].Extra) != `{"defer_loading":true}` {
		t.Fatalf("tools only: %v %+v", err, lr.Request.Tools)
	}

	res := LayerResult{Patched: PartMessages | PartTools, Request: req, Annotations: []KV{{Key: "k", Value: "v"}}}
	res.Encode(&e)
	var got LayerResult
	if err := got.Decode(append([]byte(nil), e.Bytes()...)); err != nil || string(got.Request.Tools[1].Extra) != `{"defer_loading":true}` ||
		string(got.Request.Messages[1].Extra) != `{"cache_control":{"type":"ephemeral"}}` || got.Annotations[0].Value != "v" {
		t.Fatalf("layer result: %v %+v", err, got.Request)
	}

	in := EncodeInput{Request: req, Pristine: true}
	in.Encode(&e)
	var gi EncodeInput
	if err := gi.Decode(append([]byte(nil), e.Bytes()...)); err != nil || !gi.Pristine || string(gi.Request.Messages[0].Content[1].Extra) != `{"k":1}` {
		t.Fatalf("encode input: %v %+v", err, gi.Request)
	}

	// Without nested extras nothing is appended: the v1.3 bytes.
	plain := Request{Model: "m", Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: "hi"}}}}, Tools: []Tool{{Name: "a"}}}
	EncodeLayerRequest(&e, &Meta{}, &plain, PartAll)
	withSection := len(e.Bytes())
	var v13 Encoder
	v13.Reset()
	v13.meta(&Meta{})
	v13.requestParts(&plain, PartAll)
	if withSection != len(v13.Bytes()) {
		t.Fatalf("a request without nested extras grew from %d to %d bytes", len(v13.Bytes()), withSection)
	}
	// A v1.3 peer's message with messages: decodes, extras nil.
	v13.Reset()
	v13.meta(&Meta{})
	v13.requestParts(&req, PartAll)
	lr = LayerRequest{}
	if err := lr.Decode(v13.Bytes()); err != nil || lr.Request.Tools[1].Extra != nil || lr.Request.Messages[1].Extra != nil {
		t.Fatalf("v1.3 layer request: %v %+v", err, lr.Request)
	}
	// A section of an unknown version is an error, not a misreading.
	bad := append(append([]byte(nil), v13.Bytes()...), 2)
	if err := (&LayerRequest{}).Decode(bad); err == nil {
		t.Fatal("unknown extras section version accepted")
	}
}

// TestEncodeResultDegraded: an adapter's degraded notes (v1.4) round-trip
// with and without a call, and are not written when there are none.
func TestEncodeResultDegraded(t *testing.T) {
	var e Encoder
	for _, in := range []EncodeResult{
		{Call: &UpstreamCall{URL: "u", BodyMerge: []byte(`{"a":1}`)}, Degraded: []string{"system-as-user"}},
		{Local: &Response{ID: "r"}, Degraded: []string{"a", "b"}},
	} {
		in.Encode(&e)
		var got EncodeResult
		if err := got.Decode(append([]byte(nil), e.Bytes()...)); err != nil || len(got.Degraded) != len(in.Degraded) || got.Degraded[0] != in.Degraded[0] {
			t.Fatalf("%v %+v", err, got)
		}
	}
	in := EncodeResult{Call: &UpstreamCall{URL: "u"}}
	in.Encode(&e)
	n := len(e.Bytes())
	in.Degraded = []string{}
	in.Encode(&e)
	if len(e.Bytes()) != n {
		t.Fatal("an empty Degraded was written")
	}
}

// TestV16Appended: the v1.6 fields (Descriptor.Flags, LayerResult.SkipAnswer,
// LayerStream.UnchangedOK, LayerStreamResult.Unchanged) round-trip; unset,
// every message is byte for byte what v1.5 wrote; and a v1.5 reader of a
// result that skips its answer phases reads the rest unharmed — the v1.4
// extras section comes first, so it does not take the flags for it.
func TestV16Appended(t *testing.T) {
	var e Encoder
	d := Descriptor{ABI: 1, Name: "w", Kind: "layer", Phases: PhaseResponse | PhaseStream}
	d.Encode(&e)
	v15 := len(e.Bytes())
	d.Flags = FlagWatchStream
	d.Encode(&e)
	var gd Descriptor
	if err := gd.Decode(e.Bytes()); err != nil || gd.Flags != FlagWatchStream || gd.Phases != d.Phases || len(e.Bytes()) != v15+1 {
		t.Fatalf("descriptor: %v %+v", err, gd)
	}

	res := LayerResult{Annotations: []KV{{Key: "k", Value: "v"}}}
	res.Encode(&e)
	plain := append([]byte(nil), e.Bytes()...)
	res.SkipAnswer = true
	res.Encode(&e)
	var got LayerResult
	if err := got.Decode(e.Bytes()); err != nil || !got.SkipAnswer || got.Annotations[0].Value != "v" {
		t.Fatalf("layer result: %v %+v", err, got)
	}
	if err := (&got).Decode(plain); err != nil || got.SkipAnswer {
		t.Fatalf("v1.5 layer result: %v %+v", err, got)
	}
	// What a v1.5 host does with it: read up to the extras section.
	for _, r := range []LayerResult{
		{SkipAnswer: true, Annotations: []KV{{Key: "k", Value: "v"}}},
		{SkipAnswer: true, Patched: PartMessages, Request: Request{Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: "x", Extra: []byte(`{"a":1}`)}}}}}},
		{SkipAnswer: true, Patched: PartMessages, Request: Request{Messages: []Message{{Role: "user", Content: []Block{{Type: BlockText, Text: "x"}}}}}},
	} {
		r.Encode(&e)
		var old LayerResult
		dec := NewDecoder(e.Bytes())
		old.Action = uint8(dec.Uint())
		old.Patched = dec.requestParts(&old.Request)
		old.Answer = dec.optResponse()
		old.Error = dec.optError()
		old.Headers = dec.KVs()
		old.Annotations = dec.KVs()
		dec.requestExtras(&old.Request, old.Patched)
		if dec.Err() != nil || len(old.Annotations) != len(r.Annotations) ||
			(r.Patched != 0 && string(old.Request.Messages[0].Content[0].Extra) != string(r.Request.Messages[0].Content[0].Extra)) {
			t.Fatalf("a v1.5 reader of %+v: %v %+v", r, dec.Err(), old)
		}
	}

	ev := []Event{{Type: EventDelta, Delta: DeltaText, Text: "hi"}}
	in := LayerStream{Events: ev, State: []byte("s"), Final: true}
	in.Encode(&e)
	plain = append([]byte(nil), e.Bytes()...)
	in.UnchangedOK = true
	in.Encode(&e)
	var gi LayerStream
	if err := gi.Decode(e.Bytes()); err != nil || !gi.UnchangedOK || !gi.Final || len(e.Bytes()) != len(plain)+1 {
		t.Fatalf("layer stream: %v %+v", err, gi)
	}
	if err := gi.Decode(plain); err != nil || gi.UnchangedOK {
		t.Fatalf("v1.5 layer stream: %v %+v", err, gi)
	}

	sr := LayerStreamResult{Events: ev, State: []byte("s")}
	sr.Encode(&e)
	var gs LayerStreamResult
	if err := gs.Decode(e.Bytes()); err != nil || gs.Unchanged || len(gs.Events) != 1 {
		t.Fatalf("layer stream result: %v %+v", err, gs)
	}
	sr.Unchanged = true
	sr.Encode(&e)
	gs = LayerStreamResult{}
	if err := gs.Decode(e.Bytes()); err != nil || !gs.Unchanged || gs.Events != nil || string(gs.State) != "s" {
		t.Fatalf("unchanged layer stream result: %v %+v", err, gs)
	}
}
