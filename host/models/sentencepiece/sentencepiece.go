// Package sentencepiece tokenizes with a SentencePiece Unigram model read
// from a HuggingFace tokenizer.json (model.type "Unigram"), the tokenizer of
// DeBERTa-v3, T5, ALBERT, XLM-R and mDeBERTa.
//
// Encoding follows the HuggingFace tokenizers pipeline: added tokens are cut
// out of the raw text; the rest is normalized (the normalizer section,
// including SentencePiece's precompiled character map), split into words by
// the pre-tokenizer (Metaspace: spaces become "▁" and a "▁" is prepended),
// and each word is segmented by Viterbi search for the sequence of pieces
// with the highest total log-probability, unknown characters falling back
// to the unknown id (or to byte pieces); the post-processor template wraps
// the result in [CLS] … [SEP]. *Tokenizer implements host/models/bert's
// Tokenizer. README.md lists what is implemented and how exactly.
package sentencepiece

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/bardoinference/bardo/host/models/wordpiece"
)

// ErrNotUnigram is returned (wrapped) by Load and Parse for a well-formed
// tokenizer.json whose model is not a Unigram model (WordPiece, BPE, …).
var ErrNotUnigram = errors.New("tokenizer.json model is not Unigram")

// Tokenizer is a loaded Unigram tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	pieces       []string
	scores       []float64
	unkID        int32
	unkScore     float64
	byteFallback bool
	byteIDs      [256]int32
	trie         *trie

	norm  normalizer   // nil: none
	pre   preTokenizer // nil: the whole segment is one word
	raw   *matcher     // added tokens matched in the raw text
	normd *matcher     // added tokens matched in normalized text

	prefix, suffix           []int64 // template ids around the sequence
	prefixTypes, suffixTypes []int64
	seqType                  int64

	pad       int64
	vocabSize int

	scratch sync.Pool // *scratch
}

// Load reads a tokenizer.json. It fails for a file that is not JSON, whose
// model is not Unigram (the error wraps ErrNotUnigram), or that is
// malformed or uses a component this package does not implement; the error
// names the file and the part at fault.
func Load(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sentencepiece: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("sentencepiece: %s: %w", path, err)
	}
	return t, nil
}

