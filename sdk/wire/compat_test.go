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
