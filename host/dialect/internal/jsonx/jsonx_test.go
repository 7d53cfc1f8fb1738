package jsonx

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

var validCases = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `1.5e-3`, `1E+2`, `true`, `false`, `null`, ` {"a" : [1, {"b":null}] } `,
	`"\u00e9\ud83c\udf89\n\"\\\/"`, `[1,2,3]`, `{"a":"\u0000"}`, "\"\xff\"",
}

var invalidCases = []string{
	``, ` `, `{`, `}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{a:1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"abc`,
	`"\x"`, `"\u12"`, "\"a\x01\"", `[1 2]`, `{"a":1 "b":2}`, `"a" "b"`, `[}`, `{]`, `NaN`, `'a'`,
}

func TestValidate(t *testing.T) {
	for _, c := range validCases {
		if err := Validate([]byte(c)); err != nil {
			t.Errorf("Validate(%q) = %v", c, err)
		}
	}
	for _, c := range invalidCases {
		if err := Validate([]byte(c)); err == nil {
			t.Errorf("Validate(%q) accepted", c)
		}
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if Valid([]byte(deep)) {
		t.Error("accepted nesting beyond MaxDepth")
	}
	ok := strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth)
	if !Valid([]byte(ok)) {
		t.Error("rejected nesting at MaxDepth")
	}
}

