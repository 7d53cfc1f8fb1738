// Package guardrail is the host's offline prompt-injection classifier: the
// TF-IDF + logistic-regression model published in the npm package
// llm_guardrail (v2.1.2, ISC), converted to ONNX (and that graph computed
// in Go from its weights), combined with a table of documented heuristic
// rules.
//
//   - Build converts the package's model/prompt_injection_model.json (as
//     extracted by scripts/fetch-deps.sh) into model.onnx, vocab.tsv and
//     config.json. The graph takes sparse term counts and does the model's
//     arithmetic; tokenisation (Vectorizer) is native Go and reproduces the
//     package's tfidf.js exactly. Tests prove the conversion against a Go
//     transcription of tfidf.js and logistic_regression.js.
//   - ScoreRules runs the rule table (Rules) over a text and over decodings
//     that can hide instructions (Unicode tag characters, base64, ROT13,
//     leetspeak).
//   - Load returns a Classifier (a models.Classifier) whose P(INJECTION) is
//     max(model, rules), made context-aware for agent traffic (context.go:
//     the model scores prose only and alone stays below the threshold;
//     matches on code lines or quoted in a discussion of attacks count
//     half); Explain says which rules fired.
//   - Words is a Unicode-aware tokenizer for the multilingual keyword rules
//     (multilingual.go: ru, ja, ko, ar, hi, zh, es, de, fr).
//
// README.md has the measured precision and recall on the labelled sets in
// host/models/testdata/injection and what they do and do not show.
package guardrail
