package guardrail

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/fixtures"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden.jsonl.gz from the current code")

const goldenFile = "testdata/golden.jsonl.gz"

// goldenCase is one text's pinned verdict: what the rules found and what
// the classifier returned. Decoded views are pinned by their hash, the
// text by its origin and hash (the texts live in their own files).
type goldenCase struct {
	Origin  string  `json:"origin"` // file#line/variant
	TextSHA string  `json:"text_sha"`
	Rules   float32 `json:"rules"`
	Hits    []Hit   `json:"hits,omitempty"`
	Decoded string  `json:"decoded_sha,omitempty"`
	Prose   string  `json:"prose_sha"`
	Code    bool    `json:"code,omitempty"`
	Model   float32 `json:"model"`
	Score   float32 `json:"score"`
	By      string  `json:"by"`
}

// modelTolerance is how far the model's probability may move: onnxruntime
// may sum in another order, nothing more (float32 ulp at 1 is 6e-8).
const modelTolerance = 1e-6

func shaHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// goldenTexts are the texts the golden file pins: every labelled text of
// the package's sets and of the injection layer's agent traffic set, as
// given, upper-cased and ROT13'd (case folding and the decoded views), the
// agent set's texts also cut as the layer cuts them (2000-byte chunks), the
// texts of the benchmark request, and the generated texts of the ONNX
// reference test (the tokenizer's edge cases).
func goldenTexts(t testing.TB) (origins, texts []string) {
	add := func(origin, text string) {
		origins = append(origins, origin)
		texts = append(texts, text)
	}
	variants := func(origin, text string) {
		add(origin, text)
		add(origin+"/upper", strings.ToUpper(text))
		add(origin+"/rot13", rot13(text))
	}
	for _, f := range []string{"set.jsonl", "holdout.jsonl", "holdout2.jsonl"} {
		for i, e := range loadSetFile(t, f) {
			variants(fmt.Sprintf("%s#%d", f, i+1), e.Text)
		}
	}
	for i, text := range agentTrafficTexts(t) {
		origin := fmt.Sprintf("agent_traffic.jsonl#%d", i+1)
		variants(origin, text)
		if len(text) > 2000 {
			for j, ch := range layerChunks(text, 2000) {
				add(fmt.Sprintf("%s/chunk%d", origin, j), ch)
			}
		}
	}
	req := fixtures.AgentRequest()
	for i, m := range req.Messages {
		for j, b := range m.Content {
			if b.Text != "" {
				add(fmt.Sprintf("fixtures.AgentRequest/%d.%d", i, j), b.Text)
			}
		}
	}
	for i, text := range referenceTexts(t, readSource(t), 300) {
		add(fmt.Sprintf("reference#%d", i), text)
	}
	return origins, texts
}

// agentTrafficTexts reads the injection layer's labelled agent traffic.
func agentTrafficTexts(t testing.TB) []string {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "plugins", "layers", "injection", "testdata", "agent_traffic.jsonl"))
	if err != nil {
		t.Fatalf("read agent traffic set: %v", err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var it struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &it); err != nil {
			t.Fatalf("agent traffic line %d: %v", len(out)+1, err)
		}
		out = append(out, it.Text)
	}
	return out
}

// layerChunks is the injection layer's chunks (plugins/layers/injection).
func layerChunks(s string, n int) []string {
	s = strings.TrimSpace(s)
	var out []string
	for len(s) > n {
		cut := strings.LastIndexAny(s[:n], " \n\t")
		if cut <= 0 {
			cut = n
		}
		out = append(out, s[:cut])
		s = strings.TrimSpace(s[cut:])
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

func goldenOf(t testing.TB, c *Classifier, origin, text string) goldenCase {
	rr := ScoreRules(text)
	res, err := c.Explain(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Rules != rr.Score || !slices.Equal(r.Hits, rr.Hits) {
		t.Fatalf("%s: Explain's rules %v %+v differ from ScoreRules' %v %+v", origin, r.Rules, r.Hits, rr.Score, rr.Hits)
	}
	g := goldenCase{Origin: origin, TextSHA: shaHex(text), Rules: rr.Score, Hits: rr.Hits,
		Prose: shaHex(rr.layout.view), Code: rr.layout.code, Model: r.Model, Score: r.Score, By: r.By}
	if len(rr.Decoded) > 0 {
		g.Decoded = shaHex(strings.Join(rr.Decoded, "\x00"))
	}
	// As the file holds it: JSON turns the invalid UTF-8 of a snippet cut
	// inside a character into U+FFFD.
	data, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	var out goldenCase
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGolden pins every verdict, rule hit and score of the classifier on
// the golden texts to what the code gave when the file was written: speed
// work on the rules, the views or the tokenizer must change none of them.
// Rewrite it (go test -run TestGolden -update) only for a change that is
// meant to change verdicts, and say so in the commit.
func TestGolden(t *testing.T) {
	c := sharedClassifier(t)
	origins, texts := goldenTexts(t)
	if *updateGolden {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		enc := json.NewEncoder(zw)
		for i := range texts {
			if err := enc.Encode(goldenOf(t, c, origins[i], texts[i])); err != nil {
				t.Fatal(err)
			}
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(goldenFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d cases to %s", len(texts), goldenFile)
		return
	}
	want := readGolden(t)
	if len(want) != len(texts) {
		t.Fatalf("%d golden cases, %d texts: the sets changed; rewrite with -update", len(want), len(texts))
	}
	bad := 0
	for i := range texts {
		w := want[i]
		if w.Origin != origins[i] || w.TextSHA != shaHex(texts[i]) {
			t.Fatalf("case %d is %s (%s), text is %s (%s): the sets changed; rewrite with -update", i, w.Origin, w.TextSHA, origins[i], shaHex(texts[i]))
		}
		got := goldenOf(t, c, origins[i], texts[i])
		if diff := goldenDiff(w, got); diff != "" {
			bad++
			if bad <= 20 {
				t.Errorf("%s: %s\ntext: %.200q", w.Origin, diff, texts[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ", bad, len(texts))
	}
}

// goldenDiff describes how got differs from want, or returns "".
func goldenDiff(want, got goldenCase) string {
	var d []string
	if got.Rules != want.Rules || !slices.Equal(got.Hits, want.Hits) {
		d = append(d, fmt.Sprintf("rules %v %+v, want %v %+v", got.Rules, got.Hits, want.Rules, want.Hits))
	}
	if got.Decoded != want.Decoded {
		d = append(d, "decoded views differ")
	}
	if got.Prose != want.Prose || got.Code != want.Code {
		d = append(d, fmt.Sprintf("prose view differs (code %v, want %v)", got.Code, want.Code))
	}
	if math.Abs(float64(got.Model-want.Model)) > modelTolerance {
		d = append(d, fmt.Sprintf("model %v, want %v", got.Model, want.Model))
	}
	if math.Abs(float64(got.Score-want.Score)) > modelTolerance || got.By != want.By {
		d = append(d, fmt.Sprintf("score %v by %s, want %v by %s", got.Score, got.By, want.Score, want.By))
	}
	return strings.Join(d, "; ")
}

func readGolden(t testing.TB) []goldenCase {
	data, err := os.ReadFile(goldenFile)
	if err != nil {
		t.Fatalf("read %s: %v (write it with -update)", goldenFile, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenCase
	dec := json.NewDecoder(zr)
	for dec.More() {
		var g goldenCase
		if err := dec.Decode(&g); err != nil {
			t.Fatalf("%s case %d: %v", goldenFile, len(out)+1, err)
		}
		out = append(out, g)
	}
	return out
}
