package wordpiece

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// vocabRelPath is where scripts/fetch-deps.sh (`make deps`) copies
// bert-base-uncased-vocab.txt from the Go module github.com/sugarme/tokenizer.
const vocabRelPath = "build/deps/wordpiece/bert-base-uncased-vocab.txt"

// envVocab overrides the vocabulary location for these tests.
const envVocab = "BARDO_WORDPIECE_VOCAB"

// vocabPath finds the real BERT vocabulary, failing (not skipping) the test
// when `make deps` has not been run: a missing artefact is a broken build.
func vocabPath(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv(envVocab); p != "" {
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil &&
			bytes.Contains(data, []byte("module github.com/bardoinference/bardo\n")) {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("repository root (go.mod of github.com/bardoinference/bardo) not found above the working directory")
		}
		dir = parent
	}
	p := filepath.Join(dir, vocabRelPath)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("WordPiece vocabulary missing at %s: run `make deps` (or set %s)", p, envVocab)
	}
	return p
}

var (
	realOnce sync.Once
	realTok  *Tokenizer
	realErr  error
	realFile []string
)

// realVocab loads bert-base-uncased once per test binary, plus the raw lines
// so expectations are looked up in the file rather than hard-coded ids.
func realVocab(tb testing.TB) (*Tokenizer, []string) {
	tb.Helper()
	p := vocabPath(tb)
	realOnce.Do(func() {
		realTok, realErr = Load(p, Options{})
		if realErr != nil {
			return
		}
		f, err := os.Open(p)
		if err != nil {
			realErr = err
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			realFile = append(realFile, sc.Text())
		}
		realErr = sc.Err()
	})
	if realErr != nil {
		tb.Fatal(realErr)
	}
	return realTok, realFile
}

// lineOf returns the zero-based line of token in the vocabulary file.
func lineOf(t *testing.T, lines []string, token string) int64 {
	t.Helper()
	for i, l := range lines {
		if l == token {
			return int64(i)
		}
	}
	t.Fatalf("token %q not in vocabulary file", token)
	return -1
}

// The toy vocabulary from BERT's own tokenization tests.
var toyTokens = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "want", "##want", "##ed", "wa", "un", "runn", "##ing", ",", "low", "lowest", "aff", "##aff", "##able"}

