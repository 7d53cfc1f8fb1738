package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Summaries are rolling: the summary of chunks 0..k is written from the
// summary of chunks 0..k-1 plus chunk k's turns, and stored under key k,
//
//	key(-1) = SHA-256("bardo-compress/1", model, subsystem, instructions, limits)
//	key(k)  = SHA-256(key(k-1) ‖ canonical bytes of chunk k's turns)
//
// so key k names exactly the turns before the end of chunk k and how they
// were summarised. A conversation that grows keeps its earlier chunks (see
// chunkEnds) and therefore their keys: each request finds the newest stored
// summary and folds in only the chunks after it — usually none (cached) or
// one (one completion).

const entryVersion = 1

// summariser writes and finds the summaries of one request's conversation.
type summariser struct {
	cfg   config
	model string
}

// Scratch reused by every request of the instance.
var canonScratch []byte

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// appendMessage appends the canonical bytes of a turn: role, name and every
// block's kind, text, id, name, data and error flag, length-prefixed so no
// two different turns encode alike. Cache-control breakpoints and thinking
// signatures are left out: clients move breakpoints from turn to turn, and a
// signature only vouches for the thinking text, which is kept.
func appendMessage(b []byte, m *wire.Message) []byte {
	b = appendString(b, m.Role)
	b = appendString(b, m.Name)
	b = binary.AppendUvarint(b, uint64(len(m.Content)))
	for i := range m.Content {
		bl := &m.Content[i]
		b = append(b, byte(bl.Type))
		b = appendString(b, bl.Text)
		b = appendString(b, bl.ID)
		b = appendString(b, bl.Name)
		b = binary.AppendUvarint(b, uint64(len(bl.Data)))
		b = append(b, bl.Data...)
		if bl.IsError {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

// seed is key(-1): what, besides the turns, decides a summary's content.
func (s *summariser) seed() [32]byte {
	b := append(canonScratch[:0], "bardo-compress/1\x00"...)
	b = appendString(b, s.model)
	b = appendString(b, s.cfg.subsystem)
	b = appendString(b, s.cfg.instructions)
	b = binary.AppendUvarint(b, uint64(s.cfg.summaryMax))
	b = binary.AppendUvarint(b, uint64(s.cfg.maxBlockBytes))
	canonScratch = b
	return plugin.SHA256(b)
}

// chunkKeys returns the keys of the first n chunks whose ends are given.
func chunkKeys(seed [32]byte, msgs []wire.Message, ends []int, n int) [][32]byte {
	keys := make([][32]byte, n)
	prev, start := seed, 0
	for k := range n {
		b := append(canonScratch[:0], prev[:]...)
		for i := start; i < ends[k]; i++ {
			b = appendMessage(b, &msgs[i])
		}
		canonScratch = b
		prev = plugin.SHA256(b)
		keys[k] = prev
		start = ends[k]
	}
	return keys
}

// storeKey is the kv key of a summary (the host adds the plugin's and the
// tenant's namespace).
func storeKey(k [32]byte) string { return "s:" + hex.EncodeToString(k[:]) }

func encodeEntry(summary string) []byte {
	return append([]byte{entryVersion}, summary...)
}

func decodeEntry(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != entryVersion {
		return "", false
	}
	return string(v[1:]), true
}

// newest returns the newest stored summary among the chunks whose keys are
// given: its index (-1 when none is stored) and text. Entries this version
// cannot read are deleted and counted.
func (s *summariser) newest(keys [][32]byte) (int, string) {
	for k := len(keys) - 1; k >= 0; k-- {
		v, ok := plugin.KVGet(storeKey(keys[k]))
		if !ok {
			continue
		}
		if text, ok := decodeEntry(v); ok {
			return k, text
		}
		plugin.CounterAdd(metricEntryInvalid, 1)
		_ = plugin.KVDelete(storeKey(keys[k]))
	}
	return -1, ""
}

// calls groups the chunks after have up to the first n into summariser
// calls, as few as max_summary_input_tokens allows, and passes each group
// [from, to) (chunk indexes) to f: a conversation met for the first time
// costs one call (unless its history is very long), the next chunk of a
// known one another.
func (s *summariser) calls(p *plan, have, n int, f func(from, to, tokens int) error) error {
	for k := have + 1; k < n; {
		start := 0
		if k > 0 {
			start = p.ends[k-1]
		}
		last, tokens := k, sum(p.toks[start:p.ends[k]])
		for last+1 < n {
			more := sum(p.toks[p.ends[last]:p.ends[last+1]])
			if tokens+more > s.cfg.maxInput {
				break
			}
			last, tokens = last+1, tokens+more
		}
		if err := f(k, last+1, tokens); err != nil {
			return err
		}
		k = last + 1
	}
	return nil
}

// fold writes the summary of the first n chunks from prev, the stored
// summary of the first have+1 (have -1: none), and the turns after it,
// storing each summary it writes under its chunk's key.
func (s *summariser) fold(msgs []wire.Message, p *plan, keys [][32]byte, have int, prev string, n int) (string, error) {
	summary := prev
	err := s.calls(p, have, n, func(from, to, _ int) error {
		start := 0
		if from > 0 {
			start = p.ends[from-1]
		}
		var err error
		summary, err = s.complete(summary, msgs[start:p.ends[to-1]], start)
		if err != nil {
			return err
		}
		if err := plugin.KVPut(storeKey(keys[to-1]), encodeEntry(summary), s.cfg.ttl); err != nil {
			// The summary is still good for this request; the next one
			// will write it again.
			plugin.CounterAdd(metricStoreErrors, 1)
			plugin.Logf(plugin.LevelWarn, "compress: storing a summary failed: %v", err)
		}
		return nil
	})
	return summary, err
}

// callTokens estimates what folding chunks have+1..n-1 costs in summariser
// tokens: each call reads the instructions, the prompt's framing, the
// summary so far and its turns, and may write summary_max_tokens.
func (s *summariser) callTokens(p *plan, have int, prev string, n int) (in, out int) {
	frame := est(len(s.cfg.instructions)) + promptFrameTokens
	prevTokens := est(len(prev))
	_ = s.calls(p, have, n, func(_, _, tokens int) error {
		in += frame + prevTokens + tokens
		out += s.cfg.summaryMax
		prevTokens = s.cfg.summaryMax
		return nil
	})
	return in, out
}

// promptFrameTokens is about what prompt adds around the turns it renders
// (the requests, the tags, the labels of each line), in tokens.
const promptFrameTokens = 100

func sum(v []int) int {
	n := 0
	for _, x := range v {
		n += x
	}
	return n
}

// complete asks the summariser to fold turns (which follow the first offset
// turns of the conversation) into the summary so far.
func (s *summariser) complete(prev string, turns []wire.Message, offset int) (string, error) {
	r, err := plugin.Complete(plugin.Completion{
		Subsystem: s.cfg.subsystem,
		Model:     s.model,
		System:    s.cfg.instructions,
		Messages:  []plugin.CompletionMessage{{Role: "user", Text: s.prompt(prev, turns, offset)}},
		MaxTokens: s.cfg.summaryMax,
	})
	plugin.CounterAdd(metricCalls, 1)
	if err != nil {
		return "", fmt.Errorf("internal completion with %q: %w", s.model, err)
	}
	plugin.CounterAdd(metricSummaryIn, float64(r.InputTokens))
	plugin.CounterAdd(metricSummaryOut, float64(r.OutputTokens))
	text := strings.TrimSpace(r.Text)
	if text == "" {
		return "", errors.New("the summariser returned an empty summary")
	}
	return text, nil
}

// prompt is the summariser's user message: the summary so far, if any, and
// the turns to fold in as a plain transcript (one message keeps any
// provider's role rules satisfied, whatever the turns were).
func (s *summariser) prompt(prev string, turns []wire.Message, offset int) string {
	var b strings.Builder
	words := strconv.Itoa(s.cfg.summaryMax * 3 / 5)
	end := strconv.Itoa(offset + len(turns))
	if prev == "" {
		b.WriteString("Summarise the first " + end + " turns of this conversation:\n\n<conversation>\n")
	} else {
		b.WriteString("The summary of the first " + strconv.Itoa(offset) + " turns of the conversation so far:\n\n<summary>\n")
		b.WriteString(prev)
		b.WriteString("\n</summary>\n\nThe conversation continued with these turns:\n\n<conversation>\n")
	}
	renderTurns(&b, turns, s.cfg.maxBlockBytes)
	b.WriteString("</conversation>\n\n")
	if prev == "" {
		b.WriteString("Write the summary")
	} else {
		b.WriteString("Write the updated summary of all " + end + " turns, keeping what still matters from the summary so far")
	}
	b.WriteString(", in at most about " + words + " words.")
	return b.String()
}

// renderTurns writes turns as a transcript: one line per block, labelled by
// who said or did what. Thinking is left out (it is the model's scratch
// work, often long, and the answers it led to are there); blocks longer than
// maxBlock bytes keep their head and tail.
func renderTurns(b *strings.Builder, turns []wire.Message, maxBlock int) {
	var calls []wire.KV // tool call id → tool name, for labelling results
	for i := range turns {
		m := &turns[i]
		who := "User"
		if m.Role == "assistant" {
			who = "Assistant"
		}
		for j := range m.Content {
			bl := &m.Content[j]
			switch bl.Type {
			case wire.BlockText:
				if strings.TrimSpace(bl.Text) == "" {
					continue
				}
				b.WriteString(who + ": ")
				b.WriteString(clip(bl.Text, maxBlock))
			case wire.BlockToolUse:
				calls = append(calls, wire.KV{Key: bl.ID, Value: bl.Name})
				b.WriteString(who + " called tool " + bl.Name + ": ")
				b.WriteString(clip(string(bl.Data), maxBlock))
			case wire.BlockToolResult:
				name := "a tool"
				for _, c := range calls {
					if c.Key == bl.ID {
						name = c.Value
					}
				}
				if bl.IsError {
					b.WriteString("Error from " + name + ": ")
				} else {
					b.WriteString("Result of " + name + ": ")
				}
				content := bl.Text
				if len(bl.Data) > 0 {
					if content != "" {
						content += " "
					}
					content += string(bl.Data)
				}
				b.WriteString(clip(content, maxBlock))
			case wire.BlockImage:
				b.WriteString(who + ": [an image]")
			case wire.BlockDocument:
				b.WriteString(who + ": [a document]")
			case wire.BlockThinking, wire.BlockRedactedThinking:
				continue
			default:
				b.WriteString(who + ": [content of another kind]")
			}
			b.WriteByte('\n')
		}
	}
}

// clip shortens s to about limit bytes, keeping its head (three quarters) and
// tail, cut on rune boundaries.
func clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	head, tail := limit*3/4, limit/4
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	from := len(s) - tail
	for from < len(s) && !utf8.RuneStart(s[from]) {
		from++
	}
	return s[:head] + " […" + strconv.Itoa(from-head) + " bytes omitted…] " + s[from:]
}
