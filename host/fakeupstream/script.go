package fakeupstream

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Behaviour describes how the server answers one generation request
// (POST /v1/chat/completions or POST /v1/messages). The zero value is the
// default echo reply.
//
// "The last user message" is the text of the last message on the user's
// side: an OpenAI "user" or "tool" message, an Anthropic "user" message (its
// text blocks, or else its tool_result contents). So after a tool round trip
// the fake echoes the tool result, and a magic phrase in the original
// question does not fire again. Fields combine: e.g. Thinking with CacheRead, or
// ToolCall with Latency and ChunkDelay.
type Behaviour struct {
	// Text replaces the default "echo: <last user message>" reply. With
	// ToolCall it is sent as a text part before the tool call; without
	// Text a tool-call reply has no text at all.
	Text string

	// ToolCall answers with one tool call (finish_reason "tool_calls",
	// stop_reason "tool_use"). ToolName defaults to the first tool declared
	// in the request, else "get_weather". ToolArguments is a JSON object;
	// it defaults to {"query":"<last user message>"}.
	ToolCall      bool
	ToolName      string
	ToolArguments string

	// Thinking prefixes the reply with reasoning: an Anthropic thinking
	// block with a signature, OpenAI reasoning_content. ThinkingText
	// defaults to "Thinking about: <last user message>".
	Thinking     bool
	ThinkingText string

	// Latency is waited before anything is sent; ChunkDelay between two
	// stream frames (slow drip).
	Latency    time.Duration
	ChunkDelay time.Duration

	// Hold, when non-nil, stops a stream after its first frame until the
	// channel is closed (or the client or server goes away), so a test can
	// keep many streams open at once and know they overlapped: it closes
	// the channel once Count shows them all arrived.
	Hold <-chan struct{}

	// ChunkBytes, when positive, streams the reply text in pieces of that
	// many bytes (cut mid-word, on rune boundaries) instead of a few words
	// per frame: a token such as "[EMAIL_1]" then straddles frames, as real
	// providers' tokenizers split it.
	ChunkBytes int

	// Status, when non-zero, answers with that HTTP error status and the
	// provider's error body (429 rate limit, 500, 502, 503, 529 overloaded,
	// others generic). A 429 always carries "retry-after: <RetryAfter>";
	// other statuses carry it only when RetryAfter > 0.
	Status     int
	RetryAfter int // seconds

	// CutStream closes the connection after CutAfter stream frames (for a
	// non-stream request: halfway through the body), so [DONE] /
	// message_stop never arrive.
	CutStream bool
	CutAfter  int

	// MalformedChunk inserts a frame whose data line is invalid JSON after
	// MalformedAfter frames, then carries on normally. For a non-stream
	// request the 200 body itself is invalid JSON.
	MalformedChunk bool
	MalformedAfter int

	// CacheRead tokens are reported as read from the prompt cache: OpenAI
	// prompt_tokens_details.cached_tokens (and included in prompt_tokens),
	// Anthropic cache_read_input_tokens. CacheWrite is Anthropic
	// cache_creation_input_tokens (OpenAI has no equivalent).
	CacheRead  int
	CacheWrite int
}

// Magic phrases: whitespace-separated words in the last user message. Several
// may be combined, e.g. "hello fake:thinking fake:cached=100 fake:drip=5ms".
const (
	PhraseTool       = "fake:tool"        // tool call; "fake:tool=<name>" sets ToolName
	PhraseArgs       = "fake:args"        // "fake:args=<JSON object without spaces>": the tool call's arguments
	PhraseThinking   = "fake:thinking"    // thinking / reasoning_content
	PhraseLatency    = "fake:latency"     // "fake:latency=<Go duration>"
	PhraseDrip       = "fake:drip"        // "fake:drip=<Go duration>" per stream frame
	PhraseChunk      = "fake:chunk"       // "fake:chunk=<bytes>": text frames of that many bytes
	PhraseStatus     = "fake:status"      // "fake:status=<code>", e.g. 429, 500, 502, 503, 529
	PhraseRetryAfter = "fake:retry-after" // "fake:retry-after=<seconds>"
	PhraseOverloaded = "fake:overloaded"  // same as fake:status=529
	PhraseCut        = "fake:cut"         // "fake:cut=<frames>" (default 2)
	PhraseMalformed  = "fake:malformed"   // "fake:malformed=<frames>" (default 2)
	PhraseCached     = "fake:cached"      // "fake:cached=<tokens>" cache read (default 1024)
	PhraseCacheWrite = "fake:cache-write" // "fake:cache-write=<tokens>" (default 1024)
)

