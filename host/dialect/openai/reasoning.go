package openai

import (
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/host/dialect/internal/dec"
	"github.com/bardoinference/bardo/host/dialect/internal/jsonx"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Reasoning details follow OpenRouter's convention for carrying reasoning
// that must be sent back verbatim (Anthropic's signed thinking) through the
// Chat Completions dialect: an assistant message (and a stream delta) may
// hold "reasoning_details", an array of
//
//	{"type":"reasoning.text","text":"…","signature":"…","format":"anthropic-claude-v1","index":0}
//	{"type":"reasoning.encrypted","data":"…","format":"anthropic-claude-v1","index":1}
//	{"type":"reasoning.summary","summary":"…","index":2}
//
// reasoning.text becomes a BlockThinking with its signature,
// reasoning.encrypted a BlockRedactedThinking and reasoning.summary an
// unsigned BlockThinking.
const (
	detailText      = "reasoning.text"
	detailEncrypted = "reasoning.encrypted"
	detailSummary   = "reasoning.summary"
	// FormatAnthropic is the reasoning_details "format" of Anthropic thinking.
	FormatAnthropic = "anthropic-claude-v1"
)

// decodeReasoningDetails reads a reasoning_details array into thinking and
// redacted thinking blocks. Entries of unknown types are skipped.
func decodeReasoningDetails(d dec.D, field string, val []byte) ([]wire.Block, error) {
	if jsonx.KindOf(val) != jsonx.Array {
		if jsonx.IsNull(val) {
			return nil, nil
		}
		return nil, d.Errf(field, "must be an array")
	}
	var out []wire.Block
	err := jsonx.ArrayEach(val, func(i int, item []byte) error {
		f := dec.Index(field, i)
		if err := d.Object(f, item); err != nil {
			return err
		}
		var typ, text, sig, summary string
		var data []byte
		err := jsonx.ObjectEach(item, func(rawKey, v []byte) error {
			if jsonx.IsNull(v) {
				return nil
			}
			var err error
			switch string(dec.K(rawKey)) {
			case "type":
				typ, err = d.Str(f+".type", v)
			case "text":
				text, err = d.Str(f+".text", v)
			case "signature":
				sig, err = d.Str(f+".signature", v)
			case "summary":
				summary, err = d.Str(f+".summary", v)
			case "data":
				if jsonx.KindOf(v) != jsonx.String {
					return d.Errf(f+".data", "must be a string")
				}
				data = v
			}
			return err
		})
		if err != nil {
			return err
		}
		switch typ {
		case detailText:
			out = append(out, wire.Block{Type: wire.BlockThinking, Text: text, Signature: sig})
		case detailEncrypted:
			if data != nil {
				out = append(out, wire.Block{Type: wire.BlockRedactedThinking, Data: data})
			}
		case detailSummary:
			if summary != "" {
				out = append(out, wire.Block{Type: wire.BlockThinking, Text: summary})
			}
		}
		return nil
	})
	return out, err
}

// needsDetails reports whether blocks hold reasoning that reasoning_content
// cannot carry: a signed thinking block or redacted thinking.
func needsDetails(blocks []wire.Block) bool {
	for i := range blocks {
		b := &blocks[i]
		if b.Type == wire.BlockRedactedThinking || b.Type == wire.BlockThinking && b.Signature != "" {
			return true
		}
	}
	return false
}

// appendTextDetail writes one reasoning.text entry.
func appendTextDetail(b []byte, text, sig string, index int) []byte {
	b = append(b, `{"type":"reasoning.text","text":`...)
	b = jsonx.AppendString(b, text)
	if sig != "" {
		b = append(b, `,"signature":`...)
		b = jsonx.AppendString(b, sig)
		b = append(b, `,"format":"`+FormatAnthropic+`"`...)
	}
	b = append(b, `,"index":`...)
	b = appendInt(b, index)
	return append(b, '}')
}

// appendEncryptedDetail writes one reasoning.encrypted entry; data is the
// redacted block's payload (raw JSON string, or the bare string).
func appendEncryptedDetail(b []byte, data []byte, index int) []byte {
	b = append(b, `{"type":"reasoning.encrypted","data":`...)
	if t := jsonx.TrimWS(data); jsonx.KindOf(t) == jsonx.String && jsonx.Valid(t) && !jsonx.HasNewline(t) {
		b = append(b, t...)
	} else {
		b = jsonx.AppendString(b, string(data))
	}
	b = append(b, `,"format":"`+FormatAnthropic+`","index":`...)
	b = appendInt(b, index)
	return append(b, '}')
}

func appendInt(b []byte, i int) []byte { return strconv.AppendInt(b, int64(i), 10) }

// appendReasoningDetails writes `,"reasoning_details":[…]` for the thinking
// and redacted thinking blocks, in order.
func appendReasoningDetails(b []byte, blocks []wire.Block) []byte {
	b = append(b, `,"reasoning_details":[`...)
	n := 0
	for i := range blocks {
		bl := &blocks[i]
		switch bl.Type {
		case wire.BlockThinking:
			if n > 0 {
				b = append(b, ',')
			}
			b = appendTextDetail(b, bl.Text, bl.Signature, n)
			n++
		case wire.BlockRedactedThinking:
			if n > 0 {
				b = append(b, ',')
			}
			b = appendEncryptedDetail(b, bl.Data, n)
			n++
		}
	}
	return append(b, ']')
}

// Leading <think> extraction: OpenAI-compatible servers running reasoning
// models (DeepSeek-R1 on llama.cpp, vLLM, Ollama) put the reasoning inline,
// as a leading "<think>…</think>" in content.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// splitThink splits content that starts (after optional whitespace) with
// <think> into the reasoning and the answer (leading whitespace trimmed). A
// <think> with no close (the answer was cut) is all reasoning. ok is false
// when content does not start with <think>.
func splitThink(s string) (thinking, text string, ok bool) {
	t := strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(t, thinkOpen) {
		return "", s, false
	}
	t = t[len(thinkOpen):]
	i := strings.Index(t, thinkClose)
	if i < 0 {
		return t, "", true
	}
	return t[:i], strings.TrimLeft(t[i+len(thinkClose):], " \t\r\n"), true
}