// file is the part of tokenizer.json that is read. Everything but the
// model's type is decoded only once the model is known to be Unigram, so a
// WordPiece or BPE file is never rejected for the shape of another section.
type file struct {
	AddedTokens   json.RawMessage `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Padding       json.RawMessage `json:"padding"`
	Model         *modelJSON      `json:"model"`
}

type modelJSON struct {
	Type         string          `json:"type"`
	UnkID        *int64          `json:"unk_id"`
	ByteFallback bool            `json:"byte_fallback"`
	Vocab        json.RawMessage `json:"vocab"`
}

// Parse is Load for the contents of a tokenizer.json. Errors are not
// prefixed with a file name.
func Parse(data []byte) (*Tokenizer, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if f.Model == nil {
		return nil, errors.New("no model section")
	}
	m := *f.Model
	switch {
	case m.Type == "Unigram":
	case m.Type == "" && isJSONArray(m.Vocab):
		// Older files leave out the type; only Unigram's vocab is a list.
	case m.Type == "":
		return nil, fmt.Errorf("%w: model has no type and its vocab is not a list of [piece, score]", ErrNotUnigram)
	default:
		return nil, fmt.Errorf("%w: model.type is %q", ErrNotUnigram, m.Type)
	}

	var added []addedToken
	if !isNull(f.AddedTokens) {
		if err := json.Unmarshal(f.AddedTokens, &added); err != nil {
			return nil, fmt.Errorf("added_tokens: %w", err)
		}
	}
	t := &Tokenizer{}
	if err := t.readVocab(m); err != nil {
		return nil, err
	}
	var err error
	if t.norm, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := t.readAdded(added); err != nil {
		return nil, err
	}
	if err := t.readPostProcessor(f.PostProcessor); err != nil {
		return nil, err
	}
	if err := t.readPadding(f.Padding, added); err != nil {
		return nil, err
	}
	return t, nil
}

func isJSONArray(raw json.RawMessage) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '['
	}
	return false
}

func (t *Tokenizer) readVocab(m modelJSON) error {
	if isNull(m.Vocab) {
		return errors.New("model: no vocab")
	}
	pieces, scores, err := parseVocab(m.Vocab)
	if err != nil {
		return err
	}
	if len(pieces) == 0 {
		return errors.New("model.vocab is empty")
	}
	t.pieces, t.scores = pieces, scores
	minScore := slices.Min(scores)
	if m.UnkID == nil {
		return errors.New("model.unk_id is missing or null: a Unigram model needs an unknown piece for characters outside its vocabulary")
	}
	if *m.UnkID < 0 || *m.UnkID >= int64(len(t.pieces)) {
		return fmt.Errorf("model.unk_id %d is outside the vocabulary (0..%d)", *m.UnkID, len(t.pieces)-1)
	}
	t.unkID = int32(*m.UnkID)
	t.unkScore = minScore - unkPenalty
	t.trie = newTrie(t.pieces)
	t.byteFallback = m.ByteFallback
	for b := range t.byteIDs {
		t.byteIDs[b] = -1
		if t.byteFallback {
			t.byteIDs[b] = t.trie.lookup(byteName(byte(b)))
		}
	}
	t.vocabSize = len(t.pieces)
	return nil
}

func (t *Tokenizer) readAdded(toks []addedToken) error {
	for i, a := range toks {
		if a.ID < 0 {
			return fmt.Errorf("added_tokens[%d] (%q): negative id %d", i, a.Content, a.ID)
		}
		t.vocabSize = max(t.vocabSize, int(a.ID)+1)
	}
	t.raw = newMatcher(toks, func(a addedToken) string {
		if a.Normalized {
			return ""
		}
		return a.Content
	})
	t.normd = newMatcher(toks, func(a addedToken) string {
		if !a.Normalized {
			return ""
		}
		return t.normalize(a.Content)
	})
	return nil
}

// specialToken is a TemplateProcessing special_tokens entry.
type specialToken struct {
	ID  string  `json:"id"`
	IDs []int64 `json:"ids"`
}

// templateItem is one element of a TemplateProcessing template.
type templateItem struct {
	SpecialToken *struct {
		ID     string `json:"id"`
		TypeID int64  `json:"type_id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID     string `json:"id"`
		TypeID int64  `json:"type_id"`
	} `json:"Sequence"`
}