func TestObjectEach(t *testing.T) {
	var keys, vals []string
	err := ObjectEach([]byte(` { "a" : 1 , "b\"c":{"x":[1,"]"]}, "d":"}" } `), func(k, v []byte) error {
		keys = append(keys, string(k))
		vals = append(vals, string(v))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(keys, "|") != `a|b\"c|d` || strings.Join(vals, "|") != `1|{"x":[1,"]"]}|"}"` {
		t.Errorf("keys %q vals %q", keys, vals)
	}
	if KeyString([]byte(`b\"c`)) != `b"c` || !KeyIs([]byte(`\u0061`), "a") {
		t.Error("key decoding")
	}
	var elems []string
	_ = ArrayEach([]byte(`[ "a\\", {"b":[]} ,3 ]`), func(i int, v []byte) error {
		elems = append(elems, string(v))
		return nil
	})
	if strings.Join(elems, "|") != `"a\\"|{"b":[]}|3` {
		t.Errorf("elems %q", elems)
	}
}

func TestUnquote(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`:                "plain",
		`"a\"b\\c\/d\b\f\n\r\t"`: "a\"b\\c/d\b\f\n\r\t",
		`"\u00e9\ud83c\udf89"`:   "é🎉",
		`"\ud83c"`:               "\uFFFD",
		`"\udf89x"`:              "\uFFFDx",
		`"\ud83c\u0041"`:         "\uFFFDA",
	} {
		got, err := Unquote([]byte(in))
		if err != nil || got != want {
			t.Errorf("Unquote(%s) = %q, %v; want %q", in, got, err, want)
		}
		var std string
		_ = json.Unmarshal([]byte(in), &std)
		if std != got {
			t.Errorf("Unquote(%s) = %q, encoding/json says %q", in, got, std)
		}
	}
}

func TestAppendString(t *testing.T) {
	for in, want := range map[string]string{
		"plain":          `"plain"`,
		"q\"b\\":         `"q\"b\\"`,
		"\n\r\t\b\f\x01": `"\n\r\t\b\f\u0001"`,
		"</script>&":     `"</script>&"`,
		"\u2028\u2029é":  `"\u2028\u2029é"`,
		"bad\xffutf8":    `"bad\ufffdutf8"`,
	} {
		if got := string(AppendString(nil, in)); got != want {
			t.Errorf("AppendString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for f, want := range map[float64]string{0: "0", 1: "1", 0.7: "0.7", 1e21: "1e+21", 1e-7: "1e-7", -2.5: "-2.5", 123456789: "123456789"} {
		got, err := AppendFloat(nil, f)
		std, _ := json.Marshal(f)
		if err != nil || string(got) != want || string(got) != string(std) {
			t.Errorf("AppendFloat(%v) = %s (encoding/json %s), want %s", f, got, std, want)
		}
	}
}

func TestAppendCompact(t *testing.T) {
	in := "{\n  \"a b\": [1, 2],\n\t\"c\": \"x\\\" y\" }"
	if got := string(AppendCompact(nil, []byte(in))); got != `{"a b":[1,2],"c":"x\" y"}` {
		t.Errorf("got %s", got)
	}
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"5": 5, "-3": -3, "1e3": 1000, "2.0": 2} {
		if got, err := ParseInt([]byte(in)); err != nil || got != want {
			t.Errorf("ParseInt(%s) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"1.5", `"1"`, "1e300", "99999999999999999999"} {
		if _, err := ParseInt([]byte(in)); err == nil {
			t.Errorf("ParseInt(%s) accepted", in)
		}
	}
}

// FuzzValidate checks the validator against encoding/json, and that the
// walkers never panic.
func FuzzValidate(f *testing.F) {
	for _, c := range append(validCases, invalidCases...) {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		mine := Valid(b)
		std := json.Valid(b)
		if mine != std && !(std && strings.Count(string(b), "[")+strings.Count(string(b), "{") > MaxDepth) {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, mine, std)
		}
		// strict: a subset of valid documents, exactly the valid UTF-8 ones
		// but for duplicated keys
		if err := ValidateStrict(b); err == nil && (!mine || !utf8.Valid(b)) {
			t.Fatalf("ValidateStrict(%q) accepted what Valid (%v) or UTF-8 refuses", b, mine)
		} else if err != nil && mine && utf8.Valid(b) && !errors.As(err, new(*DuplicateKeyError)) {
			t.Fatalf("ValidateStrict(%q) refused valid UTF-8 JSON: %v", b, err)
		}
		// walkers on arbitrary input: no panic
		_ = ObjectEach(b, func(k, v []byte) error { _, _ = Unquote(v); return nil })
		_ = ArrayEach(b, func(i int, v []byte) error { return nil })
		_, _ = Skip(b, 0)
		_ = AppendCompact(nil, b)
	})
}

// FuzzString checks AppendString and Unquote against encoding/json.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "a", "\"\\\n", "\u2028", "\xff", "é🎉", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		enc := AppendString(nil, s)
		if !json.Valid(enc) {
			t.Fatalf("AppendString(%q) = %s is not valid JSON", s, enc)
		}
		var std string
		if err := json.Unmarshal(enc, &std); err != nil {
			t.Fatal(err)
		}
		got, err := Unquote(enc)
		if err != nil || got != std {
			t.Fatalf("Unquote(%s) = %q, %v; encoding/json %q", enc, got, err, std)
		}
		if utf8.ValidString(s) && got != s {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
	})
}

// TestValidateStrict: a request body must mean one thing — invalid UTF-8 and
// a key given twice (at any depth, escaped or not) are refused, naming the
// key; Validate stays lenient for upstream responses.
func TestValidateStrict(t *testing.T) {
	bad := []struct{ in, want string }{
		{"{\"a\":\"x\xffy\"}", "invalid UTF-8"},
		{"{\"a\":\"\xc3\"}", "invalid UTF-8"},
		{"{\"k\xff\":1}", "invalid UTF-8"},
		{`{"messages":[1],"messages":[2]}`, `duplicate key "messages"`},
		{`{"a":{"b":1,"c":{"d":1},"b":2}}`, `duplicate key "b"`},
		{`{"a":[{"x":1,"\u0078":2}]}`, `duplicate key "x"`},
	}
	for _, c := range bad {
		err := ValidateStrict([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrSyntax) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
		if Validate([]byte(c.in)) != nil {
			t.Errorf("%q: lenient Validate refused it", c.in)
		}
	}
	good := []string{
		`{"a":{"b":1},"b":{"a":1,"b":[{"a":1},{"a":2}]}}`, // same keys in different objects
		"{\"t\":\"naïve ☕ 🚀\"}",
		`{"a":"\ud800"}`, // an escaped lone surrogate is valid JSON (it decodes to U+FFFD)
	}
	for _, g := range good {
		if err := ValidateStrict([]byte(g)); err != nil {
			t.Errorf("%q: %v", g, err)
		}
	}
}
