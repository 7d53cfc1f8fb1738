package daemon_test

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

// /metrics says which plugin fills the kv store: after one request through
// the shipped layers the hash cache holds its answer, each plugin's
// entries and bytes are series of their own, and the capacity is the
// bound (the default here).
func TestKVMetricsPerPlugin(t *testing.T) {
	g := testgateway.Start(t, testgateway.ShippedLayers(t)+`
[[provider]]
name = "sim"
plugin = "sim.wasm"
models = ["*"]
trusted = true
`, testgateway.Options{})
	resp, err := http.Post(g.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"what is a health factor on aave?"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	resp, err = http.Get(g.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(b)
	for _, want := range []string{
		"# HELP bardo_kv_entries ",
		"bardo_kv_capacity_bytes " + strconv.FormatFloat(float64(config.DefaultKVMaxBytes), 'g', -1, 64),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	var hashEntries string
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, `bardo_kv_entries{plugin="hashcache"} `); ok {
			hashEntries = v
		}
	}
	if hashEntries == "" || hashEntries == "0" {
		t.Fatalf("hashcache's kv entries after an answer: %q\n%s", hashEntries, grepLines(text, "bardo_kv_"))
	}
}

func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
