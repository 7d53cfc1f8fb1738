package guardrail

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

type confusion struct{ tp, fp, tn, fn int }

func (c *confusion) add(predicted, actual bool) {
	switch {
	case predicted && actual:
		c.tp++
	case predicted:
		c.fp++
	case actual:
		c.fn++
	default:
		c.tn++
	}
}

func (c confusion) precision() float64 { return ratio(c.tp, c.tp+c.fp) }
func (c confusion) recall() float64    { return ratio(c.tp, c.tp+c.fn) }
func (c confusion) f1() float64 {
	p, r := c.precision(), c.recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

func (c confusion) String() string {
	return fmt.Sprintf("P=%.3f R=%.3f F1=%.3f (tp=%d fp=%d tn=%d fn=%d)", c.precision(), c.recall(), c.f1(), c.tp, c.fp, c.tn, c.fn)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// TestLabelledSet measures the classifier at the default threshold on the
// labelled set (set.jsonl, which the rules were written against) and on the
// held-out set (holdout.jsonl, written after the rules were frozen): the
// converted model alone, the rules alone, and the shipped combination. The
// floors sit a little below the measured figures (README.md) so that a
// regression in the model, the tokenizer or the rules fails here.
func TestLabelledSet(t *testing.T) {
	type floor struct{ p, r, f float64 }
	cases := []struct {
		file                   string
		minSize                int
		model, rules, combined floor
	}{
		// Written together with the rules: rules-only figures here are optimistic.
		{"set.jsonl", 120, floor{0.62, 0.62, 0.62}, floor{0.95, 0.95, 0.95}, floor{0.70, 0.95, 0.82}},
		// Written after rules v1 were frozen, then used to write rules v2.
		{"holdout.jsonl", 60, floor{0.75, 0.55, 0.65}, floor{0.95, 0.80, 0.88}, floor{0.82, 0.90, 0.86}},
		// Written after rules v2 were frozen and never used for tuning: the
		// honest estimate for unseen text. Since the model alone no longer
		// flags (context.go: agents' own text scored 0.8–0.99), combined
		// recall here fell from 0.633 to 0.467 and precision rose from
		// 0.792 to 1.000 (README.md).
		{"holdout2.jsonl", 60, floor{0.72, 0.50, 0.60}, floor{0.75, 0.10, 0.18}, floor{0.95, 0.45, 0.60}},
	}
	var all [3]confusion
	for _, tc := range cases {
		t.Run(strings.TrimSuffix(tc.file, ".jsonl"), func(t *testing.T) {
			set := loadSetFile(t, tc.file)
			m, r, c := evalSet(t, set, tc.minSize)
			for i, cm := range []confusion{m, r, c} {
				all[i].tp += cm.tp
				all[i].fp += cm.fp
				all[i].tn += cm.tn
				all[i].fn += cm.fn
			}
			for _, f := range []struct {
				name string
				c    confusion
				fl   floor
			}{{"model only", m, tc.model}, {"rules only", r, tc.rules}, {"combined", c, tc.combined}} {
				if f.c.precision() < f.fl.p || f.c.recall() < f.fl.r || f.c.f1() < f.fl.f {
					t.Errorf("%s: %v below floor P>=%.2f R>=%.2f F1>=%.2f", f.name, f.c, f.fl.p, f.fl.r, f.fl.f)
				}
			}
		})
	}
	t.Logf("all sets, model only: %v", all[0])
	t.Logf("all sets, rules only: %v", all[1])
	t.Logf("all sets, combined:   %v", all[2])
}

// evalSet logs precision/recall/F1 for each variant and returns the
// model-only, rules-only and combined confusion matrices.
func evalSet(t *testing.T, set []example, minSize int) (mOnly, rOnly, both confusion) {
	c := sharedClassifier(t)
	th := c.Threshold()
	texts := make([]string, len(set))
	nInj := 0
	for i, e := range set {
		texts[i] = e.Text
		switch e.Label {
		case "injection":
			nInj++
		case "benign":
		default:
			t.Fatalf("example %d: label %q", i+1, e.Label)
		}
		if e.Source == "" {
			t.Fatalf("example %d has no source", i+1)
		}
	}
	if len(set) < minSize || nInj < len(set)/3 || nInj > 2*len(set)/3 {
		t.Fatalf("%d examples, %d injections; want >= %d, balanced-ish", len(set), nInj, minSize)
	}
	ctx := context.Background()
	model, err := c.ModelScores(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	combined, err := c.Explain(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	jb := jsReference{readExtra(t, "jailbreak_model.json")}
	mal := jsReference{readExtra(t, "malicious_model.json")}

	var withJB, withMal, jbOnly, malOnly confusion
	sweep := map[float32]*confusion{0.5: {}, 0.6: {}, 0.7: {}, 0.8: {}, 0.9: {}}
	for i, e := range set {
		actual := e.Label == "injection"
		rr := ScoreRules(e.Text)
		mOnly.add(model[i] >= th, actual)
		rOnly.add(rr.Score >= th, actual)
		both.add(combined[i].Injection, actual)
		pj := jb.predictProba(e.Text)
		withJB.add(combined[i].Injection || pj >= 0.5, actual)
		jbOnly.add(pj >= 0.5, actual)
		pm := mal.predictProba(e.Text)
		malOnly.add(pm >= 0.5, actual)
		withMal.add(combined[i].Injection || pm >= 0.5, actual)
		for k, cm := range sweep {
			cm.add(combined[i].Score >= k, actual)
		}
		if testing.Verbose() && (combined[i].Injection != actual) {
			var fired []string
			for _, h := range combined[i].Hits {
				fired = append(fired, h.Rule)
			}
			t.Logf("miss %-9s model=%.3f rules=%.3f %v %q", e.Label, combined[i].Model, combined[i].Rules, fired, trunc(e.Text))
		}
	}
	t.Logf("%d examples (%d injection, %d benign), threshold %.2f", len(set), nInj, len(set)-nInj, th)
	t.Logf("model only (llm_guardrail):   %v", mOnly)
	t.Logf("rules only:                   %v", rOnly)
	t.Logf("combined max(model, rules):   %v", both)
	t.Logf("combined + jailbreak model:   %v", withJB)
	t.Logf("combined + malicious model:   %v", withMal)
	t.Logf("jailbreak model alone:        %v", jbOnly)
	t.Logf("malicious model alone:        %v", malOnly)
	for _, k := range []float32{0.5, 0.6, 0.7, 0.8, 0.9} {
		t.Logf("combined at threshold %.1f:    %v", k, *sweep[k])
	}
	return mOnly, rOnly, both
}

var (
	extraMu     sync.Mutex
	extraModels = map[string]*SourceModel{}
)

// readExtra reads one of llm_guardrail's other models (jailbreak,
// malicious) once, for the comparison that justifies leaving them out.
func readExtra(t testing.TB, file string) *SourceModel {
	t.Helper()
	dir := depsDir(t)
	extraMu.Lock()
	defer extraMu.Unlock()
	if m, ok := extraModels[file]; ok {
		return m
	}
	m, err := ReadSourceModel(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	extraModels[file] = m
	return m
}
