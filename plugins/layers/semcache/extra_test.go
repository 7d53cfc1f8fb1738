package main

import (
	"bytes"
	"testing"
)

// TestExtraSameBytes: extra's jsonscan walk hashes exactly the bytes the
// encoding/json decode (extraDecoded, what it replaced) does, so no stored
// entry's key changes.
func TestExtraSameBytes(t *testing.T) {
	for _, raw := range []string{
		``, `{}`, ` { } `, `null`, `[1,2]`, `"s"`,
		`{"metadata":{"user_id":"u1"},"thinking":{"type":"enabled","budget_tokens":2048}}`,
		`{"z":1,"a":[1, 2 ,3],"m":"x"}`,
		"{ \"b\" :\t{\"c\": [ {} ]} ,\n \"a\": -1.5e3 , \"n\": null, \"t\": true }",
		`{"a":1,"a":2}`, `{"a":1,"b":0,"a":{"x":"y"}}`,
		`{"metadata":1,"metadata":2,"user":"u"}`,
		`{"metad\u0061ta":{"x":1},"k":"v"}`,
		`{"k\"q":1,"k":2}`,
		`{"été":1,"e":2}`,
		`{"s":"a \"quoted\" \\ value","r":"\u00e9"}`,
	} {
		var fast, ref hasher
		fast.extra([]byte(raw))
		ref.extraDecoded([]byte(raw))
		if !bytes.Equal(fast.b, ref.b) {
			t.Errorf("%s:\n got %q\nwant %q", raw, fast.b, ref.b)
		}
	}
}
