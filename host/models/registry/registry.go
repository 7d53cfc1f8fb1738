// Package registry holds the host's loaded local models by the names
// pipeline.toml gives them ([[model]] entries) and serves them to plugins:
// it is the Models behind the embed and classify host functions.
//
// A reload of pipeline.toml calls Sync: models whose entry is unchanged stay
// loaded (loading one costs a session and its weights), new or changed
// entries are loaded before the new pipeline takes traffic, and models the
// new file no longer declares are closed at the following Sync, so requests
// still finishing on the old pipeline never find their model closed.
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bardoinference/bardo/host/config"
	"github.com/bardoinference/bardo/host/models"
	"github.com/bardoinference/bardo/host/models/bert"
	"github.com/bardoinference/bardo/host/models/glove"
	"github.com/bardoinference/bardo/host/models/guardrail"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

// Registry is the set of loaded models. The zero value is not usable; call
// New.
type Registry struct {
	log *slog.Logger

	mu      sync.RWMutex
	models  map[string]*loaded // by name, the current generation
	retired []*loaded          // removed at the last Sync, closed at the next
}

// loaded is one declared model. A lazy one ([[model]] load = "lazy") has
// no session until its first use.
type loaded struct {
	spec config.Model
	log  *slog.Logger
	// open is the model once loaded: read without a lock on every call.
	open atomic.Pointer[opened]

	mu     sync.Mutex // serialises loading and closing
	err    error      // the last lazy load's failure, returned until lazyRetry passes
	tried  time.Time
	closed bool
}

type opened struct {
	emb models.Embedder
	cls models.Classifier
}

// lazyRetry is how long a lazy model that failed to load answers with that
// failure before it is tried again: every request must not pay for a
// broken model directory.
const lazyRetry = 10 * time.Second

// errClosed is a call on a model its registry closed.
var errClosed = errors.New("the model was closed")

// ready returns the model, loading a lazy one on its first use (callers
// meanwhile wait for that one load).
func (l *loaded) ready() (*opened, error) {
	if o := l.open.Load(); o != nil {
		return o, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if o := l.open.Load(); o != nil {
		return o, nil
	}
	switch {
	case l.closed:
		return nil, errClosed
	case l.err != nil && time.Since(l.tried) < lazyRetry:
		return nil, l.err
	}
	began := time.Now()
	o, err := load(l.spec)
	if err != nil {
		l.err, l.tried = err, time.Now()
		l.log.Error("model failed to load", "model", l.spec.Name, "kind", l.spec.Kind, "path", l.spec.Path, "err", err)
		return nil, err
	}
	l.err = nil
	l.open.Store(o)
	l.log.Info("model loaded", "model", l.spec.Name, "kind", l.spec.Kind, "path", l.spec.Path,
		"lazy", l.spec.Lazy, "took", time.Since(began).Round(time.Millisecond))
	return o, nil
}

func (l *loaded) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	o := l.open.Swap(nil)
	switch {
	case o == nil:
		return nil
	case o.emb != nil:
		return o.emb.Close()
	}
	return o.cls.Close()
}

// embedder reports whether the model's kind embeds (else it classifies),
// known before a lazy model is loaded.
func (l *loaded) embedder() bool {
	return l.spec.Kind == "glove" || l.spec.Kind == "bert-encoder"
}

// New returns an empty registry.
func New(log *slog.Logger) *Registry {
	if log == nil {
		log = slog.Default()
	}
	return &Registry{log: log, models: map[string]*loaded{}}
}

// Sync makes the registry hold exactly the models of specs (see the package
// doc). On an error nothing changes: the models loaded so far by this call
// are closed and the previous generation keeps serving.
func (r *Registry) Sync(opts config.Models, specs []config.Model) error {
	if len(specs) == 0 && len(r.snapshot()) == 0 {
		return nil // no models declared: the ONNX runtime is not needed
	}
	if len(specs) > 0 {
		if err := onnxrt.Init(onnxrt.Options{LibraryPath: opts.Runtime, IntraOpThreads: opts.Threads}); err != nil {
			return fmt.Errorf("models: %w", err)
		}
	}
	cur := r.snapshot()
	next := make(map[string]*loaded, len(specs))
	var fresh []*loaded
	for _, s := range specs {
		if l, ok := cur[s.Name]; ok && l.spec == s {
			next[s.Name] = l
			continue
		}
		l := &loaded{spec: s, log: r.log}
		if !s.Lazy {
			if _, err := l.ready(); err != nil {
				for _, f := range fresh {
					f.close()
				}
				return fmt.Errorf("models: %s (line %d): %w", s.Name, s.Line, err)
			}
		}
		fresh = append(fresh, l)
		next[s.Name] = l
	}

	r.mu.Lock()
	old := r.retired
	r.retired = nil
	for name, l := range cur {
		if next[name] != l {
			r.retired = append(r.retired, l)
		}
	}
	r.models = next
	r.mu.Unlock()
	for _, l := range old {
		if err := l.close(); err != nil {
			r.log.Warn("closing a retired model failed", "model", l.spec.Name, "err", err)
		}
	}
	return nil
}