// Reply returns a Behaviour answering with text.
func Reply(text string) Behaviour { return Behaviour{Text: text} }

// ToolCall returns a tool-call Behaviour; empty name/arguments use defaults.
func ToolCall(name, arguments string) Behaviour {
	return Behaviour{ToolCall: true, ToolName: name, ToolArguments: arguments}
}

// Thinking returns a Behaviour with reasoning before the text.
func Thinking() Behaviour { return Behaviour{Thinking: true} }

// Latency returns a Behaviour waiting d before answering.
func Latency(d time.Duration) Behaviour { return Behaviour{Latency: d} }

// Drip returns a Behaviour waiting perFrame between stream frames.
func Drip(perFrame time.Duration) Behaviour { return Behaviour{ChunkDelay: perFrame} }

// Fail returns a Behaviour answering with the HTTP error status.
func Fail(status int) Behaviour { return Behaviour{Status: status} }

// RateLimited returns a 429 Behaviour with "retry-after: <seconds>".
func RateLimited(retryAfterSeconds int) Behaviour {
	return Behaviour{Status: 429, RetryAfter: retryAfterSeconds}
}

// Overloaded returns a 529 Behaviour (Anthropic overloaded_error).
func Overloaded() Behaviour { return Behaviour{Status: 529} }

// CutAfter returns a Behaviour closing the stream after n frames.
func CutAfter(n int) Behaviour { return Behaviour{CutStream: true, CutAfter: n} }

// MalformedAfter returns a Behaviour inserting an invalid JSON frame after n frames.
func MalformedAfter(n int) Behaviour { return Behaviour{MalformedChunk: true, MalformedAfter: n} }

// Cached returns a Behaviour reporting cache read and write tokens.
func Cached(read, write int) Behaviour { return Behaviour{CacheRead: read, CacheWrite: write} }

// Combine merges behaviours; for each field the last non-zero value wins.
func Combine(bs ...Behaviour) Behaviour {
	var o Behaviour
	for _, b := range bs {
		o.Text = pick(o.Text, b.Text)
		o.ToolCall = o.ToolCall || b.ToolCall
		o.ToolName = pick(o.ToolName, b.ToolName)
		o.ToolArguments = pick(o.ToolArguments, b.ToolArguments)
		o.Thinking = o.Thinking || b.Thinking
		o.ThinkingText = pick(o.ThinkingText, b.ThinkingText)
		o.Latency = pick(o.Latency, b.Latency)
		o.ChunkDelay = pick(o.ChunkDelay, b.ChunkDelay)
		o.Hold = pick(o.Hold, b.Hold)
		o.Status = pick(o.Status, b.Status)
		o.RetryAfter = pick(o.RetryAfter, b.RetryAfter)
		if b.CutStream {
			o.CutStream, o.CutAfter = true, b.CutAfter
		}
		if b.MalformedChunk {
			o.MalformedChunk, o.MalformedAfter = true, b.MalformedAfter
		}
		o.CacheRead = pick(o.CacheRead, b.CacheRead)
		o.CacheWrite = pick(o.CacheWrite, b.CacheWrite)
	}
	return o
}

func pick[T comparable](old, new T) T {
	var zero T
	if new != zero {
		return new
	}
	return old
}

// Script queues behaviours for the next generation requests, consumed in
// order, one per request that passes authentication and validation. When the
// queue is empty, magic phrases and then the default behaviour apply.
func (s *Server) Script(bs ...Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, bs...)
}

// Pending returns how many scripted behaviours are not consumed yet.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script)
}

// next picks the behaviour for a request whose last user message is text.
func (s *Server) next(text string) Behaviour {
	s.mu.Lock()
	if len(s.script) > 0 {
		b := s.script[0]
		s.script = s.script[1:]
		s.mu.Unlock()
		return b
	}
	s.mu.Unlock()
	if b, ok := parsePhrases(text); ok {
		return b
	}
	return s.cfg.fallback
}

