// Package fakeupstream is the one fake LLM provider used by the test suite.
//
// A Server speaks the real wire formats of the OpenAI Chat Completions API
// (POST /v1/chat/completions, GET /v1/models), OpenAI's embeddings
// (POST /v1/embeddings, embeddings.go), the OpenAI Responses API
// (POST /v1/responses, responses.go) and the Anthropic Messages API
// (POST /v1/messages, POST /v1/messages/count_tokens): the same JSON shapes,
// the same server-sent-event framing, the same authentication checks and the
// same error statuses and bodies. It listens on 127.0.0.1 only.
//
// By default it answers "echo: <last user message text>" with a token usage
// estimated as ceil(bytes/4). Other behaviours (tool calls, thinking, latency,
// errors, broken streams, cached usage, streams held open until the test
// releases them) are chosen per request, either from a
// queue filled by the test with Script, or by magic phrases such as
// "fake:tool" in the last user message (see Behaviour and the constants
// below). Every request the server receives is recorded verbatim. With
// WithPromptCaching it also simulates Anthropic's and OpenAI's prompt caches,
// reports them in the real usage fields and keeps a bill per call
// (promptcache.go), so replays can be priced.
package fakeupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// DefaultAPIKey is the key the server expects unless WithAPIKey is given.
const DefaultAPIKey = "sk-fakeupstream-test-key"

// DefaultModels are listed by GET /v1/models unless WithModels is given.
var DefaultModels = []string{"gpt-4o", "gpt-4o-mini", "o3-mini"}

// Server is a running fake upstream. Its methods are safe for concurrent use.
type Server struct {
	ts       *httptest.Server
	cfg      config
	done     chan struct{}
	doneOnce sync.Once

	mu     sync.Mutex
	reqs   []Recorded
	counts map[string]int
	script []Behaviour
}

// Recorded is one request as the server received it.
type Recorded struct {
	Method   string
	Path     string // URL path, e.g. "/v1/chat/completions"
	RawQuery string
	Header   http.Header
	Body     []byte // raw body bytes, exactly as received
	Time     time.Time
}

type config struct {
	apiKey   string
	models   []string
	fallback Behaviour
	pcache   *promptCache // WithPromptCaching (promptcache.go)
}

// Option configures a Server.
type Option func(*config)

// WithAPIKey sets the key both providers expect: OpenAI as
// "Authorization: Bearer <key>", Anthropic as "x-api-key: <key>".
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithModels sets the model ids listed by GET /v1/models.
func WithModels(ids ...string) Option {
	return func(c *config) { c.models = append([]string(nil), ids...) }
}

// WithDefaultBehaviour sets the behaviour used when neither the script queue
// nor a magic phrase selects one (e.g. a constant Latency for benchmarks).
func WithDefaultBehaviour(b Behaviour) Option { return func(c *config) { c.fallback = b } }

// New starts a server on 127.0.0.1 with a random port.
func New(opts ...Option) *Server {
	cfg := config{apiKey: DefaultAPIKey, models: DefaultModels}
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{cfg: cfg, done: make(chan struct{}), counts: map[string]int{}}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serveHTTP))
	return s
}

// URL is the base URL, e.g. "http://127.0.0.1:41234" (no trailing slash).
func (s *Server) URL() string { return s.ts.URL }

// Close stops the server. Handlers that are sleeping (Latency, ChunkDelay)
// are woken and abort their connection so Close does not hang.
func (s *Server) Close() {
	s.doneOnce.Do(func() { close(s.done) })
	s.ts.Close()
}

// Requests returns copies of every request received so far, oldest first.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.clone()
	}
	return out
}

// Last returns the most recent request, or the zero Recorded if none.
func (s *Server) Last() Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Recorded{}
	}
	return s.reqs[len(s.reqs)-1].clone()
}

// Count returns how many requests were received on path (any method).
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[path]
}

// Counts returns a copy of the per-path request counters.
func (s *Server) Counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.counts))
	for k, v := range s.counts {
		out[k] = v
	}
	return out
}

