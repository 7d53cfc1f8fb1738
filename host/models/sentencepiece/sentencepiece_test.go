package sentencepiece

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// fixturePath is a hand-written DeBERTa-shaped tokenizer.json: 41 pieces
// with made-up scores, the normalizer Sequence [Strip, Precompiled (built
// from fixtureRules), Replace " {2,}" → " "], a Metaspace pre-tokenizer
// inside a Sequence, "[CLS] $A [SEP]", and the added tokens [PAD]=0 [CLS]=1
// [SEP]=2 [UNK]=3 [MASK]=41 (one past the vocabulary, as DeBERTa-v3's
// [MASK]=128000 is). The lowest score is -13 (▁understand), so an unknown
// character costs -13 - 10 = -23.
const fixturePath = "testdata/unigram.json"

// Fixture ids used below.
const (
	idPAD, idCLS, idSEP, idUNK = 0, 1, 2, 3
	idMeta                     = 4  // ▁      -2.0
	idThe                      = 5  // ▁the   -3.0
	idA                        = 6  // ▁a     -3.5
	idS                        = 7  // s      -4.0
	idUnder                    = 9  // ▁under -6.0
	idStand                    = 10 // stand  -6.5
	idIng                      = 12 // ing    -5.5
	idGo                       = 13 // ▁go    -5.0
	idE                        = 17 // e      -4.2
	idTh                       = 18 // ▁th    -6.0
	idR                        = 19 // r      -4.8
	idLowerA                   = 20 // a      -4.3
	idN                        = 21 // n      -4.4
	idI                        = 24 // i      -4.9
	idDot                      = 27 // .      -3.0
	idCa                       = 29 // ▁ca    -6.0
	idF                        = 30 // f      -5.3
	idEAcute                   = 31 // é      -5.0
	idFi                       = 32 // fi     -5.6
	idHQ                       = 40 // hq     -12.8
	idMASK                     = 41
)

func loadFixture(tb testing.TB) *Tokenizer {
	tb.Helper()
	t, err := Load(fixturePath)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// fixtureJSON returns the fixture as a generic document for tests that
// change one field.
func fixtureJSON(tb testing.TB) map[string]any {
	tb.Helper()
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		tb.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		tb.Fatal(err)
	}
	return doc
}

func parseDoc(tb testing.TB, doc map[string]any) (*Tokenizer, error) {
	tb.Helper()
	data, err := json.Marshal(doc)
	if err != nil {
		tb.Fatal(err)
	}
	return Parse(data)
}

