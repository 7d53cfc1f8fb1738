//go:build !wasip1

package main

import (
	"encoding/json"
	"testing"

	"github.com/bardoinference/bardo/sdk/wire"
)

func fuzzMapping() *mapping {
	m := &mapping{}
	m.add("[EMAIL_1]", "a.b@example.com")
	m.add("[PHONE_12]", `+1 "quoted" \ back`+"\n\t\x01")
	m.add("[PRIVATE_KEY_2]", "x]y[EMAIL_1]z")
	m.add("[E_1]", "é✓")
	return m
}

// streamRestore feeds text through the stream restorer in pieces cut where
// cuts says (each byte: a piece length), round-tripping the state through
// its encoding between batches as the host does.
func streamRestore(t *testing.T, m *mapping, s string, cuts []byte, kind wire.DeltaKind) string {
	t.Helper()
	st := streamState{loaded: true, sealed: []byte{1}, maxLen: m.maxLen}
	mapOf := func() *mapping { return m }
	var out []byte
	emit := func(evs []wire.Event) {
		for _, e := range evs {
			if e.Type == wire.EventDelta {
				if e.Index != 3 || e.Delta != kind {
					t.Fatalf("delta re-labelled: %+v", e)
				}
				out = append(out, e.Text...)
			}
		}
	}
	for len(s) > 0 {
		n := len(s)
		if len(cuts) > 0 {
			n = min(n, int(cuts[0]%16)+1)
			cuts = cuts[1:]
		}
		evs, _ := st.process([]wire.Event{{Type: wire.EventDelta, Index: 3, Delta: kind, Text: s[:n]}}, false, mapOf)
		emit(evs)
		s = s[n:]
		var err error
		if st, err = decodeState(st.encode()); err != nil {
			t.Fatal(err)
		}
	}
	evs, _ := st.process([]wire.Event{{Type: wire.EventBlockStop, Index: 3}}, true, mapOf)
	emit(evs)
	return string(out)
}

// FuzzRestore: restoring a stream cut anywhere gives exactly what restoring
// the whole text gives, in text and in JSON (tool input) context.
func FuzzRestore(f *testing.F) {
	f.Add("Hello [EMAIL_1], call [PHONE_12] now", []byte{3, 1, 1, 7})
	f.Add("[[EMAIL_1][EMAIL_1]][PRIVATE_KEY_2][E_1", []byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add(`{"to":"[EMAIL_1]","x":"[PHONE_12]"}`, []byte{8, 8, 8, 8})
	f.Add("[EMAIL_10] [EMAIL_1 [EMAIL_1] [email_1] [PHONE_1] [PHONE_12", []byte{0, 5, 2})
	f.Add("no placeholders here at all", []byte{})
	m := fuzzMapping()
	f.Fuzz(func(t *testing.T, s string, cuts []byte) {
		for _, kind := range []wire.DeltaKind{wire.DeltaText, wire.DeltaInputJSON} {
			inJSON := kind == wire.DeltaInputJSON
			want, _ := restore(nil, s, m, inJSON)
			if got := streamRestore(t, m, s, cuts, kind); got != string(want) {
				t.Fatalf("kind %d: stream restore %q, whole restore %q", kind, got, want)
			}
		}
	})
}

var fuzzMasker *masker

func maskerForFuzz(t *testing.T) *masker {
	if fuzzMasker == nil {
		initWordlist()
		if err := configure([]byte(`{"actions": {"eth_private_key": "mask", "mnemonic": "mask"}}`)); err != nil {
			t.Fatal(err)
		}
		fuzzMasker = &masker{det: work.det}
	}
	fuzzMasker.reset()
	return fuzzMasker
}

// FuzzMask: mask then restore is the identity, for plain text and for the
// same text as a JSON string inside tool-call input (which must stay valid
// JSON).
func FuzzMask(f *testing.F) {
	f.Add("mail alice@example.com or +44 20 7946 0958, card 4111 1111 1111 1111, [EMAIL_1] literal")
	f.Add("IBAN DE89370400440532013000 ip 10.0.0.1 fe80::1 ssn 123-45-6789 (415) 555-2671")
	f.Add("key 0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318 seed " + mnemonic)
	f.Add("a@b.co a@b.co [EMAIL_2] \"q\\u00e9\" \n\t <tag> & x@y.org")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		k := maskerForFuzz(t)
		req := wire.Request{Messages: []wire.Message{userMsg(text(s))}}
		k.collect(&req)
		k.detect()
		k.rewrite()
		masked := req.Messages[0].Content[0].Text
		if k.redacted != 0 || len(k.blocked) != 0 {
			t.Fatalf("redacted %d blocked %v with every kind on mask", k.redacted, k.blocked)
		}
		if got, _ := restore(nil, masked, &k.m, false); string(got) != s {
			t.Fatalf("round trip:\n in  %q\n mid %q\n out %q", s, masked, got)
		}

		js, _ := json.Marshal(map[string]string{"v": s})
		var orig map[string]string
		if err := json.Unmarshal(js, &orig); err != nil {
			t.Fatal(err)
		}
		k = maskerForFuzz(t)
		req = wire.Request{Messages: []wire.Message{{Role: "assistant", Content: []wire.Block{{Type: wire.BlockToolUse, Data: js}}}}}
		k.collect(&req)
		k.detect()
		k.rewrite()
		data := req.Messages[0].Content[0].Data
		if !json.Valid(data) {
			t.Fatalf("masked JSON invalid: %s", data)
		}
		back, _ := restore(nil, string(data), &k.m, true)
		var got map[string]string
		if err := json.Unmarshal(back, &got); err != nil || got["v"] != orig["v"] {
			t.Fatalf("JSON round trip:\n in  %s\n mid %s\n out %s (%v)", js, data, back, err)
		}
	})
}
