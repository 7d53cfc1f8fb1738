package sentencepiece

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// unkPenalty is what an unknown character costs below the lowest piece
// score (SentencePiece's kUnkPenalty, HuggingFace's K_UNK_PENALTY).
const unkPenalty = 10.0

// trie is a byte trie over the vocabulary's pieces. Each node's children are
// stored contiguously and sorted by label, so the whole trie is four flat
// slices; the root's children are also indexed directly by byte.
type trie struct {
	first []int32  // index of the node's first child
	count []uint16 // number of children
	label []byte   // the byte leading to the node
	piece []int32  // id of the piece ending at the node, or -1
	root  [256]int32
}

// newTrie builds the trie of pieces[id] (empty pieces are left out; when a
// piece occurs twice the later id wins, as in HuggingFace's token_to_ids).
// Nodes are laid out breadth first, one level at a time, so each node's
// children are contiguous.
func newTrie(pieces []string) *trie {
	order := make([]int32, 0, len(pieces))
	for id, p := range pieces {
		if p != "" {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := strings.Compare(pieces[a], pieces[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	// Keep the last id of each run of equal pieces.
	keys := order[:0]
	for i, id := range order {
		if i+1 < len(order) && pieces[order[i+1]] == pieces[id] {
			continue
		}
		keys = append(keys, id)
	}
	// One node per distinct prefix: the root plus, for each key, the bytes
	// beyond what it shares with the previous key.
	nodes := 1
	for i, id := range keys {
		shared := 0
		if i > 0 {
			prev, cur := pieces[keys[i-1]], pieces[id]
			for shared < len(prev) && shared < len(cur) && prev[shared] == cur[shared] {
				shared++
			}
		}
		nodes += len(pieces[id]) - shared
	}
	t := &trie{
		first: make([]int32, 0, nodes),
		count: make([]uint16, 0, nodes),
		label: make([]byte, 0, nodes),
		piece: make([]int32, 0, nodes),
	}
	t.add(0, -1)
	type span struct {
		node   int32
		lo, hi int
	}
	level, next := []span{{0, 0, len(keys)}}, []span(nil)
	for depth := 0; len(level) > 0; depth++ {
		next = next[:0]
		for _, sp := range level {
			lo := sp.lo
			// Keys are unique and sorted, so only the first can end here.
			if lo < sp.hi && len(pieces[keys[lo]]) == depth {
				t.piece[sp.node] = keys[lo]
				lo++
			}
			first := int32(len(t.label))
			for i := lo; i < sp.hi; {
				b := pieces[keys[i]][depth]
				j := i + 1
				for j < sp.hi && pieces[keys[j]][depth] == b {
					j++
				}
				next = append(next, span{t.add(b, -1), i, j})
				i = j
			}
			t.first[sp.node] = first
			t.count[sp.node] = uint16(int32(len(t.label)) - first)
		}
		level, next = next, level
	}
	for b := range t.root {
		t.root[b] = -1
	}
	for c := t.first[0]; c < t.first[0]+int32(t.count[0]); c++ {
		t.root[t.label[c]] = c
	}
	return t
}

func (t *trie) add(label byte, piece int32) int32 {
	t.first = append(t.first, 0)
	t.count = append(t.count, 0)
	t.label = append(t.label, label)
	t.piece = append(t.piece, piece)
	return int32(len(t.label) - 1)
}

// child returns the child of node labelled b, or -1.
func (t *trie) child(node int32, b byte) int32 {
	if node == 0 {
		return t.root[b]
	}
	lo, hi := t.first[node], t.first[node]+int32(t.count[node])
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		switch l := t.label[m]; {
		case l == b:
			return m
		case l < b:
			lo = m + 1
		default:
			hi = m
		}
	}
	return -1
}

// lookup returns the id of piece s, or -1.
func (t *trie) lookup(s string) int32 {
	node := int32(0)
	for i := 0; i < len(s); i++ {
		if node = t.child(node, s[i]); node < 0 {
			return -1
		}
	}
	return t.piece[node]
}

// scratch is the per-call working memory, pooled by the tokenizer.
type scratch struct {
	score []float64 // best score of a path ending at byte i
	from  []int32   // where the last piece of that path starts; -1 = unreached
	id    []int32   // that piece's id (unkID for an unknown character)
	words []string  // the pre-tokenizer's output
}

func (l *scratch) reset(n int) {
	if cap(l.score) < n+1 {
		l.score = make([]float64, n+1)
		l.from = make([]int32, n+1)
		l.id = make([]int32, n+1)
	}
	l.score, l.from, l.id = l.score[:n+1], l.from[:n+1], l.id[:n+1]
	for i := range l.from {
		l.from[i] = -1
	}
	l.score[0], l.from[0] = 0, 0
}

// sink collects token ids, and their pieces when keep is set.
type sink struct {
	ids    []int64
	pieces []string
	keep   bool
}

func (o *sink) add(id int64, piece string) {
	o.ids = append(o.ids, id)
	if o.keep {
		o.pieces = append(o.pieces, piece)
	}
}

// segment appends the best segmentation of word to o. It is HuggingFace's
// Unigram::encode_optimized: at each character boundary every piece that
// starts there (found by walking the trie) extends the best path ending
// there; a character that no single-character piece covers gets an unknown
// node scored minScore-10. Ties keep the path found first. Walking back
// from the end, consecutive unknown nodes are fused into one span, which is
// looked up as a piece and otherwise becomes byte pieces (<0xNN>, when the
// model has byte_fallback and all of them exist) or the unknown id.
func (t *Tokenizer) segment(o *sink, word string, l *scratch) {
	n := len(word)
	if n == 0 {
		return
	}
	l.reset(n)
	for pos := 0; pos < n; {
		charLen := 1
		if word[pos] >= utf8.RuneSelf {
			_, charLen = utf8.DecodeRuneInString(word[pos:])
		}
		base := l.score[pos]
		single := false
		node := int32(0)
		for i := pos; i < n; i++ {
			if node = t.trie.child(node, word[i]); node < 0 {
				break
			}
			id := t.trie.piece[node]
			if id < 0 {
				continue
			}
			end := i + 1
			if s := base + t.scores[id]; l.from[end] < 0 || s > l.score[end] {
				l.score[end], l.from[end], l.id[end] = s, int32(pos), id
			}
			single = single || end-pos == charLen
		}
		if !single {
			end := pos + charLen
			if s := base + t.unkScore; l.from[end] < 0 || s > l.score[end] {
				l.score[end], l.from[end], l.id[end] = s, int32(pos), t.unkID
			}
		}
		pos += charLen
	}

	// Walk back appending tokens, then reverse what was appended.
	start := len(o.ids)
	unkEnd := -1 // end of the unknown run being fused, or -1
	for end := n; end > 0; {
		from, id := int(l.from[end]), l.id[end]
		isUnk := id == t.unkID
		if unkEnd >= 0 && !isUnk {
			t.addUnknown(o, word[end:unkEnd])
			unkEnd = -1
		}
		if isUnk {
			if unkEnd < 0 {
				unkEnd = end
			}
		} else {
			o.add(int64(id), word[from:end])
		}
		end = from
	}
	if unkEnd >= 0 {
		t.addUnknown(o, word[:unkEnd])
	}
	slices.Reverse(o.ids[start:])
	if o.keep {
		slices.Reverse(o.pieces[start:])
	}
}

// addUnknown adds a fused run of unknown characters (in the reversed order
// segment builds: byte pieces are added last byte first).
func (t *Tokenizer) addUnknown(o *sink, s string) {
	if id := t.trie.lookup(s); id >= 0 {
		o.add(int64(id), s)
		return
	}
	if t.byteFallback {
		ok := true
		for i := 0; i < len(s) && ok; i++ {
			ok = t.byteIDs[s[i]] >= 0
		}
		if ok {
			for i := len(s) - 1; i >= 0; i-- {
				o.add(int64(t.byteIDs[s[i]]), byteName(s[i]))
			}
			return
		}
	}
	o.add(int64(t.unkID), s)
}

// byteName is the piece of a byte-fallback token: <0x41> for 'A'.
func byteName(b byte) string { return fmt.Sprintf("<0x%02X>", b) }
