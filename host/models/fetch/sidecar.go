package fetch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// ConfigFile and VocabFile are what the BERT loader reads.
const (
	ConfigFile = "config.json"
	VocabFile  = "vocab.txt"
)

// writeSidecars derives vocab.txt (if the entry asks) and writes
// config.json last, so a directory with a config.json is complete.
func writeSidecars(e Entry, dir string) error {
	if e.VocabFrom != "" {
		if err := deriveVocab(filepath.Join(dir, e.VocabFrom), filepath.Join(dir, VocabFile)); err != nil {
			return fmt.Errorf("fetch: %s: %w", e.Name, err)
		}
	}
	cfg := map[string]any{}
	if e.HFConfig != "" {
		data, err := os.ReadFile(filepath.Join(dir, e.HFConfig))
		if err != nil {
			return fmt.Errorf("fetch: %s: %w", e.Name, err)
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return fmt.Errorf("fetch: %s: %s is not a JSON object: %w", e.Name, e.HFConfig, err)
		}
	}
	for k, v := range e.Sidecar {
		cfg[k] = v
	}
	if labels, ok := e.Sidecar["labels"].([]string); ok {
		if err := checkLabels(cfg, labels); err != nil {
			return fmt.Errorf("fetch: %s: %w", e.Name, err)
		}
	}
	files := map[string]string{}
	for _, f := range e.Files {
		files[f.Dest] = f.SHA256
	}
	cfg["_bardo_source"] = map[string]any{
		"repo": e.Repo, "revision": e.Revision, "license": e.License, "kind": e.Kind, "sha256": files,
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("fetch: %s: encode config: %w", e.Name, err)
	}
	return writeAtomic(filepath.Join(dir, ConfigFile), append(data, '\n'))
}

// checkLabels makes id2label agree with the labels Bardo expects: it is
// filled in when missing and an error when it says something else (a
// classifier whose outputs mean other things must not load under our
// labels).
func checkLabels(cfg map[string]any, labels []string) error {
	want := map[string]any{}
	for i, l := range labels {
		want[strconv.Itoa(i)] = l
	}
	got, ok := cfg["id2label"]
	if !ok {
		cfg["id2label"] = want
		return nil
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("config id2label %v does not match the expected labels %v", got, labels)
	}
	return nil
}

// deriveVocab writes a WordPiece vocab.txt (token per line, id = line
// number) from a HuggingFace tokenizer.json.
func deriveVocab(tokenizerPath, vocabPath string) error {
	data, err := os.ReadFile(tokenizerPath)
	if err != nil {
		return err
	}
	var tj struct {
		Model struct {
			Type  string           `json:"type"`
			Vocab map[string]int64 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &tj); err != nil {
		return fmt.Errorf("parse %s: %w", filepath.Base(tokenizerPath), err)
	}
	if tj.Model.Type != "WordPiece" {
		return fmt.Errorf("%s: model type %q, want WordPiece", filepath.Base(tokenizerPath), tj.Model.Type)
	}
	n := len(tj.Model.Vocab)
	tokens := make([]string, n)
	seen := make([]bool, n)
	for tok, id := range tj.Model.Vocab {
		if id < 0 || id >= int64(n) || seen[id] {
			return fmt.Errorf("%s: token %q has bad or duplicate id %d", filepath.Base(tokenizerPath), tok, id)
		}
		if strings.ContainsAny(tok, "\r\n") {
			return fmt.Errorf("%s: token %q contains a line break", filepath.Base(tokenizerPath), tok)
		}
		seen[id] = true
		tokens[id] = tok
	}
	if n == 0 {
		return fmt.Errorf("%s: empty vocabulary", filepath.Base(tokenizerPath))
	}
	return writeAtomic(vocabPath, []byte(strings.Join(tokens, "\n")+"\n"))
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("fetch: write %s: %w", filepath.Base(path), err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("fetch: write %s: %w", filepath.Base(path), err)
	}
	return nil
}
