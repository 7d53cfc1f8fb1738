package respcache

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

// AppendEntryFrom copies a decoded answer's span of the call's input and
// gives AppendEntry's bytes; an answer that is not (or no longer) what the
// input holds is encoded.
func TestAppendEntryFromIsAppendEntry(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	str := func(n int) string { return strings.Repeat("é", r.IntN(n+1)/2) + strings.Repeat("x", r.IntN(n+1)) }
	var enc, scratch wire.Encoder
	spans := 0
	for i := range 500 {
		resp := wire.Response{ID: str(3), Model: str(20), StopReason: str(12), StopSeq: str(2),
			Usage: wire.Usage{InputTokens: r.Int64N(1 << uint(r.IntN(40))), OutputTokens: r.Int64N(300), CacheReadTokens: -r.Int64N(3), CacheWriteTokens: r.Int64N(1 << 20)}}
		for range r.IntN(4) {
			resp.Content = append(resp.Content, wire.Block{Type: wire.BlockType(r.IntN(4)), Text: str(300), ID: str(5), Data: []byte(str(40))})
		}
		x := wire.LayerResponse{Meta: wire.Meta{RequestID: str(10), Annotations: []wire.KV{{Key: "hashcache.key", Value: str(64)}}}, Response: resp}
		x.Encode(&enc)
		in := append([]byte("head"), enc.Bytes()...) // the response is not at the input's start
		var got wire.LayerResponse
		if err := got.Decode(in[4:]); err != nil {
			t.Fatal(err)
		}
		d := &got.Response
		switch i % 6 {
		case 1:
			d.Usage.OutputTokens++ // edited after decoding: encoded
		case 2:
			d.StopSeq = strings.Clone(d.StopSeq) + "z"
		case 3:
			in = append([]byte(nil), in...) // not the input it was decoded from
		case 5:
			if len(d.Content) > 0 { // a block replaced, its neighbours still views
				d.Content = append([]wire.Block(nil), d.Content...)
				d.Content[0].Text = strings.Clone(d.Content[0].Text) + "."
			} else {
				d.Model += "-"
			}
		}
		want := AppendEntry([]byte("pre"), &scratch, d, int64(i))
		if b := AppendEntryFrom([]byte("pre"), in, &scratch, d, int64(i)); string(b) != string(want) {
			t.Fatalf("response %d (%+v): AppendEntryFrom differs from AppendEntry", i, resp)
		}
		span := responseSpan(in, d)
		if span != nil {
			spans++
		}
		if fresh := i%6 == 0 || i%6 == 4; span == nil && fresh && resp.ID != "" {
			t.Fatalf("response %d: decoded from the input, but no span found", i)
		} else if span != nil && !fresh {
			t.Fatalf("response %d: a span for a response that is not the input's", i)
		}
	}
	if spans < 100 {
		t.Fatalf("only %d of 500 responses copied as a span", spans)
	}
}

// A response whose strings are views of an input in another layout (a
// stream's collected state, as the stream phase of hosts before v1.6
// hands it back) is not taken for a span: it is encoded.
func TestAppendEntryFromOtherLayout(t *testing.T) {
	st := StartStream([]byte("key-1"), time.Minute)
	st, ok := Collect(st, events("a streamed answer long enough to keep"), 1<<20)
	if !ok {
		t.Fatal("not collected")
	}
	_, _, resp, ok := Finish(st)
	if !ok {
		t.Fatal("not finished")
	}
	var enc wire.Encoder
	if responseSpan(st, &resp) != nil {
		t.Fatal("a span found in a stream state")
	}
	if got, want := AppendEntryFrom(nil, st, &enc, &resp, 7), AppendEntry(nil, &enc, &resp, 7); string(got) != string(want) {
		t.Fatal("AppendEntryFrom differs from AppendEntry")
	}
}
