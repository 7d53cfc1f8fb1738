package jsonscan

import (
	"reflect"
	"strings"
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

// skipStringBytewise is the byte-at-a-time definition SkipString must agree
// with.
func skipStringBytewise(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

func FuzzSkipString(f *testing.F) {
	for _, s := range []string{`"a"`, `"a\"b"`, `"a\\"b"`, `"\\\""x"`, `"abc\`, `"`, `""`, `"x\\\\"`, `"\u0022"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		if got, want := SkipString(b, 0), skipStringBytewise(b, 0); got != want {
			t.Fatalf("SkipString(%q) = %d, want %d", b, got, want)
		}
	})
}

// A 4 KB prose string, and one with an escaped quote every 16 bytes, each
// skipped both ways.
func BenchmarkSkipString4K(b *testing.B) {
	for _, unit := range []string{`lorem ipsum dolor sit amet, consectetur `, `lorem ipsum \"dolor\" sit amet `} {
		s := []byte(`"` + strings.Repeat(unit, 4096/len(unit)) + `"`)
		name := "prose"
		if strings.Contains(unit, `\"`) {
			name = "escaped-quotes"
		}
		for _, fn := range []struct {
			name string
			skip func([]byte, int) int
		}{{"indexbyte", SkipString}, {"bytewise", skipStringBytewise}} {
			b.Run(name+"/"+fn.name, func(b *testing.B) {
				b.SetBytes(int64(len(s)))
				for b.Loop() {
					if fn.skip(s, 0) != len(s) {
						b.Fatal("wrong end")
					}
				}
			})
		}
	}
}
