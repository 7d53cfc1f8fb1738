package pricing

import (
	"bytes"

	"github.com/bardoinference/bardo/sdk/jsonscan"
	"github.com/bardoinference/bardo/sdk/wire"
)

// BodyUsage reads the usage of a complete (non-stream) response body in
// either dialect, without decoding or copying it: OpenAI's top-level
// usage.prompt_tokens (cached tokens included: subtracted),
// completion_tokens, prompt_tokens_details.cached_tokens and
// .cache_write_tokens (OpenRouter), DeepSeek's prompt_cache_hit_tokens;
// Anthropic's usage.input_tokens (cache excluded), output_tokens,
// cache_read_input_tokens and cache_creation_input_tokens. ok is false when
// the body has no usage object.
func BodyUsage(body []byte) (u wire.Usage, ok bool) {
	var acc usageAcc
	jsonscan.EachMember(body, func(k, v []byte) {
		if string(k) == "usage" {
			acc.merge(v)
		}
	})
	return acc.u, acc.seen
}

// usageAcc accumulates usage objects: a field present in a later object
// replaces the earlier value (Anthropic's message_delta usage is
// cumulative; OpenAI's last chunk carries the whole usage).
type usageAcc struct {
	u    wire.Usage
	seen bool
}

// merge reads one usage object.
func (a *usageAcc) merge(obj []byte) {
	i := jsonscan.SkipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return // null in an OpenAI chunk without usage
	}
	var prompt, cached, written, hit, respCached int64
	var hasPrompt, hasCached, hasWritten, hasHit, hasRespCached bool
	jsonscan.EachMember(obj, func(k, v []byte) {
		n, isInt := tokenCount(v)
		switch string(k) {
		// Anthropic
		case "input_tokens":
			if isInt {
				a.u.InputTokens, a.seen = n, true
			}
		case "output_tokens":
			if isInt {
				a.u.OutputTokens, a.seen = n, true
			}
		case "cache_read_input_tokens":
			if isInt {
				a.u.CacheReadTokens, a.seen = n, true
			}
		case "cache_creation_input_tokens":
			if isInt {
				a.u.CacheWriteTokens, a.seen = n, true
			}
		// OpenAI
		case "prompt_tokens":
			prompt, hasPrompt = n, isInt
		case "completion_tokens":
			if isInt {
				a.u.OutputTokens, a.seen = n, true
			}
		case "prompt_cache_hit_tokens": // DeepSeek
			hit, hasHit = n, isInt
		// OpenAI Responses: input_tokens includes the cached ones
		case "input_tokens_details":
			jsonscan.EachMember(v, func(k2, v2 []byte) {
				if string(k2) == "cached_tokens" {
					respCached, hasRespCached = tokenCount(v2)
				}
			})
		case "prompt_tokens_details":
			jsonscan.EachMember(v, func(k2, v2 []byte) {
				switch string(k2) {
				case "cached_tokens":
					cached, hasCached = tokenCount(v2)
				case "cache_write_tokens": // OpenRouter
					written, hasWritten = tokenCount(v2)
				}
			})
		}
	})
	if hasRespCached && !hasPrompt {
		c := min(respCached, a.u.InputTokens)
		a.u.InputTokens -= c
		a.u.CacheReadTokens = c
	}
	if !hasPrompt {
		return
	}
	a.seen = true
	if !hasCached && hasHit {
		cached = hit
	}
	if !hasWritten {
		written = 0
	}
	// prompt_tokens includes the cached (and OpenRouter's written) tokens;
	// canonical InputTokens does not. Clamp against a provider's odd sums.
	cached = min(cached, prompt)
	written = min(written, prompt-cached)
	a.u.InputTokens = prompt - cached - written
	a.u.CacheReadTokens = cached
	a.u.CacheWriteTokens = written
}

