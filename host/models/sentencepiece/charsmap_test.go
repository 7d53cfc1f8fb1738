package sentencepiece

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// buildCharsmap compiles rules (source sequence → replacement) into
// SentencePiece's precompiled_charsmap layout: a Darts-clone double array
// over the sources' bytes followed by the NUL-terminated replacements. It is
// the test-side inverse of parseCharsmap, used to make the fixture's map.
// Each node gets its own base (Darts-clone's rule: a shared base would let
// one node's search land on another node's child), chosen as the smallest
// whose child slots are all free; a node that ends a key also owns slot
// base^0, which holds the leaf value (the replacement's offset, bit 31 set).
func buildCharsmap(tb testing.TB, rules map[string]string) []byte {
	tb.Helper()
	type node struct {
		kids  map[byte]*node
		leaf  bool
		value uint32
	}
	newNode := func() *node { return &node{kids: map[byte]*node{}} }
	root := newNode()
	keys := make([]string, 0, len(rules))
	for k := range rules {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var blob []byte
	for _, k := range keys {
		if k == "" || strings.IndexByte(k, 0) >= 0 || strings.IndexByte(rules[k], 0) >= 0 {
			tb.Fatalf("rule %q → %q cannot be stored", k, rules[k])
		}
		n := root
		for i := 0; i < len(k); i++ {
			c := n.kids[k[i]]
			if c == nil {
				c = newNode()
				n.kids[k[i]] = c
			}
			n = c
		}
		n.leaf, n.value = true, uint32(len(blob))
		blob = append(append(blob, rules[k]...), 0)
	}

	units := []uint32{0}
	used := []bool{true}
	bases := map[int]bool{}
	grow := func(i int) {
		for len(units) <= i {
			units = append(units, 0)
			used = append(used, false)
		}
	}
	var place func(n *node, pos int)
	place = func(n *node, pos int) {
		var labels []int
		if n.leaf {
			labels = append(labels, 0)
		}
		for c := range n.kids {
			labels = append(labels, int(c))
		}
		slices.Sort(labels)
		base := 1
		for ; ; base++ {
			if bases[base] {
				continue
			}
			free := true
			for _, l := range labels {
				if i := base ^ l; i < len(used) && used[i] {
					free = false
					break
				}
			}
			if free {
				break
			}
		}
		bases[base] = true
		off := pos ^ base
		if off >= 1<<21 {
			tb.Fatalf("offset %d needs Darts' extended encoding, which the builder does not do", off)
		}
		units[pos] |= uint32(off) << 10
		for _, l := range labels {
			grow(base ^ l)
			used[base^l] = true
		}
		if n.leaf {
			units[base] = n.value | 1<<31
		}
		for _, l := range labels {
			if l == 0 {
				continue
			}
			kid := n.kids[byte(l)]
			u := uint32(l)
			if kid.leaf {
				u |= 1 << 8
			}
			units[base^l] = u
		}
		for _, l := range labels {
			if l != 0 {
				place(n.kids[byte(l)], base^l)
			}
		}
	}
	place(root, 0)

	out := binary.LittleEndian.AppendUint32(nil, uint32(4*len(units)))
	for _, u := range units {
		out = binary.LittleEndian.AppendUint32(out, u)
	}
	return append(out, blob...)
}

// fixtureRules is the character map in testdata/unigram.json. A small
// excerpt in the spirit of nmt_nfkc: fullwidth letters, compatibility
// ligatures, spaces and control characters, and one composition. The two
// keys "ｅ" and "ｅ\u0301" exist so that the longest-match rule is visible.
var fixtureRules = map[string]string{
	"ｔ": "t", "ｈ": "h", "ｅ": "e", "ａ": "a", "ｆ": "f",
	"ｅ\u0301": "é",
	"e\u0301": "é",
	"ﬁ":       "fi",
	"\u00a0":  " ",
	"\u3000":  " ",
	"\t":      " ",
	"\n":      " ",
	"\r":      " ",
	"\u200b":  "",
	"①":       "1",
}

// TestFixtureCharsmapIsBuiltFromRules pins where the fixture's opaque
// base64 map comes from: it must equal buildCharsmap(fixtureRules).
func TestFixtureCharsmapIsBuiltFromRules(t *testing.T) {
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Normalizer struct {
			Normalizers []struct {
				Type     string `json:"type"`
				Charsmap string `json:"precompiled_charsmap"`
			} `json:"normalizers"`
		} `json:"normalizer"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	want := base64.StdEncoding.EncodeToString(buildCharsmap(t, fixtureRules))
	for _, n := range f.Normalizer.Normalizers {
		if n.Type == "Precompiled" {
			if n.Charsmap != want {
				t.Fatalf("fixture charsmap differs from buildCharsmap(fixtureRules); regenerate it:\n%s", want)
			}
			return
		}
	}
	t.Fatal("fixture has no Precompiled normalizer")
}

func TestCharsmapLongestMatch(t *testing.T) {
	cm, err := parseCharsmap(buildCharsmap(t, fixtureRules))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"ｔｈｅ", "the"},
		{"ｅ\u0301", "é"},       // the longer key wins over "ｅ" → "e"
		{"ｅ\u0300", "e\u0300"}, // only "ｅ" matches; the accent is copied
		{"cafe\u0301", "café"},
		{"ﬁne", "fine"},
		{"a\u00a0b\u3000c\td\ne\rf", "a b c d e f"},
		{"zero\u200bwidth", "zerowidth"},
		{"①", "1"},
		{"plain ascii", "plain ascii"},
		{"bad\xffbyte", "bad\ufffdbyte"},
		{"", ""},
	} {
		if got := cm.normalize(c.in); got != c.want {
			t.Errorf("normalize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCharsmapMalformed(t *testing.T) {
	good := buildCharsmap(t, fixtureRules)
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short header":   {1, 0},
		"zero trie":      {0, 0, 0, 0},
		"size not x4":    {5, 0, 0, 0, 1, 2, 3, 4, 5},
		"size past end":  binary.LittleEndian.AppendUint32(nil, 4000),
		"truncated trie": good[:len(good)/2],
	} {
		if name == "truncated trie" {
			// Cutting the blob keeps the header's size, which now
			// overruns the data unless the cut fell in the strings.
			size := binary.LittleEndian.Uint32(good)
			if int(size)+4 <= len(b) {
				continue
			}
		}
		if _, err := parseCharsmap(b); err == nil {
			t.Errorf("%s: parseCharsmap accepted it", name)
		}
	}
	// A map whose units point anywhere must not panic when searched.
	junk := binary.LittleEndian.AppendUint32(nil, 16)
	for _, u := range []uint32{0xFFFFFFFF, 0x7FFFFFFF, 1<<8 | 'a' | 0xFFFF<<10, 0x12345678} {
		junk = binary.LittleEndian.AppendUint32(junk, u)
	}
	cm, err := parseCharsmap(append(junk, "x\x00"...))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"a", "abc", "\xff\xfe", "ｔ", strings.Repeat("a", 100)} {
		_ = cm.normalize(s)
	}
}