// readPostProcessor reads the single-sequence template: TemplateProcessing
// (its "single" template), BertProcessing and RobertaProcessing ([cls] $A
// [sep]), a Sequence holding one of those (ByteLevel entries only change
// offsets and are ignored), or null (no special tokens).
func (t *Tokenizer) readPostProcessor(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var head struct {
		Type       string                  `json:"type"`
		Single     []templateItem          `json:"single"`
		Special    map[string]specialToken `json:"special_tokens"`
		CLS        []json.RawMessage       `json:"cls"`
		SEP        []json.RawMessage       `json:"sep"`
		Processors []json.RawMessage       `json:"processors"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("post_processor: %w", err)
	}
	switch head.Type {
	case "TemplateProcessing":
		seen := false
		for i, it := range head.Single {
			switch {
			case it.Sequence != nil:
				if it.Sequence.ID != "A" || seen {
					return fmt.Errorf("post_processor: single template item %d: want one sequence $A, found $%s", i, it.Sequence.ID)
				}
				seen, t.seqType = true, it.Sequence.TypeID
			case it.SpecialToken != nil:
				sp, ok := head.Special[it.SpecialToken.ID]
				if !ok || len(sp.IDs) == 0 {
					return fmt.Errorf("post_processor: special token %q has no ids in special_tokens", it.SpecialToken.ID)
				}
				for _, id := range sp.IDs {
					if id < 0 {
						return fmt.Errorf("post_processor: special token %q has negative id %d", it.SpecialToken.ID, id)
					}
					t.vocabSize = max(t.vocabSize, int(id)+1)
					if seen {
						t.suffix = append(t.suffix, id)
						t.suffixTypes = append(t.suffixTypes, it.SpecialToken.TypeID)
					} else {
						t.prefix = append(t.prefix, id)
						t.prefixTypes = append(t.prefixTypes, it.SpecialToken.TypeID)
					}
				}
			default:
				return fmt.Errorf("post_processor: single template item %d is neither SpecialToken nor Sequence", i)
			}
		}
		if !seen {
			return errors.New("post_processor: the single template has no $A")
		}
		return nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenPair(head.CLS, "cls")
		if err != nil {
			return fmt.Errorf("post_processor %s: %w", head.Type, err)
		}
		sep, err := tokenPair(head.SEP, "sep")
		if err != nil {
			return fmt.Errorf("post_processor %s: %w", head.Type, err)
		}
		t.prefix, t.prefixTypes = []int64{cls}, []int64{0}
		t.suffix, t.suffixTypes = []int64{sep}, []int64{0}
		t.vocabSize = max(t.vocabSize, int(cls)+1, int(sep)+1)
		return nil
	case "Sequence":
		found := false
		for i, p := range head.Processors {
			var h struct {
				Type string `json:"type"`
			}
			if err := json.Unmarshal(p, &h); err != nil {
				return fmt.Errorf("post_processor Sequence[%d]: %w", i, err)
			}
			if h.Type == "ByteLevel" {
				continue
			}
			if found {
				return fmt.Errorf("post_processor Sequence: more than one template (second: %s)", h.Type)
			}
			if err := t.readPostProcessor(p); err != nil {
				return err
			}
			found = true
		}
		return nil
	default:
		return fmt.Errorf("post_processor type %q is not implemented (implemented: TemplateProcessing, BertProcessing, RobertaProcessing, Sequence)", head.Type)
	}
}

// tokenPair reads BertProcessing's ["[CLS]", 101].
func tokenPair(raw []json.RawMessage, name string) (int64, error) {
	var id int64
	if len(raw) != 2 || json.Unmarshal(raw[1], &id) != nil || id < 0 {
		return 0, fmt.Errorf("%s must be [token, id]", name)
	}
	return id, nil
}

// padNames are the pad tokens looked for when tokenizer.json has no padding
// section.
var padNames = []string{"[PAD]", "<pad>"}

// readPadding sets the pad id: padding.pad_id when the file enables padding,
// else the id of [PAD] or <pad> (an added token first, then a piece), else
// the unknown id. Padding is hidden by the attention mask, so any valid id
// would do; these choices match what the model was trained with.
func (t *Tokenizer) readPadding(raw json.RawMessage, added []addedToken) error {
	if !isNull(raw) {
		var p struct {
			PadID *int64 `json:"pad_id"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return fmt.Errorf("padding: %w", err)
		}
		if p.PadID != nil {
			if *p.PadID < 0 || *p.PadID >= int64(t.vocabSize) {
				return fmt.Errorf("padding.pad_id %d is outside the vocabulary (0..%d)", *p.PadID, t.vocabSize-1)
			}
			t.pad = *p.PadID
			return nil
		}
	}
	for _, name := range padNames {
		for _, a := range added {
			if a.Content == name {
				t.pad = a.ID
				return nil
			}
		}
	}
	for _, name := range padNames {
		if id := t.trie.lookup(name); id >= 0 {
			t.pad = int64(id)
			return nil
		}
	}
	t.pad = int64(t.unkID)
	return nil
}

// PadID is the id that pads shorter sequences in a batch.
func (t *Tokenizer) PadID() int64 { return t.pad }

// UnkID is the id of unknown text.
func (t *Tokenizer) UnkID() int64 { return int64(t.unkID) }

// VocabSize is one more than the largest id Encode can return: the Unigram
// pieces, added tokens and template special tokens together.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// Piece returns the vocabulary piece with the given id, or "" for an id
// outside model.vocab.
func (t *Tokenizer) Piece(id int64) string {
	if id < 0 || id >= int64(len(t.pieces)) {
		return ""
	}
	return t.pieces[id]
}