// Reset forgets recorded requests, counters and any unconsumed script.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs, s.counts, s.script = nil, map[string]int{}, nil
}

func (r Recorded) clone() Recorded {
	r.Header = r.Header.Clone()
	r.Body = bytes.Clone(r.Body)
	return r
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, Recorded{
		Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery,
		Header: r.Header.Clone(), Body: body, Time: time.Now(),
	})
	s.counts[r.URL.Path]++
	s.mu.Unlock()

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.openAIChat(w, r, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		s.openAIResponses(w, r, body) // responses.go
	case r.Method == http.MethodPost && r.URL.Path == "/v1/embeddings":
		s.openAIEmbeddings(w, r, body) // embeddings.go
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		s.openAIModels(w, r)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.anthropicMessages(w, r, body)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		s.anthropicCountTokens(w, r, body)
	case strings.HasPrefix(r.URL.Path, "/v1/messages") || r.Header.Get("anthropic-version") != "":
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not Found")
	case s.venice(w, r, body): // Venice's /api/v1 paths, answered by the call (venice.go)
	case s.gemini(w, r, body): // Gemini API paths, answered by the call (gemini.go)
	default:
		openAIError(w, http.StatusNotFound, "Invalid URL ("+r.Method+" "+r.URL.Path+")", "invalid_request_error", nil, nil)
	}
}

// sleep waits d, returning false if the client went away or the server is closing.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// wait blocks until hold is closed, returning false if the client went away
// or the server is closing.
func (s *Server) wait(ctx context.Context, hold <-chan struct{}) bool {
	select {
	case <-hold:
		return true
	case <-ctx.Done():
	case <-s.done:
	}
	return false
}

// abort closes the connection without finishing the response.
func abort(w http.ResponseWriter) {
	_ = http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // programming error: every payload here is marshalable
	}
	writeRaw(w, status, b)
}

func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// estimateTokens is the fake's tokenizer: ceil(len(bytes)/4).
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

const idAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func newID(prefix string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = idAlphabet[rand.IntN(len(idAlphabet))]
	}
	return prefix + string(b)
}

// splitWords cuts text into pieces of a few words; joined, they equal text.
func splitWords(text string, perChunk int) []string {
	words := strings.SplitAfter(text, " ")
	var out []string
	for i := 0; i < len(words); i += perChunk {
		piece := strings.Join(words[i:min(i+perChunk, len(words))], "")
		if piece != "" {
			out = append(out, piece)
		}
	}
	return out
}

// splitBytes cuts s into pieces of about size bytes on rune boundaries.
func splitBytes(s string, size int) []string {
	var out []string
	for len(s) > size {
		i := size
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		if i == 0 {
			i = size
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// truncateTokens cuts text to at most limit estimated tokens.
func truncateTokens(text string, limit int) string {
	n := limit * 4
	if n >= len(text) {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

// prepare applies a behaviour's latency and scripted error status. It
// returns false when the response was already written (the error).
func (s *Server) prepare(w http.ResponseWriter, r *http.Request, b Behaviour, fail func(status int)) bool {
	if !s.sleep(r.Context(), b.Latency) {
		abort(w)
	}
	if b.Status == 0 {
		return true
	}
	if b.Status == http.StatusTooManyRequests || b.RetryAfter > 0 {
		w.Header().Set("retry-after", strconv.Itoa(b.RetryAfter))
	}
	fail(b.Status)
	return false
}

// finishJSON writes a 200 non-stream body, honouring CutStream (the body
// stops halfway and the connection closes) and MalformedChunk (the body is
// not valid JSON).
func finishJSON(w http.ResponseWriter, b Behaviour, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	switch {
	case b.CutStream:
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		abort(w)
	case b.MalformedChunk:
		writeRaw(w, http.StatusOK, body[:len(body)/2])
	default:
		writeRaw(w, http.StatusOK, body)
	}
}
