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
	// pipeline.toml ships them, and the providers, bundled in one module.
	Plugins["bardo.wasm"] = wasmbuild.Bundle
}

// ShippedLayers returns the repository's pipeline.toml — what `make run`
// serves — without its [server] table and its providers, with the models'
// directory made absolute: its [models], [[model]] and [[layer]] entries
// exactly as shipped, for Start after the caller's providers. It fails tb
// when the offline models are not built.
func ShippedLayers(tb testing.TB) string {
	tb.Helper()
	models, layers := ShippedPipeline(tb)
	var out strings.Builder
	out.WriteString(models)
	for _, l := range layers {
		out.WriteString(l.TOML)
	}
	return out.String()
}

// ShippedLayer is one [[layer]] entry of the repository's pipeline.toml,
// its sub-tables included, exactly as written.
type ShippedLayer struct {
	Name string
	TOML string
}

// ShippedPipeline splits the repository's pipeline.toml into its models
// ([models] with an absolute directory, and every [[model]]) and its
// [[layer]] entries in order, so a test can start the shipped pipeline or
// any one of its layers alone. It fails tb when the offline models are not
// built or the file has no layer.
func ShippedPipeline(tb testing.TB) (models string, layers []ShippedLayer) {
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
	var mod strings.Builder
	section := ""
	for line := range strings.Lines(string(src)) {
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(strings.TrimSpace(strings.SplitN(line, "#", 2)[0]), "[]")
			if section == "layer" {
				layers = append(layers, ShippedLayer{})
			}
		}
		switch {
		case section == "models" || section == "model":
			if k, _, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "dir" {
				line = `dir = "` + filepath.Join(root, "build", "models") + "\"\n"
			}
			mod.WriteString(line)
		case section == "layer" || strings.HasPrefix(section, "layer."):
			l := &layers[len(layers)-1]
			l.TOML += line
			if k, v, ok := strings.Cut(line, "="); ok && strings.TrimSpace(k) == "name" && l.Name == "" {
				l.Name = strings.Trim(strings.TrimSpace(strings.SplitN(v, "#", 2)[0]), `"`)
			}
		}
	}
	if len(layers) == 0 {
		tb.Fatal("pipeline.toml has no [[layer]]")
	}
	return mod.String(), layers
}