// parsePhrases reads the magic phrases in text; ok is false if there are none.
func parsePhrases(text string) (b Behaviour, ok bool) {
	for _, word := range strings.Fields(text) {
		if !strings.HasPrefix(word, "fake:") {
			continue
		}
		name, val, hasVal := strings.Cut(word, "=")
		num := func(def int) int {
			if n, err := strconv.Atoi(val); hasVal && err == nil {
				return n
			}
			return def
		}
		dur := func() time.Duration {
			d, _ := time.ParseDuration(val)
			return d
		}
		switch name {
		case PhraseTool:
			b.ToolCall, b.ToolName = true, val
		case PhraseArgs:
			// Real agents' tools need real arguments (a file path), which
			// the default {"query": …} does not give them. opencode sends
			// the user's text JSON-quoted, so the object may arrive escaped.
			b.ToolArguments = val
			if u, err := strconv.Unquote(`"` + val + `"`); !json.Valid([]byte(val)) && err == nil && json.Valid([]byte(u)) {
				b.ToolArguments = u
			}
		case PhraseThinking:
			b.Thinking = true
		case PhraseLatency:
			b.Latency = dur()
		case PhraseDrip:
			b.ChunkDelay = dur()
		case PhraseChunk:
			b.ChunkBytes = num(3)
		case PhraseStatus:
			b.Status = num(500)
		case PhraseRetryAfter:
			b.RetryAfter = num(1)
		case PhraseOverloaded:
			b.Status = 529
		case PhraseCut:
			b.CutStream, b.CutAfter = true, num(2)
		case PhraseMalformed:
			b.MalformedChunk, b.MalformedAfter = true, num(2)
		case PhraseCached:
			b.CacheRead = num(1024)
		case PhraseCacheWrite:
			b.CacheWrite = num(1024)
		default:
			continue // unknown words are ignored
		}
		ok = true
	}
	return b, ok
}

// reply is a provider-neutral answer, rendered by openai.go and anthropic.go.
type reply struct {
	thinking, signature string
	text                string
	toolID, toolName    string
	toolArgs            string
	truncated           bool // stopped by the request's max tokens
	chunkBytes          int  // Behaviour.ChunkBytes

	inputTokens     int // uncached prompt tokens
	cacheRead       int
	cacheWrite      int
	reasoningTokens int
	outputTokens    int // includes reasoningTokens
}

// buildReply resolves b against a request. lastUser is the last user message
// text, promptText all message texts, firstTool the first declared tool name
// and maxTokens the request's output limit (0: none).
func buildReply(b Behaviour, lastUser, promptText, firstTool string, maxTokens int, toolPrefix string) reply {
	r := reply{inputTokens: estimateTokens(promptText), cacheRead: b.CacheRead, cacheWrite: b.CacheWrite, chunkBytes: b.ChunkBytes}
	r.text = b.Text
	if r.text == "" && !b.ToolCall {
		r.text = "echo: " + lastUser
	}
	if b.Thinking {
		r.thinking = b.ThinkingText
		if r.thinking == "" {
			r.thinking = "Thinking about: " + lastUser
		}
		sum := sha256.Sum256([]byte(r.thinking))
		r.signature = base64.StdEncoding.EncodeToString(append(sum[:], sum[:]...))
	}
	if b.ToolCall {
		r.toolID = newID(toolPrefix, 24)
		r.toolName = pick(pick("get_weather", firstTool), b.ToolName)
		r.toolArgs = b.ToolArguments
		if r.toolArgs == "" {
			a, _ := json.Marshal(map[string]string{"query": lastUser})
			r.toolArgs = string(a)
		}
	} else if maxTokens > 0 && estimateTokens(r.text) > maxTokens {
		r.text, r.truncated = truncateTokens(r.text, maxTokens), true
	}
	r.reasoningTokens = estimateTokens(r.thinking)
	r.outputTokens = r.reasoningTokens + estimateTokens(r.text) + estimateTokens(r.toolName+r.toolArgs)
	return r
}

// textPieces cuts the reply text into stream frames: a few words each, or
// ChunkBytes bytes each when set.
func (r *reply) textPieces() []string {
	if r.chunkBytes > 0 {
		return splitBytes(r.text, r.chunkBytes)
	}
	return splitWords(r.text, 3)
}
