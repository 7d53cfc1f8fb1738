// Package fetch downloads the production models (`bardo models fetch`):
// nomic-embed-text-v1.5 and ProtectAI's DeBERTa-v3 prompt-injection
// classifier, from HuggingFace at pinned revisions, each file checked
// against a pinned SHA-256 before it is moved into place.
//
// Downloads go to <file>.part and resume with an HTTP Range request after an
// interrupted transfer (within one run, by retrying, and across runs). A
// file whose checksum does not match is deleted and reported. After the
// files, fetch writes the config.json sidecar the BERT loader
// (host/models/bert) reads: the model's own HuggingFace config with Bardo's
// fields (pooling, query prefix, labels) merged in.
//
// This needs internet access to huggingface.co, which the build machines do
// not have; the tests run the same code against a local server.
package fetch

import "slices"

// DefaultBaseURL is where repositories are downloaded from.
const DefaultBaseURL = "https://huggingface.co"

// File is one file of a model repository.
type File struct {
	// Path is the file's path inside the repository ("onnx/model.onnx").
	Path string
	// Dest is the file name written in the model directory.
	Dest string
	// SHA256 is the pinned hex digest; "" means unpinned, which Fetch
	// refuses unless Options.AllowUnpinned is set.
	SHA256 string
	// Size is the expected size in bytes; 0 means not known (the
	// checksum still decides).
	Size int64
	// PinSource says where the checksum came from, so a reviewer can check
	// it.
	PinSource string
}

// Entry is one production model.
type Entry struct {
	// Name is the model's directory name under the fetch destination and
	// the name `bardo models fetch NAME` takes.
	Name string
	// Description is one line for `bardo models list`.
	Description string
	// Kind is the pipeline.toml model kind that loads the directory.
	Kind string
	// Repo and Revision locate the files: <base>/<Repo>/resolve/<Revision>/<Path>.
	// A commit hash, never a branch, so a pinned checksum stays valid.
	Repo     string
	Revision string
	// License is the SPDX identifier of the model's licence.
	License string
	// Files are downloaded in order.
	Files []File
	// HFConfig is the Dest of the downloaded HuggingFace config.json that
	// config.json is built from ("" means start from an empty object).
	HFConfig string
	// Sidecar holds Bardo's config.json fields, merged over the
	// HuggingFace config.
	Sidecar map[string]any
	// VocabFrom, when set, is the Dest of a WordPiece tokenizer.json from
	// which vocab.txt (one token per line, id = line) is derived.
	VocabFrom string
	// Notes tell the operator what the loader needs beyond the files.
	Notes string
}

// Pinned reports whether every file has a checksum.
func (e Entry) Pinned() bool {
	return !slices.ContainsFunc(e.Files, func(f File) bool { return f.SHA256 == "" })
}

// URL is where f is downloaded from, under base (DefaultBaseURL if "").
func (e Entry) URL(base string, f File) string {
	if base == "" {
		base = DefaultBaseURL
	}
	return base + "/" + e.Repo + "/resolve/" + e.Revision + "/" + f.Path
}

