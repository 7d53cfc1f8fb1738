package jsonscan

import (
	"reflect"
	"testing"
)

func TestEachMember(t *testing.T) {
	obj := []byte(` { "a" : 1, "b\"q":{"x":[1,"}",{"y":null}]}, "c":"s,}" ,"d":true } `)
	var keys, vals []string
	EachMember(obj, func(k, v []byte) {
		keys = append(keys, string(k))
		vals = append(vals, string(v))
	})
	if !reflect.DeepEqual(keys, []string{"a", `b\"q`, "c", "d"}) {
		t.Fatalf("keys = %q", keys)
	}
	if !reflect.DeepEqual(vals, []string{"1", `{"x":[1,"}",{"y":null}]}`, `"s,}"`, "true"}) {
		t.Fatalf("vals = %q", vals)
	}
	if !HasMember(obj, "c") || HasMember(obj, "x") {
		t.Fatal("HasMember")
	}
	for _, bad := range []string{``, `[]`, `{"a"`, `{"a":"unterminated}`, `{"a":{"b":1}`} {
		n := 0
		EachMember([]byte(bad), func(_, _ []byte) { n++ })
		if n > 1 {
			t.Fatalf("%q: %d members from malformed input", bad, n)
		}
	}
}
