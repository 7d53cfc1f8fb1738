//go:build !wasip1

package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"

	"github.com/bardoinference/bardo/host/kvstore"
	"github.com/bardoinference/bardo/host/sandbox"
	"github.com/bardoinference/bardo/host/testkit/fixtures"
	"github.com/bardoinference/bardo/host/testkit/layertest"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/sdk/wire"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/golden_layer.jsonl from the current code")

const goldenLayerFile = "testdata/golden_layer.jsonl"

// layerVerdict is what the layer answered for one request: its action, its
// headers and its error message.
type layerVerdict struct {
	Case    string `json:"case"`
	Action  string `json:"action"`
	Score   string `json:"score"`
	Where   string `json:"where"`
	Said    string `json:"said"`
	Message string `json:"message,omitempty"`
}

// TestGoldenLayer pins the layer's answer to every agent traffic item, in
// an agent's request and alone, the first time (classified) and again
// (scores reused from kv), to what the code gave when the file was
// written. Speed work must change none of them; rewrite the file
// (go test -run TestGoldenLayer -update) only for a change meant to move
// verdicts, and say so in the commit.
func TestGoldenLayer(t *testing.T) {
	items := loadTraffic(t)
	p := layertest.Load(t, "plugins/layers/injection", sandbox.Options{Trusted: true,
		KV: kvstore.NewMemory(16 << 20), Services: modeltest.Services(t), Config: []byte(`{"action":"block"}`)})
	var enc wire.Encoder
	var got []layerVerdict
	for i, it := range items {
		for _, bare := range []bool{false, true} {
			meta := wire.Meta{RequestID: "req_" + strconv.Itoa(i), Tenant: fmt.Sprintf("golden-%d-%v", i, bare), Dialect: wire.DialectAnthropic}
			for _, pass := range []string{"fresh", "seen"} {
				res := layertest.OnRequest(t, p, &enc, &meta, agentRequest(it, bare))
				v := layerVerdict{Case: fmt.Sprintf("%d/bare=%v/%s", i+1, bare, pass), Action: strconv.Itoa(int(res.Action))}
				for _, h := range res.Headers {
					switch h.Key {
					case "X-Bardo-Injection":
						v.Score = h.Value
					case "X-Bardo-Injection-Where":
						v.Where = h.Value
					case "X-Bardo-Injection-Action":
						v.Said = h.Value
					}
				}
				if res.Error != nil {
					v.Message = res.Error.Message
				}
				got = append(got, v)
			}
		}
	}
	if *updateGolden {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for _, v := range got {
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(goldenLayerFile, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d verdicts to %s", len(got), goldenLayerFile)
		return
	}
	f, err := os.Open(goldenLayerFile)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	defer f.Close()
	var want []layerVerdict
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var v layerVerdict
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: %v", goldenLayerFile, len(want)+1, err)
		}
		want = append(want, v)
	}
	if len(want) != len(got) {
		t.Fatalf("%d golden verdicts, %d now: the set changed; rewrite with -update", len(want), len(got))
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			bad++
			if bad <= 20 {
				t.Errorf("got  %+v\nwant %+v", got[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d verdicts differ", bad, len(got))
	}
}

// metricSink records what the plugin reports, per metric name.
type metricSink struct {
	mu    sync.Mutex
	calls map[string]int
	sum   map[string]float64
}

func (s *metricSink) PluginMetric(_ string, _ int, name string, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[name]++
	s.sum[name] += v
}

// TestMetricsCountEveryPiece checks the counters and the score histogram
// over a first request (every text classified) and a repeat (every score
// reused): the reused scores are counted in one report per request, and a
// text's score is observed once, when it is classified.
func TestMetricsCountEveryPiece(t *testing.T) {
	sink := &metricSink{calls: map[string]int{}, sum: map[string]float64{}}
	p := layertest.Load(t, "plugins/layers/injection", sandbox.Options{Trusted: true, Metrics: sink,
		KV: kvstore.NewMemory(1 << 20), Services: modeltest.Services(t), Config: []byte(`{"action":"flag"}`)})
	var enc wire.Encoder
	meta := wire.Meta{RequestID: "req_m", Tenant: "metrics", Dialect: wire.DialectOpenAI}
	req := fixtures.AgentRequest()
	pieces := 4 // three user texts and a tool result
	layertest.OnRequest(t, p, &enc, &meta, req)
	layertest.OnRequest(t, p, &enc, &meta, req)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got := sink.sum["injection_texts_scanned_total"]; got != float64(pieces) {
		t.Errorf("scanned %v, want %d", got, pieces)
	}
	if got, calls := sink.sum["injection_scores_cached_total"], sink.calls["injection_scores_cached_total"]; got != float64(pieces) || calls != 1 {
		t.Errorf("cached %v in %d reports, want %d in 1", got, calls, pieces)
	}
	if got := sink.calls["injection_score"]; got != pieces {
		t.Errorf("%d scores observed, want %d", got, pieces)
	}
}
