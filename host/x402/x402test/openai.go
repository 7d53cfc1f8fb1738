package x402test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bardoinference/bardo/host/x402"
)

// OpenAI wire types, fields in the order the real API sends them.

type chatRequest struct {
	Model         string        `json:"model"`
	Messages      []chatMessage `json:"messages"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type completion struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Created           int64    `json:"created"`
	Model             string   `json:"model"`
	Choices           []choice `json:"choices"`
	Usage             usage    `json:"usage"`
	ServiceTier       string   `json:"service_tier"`
	SystemFingerprint string   `json:"system_fingerprint"`
}

type choice struct {
	Index        int       `json:"index"`
	Message      message   `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type message struct {
	Role        string     `json:"role"`
	Content     string     `json:"content"`
	Refusal     *string    `json:"refusal"`
	Annotations []struct{} `json:"annotations"`
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
		AudioTokens  int `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int `json:"reasoning_tokens"`
		AudioTokens              int `json:"audio_tokens"`
		AcceptedPredictionTokens int `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type chunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role    string          `json:"role,omitempty"`
	Content *string         `json:"content,omitempty"`
	Refusal json.RawMessage `json:"refusal,omitempty"`
}

const fingerprint = "fp_b10c4a402f"

// contentText returns a message content's text: a string, or the text
// parts of an array joined by "\n".
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// promptTokens estimates a prompt's tokens as BlockRun does for pricing:
// about four bytes a token plus a few tokens of framing per message.
func promptTokens(msgs []chatMessage) int {
	n := 3
	for _, m := range msgs {
		n += 4 + (len(contentText(m.Content))+3)/4
	}
	return n
}

// Reply is the text the fake answers a prompt with.
func Reply(model, prompt string) string {
	return fmt.Sprintf("Paid answer from %s to: %s", model, prompt)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	type pricing struct {
		Input  float64 `json:"input"`
		Output float64 `json:"output"`
	}
	type entry struct {
		ID            string  `json:"id"`
		Object        string  `json:"object"`
		Created       int64   `json:"created"`
		OwnedBy       string  `json:"owned_by"`
		ContextWindow int     `json:"context_window,omitempty"`
		Pricing       pricing `json:"pricing"`
		Billing       string  `json:"billing"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []entry `json:"data"`
	}{Object: "list", Data: []entry{}}
	for _, m := range s.opts.Models {
		billing := "paid"
		if m.InputPerM == 0 && m.OutputPerM == 0 {
			billing = "free"
		}
		list.Data = append(list.Data, entry{
			ID: m.ID, Object: "model", Created: 1735689600, OwnedBy: m.OwnedBy,
			ContextWindow: m.Context, Pricing: pricing{m.InputPerM, m.OutputPerM}, Billing: billing,
		})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		openAIError(w, http.StatusBadRequest, "could not read the request body", "invalid_request_error")
		return
	}
	var req chatRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		openAIError(w, http.StatusBadRequest, "We could not parse the JSON body of your request.", "invalid_request_error")
		return
	}
	if len(req.Messages) == 0 {
		openAIError(w, http.StatusBadRequest, "Invalid 'messages': empty array.", "invalid_request_error")
		return
	}
	m, ok := s.models[req.Model]
	if !ok {
		openAIError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model), "invalid_request_error")
		return
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens > 0 {
		maxTokens = req.MaxCompletionTokens
	}
	if maxTokens <= 0 {
		maxTokens = 1024
	}
	in := promptTokens(req.Messages)
	price := Price(m, in, maxTokens)

	s.mu.Lock()
	forced := s.failure.Price
	s.mu.Unlock()
	var sr *x402.SettlementResponse
	if price > 0 || forced > 0 {
		var ok bool
		if sr, ok = s.pay(w, r, price, m.ID); !ok {
			return
		}
		s.settlementHeader(w, sr)
	}

	words := strings.SplitAfter(Reply(m.ID, lastUserText(req.Messages)), " ")
	finish := "stop"
	if len(words) > maxTokens {
		words, finish = words[:maxTokens], "length"
	}
	out := len(words)
	u := usage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
	id := fmt.Sprintf("chatcmpl-x402%016x", time.Now().UnixNano())
	created := s.opts.Now().Unix()

	if !req.Stream {
		if sr == nil {
			s.count(func(c *Counters) { c.Free++ })
		} else {
			s.count(func(c *Counters) { c.Paid++ })
		}
		writeJSON(w, http.StatusOK, completion{
			ID: id, Object: "chat.completion", Created: created, Model: m.ID,
			Choices: []choice{{Message: message{Role: "assistant", Content: strings.Join(words, ""),
				Annotations: []struct{}{}}, FinishReason: finish}},
			Usage: u, ServiceTier: "default", SystemFingerprint: fingerprint,
		})
		return
	}
	s.stream(w, &req, id, created, m.ID, words, finish, u, sr != nil)
}

// stream writes the completion as OpenAI's chat.completion.chunk events:
// a role chunk, one chunk per word, a finish chunk, the usage chunk when
// stream_options.include_usage, then data: [DONE].
func (s *Server) stream(w http.ResponseWriter, req *chatRequest, id string, created int64, model string, words []string, finish string, u usage, paid bool) {
	s.mu.Lock()
	cut := s.failure.CutStreamAfter
	s.mu.Unlock()
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	base := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		ServiceTier: "default", SystemFingerprint: fingerprint}
	if includeUsage {
		base.Usage = json.RawMessage("null")
	}
	send := func(c chunk) bool {
		b, _ := json.Marshal(c)
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	empty := ""
	first := base
	first.Choices = []chunkChoice{{Delta: delta{Role: "assistant", Content: &empty, Refusal: json.RawMessage("null")}}}
	if !send(first) {
		return
	}
	for i, word := range words {
		if cut > 0 && i == cut {
			// Abort the connection mid-stream, without [DONE].
			panic(http.ErrAbortHandler)
		}
		c := base
		word := word
		c.Choices = []chunkChoice{{Delta: delta{Content: &word}}}
		if !send(c) {
			return
		}
	}
	last := base
	last.Choices = []chunkChoice{{Delta: delta{}, FinishReason: &finish}}
	if !send(last) {
		return
	}
	if includeUsage {
		uc := base
		uc.Choices = []chunkChoice{}
		uc.Usage, _ = json.Marshal(u)
		if !send(uc) {
			return
		}
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	if paid {
		s.count(func(c *Counters) { c.Paid++ })
	} else {
		s.count(func(c *Counters) { c.Free++ })
	}
}
