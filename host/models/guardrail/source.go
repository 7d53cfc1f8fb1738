package guardrail

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
)

// SourceModel is one of llm_guardrail's model files
// (model/<name>_model.json): a scikit-learn TfidfVectorizer and binary
// LogisticRegression exported to JSON.
type SourceModel struct {
	// Vocabulary maps each n-gram to its feature index.
	Vocabulary map[string]int32 `json:"vocabulary"`
	// IDF is the inverse document frequency per feature index.
	IDF []float64 `json:"idf"`
	// Coefficients holds one row of weights per feature (binary model).
	Coefficients [][]float64 `json:"coefficients"`
	// Intercept holds the single bias term.
	Intercept []float64 `json:"intercept"`
	// Classes are the class labels, [0, 1].
	Classes []int `json:"classes"`
	// NgramRange is [min, max] tokens per n-gram.
	NgramRange []int `json:"ngram_range"`
	// Lowercase says whether text is lowercased before tokenising.
	Lowercase bool `json:"lowercase"`
	// MaxFeatures is the vectoriser's max_features setting (informational).
	MaxFeatures int `json:"max_features"`
	// Threshold is the positive-class probability at which the package
	// reports a detection.
	Threshold float64 `json:"threshold"`

	// SHA256 is the hex SHA-256 of the file the model was read from.
	SHA256 string `json:"-"`
}

// ReadSourceModel reads and validates an llm_guardrail model JSON file.
func ReadSourceModel(path string) (*SourceModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("guardrail: read source model: %w", err)
	}
	var m SourceModel
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("guardrail: parse %s: %w", path, err)
	}
	sum := sha256.Sum256(data)
	m.SHA256 = hex.EncodeToString(sum[:])
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("guardrail: %s: %w", path, err)
	}
	return &m, nil
}

func (m *SourceModel) validate() error {
	n := len(m.IDF)
	if n == 0 {
		return fmt.Errorf("empty idf")
	}
	if len(m.Coefficients) != 1 || len(m.Coefficients[0]) != n {
		return fmt.Errorf("want 1 row of %d coefficients (binary model), got %d rows", n, len(m.Coefficients))
	}
	if len(m.Intercept) != 1 {
		return fmt.Errorf("want 1 intercept, got %d", len(m.Intercept))
	}
	if len(m.NgramRange) != 2 || m.NgramRange[0] < 1 || m.NgramRange[1] < m.NgramRange[0] {
		return fmt.Errorf("bad ngram_range %v", m.NgramRange)
	}
	if !m.Lowercase {
		// tfidf.js honours lowercase=false, but every shipped model sets it
		// and the Go vectoriser always lowercases; refuse rather than
		// silently diverge.
		return fmt.Errorf("lowercase=false is not supported")
	}
	if len(m.Vocabulary) != n {
		return fmt.Errorf("vocabulary has %d terms for %d features", len(m.Vocabulary), n)
	}
	seen := make([]bool, n)
	for term, id := range m.Vocabulary {
		if id < 0 || int(id) >= n || seen[id] {
			return fmt.Errorf("vocabulary term %q has bad or duplicate index %d", term, id)
		}
		seen[id] = true
	}
	return nil
}

// knownSource identifies a converted file: the converter only accepts
// model files whose checksum it knows, so every model.onnx it writes can be
// traced to a published package version and licence.
type knownSource struct {
	Package, Version, License, File, TarballSHA256 string
}

// knownSources maps a model file's SHA-256 to where it was published. The
// tarball checksum is the one scripts/fetch-deps.sh pins.
var knownSources = map[string]knownSource{
	"25a77b6692bd090ea2d2ff8962fa8b80fa86a661c1a2c4160f43bbd6fccee45e": {
		Package: "llm_guardrail", Version: "2.1.2", License: "ISC",
		File:          "package/model/prompt_injection_model.json",
		TarballSHA256: "dc3637d70004cf1d9b84aac872d7182e6d62681e30b5af8f00861341e8554c01",
	},
	"5222af21b03d32ec394abffd41b24a4592303a86e39e0b51072093378a72cf74": {
		Package: "llm_guardrail", Version: "2.1.2", License: "ISC",
		File:          "package/model/jailbreak_model.json",
		TarballSHA256: "dc3637d70004cf1d9b84aac872d7182e6d62681e30b5af8f00861341e8554c01",
	},
}
