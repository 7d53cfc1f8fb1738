// Package models defines what the host's local models offer the rest of the
// host: embedders that turn text into unit vectors and classifiers that score
// text against labels. Implementations live in sub-packages (GloVe, BERT-family
// encoders and classifiers, the TF-IDF injection classifier); plugins reach them
// only through the `embed` and `classify` host functions.
package models

import "context"

// Embedder turns texts into L2-normalised vectors of Dim() float32s, so the
// dot product of two vectors is their cosine similarity.
type Embedder interface {
	// Name is the model's configured name, as used in pipeline.toml.
	Name() string
	// Dim is the length of every vector Embed returns.
	Dim() int
	// Embed returns one vector per text, in order. It may batch the call with
	// other concurrent callers; it honours ctx while waiting.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Close releases the model's native resources.
	Close() error
}

// Classifier scores texts against a fixed set of labels.
type Classifier interface {
	// Name is the model's configured name, as used in pipeline.toml.
	Name() string
	// Labels names the scores Classify returns, in order.
	Labels() []string
	// Classify returns, per text, one probability per label (aligned with
	// Labels()). It may batch the call with other concurrent callers.
	Classify(ctx context.Context, texts []string) ([][]float32, error)
	// Close releases the model's native resources.
	Close() error
}