// Checksums are HuggingFace LFS object ids (the SHA-256 of the content) for
// large files and content digests for small ones, as published by the
// projects named in PinSource; each was found in at least two independent
// projects unless PinSource says otherwise. They were not recomputed here:
// this machine cannot reach huggingface.co. A wrong pin fails safe — the
// download is deleted and fetch reports the mismatch.
var manifest = []Entry{
	{
		Name:        "nomic-embed-text-v1.5",
		Description: "nomic-embed-text-v1.5 embedder, 768-d, fp32 ONNX (~547 MB, Apache-2.0)",
		Kind:        "bert-encoder",
		Repo:        "nomic-ai/nomic-embed-text-v1.5",
		Revision:    "e5cf08aadaa33385f5990def41f7a23405aec398",
		License:     "Apache-2.0",
		Files: []File{
			{Path: "onnx/model.onnx", Dest: "model.onnx", Size: 547_310_275,
				SHA256:    "147d5aa88c2101237358e17796cf3a227cead1ec304ec34b465bb08e9d952965",
				PinSource: "HF LFS oid, with this size, as pinned in four independent public projects (a Rust model manifest at this revision, a TypeScript installer, two Homebrew formulae)"},
			{Path: "tokenizer.json", Dest: "tokenizer.json", Size: 711_396,
				SHA256:    "d241a60d5e8f04cc1b2b3e9ef7a4921b27bf526d9f6050ab90f9267a1f9e5c66",
				PinSource: "content digest pinned for this repository in three of those projects; it is the standard bert-base-uncased tokenizer.json (bge-small-en-v1.5 ships the same bytes)"},
			{Path: "config.json", Dest: "hf_config.json", Size: 2_331,
				SHA256:    "0168e0883705b0bf8f2b381e10f45a9f3e1ef4b13869b43c160e4c8a70ddf442",
				PinSource: "content digest pinned in two of those projects (the Rust manifest at this revision and the TypeScript installer)"},
		},
		HFConfig:  "hf_config.json",
		VocabFrom: "tokenizer.json",
		Sidecar: map[string]any{
			"pooling":      "mean",
			"query_prefix": "search_query: ",
			"normalize":    true,
		},
		Notes: "WordPiece (bert-base-uncased) vocabulary; vocab.txt is derived from tokenizer.json. Documents should be embedded with the prefix \"search_document: \"; the loader applies query_prefix to every text.",
	},
	{
		Name:        "deberta-v3-base-prompt-injection-v2",
		Description: "ProtectAI DeBERTa-v3 prompt-injection classifier, fp32 ONNX (~739 MB, Apache-2.0); SentencePiece tokenizer",
		Kind:        "bert-classifier",
		Repo:        "protectai/deberta-v3-base-prompt-injection-v2",
		Revision:    "e6535ca4ce3ba852083e75ec585d7c8aeb4be4c5",
		License:     "Apache-2.0",
		Files: []File{
			{Path: "onnx/model.onnx", Dest: "model.onnx", Size: 738_563_188,
				SHA256:    "f0ea7f239f765aedbde7c9e163a7cb38a79c5b8853d3f76db5152172047b228c",
				PinSource: "HF LFS oid, as pinned in three independent public projects: a provenance document at this revision, a Nix overlay (SRI hash, revision 90c9989b) and a Rust manifest"},
			{Path: "onnx/tokenizer.json", Dest: "tokenizer.json", Size: 8_648_886,
				SHA256:    "752fe5f0d5678ad563e1bd2ecc1ddf7a3ba7e2024d0ac1dba1a72975e26dff2f",
				PinSource: "content digest pinned in the same three projects"},
			{Path: "onnx/config.json", Dest: "hf_config.json", Size: 1_014,
				SHA256:    "3093743035223c46b1497a72e939e56fa0a50afbd7bafbf7eb8aad060b8d23f8",
				PinSource: "content digest pinned in the provenance document at this revision and in the Rust manifest"},
			{Path: "onnx/spm.model", Dest: "spm.model", Size: 2_464_616,
				SHA256:    "c679fbf93643d19aab7ee10c0b99e460bdbc02fedf34b92b05af343b4af586fd",
				PinSource: "HF LFS oid of the DeBERTa-v3 SentencePiece model every deberta-v3 checkpoint shares; pinned with this size in many public projects"},
		},
		HFConfig: "hf_config.json",
		Sidecar: map[string]any{
			"labels":     []string{"SAFE", "INJECTION"},
			"max_length": 512,
			"tokenizer":  "sentencepiece",
		},
		Notes: "DeBERTa-v3 tokenizes with SentencePiece, not WordPiece: tokenizer.json is a Unigram model (▁ word-boundary marker, precompiled NFKC character map, [CLS] … [SEP] template, [PAD]=0). host/models/bert loads it automatically through host/models/sentencepiece, so the directory loads as kind bert-classifier with no extra option; spm.model is kept for reference and not read.",
	},
}

// Manifest returns the production models fetch knows (a copy).
func Manifest() []Entry {
	out := make([]Entry, len(manifest))
	for i, e := range manifest {
		e.Files = slices.Clone(e.Files)
		out[i] = e
	}
	return out
}
