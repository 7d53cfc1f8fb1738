package adapter

import "github.com/bardoinference/bardo/sdk/wire"

// EstimateTokens approximates a token count as one token per four bytes,
// rounded up: the documented rule of thumb for English text with BPE
// tokenizers. It is an estimate, used where no tokenizer is available.
func EstimateTokens(s string) int64 { return int64((len(s) + 3) / 4) }

// RequestTokens estimates the input tokens of a request: system
// blocks, message text, tool results and tool definitions.
func RequestTokens(r *wire.Request) int64 {
	var n int64
	for _, b := range r.System {
		n += EstimateTokens(b.Text)
	}
	for _, m := range r.Messages {
		n += 4 // per-message framing, as chat templates add role markers
		for _, b := range m.Content {
			n += EstimateTokens(b.Text) + EstimateTokens(string(b.Data))
		}
	}
	for _, t := range r.Tools {
		n += EstimateTokens(t.Name) + EstimateTokens(t.Description) + EstimateTokens(string(t.Schema))
	}
	return n
}

// LastUserText returns the text of the last user message (its text blocks
// joined), or "" when there is none.
func LastUserText(r *wire.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := &r.Messages[i]
		if m.Role != "user" {
			continue
		}
		s := ""
		for _, b := range m.Content {
			if b.Type == wire.BlockText {
				if s != "" {
					s += "\n"
				}
				s += b.Text
			}
		}
		if s != "" {
			return s
		}
	}
	return ""
}
