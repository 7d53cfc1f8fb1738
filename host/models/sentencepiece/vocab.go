package sentencepiece

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// errVocabShape is the complaint about a vocab that is not a list of pairs.
var errVocabShape = errors.New("model.vocab must be a list of [piece, score] pairs")

// parseVocab reads model.vocab, a JSON array of [piece, score] pairs. A
// Unigram vocabulary has 100k+ pairs, which encoding/json decodes several
// times slower than this scanner; the document as a whole has already been
// validated by json.Unmarshal, so only the shape needs checking here. Pieces
// with escapes or invalid UTF-8 are decoded by encoding/json, so the result
// is the same as json.Unmarshal's.
func parseVocab(b []byte) ([]string, []float64, error) {
	p := vocabScanner{b: b}
	if !p.eat('[') {
		return nil, nil, errVocabShape
	}
	var pieces []string
	var scores []float64
	if p.eat(']') {
		return nil, nil, p.end()
	}
	for i := 0; ; i++ {
		if !p.eat('[') {
			return nil, nil, fmt.Errorf("%w: element %d is not a pair", errVocabShape, i)
		}
		piece, ok := p.str()
		if !ok || !p.eat(',') {
			return nil, nil, fmt.Errorf("model.vocab[%d] is not a [piece, score] pair", i)
		}
		num := p.number()
		score, err := strconv.ParseFloat(string(num), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("model.vocab[%d] (%q): score is not a number", i, piece)
		}
		if !p.eat(']') {
			return nil, nil, fmt.Errorf("model.vocab[%d] (%q) is not a [piece, score] pair", i, piece)
		}
		pieces = append(pieces, piece)
		scores = append(scores, score)
		if p.eat(',') {
			continue
		}
		if !p.eat(']') {
			return nil, nil, fmt.Errorf("%w: bad separator after element %d", errVocabShape, i)
		}
		return pieces, scores, p.end()
	}
}

type vocabScanner struct {
	b []byte
	i int
}

func (p *vocabScanner) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// eat skips white space and then c, reporting whether c was there.
func (p *vocabScanner) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *vocabScanner) end() error {
	p.ws()
	if p.i != len(p.b) {
		return errVocabShape
	}
	return nil
}

// str reads a JSON string.
func (p *vocabScanner) str() (string, bool) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", false
	}
	start, plain := p.i, true
	for p.i++; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; {
		case c == '\\':
			plain = false
			p.i++
		case c == '"':
			p.i++
			raw := p.b[start:p.i]
			if plain && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), true
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", false
			}
			return s, true
		case c < 0x20:
			return "", false
		}
	}
	return "", false
}

// number returns the bytes of a JSON number (or whatever stands in its
// place, for ParseFloat to reject).
func (p *vocabScanner) number() []byte {
	p.ws()
	start := p.i
	for p.i < len(p.b) {
		switch c := p.b[p.i]; {
		case c >= '0' && c <= '9', c == '-', c == '+', c == '.', c == 'e', c == 'E':
			p.i++
		default:
			return p.b[start:p.i]
		}
	}
	return p.b[start:p.i]
}