func (r *Registry) snapshot() map[string]*loaded {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.models
}

func load(s config.Model) (*opened, error) {
	switch s.Kind {
	case "glove":
		e, err := glove.Load(s.Path, glove.LoadOptions{Name: s.Name, MaxBatch: s.MaxBatch, MaxWait: s.BatchWait})
		if err != nil {
			return nil, err
		}
		return &opened{emb: e}, nil
	case "bert-encoder":
		e, err := bert.LoadEncoder(s.Path, bert.Options{Name: s.Name, MaxBatch: s.MaxBatch, MaxWait: s.BatchWait})
		if err != nil {
			return nil, err
		}
		return &opened{emb: e}, nil
	case "bert-classifier":
		c, err := bert.LoadClassifier(s.Path, bert.Options{Name: s.Name, MaxBatch: s.MaxBatch, MaxWait: s.BatchWait})
		if err != nil {
			return nil, err
		}
		return &opened{cls: c}, nil
	case "tfidf-logreg":
		c, err := guardrail.Load(s.Path, guardrail.LoadOptions{Name: s.Name, MaxBatch: s.MaxBatch, MaxWait: s.BatchWait})
		if err != nil {
			return nil, err
		}
		return &opened{cls: c}, nil
	}
	return nil, fmt.Errorf("unknown model kind %q", s.Kind)
}

// LoadAll loads every lazy model now (`bardo check` validates them all):
// the first failure, naming its model.
func (r *Registry) LoadAll() error {
	for name, l := range r.snapshot() {
		if _, err := l.ready(); err != nil {
			return fmt.Errorf("models: %s (line %d): %w", name, l.spec.Line, err)
		}
	}
	return nil
}

// Loaded reports whether model name has its session (a lazy one: whether
// it was used), for tests and the operator.
func (r *Registry) Loaded(name string) bool {
	l, ok := r.snapshot()[name]
	return ok && l.open.Load() != nil
}

// ErrUnknownModel is returned for a name no [[model]] entry declares.
var ErrUnknownModel = errors.New("no such model")

func (r *Registry) get(name string) (*loaded, error) {
	l, ok := r.snapshot()[name]
	if !ok {
		return nil, fmt.Errorf("%w: %q (declare it as a [[model]] in pipeline.toml)", ErrUnknownModel, name)
	}
	return l, nil
}

// Embed runs the embedder named name.
func (r *Registry) Embed(ctx context.Context, name string, texts []string) ([][]float32, error) {
	l, err := r.get(name)
	if err != nil {
		return nil, err
	}
	if !l.embedder() {
		return nil, fmt.Errorf("model %q is a classifier (kind %s), not an embedder", name, l.spec.Kind)
	}
	o, err := l.ready()
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", name, err)
	}
	return o.emb.Embed(ctx, texts)
}

// Classify runs the classifier named name.
func (r *Registry) Classify(ctx context.Context, name string, texts []string) ([]string, [][]float32, error) {
	l, err := r.get(name)
	if err != nil {
		return nil, nil, err
	}
	if l.embedder() {
		return nil, nil, fmt.Errorf("model %q is an embedder (kind %s), not a classifier", name, l.spec.Kind)
	}
	o, err := l.ready()
	if err != nil {
		return nil, nil, fmt.Errorf("model %q: %w", name, err)
	}
	scores, err := o.cls.Classify(ctx, texts)
	if err != nil {
		return nil, nil, err
	}
	return o.cls.Labels(), scores, nil
}

// Embedder returns the embedder named name, for host code (benchmarks,
// tools) that uses a model directly.
func (r *Registry) Embedder(name string) (models.Embedder, error) {
	l, err := r.get(name)
	if err != nil {
		return nil, err
	}
	if !l.embedder() {
		return nil, fmt.Errorf("model %q is not an embedder", name)
	}
	o, err := l.ready()
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", name, err)
	}
	return o.emb, nil
}

// Close closes every model.
func (r *Registry) Close() {
	r.mu.Lock()
	all := r.retired
	for _, l := range r.models {
		all = append(all, l)
	}
	r.models, r.retired = map[string]*loaded{}, nil
	r.mu.Unlock()
	for _, l := range all {
		l.close()
	}
}
