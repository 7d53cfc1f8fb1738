package config

import (
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Models holds the [models] table: where the ONNX runtime and the model
// files are, and the vector index's bounds. It matters only when [[model]]
// entries exist.
type Models struct {
	Runtime         string // libonnxruntime path, absolute; "" = BARDO_ONNXRUNTIME_LIB or the build default
	Dir             string // absolute; relative [[model]] paths resolve here
	Threads         int    // intra-op threads per model session
	IndexMaxEntries int    // vector index entries per plugin partition (one tenant, or the shared space)
	IndexMaxSpaces  int    // vector index partitions (plugin × tenant, and shared ones) per dimension
}

// Model is one [[model]] entry: a local model the embed and classify host
// functions serve under Name.
type Model struct {
	Name      string
	Kind      string // one of ModelKinds
	Path      string // absolute model directory
	MaxBatch  int
	BatchWait time.Duration
	// Lazy defers loading the model (its session and weights) to its first
	// use ([[model]] load = "lazy"); the default loads it with the
	// pipeline, so a broken model fails the start or the reload.
	Lazy bool
	Line int
}

// ModelKinds are the model families the host loads (host/models).
var ModelKinds = []string{"glove", "bert-encoder", "bert-classifier", "tfidf-logreg"}

// Defaults of the [models] table and [[model]] entries.
const (
	DefaultModelsDir       = "build/models"
	DefaultModelThreads    = 1
	DefaultIndexMaxEntries = 100_000
	DefaultIndexMaxSpaces  = 1_000
	DefaultModelMaxBatch   = 32
	DefaultModelBatchWait  = 2 * time.Millisecond
	maxModelBatchWait      = 100 * time.Millisecond
)

var (
	modelsKeys = []string{"runtime", "dir", "threads", "index_max_entries", "index_max_spaces"}
	modelKeys  = []string{"name", "kind", "path", "max_batch", "batch_wait", "load"}
)

func (c *checker) models(t map[string]any) Models {
	const p = "models"
	c.unknownKeys(t, p, modelsKeys)
	m := Models{Threads: DefaultModelThreads, IndexMaxEntries: DefaultIndexMaxEntries, IndexMaxSpaces: DefaultIndexMaxSpaces}
	if v, ok := c.str(t, p, "runtime"); ok && v != "" {
		m.Runtime = c.abs(v)
	}
	dir := DefaultModelsDir
	if v, ok := c.str(t, p, "dir"); ok {
		dir = v
	}
	m.Dir = c.abs(dir)
	if n, ok := c.integer(t, p, "threads"); ok {
		if n < 1 || n > 64 {
			c.errf(joinKey(p, "threads"), "must be between 1 and 64, got %d", n)
		} else {
			m.Threads = int(n)
		}
	}
	if n, ok := c.integer(t, p, "index_max_entries"); ok {
		if n < 1 || n > 100_000_000 {
			c.errf(joinKey(p, "index_max_entries"), "must be between 1 and 100000000, got %d", n)
		} else {
			m.IndexMaxEntries = int(n)
		}
	}
	if n, ok := c.integer(t, p, "index_max_spaces"); ok {
		if n < 1 || n > 1_000_000 {
			c.errf(joinKey(p, "index_max_spaces"), "must be between 1 and 1000000, got %d", n)
		} else {
			m.IndexMaxSpaces = int(n)
		}
	}
	return m
}

func (c *checker) model(p string, t map[string]any, dir string) Model {
	if t == nil {
		return Model{}
	}
	c.unknownKeys(t, p, modelKeys)
	m := Model{MaxBatch: DefaultModelMaxBatch, BatchWait: DefaultModelBatchWait, Line: c.line(p)}
	if v, ok := c.str(t, p, "name"); ok {
		if !nameRE.MatchString(v) {
			c.errf(joinKey(p, "name"), "must match [a-z0-9-]+, got %q", v)
		}
		m.Name = v
	} else if _, present := t["name"]; !present {
		c.errf(joinKey(p, "name"), "required key is missing")
	}
	if v, ok := c.str(t, p, "kind"); ok {
		if !slices.Contains(ModelKinds, v) {
			c.errf(joinKey(p, "kind"), "unknown kind %q: must be one of %q", v, ModelKinds)
		}
		m.Kind = v
	} else if _, present := t["kind"]; !present {
		c.errf(joinKey(p, "kind"), "required key is missing")
	}
	if v, ok := c.str(t, p, "path"); ok {
		if filepath.IsAbs(v) {
			m.Path = filepath.Clean(v)
		} else {
			m.Path = filepath.Join(dir, v)
		}
		if fi, err := os.Stat(m.Path); err != nil || !fi.IsDir() {
			c.errf(joinKey(p, "path"), "model directory not found: %s (run `make models`, or `bardo models fetch` for the production models)", m.Path)
		}
	} else if _, present := t["path"]; !present {
		c.errf(joinKey(p, "path"), "required key is missing")
	}
	if n, ok := c.integer(t, p, "max_batch"); ok {
		if n < 1 || n > 1024 {
			c.errf(joinKey(p, "max_batch"), "must be between 1 and 1024, got %d", n)
		} else {
			m.MaxBatch = int(n)
		}
	}
	if v, ok := c.duration(t, p, "batch_wait"); ok {
		if v < 0 || v > maxModelBatchWait {
			c.errf(joinKey(p, "batch_wait"), "must be between 0s and %s, got %s", maxModelBatchWait, v)
		} else {
			m.BatchWait = v
		}
	}
	if v, ok := c.str(t, p, "load"); ok {
		switch v {
		case "start":
		case "lazy":
			m.Lazy = true
		default:
			c.errf(joinKey(p, "load"), `must be "start" (load with the pipeline) or "lazy" (on first use), got %q`, v)
		}
	}
	return m
}

// modelDuplicates reports [[model]] names used twice. Model names are their
// own namespace: plugins pass them to embed/classify.
func (c *checker) modelDuplicates(ms []Model) {
	seen := map[string]int{}
	for i, m := range ms {
		if m.Name == "" {
			continue
		}
		if j, ok := seen[m.Name]; ok {
			c.errf(joinKey(indexKey("model", i), "name"), "duplicate model name %q (already used on line %d)", m.Name, ms[j].Line)
			continue
		}
		seen[m.Name] = i
	}
}

// Model returns the model named name, or nil.
func (c *Config) Model(name string) *Model {
	for i := range c.ModelSpecs {
		if c.ModelSpecs[i].Name == name {
			return &c.ModelSpecs[i]
		}
	}
	return nil
}
