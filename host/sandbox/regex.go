package sandbox

import (
	"context"
	"encoding/binary"
	"regexp"
	"strings"
	"sync"

	"github.com/tetratelabs/wazero/api"
)

// Regex sets: a plugin compiles a list of patterns once (usually in Init) and
// then finds every match of every pattern in a text with one host call. The
// matching runs natively: Go's regexp inside wasm is 5–7× slower, and
// scanning a 16 KB prompt for a dozen PII patterns is the hot path of L7.
//
// Patterns use the subset of syntax RE2 (Go) and ECMAScript (the edge host)
// share: no lookaround, no backreferences, no possessive quantifiers.

const (
	maxPatterns    = 256
	maxPatternsLen = 64 << 10
	maxRegexText   = 16 << 20
)

// regexSets holds a plugin's compiled sets; ids are indexes. Every instance
// of a plugin compiles the same patterns, so sets are shared by pattern text.
type regexSets struct {
	mu   sync.Mutex
	sets []*regexSet
	byID map[string]int32
}

type regexSet struct {
	res []*regexp.Regexp
}

func (rs *regexSets) compile(src string) (int32, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if id, ok := rs.byID[src]; ok {
		return id, nil
	}
	lines := strings.Split(src, "\n")
	if len(lines) > maxPatterns {
		return -1, errTooManyPatterns
	}
	set := &regexSet{}
	for _, l := range lines {
		re, err := regexp.Compile(l)
		if err != nil {
			return -1, err
		}
		set.res = append(set.res, re)
	}
	if rs.byID == nil {
		rs.byID = map[string]int32{}
	}
	id := int32(len(rs.sets))
	rs.sets = append(rs.sets, set)
	rs.byID[src] = id
	return id, nil
}

func (rs *regexSets) get(id int32) *regexSet {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if id < 0 || int(id) >= len(rs.sets) {
		return nil
	}
	return rs.sets[id]
}

// find returns (pattern, start, end) triples as little-endian uint32s, in
// pattern order and, within a pattern, in text order.
func (s *regexSet) find(text []byte, out []byte) []byte {
	for i, re := range s.res {
		for _, loc := range re.FindAllIndex(text, -1) {
			out = binary.LittleEndian.AppendUint32(out, uint32(i))
			out = binary.LittleEndian.AppendUint32(out, uint32(loc[0]))
			out = binary.LittleEndian.AppendUint32(out, uint32(loc[1]))
		}
	}
	return out
}

type patternError string

func (e patternError) Error() string { return string(e) }

const errTooManyPatterns = patternError("too many patterns in one regex set")

// hostRegexCompile compiles newline-separated patterns; it returns the set id,
// or -1 (and logs why) when a pattern does not compile.
func hostRegexCompile(ctx context.Context, m api.Module, stack []uint64) {
	cs := state(ctx)
	pp, pn := uint32(stack[0]), uint32(stack[1])
	stack[0] = api.EncodeI32(-1)
	if cs == nil {
		return
	}
	src, ok := readBytes(m, pp, pn, maxPatternsLen)
	if !ok {
		return
	}
	id, err := cs.p.regex.compile(string(src))
	if err != nil {
		cs.p.log.Warn("regex_compile refused", "err", err)
		return
	}
	stack[0] = api.EncodeI32(id)
}

// hostRegexFind writes the matches of a set in a text as 12-byte triples and
// returns their total length (-1 for an unknown set or a bad range); like
// kv_get, it writes only when the buffer is large enough.
func hostRegexFind(ctx context.Context, m api.Module, stack []uint64) {
	cs := state(ctx)
	id, tp, tn, bp, bc := api.DecodeI32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3]), uint32(stack[4])
	stack[0] = ^uint64(0)
	if cs == nil {
		return
	}
	set := cs.p.regex.get(id)
	if set == nil {
		return
	}
	text, ok := readBytes(m, tp, tn, maxRegexText)
	if !ok {
		return
	}
	out := set.find(text, nil)
	if uint32(len(out)) <= bc && len(out) > 0 && !m.Memory().Write(bp, out) {
		return
	}
	stack[0] = uint64(len(out))
}