func toy(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := New(toyTokens, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestToyWordPiece(t *testing.T) {
	tok := toy(t)
	cases := map[string][]string{
		"":                      {},
		"unwanted running":      {"un", "##want", "##ed", "runn", "##ing"},
		"unwantedX running":     {"[UNK]", "runn", "##ing"},
		"unaffable":             {"un", "##aff", "##able"},
		"UNwant\u00e9d,running": {"un", "##want", "##ed", ",", "runn", "##ing"},
	}
	for in, want := range cases {
		if got := tok.Tokenize(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Tokenize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRealVocabLookups(t *testing.T) {
	tok, lines := realVocab(t)
	if tok.VocabSize() != len(lines) {
		t.Fatalf("VocabSize %d, file has %d lines", tok.VocabSize(), len(lines))
	}
	cases := []struct {
		in   string
		want []string
	}{
		// bert-base-uncased has no "##aff": the greedy longest match from the
		// left takes "una" first (the "un ##aff ##able" split in BERT's README
		// comes from a different vocabulary; TestToyWordPiece covers it).
		{"unaffable", []string{"una", "##ffa", "##ble"}},
		{"Hello, world!", []string{"hello", ",", "world", "!"}},
		{"unwanted running", []string{"unwanted", "running"}},
		// Accents are stripped after lower-casing: É → e, ç → c.
		{"Café FRANÇAIS", []string{"cafe", "francais"}},
		// Punctuation splits inside words, including ASCII symbols.
		{"don't stop-me$now", []string{"don", "'", "t", "stop", "-", "me", "$", "now"}},
		// CJK ideographs are words of their own even without spaces.
		{"ab中文cd", []string{"ab", "中", "文", "cd"}},
		// Control characters vanish; tabs and newlines separate words.
		{"hello\x00\x07world\tfoo\nbar", []string{"hello", "##world", "foo", "bar"}},
		// A character the vocabulary lacks makes its whole word [UNK].
		{"hello \U0001F600x there", []string{"hello", "[UNK]", "there"}},
	}
	for _, c := range cases {
		got := tok.Tokenize(c.in)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", c.in, got, c.want)
			continue
		}
		enc := tok.Encode(c.in, 0)
		if len(enc.IDs) != len(c.want)+2 {
			t.Fatalf("Encode(%q) has %d ids, want %d", c.in, len(enc.IDs), len(c.want)+2)
		}
		if enc.IDs[0] != lineOf(t, lines, "[CLS]") || enc.IDs[len(enc.IDs)-1] != lineOf(t, lines, "[SEP]") {
			t.Errorf("Encode(%q) not wrapped in [CLS] … [SEP]: %v", c.in, enc.IDs)
		}
		for i, w := range c.want {
			if want := lineOf(t, lines, w); enc.IDs[i+1] != want {
				t.Errorf("Encode(%q) id %d = %d, want %d (line of %q in the vocabulary file)", c.in, i+1, enc.IDs[i+1], want, w)
			}
		}
		for i := range enc.IDs {
			if enc.AttentionMask[i] != 1 || enc.TypeIDs[i] != 0 {
				t.Errorf("Encode(%q): mask/type at %d = %d/%d, want 1/0", c.in, i, enc.AttentionMask[i], enc.TypeIDs[i])
			}
		}
	}
	if id, ok := tok.ID("[PAD]"); !ok || id != tok.PadID() || id != lineOf(t, lines, "[PAD]") {
		t.Errorf("PadID %d, ID([PAD]) = %d,%v", tok.PadID(), id, ok)
	}
}

func TestLongWordIsUnknown(t *testing.T) {
	tok, _ := realVocab(t)
	long := strings.Repeat("a", MaxCharsPerWord+1)
	if got := tok.Tokenize("x " + long + " y"); !reflect.DeepEqual(got, []string{"x", "[UNK]", "y"}) {
		t.Errorf("a %d-char word: got %q", MaxCharsPerWord+1, got)
	}
	// Exactly the limit is still split into pieces.
	if got := tok.Tokenize(strings.Repeat("a", MaxCharsPerWord)); len(got) == 0 || got[0] == UnknownToken {
		t.Errorf("a %d-char word became %q", MaxCharsPerWord, got)
	}
}

func TestCased(t *testing.T) {
	tok, err := New([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "Café", "cafe"}, Options{Cased: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("Café café"); !reflect.DeepEqual(got, []string{"Café", "[UNK]"}) {
		t.Errorf("cased: %q", got)
	}
}

func TestHangulDecomposes(t *testing.T) {
	// Uncased BERT NFD-decomposes Hangul syllables into conjoining jamo.
	tok, err := New([]string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "\u1112\u1161\u11ab"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("한"); !reflect.DeepEqual(got, []string{"\u1112\u1161\u11ab"}) {
		t.Errorf("한 → %q", got)
	}
}

func TestTruncation(t *testing.T) {
	tok, lines := realVocab(t)
	text := "the quick brown fox jumps over the lazy dog"
	full := tok.Encode(text, 0)
	if full.Len() != 11 {
		t.Fatalf("full encoding has %d ids, want 11", full.Len())
	}
	for _, maxLen := range []int{1, 2, 3, 5, 11, 12, 100} {
		enc := tok.Encode(text, maxLen)
		want := min(max(maxLen, 2), 11)
		if enc.Len() != want || len(enc.AttentionMask) != want || len(enc.TypeIDs) != want {
			t.Errorf("maxLen %d: lengths %d/%d/%d, want %d", maxLen, enc.Len(), len(enc.AttentionMask), len(enc.TypeIDs), want)
			continue
		}
		if enc.IDs[want-1] != lineOf(t, lines, "[SEP]") {
			t.Errorf("maxLen %d: last id %d is not [SEP]", maxLen, enc.IDs[want-1])
		}
		if !reflect.DeepEqual(enc.IDs[:want-1], full.IDs[:want-1]) {
			t.Errorf("maxLen %d: prefix %v differs from %v", maxLen, enc.IDs, full.IDs)
		}
	}
}

func TestEncodePair(t *testing.T) {
	tok := toy(t)
	id := func(s string) int64 { v, _ := tok.ID(s); return v }
	enc := tok.EncodePair("unwanted", "running low", 0)
	wantIDs := []int64{id("[CLS]"), id("un"), id("##want"), id("##ed"), id("[SEP]"), id("runn"), id("##ing"), id("low"), id("[SEP]")}
	wantTypes := []int64{0, 0, 0, 0, 0, 1, 1, 1, 1}
	if !reflect.DeepEqual(enc.IDs, wantIDs) || !reflect.DeepEqual(enc.TypeIDs, wantTypes) {
		t.Errorf("pair: ids %v types %v, want %v %v", enc.IDs, enc.TypeIDs, wantIDs, wantTypes)
	}
	// Longest first: 3 + 3 pieces, max 7 → 4 pieces left, 2 from each side.
	enc = tok.EncodePair("unwanted", "running low", 7)
	wantIDs = []int64{id("[CLS]"), id("un"), id("##want"), id("[SEP]"), id("runn"), id("##ing"), id("[SEP]")}
	if !reflect.DeepEqual(enc.IDs, wantIDs) {
		t.Errorf("truncated pair: %v, want %v", enc.IDs, wantIDs)
	}
}

func TestVocabularyErrors(t *testing.T) {
	if _, err := New(nil, Options{}); err == nil {
		t.Error("empty vocabulary accepted")
	}
	if _, err := New([]string{"[PAD]", "[UNK]", "[CLS]"}, Options{}); err == nil || !strings.Contains(err.Error(), "[SEP]") {
		t.Errorf("vocabulary without [SEP]: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.txt"), Options{}); err == nil {
		t.Error("missing file accepted")
	}
	tok, err := Read(strings.NewReader("[PAD]\r\n[UNK]\r\n[CLS]\r\n[SEP]\r\nhi\r\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("hi"); !reflect.DeepEqual(got, []string{"hi"}) {
		t.Errorf("CRLF vocabulary: %q", got)
	}
}

func FuzzEncode(f *testing.F) {
	tok, _ := realVocab(f)
	for _, s := range []string{"", "hello world", "unaffable", "Café 中文 한국어 \U0001F600", "\x00\xff\xfe", strings.Repeat("ab", 80), "a\u0301\u0302b", "[CLS] [SEP]"} {
		f.Add(s, uint16(16))
	}
	f.Fuzz(func(t *testing.T, text string, n uint16) {
		maxLen := 2 + int(n%512)
		enc := tok.Encode(text, maxLen)
		if enc.Len() > maxLen || enc.Len() < 2 {
			t.Fatalf("length %d with maxLen %d", enc.Len(), maxLen)
		}
		if len(enc.AttentionMask) != enc.Len() || len(enc.TypeIDs) != enc.Len() {
			t.Fatalf("slice lengths differ: %d %d %d", enc.Len(), len(enc.AttentionMask), len(enc.TypeIDs))
		}
		for _, id := range enc.IDs {
			if id < 0 || id >= int64(tok.VocabSize()) {
				t.Fatalf("id %d out of range", id)
			}
		}
		pair := tok.EncodePair(text, text, maxLen+1)
		if pair.Len() > maxLen+1 {
			t.Fatalf("pair length %d with maxLen %d", pair.Len(), maxLen+1)
		}
	})
}

func BenchmarkEncode4KB(b *testing.B) {
	tok, _ := realVocab(b)
	para := "The gateway tokenizes every prompt before embedding it; WordPiece splits rare words " +
		"such as unaffable, Zürich or naïveté into pieces, while punctuation (commas, quotes, " +
		"brackets) and CJK characters like 東京 become words of their own. "
	var sb strings.Builder
	for sb.Len() < 4096 {
		sb.WriteString(para)
	}
	text := sb.String()[:4096]
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		tok.Encode(text, 0)
	}
}
