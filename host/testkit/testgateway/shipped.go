package testgateway

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/wasmbuild"
)

func init() {
	// Every shipped layer, so Start can serve the repository's own layers.
	root, err := wasmbuild.Root()
	if err != nil {
		return
	}
	entries, _ := os.ReadDir(filepath.Join(root, "plugins", "layers"))
	for _, e := range entries {
		if e.IsDir() {
			Plugins[e.Name()+".wasm"] = "plugins/layers/" + e.Name()
		}
	}
}

// ShippedLayers returns the repository's pipeline.toml — what `make run`
// serves — without its [server] table and its providers, with the models'
// directory made absolute: its [models], [[model]] and [[layer]] entries
// exactly as shipped, for Start after the caller's providers. It fails tb
// when the offline models are not built.
func ShippedLayers(tb testing.TB) string {
	tb.Helper()
	root, err := wasmbuild.Root()
	if err != nil {
		tb.Fatal(err)
	}
	modeltest.Dir(tb, modeltest.Glove)
	modeltest.Dir(tb, modeltest.Injection)
	src, err := os.ReadFile(filepath.Join(root, "pipeline.toml"))
	if err != nil {
		tb.Fatal(err)
	}
	var out strings.Builder
	keep := true
	for line := range strings.Lines(string(src)) {
		if strings.HasPrefix(line, "[") {
			table := strings.Trim(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), "[]")
			keep = table != "server" && table != "provider" && !strings.HasPrefix(table, "provider.")
		}
		if !keep {
			continue
		}
		if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "dir" {
			line = `dir = "` + filepath.Join(root, "build", "models") + "\"\n"
		}
		out.WriteString(line)
	}
	return out.String()
}