// ID returns the id of a vocabulary piece.
func (t *Tokenizer) ID(piece string) (int64, bool) {
	id := t.trie.lookup(piece)
	return int64(id), id >= 0
}

// Normalize applies the normalizer to text (after replacing invalid UTF-8
// bytes with U+FFFD).
func (t *Tokenizer) Normalize(text string) string { return t.normalize(text) }

func (t *Tokenizer) normalize(s string) string {
	s = toValidUTF8(s)
	if t.norm == nil {
		return s
	}
	return toValidUTF8(t.norm.normalize(s))
}

// Tokenize returns the pieces of text without the template's special
// tokens. Each is the vocabulary piece, an added token's content, a byte
// piece (<0x41>), or for an unknown span the normalized text it covers.
func (t *Tokenizer) Tokenize(text string) []string {
	o := sink{keep: true}
	t.tokens(&o, text, -1)
	return o.pieces
}

// IDs returns the ids of text without the template's special tokens.
func (t *Tokenizer) IDs(text string) []int64 {
	var o sink
	t.tokens(&o, text, -1)
	return o.ids
}

// Encode tokenizes text and wraps it in the post-processor's template
// ([CLS] … [SEP] for DeBERTa-v3), with the template's type ids and an
// all-ones attention mask. When maxLen > 0 the text's tokens are truncated
// so that the whole sequence is at most maxLen long, keeping the template's
// special tokens; a maxLen smaller than the number of special tokens is
// raised to it. maxLen <= 0 means no limit.
func (t *Tokenizer) Encode(text string, maxLen int) wordpiece.Encoding {
	special := len(t.prefix) + len(t.suffix)
	budget, guess := -1, len(text)/4+8
	if maxLen > 0 {
		budget = max(maxLen, special) - special
		guess = min(guess, budget)
	}
	o := sink{ids: make([]int64, 0, special+guess)}
	o.ids = append(o.ids, t.prefix...)
	t.tokens(&o, text, budget)
	o.ids = append(o.ids, t.suffix...)
	n := len(o.ids)
	e := wordpiece.Encoding{IDs: o.ids, AttentionMask: make([]int64, n), TypeIDs: make([]int64, n)}
	for i := range e.AttentionMask {
		e.AttentionMask[i] = 1
	}
	copy(e.TypeIDs, t.prefixTypes)
	if t.seqType != 0 {
		for i := len(t.prefix); i < n-len(t.suffix); i++ {
			e.TypeIDs[i] = t.seqType
		}
	}
	copy(e.TypeIDs[n-len(t.suffix):], t.suffixTypes)
	return e
}

// tokens adds the tokens of text to o, stopping once limit tokens (limit
// >= 0) have been added; words are segmented independently, so the first
// limit tokens are the same as without a limit.
func (t *Tokenizer) tokens(o *sink, text string, limit int) {
	if limit == 0 {
		return
	}
	l, _ := t.scratch.Get().(*scratch)
	if l == nil {
		l = &scratch{}
	}
	defer t.scratch.Put(l)
	base := len(o.ids)
	full := func() bool { return limit >= 0 && len(o.ids)-base >= limit }
	var raw, normd []part
segments:
	for _, seg := range t.raw.split(raw, toValidUTF8(text), true) {
		if seg.id >= 0 {
			if o.add(seg.id, seg.s); full() {
				break
			}
			continue
		}
		normd = t.normd.split(normd[:0], t.normalize(seg.s), seg.start)
		for _, sub := range normd {
			switch {
			case sub.id >= 0:
				o.add(sub.id, sub.s)
			case t.pre == nil:
				t.segment(o, sub.s, l)
			default:
				l.words = t.pre.split(l.words[:0], sub.s, sub.start)
				for _, w := range l.words {
					if t.segment(o, w, l); full() {
						break segments
					}
				}
			}
			if full() {
				break segments
			}
		}
	}
	clear(l.words) // do not keep the caller's text alive in the pool
	if limit >= 0 && len(o.ids)-base > limit {
		o.ids = o.ids[:base+limit]
		if o.keep {
			o.pieces = o.pieces[:base+limit]
		}
	}
}