// tokenCount reads a non-negative JSON integer; a fraction is truncated,
// anything else (null, a string, a negative number) is not a count.
func tokenCount(v []byte) (int64, bool) {
	if len(v) == 0 || v[0] < '0' || v[0] > '9' {
		return 0, false
	}
	var n int64
	for _, c := range v {
		if c < '0' || c > '9' {
			break
		}
		if n > (1<<62)/10 {
			return 1 << 62, true // absurd, but saturate rather than wrap
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// maxLine bounds one buffered SSE line: a longer line is skipped (no
// upstream puts usage in a multi-megabyte line; memory stays bounded).
const maxLine = 1 << 20

// StreamUsage reads the usage of a streamed answer in either dialect from
// its SSE bytes, as they pass through, without re-encoding them: OpenAI's
// chunk usage (the last non-null one; stream_options.include_usage), and
// Anthropic's message_start message.usage updated by message_delta usage.
// Write it the bytes in any chunking (it is an io.Writer), or hand it each
// event's data with Event. The zero StreamUsage is ready; after the first
// lines its buffers are reused, so it does not allocate per event.
type StreamUsage struct {
	acc      usageAcc
	line     []byte // a line not yet terminated
	data     []byte // the current event's data lines, joined by '\n'
	hasData  bool
	skipping bool // inside an over-long line
	cr       bool // the last byte seen was '\r'
}

// Usage returns the usage read so far; ok is false while none was seen.
func (s *StreamUsage) Usage() (u wire.Usage, ok bool) { return s.acc.u, s.acc.seen }

// Reset forgets everything but keeps the buffers.
func (s *StreamUsage) Reset() {
	*s = StreamUsage{line: s.line[:0], data: s.data[:0]}
}

// Event reads one SSE event's data (a JSON chunk or event; "[DONE]" and
// anything without usage are ignored).
func (s *StreamUsage) Event(data []byte) {
	if !bytes.Contains(data, usageKey) {
		return // most chunks are content: skip them at memchr speed
	}
	jsonscan.EachMember(data, func(k, v []byte) {
		switch string(k) {
		case "usage": // OpenAI chunk, Anthropic message_delta
			s.acc.merge(v)
		case "message", "response": // Anthropic message_start; Responses' response.completed
			jsonscan.EachMember(v, func(k2, v2 []byte) {
				if string(k2) == "usage" {
					s.acc.merge(v2)
				}
			})
		}
	})
}

var usageKey = []byte(`"usage"`)

// Write reads SSE bytes (lines end in \n, \r\n or \r; events end at a
// blank line). It never fails.
func (s *StreamUsage) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if s.cr && p[0] == '\n' { // the \n of a \r\n split across writes
			p = p[1:]
			s.cr = false
			continue
		}
		s.cr = false
		i := bytes.IndexAny(p, "\r\n")
		if i < 0 {
			s.buffer(p)
			return n, nil
		}
		if p[i] == '\r' {
			if i+1 < len(p) {
				if p[i+1] == '\n' {
					i++ // consume \r\n as one ending
				}
			} else {
				s.cr = true
			}
		}
		end := i
		if p[end] == '\n' && end > 0 && p[end-1] == '\r' {
			end--
		}
		if s.skipping {
			s.skipping = false
			s.line = s.line[:0]
		} else if len(s.line) > 0 {
			s.buffer(p[:end])
			if !s.skipping {
				s.lineDone(s.line)
			}
			s.skipping = false
			s.line = s.line[:0]
		} else {
			s.lineDone(p[:end])
		}
		p = p[i+1:]
	}
	return n, nil
}

// Close dispatches an event the stream ended without a blank line after.
func (s *StreamUsage) Close() error {
	if len(s.line) > 0 && !s.skipping {
		s.lineDone(s.line)
		s.line = s.line[:0]
	}
	s.lineDone(nil)
	return nil
}

// buffer keeps part of an unterminated line, or starts skipping it.
func (s *StreamUsage) buffer(p []byte) {
	if s.skipping {
		return
	}
	if len(s.line)+len(p) > maxLine {
		s.skipping = true
		s.line = s.line[:0]
		return
	}
	s.line = append(s.line, p...)
}

// lineDone handles one complete line (without its ending).
func (s *StreamUsage) lineDone(line []byte) {
	if len(line) == 0 {
		if s.hasData {
			s.Event(s.data)
		}
		s.data, s.hasData = s.data[:0], false
		return
	}
	if !bytes.HasPrefix(line, dataField) {
		return // event:, id:, retry:, comments
	}
	v := line[len(dataField):]
	if len(v) > 0 && v[0] == ' ' {
		v = v[1:]
	}
	if s.hasData {
		if len(s.data)+1+len(v) > maxLine {
			return
		}
		s.data = append(s.data, '\n')
	}
	s.data = append(s.data, v...)
	s.hasData = true
}

var dataField = []byte("data:")