func mustParseDoc(tb testing.TB, doc map[string]any) *Tokenizer {
	tb.Helper()
	t, err := parseDoc(tb, doc)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

func TestLoadFixture(t *testing.T) {
	tok := loadFixture(t)
	if tok.VocabSize() != 42 || tok.PadID() != idPAD || tok.UnkID() != idUNK {
		t.Fatalf("VocabSize %d PadID %d UnkID %d, want 42 0 3", tok.VocabSize(), tok.PadID(), tok.UnkID())
	}
	if id, ok := tok.ID("▁under"); !ok || id != idUnder || tok.Piece(idUnder) != "▁under" {
		t.Fatalf("ID(▁under) = %d %v, Piece(%d) = %q", id, ok, idUnder, tok.Piece(idUnder))
	}
	if _, ok := tok.ID("▁unde"); ok {
		t.Fatal("ID found a prefix that is not a piece")
	}
	if tok.Piece(idMASK) != "" || tok.Piece(-1) != "" {
		t.Fatal("Piece outside model.vocab should be empty")
	}
}

// TestViterbi checks segmentations derived by hand from the fixture's
// scores (sum of the pieces' log-probabilities; the highest sum wins).
func TestViterbi(t *testing.T) {
	tok := loadFixture(t)
	cases := []struct {
		text   string
		pieces []string
		ids    []int64
		why    string
	}{
		{"the", []string{"▁the"}, []int64{idThe},
			"▁the -3.0 beats ▁th+e -10.2 and ▁+t+h+e -15.3"},
		{"understand", []string{"▁under", "stand"}, []int64{idUnder, idStand},
			"▁under+stand -12.5 beats the single piece ▁understand -13.0 and ▁un+d+e+r+stand -25.2: not greedy longest-match"},
		{"going", []string{"▁go", "ing"}, []int64{idGo, idIng},
			"▁go+ing -10.5 beats ▁going -12.0 and ▁go+i+n+g -19.5"},
		{"this", []string{"▁th", "i", "s"}, []int64{idTh, idI, idS},
			"▁th+i+s -14.9 beats ▁+t+h+i+s -20.0 (▁the does not match)"},
		{"a", []string{"▁a"}, []int64{idA},
			"▁a -3.5 beats ▁+a -6.3"},
		{"fine", []string{"▁", "fi", "n", "e"}, []int64{idMeta, idFi, idN, idE},
			"no piece starts ▁f; fi -5.6 beats f+i -10.2"},
		{"the zebra.", []string{"▁the", "▁", "z", "e", "b", "r", "a", "."},
			[]int64{idThe, idMeta, idUNK, idE, idUNK, idR, idLowerA, idDot},
			"z and b have no piece: each is an unknown node (-23), kept apart because e lies between them"},
		{"axxb", []string{"▁a", "xxb"}, []int64{idA, idUNK},
			"x, x, b are consecutive unknowns: fused into one [UNK] as SentencePiece does"},
		{"xyz", []string{"▁", "xyz"}, []int64{idMeta, idUNK},
			"the prefixed ▁ is a piece; the unknown run after it is one [UNK]"},
		{"thq", []string{"▁", "t", "hq"}, []int64{idMeta, 15, idHQ},
			"q has no piece of its own: ▁+t+hq -19.3 beats ▁th+[UNK] -6-23 = -29; " +
				"without the -10 unknown penalty (unknown = -13) ▁th+[UNK] -19.0 would win"},
	}
	for _, c := range cases {
		if got := tok.Tokenize(c.text); !reflect.DeepEqual(got, c.pieces) {
			t.Errorf("Tokenize(%q) = %q, want %q (%s)", c.text, got, c.pieces, c.why)
		}
		if got := tok.IDs(c.text); !reflect.DeepEqual(got, c.ids) {
			t.Errorf("IDs(%q) = %v, want %v (%s)", c.text, got, c.ids, c.why)
		}
	}
}

// TestNormalizationPipeline checks the Strip → Precompiled → Replace
// normalizer and the Metaspace prefix on the fixture.
func TestNormalizationPipeline(t *testing.T) {
	tok := loadFixture(t)
	cases := []struct {
		text string
		norm string
		ids  []int64
	}{
		// Strip removes the ends, Replace collapses the inner run, and
		// Metaspace turns "the a" into ▁the ▁a.
		{"  the   a  ", "the a", []int64{idThe, idA}},
		// Fullwidth letters through the character map.
		{"ｔｈｅ", "the", []int64{idThe}},
		// Strip takes the trailing tab, newline and carriage return (White
		// Space); the map turns NBSP and the ideographic space into spaces,
		// which Replace then collapses.
		{"the\u00a0\u3000a\t\n\r", "the a", []int64{idThe, idA}},
		// A zero-width space is deleted, joining the word.
		{"th\u200be", "the", []int64{idThe}},
		// e + combining acute composes to é, which is a piece; the
		// decomposed and precomposed spellings tokenize alike:
		// ▁ca+f+é -16.3 (c alone has no piece).
		{"cafe\u0301", "café", []int64{idCa, idF, idEAcute}},
		{"café", "café", []int64{idCa, idF, idEAcute}},
		// The ligature ﬁ expands to fi.
		{"ﬁne", "fine", []int64{idMeta, idFi, idN, idE}},
		// An invalid byte becomes U+FFFD, an unknown character.
		{"the \xff", "the \ufffd", []int64{idThe, idMeta, idUNK}},
		{"", "", nil},
		{"   ", "", nil},
	}
	for _, c := range cases {
		if got := tok.Normalize(c.text); got != c.norm {
			t.Errorf("Normalize(%q) = %q, want %q", c.text, got, c.norm)
		}
		if got := tok.IDs(c.text); !slices.Equal(got, c.ids) {
			t.Errorf("IDs(%q) = %v (%q), want %v", c.text, got, tok.Tokenize(c.text), c.ids)
		}
	}
}

func TestSpecialTokensAndTemplate(t *testing.T) {
	tok := loadFixture(t)
	e := tok.Encode("the [SEP] a", 0)
	want := []int64{idCLS, idThe, idSEP, idA, idSEP}
	if !reflect.DeepEqual(e.IDs, want) {
		t.Fatalf("Encode ids %v, want %v", e.IDs, want)
	}
	if !reflect.DeepEqual(e.AttentionMask, []int64{1, 1, 1, 1, 1}) || !reflect.DeepEqual(e.TypeIDs, []int64{0, 0, 0, 0, 0}) {
		t.Fatalf("mask %v types %v", e.AttentionMask, e.TypeIDs)
	}
	// Added tokens are matched in the raw text, before normalization,
	// including one whose id is past model.vocab.
	if got := tok.IDs("[MASK]the[CLS]"); !reflect.DeepEqual(got, []int64{idMASK, idThe, idCLS}) {
		t.Fatalf("IDs = %v", got)
	}
	// Without added tokens, "[SEP]" in the text is an ordinary vocabulary
	// piece (HuggingFace's Unigram trie holds every piece, specials
	// included): Viterbi picks it (score 0) after the prefixed ▁.
	doc := fixtureJSON(t)
	doc["added_tokens"] = []any{}
	if got := mustParseDoc(t, doc).IDs("[SEP]"); !reflect.DeepEqual(got, []int64{idMeta, idSEP}) {
		t.Fatalf("[SEP] as a piece: %v", got)
	}
	if got := tok.Encode("", 0).IDs; !reflect.DeepEqual(got, []int64{idCLS, idSEP}) {
		t.Fatalf("empty text: %v", got)
	}
}

func TestTruncation(t *testing.T) {
	tok := loadFixture(t)
	text := "the understand going the"
	full := tok.Encode(text, 0).IDs
	wantFull := []int64{idCLS, idThe, idUnder, idStand, idGo, idIng, idThe, idSEP}
	if !reflect.DeepEqual(full, wantFull) {
		t.Fatalf("untruncated %v, want %v", full, wantFull)
	}
	for maxLen := 1; maxLen <= len(full)+2; maxLen++ {
		e := tok.Encode(text, maxLen)
		n := min(max(maxLen, 2), len(full))
		if e.Len() != n || len(e.AttentionMask) != n || len(e.TypeIDs) != n {
			t.Fatalf("maxLen %d: lengths %d/%d/%d, want %d", maxLen, e.Len(), len(e.AttentionMask), len(e.TypeIDs), n)
		}
		want := append(append([]int64{}, full[:n-1]...), idSEP)
		if !reflect.DeepEqual(e.IDs, want) {
			t.Fatalf("maxLen %d: %v, want %v", maxLen, e.IDs, want)
		}
	}
	// A truncation point inside a word keeps that word's first pieces.
	if got := tok.Encode("understand", 3).IDs; !reflect.DeepEqual(got, []int64{idCLS, idUnder, idSEP}) {
		t.Fatalf("mid-word truncation: %v", got)
	}
}

func TestMetaspaceSchemes(t *testing.T) {
	set := func(tb testing.TB, fields map[string]any) *Tokenizer {
		doc := fixtureJSON(tb)
		doc["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁"}
		for k, v := range fields {
			doc["pre_tokenizer"].(map[string]any)[k] = v
		}
		return mustParseDoc(tb, doc)
	}
	// "first": only the segment at the start of the text gets ▁, so the
	// "a" after [SEP] is the word-internal piece a (20), not ▁a (6).
	first := set(t, map[string]any{"prepend_scheme": "first"})
	if got := first.IDs("a [SEP] a"); !reflect.DeepEqual(got, []int64{idA, idSEP, idLowerA}) {
		t.Errorf("first: %v", got)
	}
	always := set(t, map[string]any{"prepend_scheme": "always"})
	if got := always.IDs("a [SEP] a"); !reflect.DeepEqual(got, []int64{idA, idSEP, idA}) {
		t.Errorf("always: %v", got)
	}
	never := set(t, map[string]any{"prepend_scheme": "never"})
	if got := never.IDs("a the"); !reflect.DeepEqual(got, []int64{idLowerA, idThe}) {
		t.Errorf("never: %v", got)
	}
	// Files from before prepend_scheme: add_prefix_space false = never.
	legacy := set(t, map[string]any{"add_prefix_space": false})
	if got := legacy.IDs("a the"); !reflect.DeepEqual(got, []int64{idLowerA, idThe}) {
		t.Errorf("add_prefix_space false: %v", got)
	}
	// split false: the whole text is one Viterbi word; "▁the▁a" still
	// segments as ▁the ▁a because no piece crosses a ▁.
	nosplit := set(t, map[string]any{"split": false})
	if got := nosplit.Tokenize("the a"); !reflect.DeepEqual(got, []string{"▁the", "▁a"}) {
		t.Errorf("split false: %q", got)
	}
	// Consecutive ▁ (no Replace normalizer here) split as "▁", "▁the".
	doc := fixtureJSON(t)
	doc["normalizer"] = nil
	raw := mustParseDoc(t, doc)
	if got := raw.Tokenize("a  the"); !reflect.DeepEqual(got, []string{"▁a", "▁", "▁the"}) {
		t.Errorf("double space: %q", got)
	}
}

func TestByteFallback(t *testing.T) {
	doc := fixtureJSON(t)
	model := doc["model"].(map[string]any)
	model["byte_fallback"] = true
	vocab := model["vocab"].([]any)
	for _, b := range "xyz" {
		vocab = append(vocab, []any{byteName(byte(b)), -20.0})
	}
	model["vocab"] = vocab
	tok := mustParseDoc(t, doc)
	// The fused unknown run "xyz" becomes its bytes' pieces.
	if got := tok.Tokenize("xyz"); !reflect.DeepEqual(got, []string{"▁", "<0x78>", "<0x79>", "<0x7A>"}) {
		t.Fatalf("byte fallback: %q", got)
	}
	// A run with a byte that has no piece stays one [UNK].
	if got := tok.IDs("xqz"); !reflect.DeepEqual(got, []int64{idMeta, idUNK}) {
		t.Fatalf("incomplete byte pieces: %v", got)
	}
	// A multi-byte character falls back byte by byte.
	for _, b := range []byte("ß") {
		vocab = append(vocab, []any{byteName(b), -20.0})
	}
	model["vocab"] = vocab
	tok = mustParseDoc(t, doc)
	if got := tok.Tokenize("ß"); !reflect.DeepEqual(got, []string{"▁", "<0xC3>", "<0x9F>"}) {
		t.Fatalf("multi-byte fallback: %q", got)
	}
	for _, id := range tok.IDs("xßz") {
		if id == idUNK {
			t.Fatal("byte fallback left an [UNK]")
		}
	}
}

func TestAddedTokenOptions(t *testing.T) {
	m := newMatcher([]addedToken{
		{ID: 7, Content: "<m>", LStrip: true},
		{ID: 8, Content: "<r>", RStrip: true},
		{ID: 9, Content: "w", SingleWord: true},
		{ID: 10, Content: "<mm>"},
		{ID: 11, Content: "<mmm>"},
	}, func(a addedToken) string { return a.Content })
	type p struct {
		S  string
		ID int64
	}
	split := func(s string) []p {
		var out []p
		for _, x := range m.split(nil, s, true) {
			out = append(out, p{x.s, x.id})
		}
		return out
	}
	for _, c := range []struct {
		in   string
		want []p
	}{
		{"a  <m> b", []p{{"a", -1}, {"  <m>", 7}, {" b", -1}}},
		{"a <r>  b", []p{{"a ", -1}, {"<r>  ", 8}, {"b", -1}}},
		{"a w b", []p{{"a ", -1}, {"w", 9}, {" b", -1}}},
		{"awb w", []p{{"awb ", -1}, {"w", 9}}},
		{"<mmm><mm>", []p{{"<mmm>", 11}, {"<mm>", 10}}},
		{"", nil},
	} {
		if got := split(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("split(%q) = %v, want %v", c.in, got, c.want)
		}
	}
}

func TestNormalizers(t *testing.T) {
	for _, c := range []struct {
		json, in, want string
	}{
		{`{"type":"Lowercase"}`, "ÀB İ", "àb i̇"},
		{`{"type":"Strip","strip_left":false,"strip_right":true}`, "  a  ", "  a"},
		{`{"type":"Replace","pattern":{"String":"''"},"content":"\""}`, "a''b", `a"b`},
		{`{"type":"Replace","pattern":{"Regex":"\\s+"},"content":"-"}`, "a \t b", "a-b"},
		{`{"type":"Prepend","prepend":"▁"}`, "a", "▁a"},
		{`{"type":"Prepend","prepend":"▁"}`, "", ""},
		{`{"type":"Nmt"}`, "a\x01b\tc\u200bd\ufeff", "ab c d "},
		{`{"type":"StripAccents"}`, "e\u0301a\u0300", "ea"},
		{`{"type":"Sequence","normalizers":[{"type":"Lowercase"},{"type":"Prepend","prepend":"x"}]}`, "AB", "xab"},
		{`{"type":"Precompiled","precompiled_charsmap":""}`, "ｔ", "ｔ"},
	} {
		n, err := parseNormalizer(json.RawMessage(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.json, err)
		}
		got := c.in
		if n != nil {
			got = n.normalize(c.in)
		}
		if got != c.want {
			t.Errorf("%s on %q = %q, want %q", c.json, c.in, got, c.want)
		}
	}
}

func TestCollapseSpacesMatchesRegexp(t *testing.T) {
	rx, err := newReplace(nil, ptr(" {2,}"), " ")
	if err != nil {
		t.Fatal(err)
	}
	slow := rx.(normReplace)
	if !slow.collapse {
		t.Fatal("\" {2,}\" did not take the fast path")
	}
	slow.collapse = false
	for _, s := range []string{"", " ", "  ", "a  b", "   a b  c    ", "\t  \u00a0  x", "no runs here", "x  "} {
		if got, want := collapseSpaces(s), slow.normalize(s); got != want {
			t.Errorf("collapseSpaces(%q) = %q, regexp gives %q", s, got, want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestPostProcessors(t *testing.T) {
	for _, c := range []struct {
		json   string
		want   []int64
		types  []int64
		vocabN int
	}{
		{`null`, []int64{idThe}, []int64{0}, 42},
		{`{"type":"BertProcessing","sep":["[SEP]",2],"cls":["[CLS]",1]}`, []int64{1, idThe, 2}, []int64{0, 0, 0}, 42},
		{`{"type":"RobertaProcessing","sep":["</s>",60],"cls":["<s>",50],"trim_offsets":true,"add_prefix_space":true}`, []int64{50, idThe, 60}, []int64{0, 0, 0}, 61},
		{`{"type":"Sequence","processors":[{"type":"ByteLevel"},{"type":"TemplateProcessing","single":[{"Sequence":{"id":"A","type_id":1}},{"SpecialToken":{"id":"</s>","type_id":1}}],"special_tokens":{"</s>":{"id":"</s>","ids":[2,45],"tokens":["</s>","x"]}}}]}`,
			[]int64{idThe, 2, 45}, []int64{1, 1, 1}, 46},
	} {
		doc := fixtureJSON(t)
		var pp any
		if err := json.Unmarshal([]byte(c.json), &pp); err != nil {
			t.Fatal(err)
		}
		doc["post_processor"] = pp
		tok := mustParseDoc(t, doc)
		e := tok.Encode("the", 0)
		if !reflect.DeepEqual(e.IDs, c.want) || !reflect.DeepEqual(e.TypeIDs, c.types) || tok.VocabSize() != c.vocabN {
			t.Errorf("%s: ids %v types %v vocab %d, want %v %v %d", c.json, e.IDs, e.TypeIDs, tok.VocabSize(), c.want, c.types, c.vocabN)
		}
	}
}

func TestPadID(t *testing.T) {
	doc := fixtureJSON(t)
	doc["padding"] = map[string]any{"pad_id": 39, "pad_token": "1"}
	if got := mustParseDoc(t, doc).PadID(); got != 39 {
		t.Fatalf("padding.pad_id: %d", got)
	}
	// Without [PAD] anywhere, the unknown id pads.
	doc = fixtureJSON(t)
	doc["added_tokens"] = []any{}
	model := doc["model"].(map[string]any)
	model["vocab"].([]any)[0] = []any{"<not-pad>", 0.0}
	if got := mustParseDoc(t, doc).PadID(); got != idUNK {
		t.Fatalf("no pad token: %d", got)
	}
	// <pad> as a piece.
	model["vocab"].([]any)[0] = []any{"<pad>", 0.0}
	if got := mustParseDoc(t, doc).PadID(); got != 0 {
		t.Fatalf("<pad> piece: %d", got)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := Load(filepath.Join(dir, "missing.json")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	p := write("bad.json", "{not json")
	if _, err := Load(p); err == nil || !strings.Contains(err.Error(), "malformed JSON") || !strings.Contains(err.Error(), p) {
		t.Fatalf("malformed: %v", err)
	}
	p = write("wp.json", `{"model":{"type":"WordPiece","vocab":{"[UNK]":0}}}`)
	if _, err := Load(p); !errors.Is(err, ErrNotUnigram) || !strings.Contains(err.Error(), `"WordPiece"`) {
		t.Fatalf("WordPiece: %v", err)
	}
	// Only a Unigram file's other sections are read.
	p = write("wp-odd.json", `{"added_tokens":"unexpected","model":{"type":"WordPiece","vocab":{"[UNK]":0}}}`)
	if _, err := Load(p); !errors.Is(err, ErrNotUnigram) {
		t.Fatalf("WordPiece with odd added_tokens: %v", err)
	}
	p = write("bpe.json", `{"model":{"vocab":{"a":0},"merges":[]}}`)
	if _, err := Load(p); !errors.Is(err, ErrNotUnigram) {
		t.Fatalf("untyped BPE: %v", err)
	}
	// An untyped model with a list vocab is Unigram (older files).
	p = write("untyped.json", `{"model":{"unk_id":0,"vocab":[["<unk>",0],["▁a",-1]]},"pre_tokenizer":{"type":"Metaspace"}}`)
	if tok, err := Load(p); err != nil || !reflect.DeepEqual(tok.IDs("a"), []int64{1}) {
		t.Fatalf("untyped Unigram: %v", err)
	}

	for _, c := range []struct {
		name string
		edit func(doc map[string]any)
		want string
	}{
		{"no model", func(d map[string]any) { delete(d, "model") }, "no model"},
		{"empty vocab", func(d map[string]any) { d["model"].(map[string]any)["vocab"] = []any{} }, "vocab is empty"},
		{"vocab not pairs", func(d map[string]any) { d["model"].(map[string]any)["vocab"] = []any{"a", "b"} }, "[piece, score]"},
		{"one-element pair", func(d map[string]any) { d["model"].(map[string]any)["vocab"] = []any{[]any{"a"}} }, "vocab[0]"},
		{"score not a number", func(d map[string]any) { d["model"].(map[string]any)["vocab"] = []any{[]any{"a", "x"}} }, "not a number"},
		{"unk out of range", func(d map[string]any) { d["model"].(map[string]any)["unk_id"] = 400 }, "unk_id 400"},
		{"unk null", func(d map[string]any) { d["model"].(map[string]any)["unk_id"] = nil }, "unk_id"},
		{"unknown normalizer", func(d map[string]any) { d["normalizer"] = map[string]any{"type": "BertNormalizer"} }, `normalizer type "BertNormalizer" is not implemented`},
		{"bad base64", func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "!!"}
		}, "not base64"},
		{"truncated charsmap", func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "AAAQAAAA"}
		}, "declares"},
		{"regex RE2 rejects", func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": "(?<=a)b"}, "content": ""}
		}, "RE2"},
		{"unknown pre-tokenizer", func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "ByteLevel"} }, `pre_tokenizer type "ByteLevel"`},
		{"bad replacement", func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "ab"}
		}, "not one character"},
		{"bad scheme", func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Metaspace", "prepend_scheme": "sometimes"}
		}, "prepend_scheme"},
		{"template without $A", func(d map[string]any) {
			pp := d["post_processor"].(map[string]any)
			pp["single"] = []any{map[string]any{"SpecialToken": map[string]any{"id": "[CLS]", "type_id": 0}}}
		}, "no $A"},
		{"template unknown special", func(d map[string]any) {
			pp := d["post_processor"].(map[string]any)
			pp["special_tokens"] = map[string]any{}
		}, `special token "[CLS]"`},
		{"unknown post-processor", func(d map[string]any) { d["post_processor"] = map[string]any{"type": "Frobnicate"} }, `"Frobnicate"`},
		{"added_tokens not a list", func(d map[string]any) { d["added_tokens"] = "x" }, "added_tokens"},
		{"negative added id", func(d map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": -1, "content": "x"}}
		}, "negative id"},
		{"pad id out of range", func(d map[string]any) { d["padding"] = map[string]any{"pad_id": 1000} }, "pad_id 1000"},
	} {
		doc := fixtureJSON(t)
		c.edit(doc)
		_, err := parseDoc(t, doc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
		if errors.Is(err, ErrNotUnigram) {
			t.Errorf("%s: a malformed Unigram file must not read as another model type: %v", c.name, err)
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok := loadFixture(t)
	texts := []string{"the understand", "going going going", "axxb the zebra.", strings.Repeat("this ", 50)}
	want := make([][]int64, len(texts))
	for i, s := range texts {
		want[i] = tok.Encode(s, 64).IDs
	}
	done := make(chan error)
	for g := range 8 {
		go func() {
			for n := range 200 {
				i := (g + n) % len(texts)
				if got := tok.Encode(texts[i], 64).IDs; !reflect.DeepEqual(got, want[i]) {
					done <- errors.New("concurrent Encode differs from sequential")
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzEncode checks that any input, valid UTF-8 or not, encodes without a
// panic into ids inside the vocabulary, within maxLen, framed by [CLS] and
// [SEP], and that truncation keeps a prefix of the untruncated encoding.
func FuzzEncode(f *testing.F) {
	tok := loadFixture(f)
	for _, s := range []string{"", "the understand", "  ｔｈｅ\u00a0cafe\u0301 ", "[SEP][MASK]x", "\xff\xfe▁▁", "axxb", strings.Repeat("é", 40), "ﬁ①\u200b\t"} {
		f.Add(s, 5)
	}
	f.Fuzz(func(t *testing.T, s string, maxLen int) {
		maxLen = maxLen%600 - 50 // include <= 0 (no limit) and 1 (raised to 2)
		full := tok.Encode(s, 0)
		e := tok.Encode(s, maxLen)
		if maxLen > 0 && e.Len() > max(maxLen, 2) {
			t.Fatalf("len %d > maxLen %d", e.Len(), maxLen)
		}
		if len(e.AttentionMask) != e.Len() || len(e.TypeIDs) != e.Len() || e.Len() < 2 {
			t.Fatalf("lengths %d/%d/%d", e.Len(), len(e.AttentionMask), len(e.TypeIDs))
		}
		if e.IDs[0] != idCLS || e.IDs[e.Len()-1] != idSEP {
			t.Fatalf("not framed by [CLS] … [SEP]: %v", e.IDs)
		}
		for _, id := range e.IDs {
			if id < 0 || id >= int64(tok.VocabSize()) {
				t.Fatalf("id %d outside the vocabulary of %d", id, tok.VocabSize())
			}
		}
		if !reflect.DeepEqual(e.IDs[:e.Len()-1], full.IDs[:e.Len()-1]) {
			t.Fatalf("truncated %v is not a prefix of %v", e.IDs, full.IDs)
		}
		for _, p := range tok.Tokenize(s) {
			if !utf8.ValidString(p) {
				t.Fatalf("piece %q is not valid UTF-8", p)
			}
		}
	})
}

// FuzzParse feeds mutated tokenizer.json files (and small hand-made ones)
// to Parse: it must return an error or a tokenizer whose Encode does not
// panic, even with a corrupt character map.
func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(fixturePath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte(`{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["▁a",-1]]},"normalizer":{"type":"Precompiled","precompiled_charsmap":"EAAAAP////////9/AAAAAHhhAAA="}}`))
	f.Add([]byte(`{"model":{"unk_id":1,"byte_fallback":true,"vocab":[["a",-1],["<unk>",0],["<0x62>",-3]]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Punctuation"},{"type":"Metaspace","prepend_scheme":"first"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := Parse(data)
		if err != nil {
			return
		}
		for _, s := range []string{"", "the a", "[SEP]x ｔｈｅ\u00a0é", "\xff\x00abc", strings.Repeat("ab ", 30)} {
			e := tok.Encode(s, 16)
			if e.Len() > max(16, len(tok.prefix)+len(tok.suffix)) {
				t.Fatalf("Encode(%q, 16) has %d ids", s, e.Len())
			}
			for _, id := range e.IDs {
				if id < 0 || id >= int64(tok.VocabSize()) {
					t.Fatalf("id %d outside the vocabulary of %d", id, tok.VocabSize())
				}
			}
		}
	})
}
