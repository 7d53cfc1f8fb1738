package fakeupstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Anthropic wire types, fields in the order the real API sends them.

type anRequest struct {
	Model     string          `json:"model"`
	Messages  *[]anInMessage  `json:"messages"`
	System    json.RawMessage `json:"system"`
	MaxTokens *int            `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type anInMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anMessage struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []anBlock `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anUsage   `json:"usage"`
}

type anBlock struct {
	Type      string          `json:"type"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	Text      *string         `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type anUsage struct {
	InputTokens              int    `json:"input_tokens"`
	CacheCreationInputTokens int    `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int    `json:"cache_read_input_tokens"`
	OutputTokens             int    `json:"output_tokens"`
	ServiceTier              string `json:"service_tier,omitempty"`
}

type anDelta struct {
	Type        string  `json:"type,omitempty"`
	Text        *string `json:"text,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
}

type anEvent struct {
	Type         string     `json:"type"`
	Message      *anMessage `json:"message,omitempty"`
	Index        *int       `json:"index,omitempty"`
	ContentBlock *anBlock   `json:"content_block,omitempty"`
	Delta        any        `json:"delta,omitempty"`
	Usage        *anUsage   `json:"usage,omitempty"`
}

const anRateLimited = "This request would exceed the rate limit for your organization (org-fakeupstream) of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase."

// anthropicError writes {"type":"error","error":{...},"request_id":"req_..."}
// with the matching request-id header.
func anthropicError(w http.ResponseWriter, status int, typ, message string) {
	rid := w.Header().Get("request-id")
	if rid == "" {
		rid = newID("req_011C", 20)
		w.Header().Set("request-id", rid)
	}
	type detail struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	writeJSON(w, status, struct {
		Type      string `json:"type"`
		Error     detail `json:"error"`
		RequestID string `json:"request_id"`
	}{"error", detail{typ, message}, rid})
}

// anthropicFail writes the error Anthropic answers with for a scripted status.
func anthropicFail(w http.ResponseWriter, status int) {
	switch status {
	case http.StatusTooManyRequests:
		anthropicError(w, status, "rate_limit_error", anRateLimited)
	case http.StatusInternalServerError:
		anthropicError(w, status, "api_error", "Internal server error")
	case http.StatusGatewayTimeout:
		anthropicError(w, status, "timeout_error", "Request timeout")
	case 529:
		anthropicError(w, status, "overloaded_error", "Overloaded")
	default:
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "api_error"
		}
		anthropicError(w, status, typ, http.StatusText(status))
	}
}

func (s *Server) anthropicAuth(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("request-id", newID("req_011C", 20))
	switch key := r.Header.Get("x-api-key"); {
	case key == "":
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
	case key != s.cfg.apiKey:
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
	case r.Header.Get("anthropic-version") == "":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
	default:
		return true
	}
	return false
}

// decodeAnthropic authenticates, parses and validates a request; it returns
// false when it already answered with an error.
func (s *Server) decodeAnthropic(w http.ResponseWriter, r *http.Request, body []byte, req *anRequest, needMax bool) bool {
	if !s.anthropicAuth(w, r) {
		return false
	}
	var probe any
	if err := json.Unmarshal(body, &probe); err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "The request body is not valid JSON: "+jsonErrorPosition(body, err))
		return false
	}
	if err := json.Unmarshal(body, req); err != nil {
		var te *json.UnmarshalTypeError
		field := "body"
		if errors.As(err, &te) {
			field = te.Field
		}
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", field+": Input should be a valid "+kindName(err))
		return false
	}
	missing := ""
	switch {
	case req.Model == "":
		missing = "model"
	case req.Messages == nil:
		missing = "messages"
	case needMax && req.MaxTokens == nil:
		missing = "max_tokens"
	}
	if missing != "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", missing+": Field required")
		return false
	}
	if msg := checkRoles(req.Model, r.Header.Get("anthropic-beta"), *req.Messages); msg != "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return false
	}
	return true
}

// midConversationSystemBeta is the beta Claude Code sends with
// {"role":"system"} messages inside messages.
const midConversationSystemBeta = "mid-conversation-system-2026-04-07"

// checkRoles validates message roles as the real API does, mid-conversation
// system messages included: a model that takes them (generation 4.8 on —
// Opus 4.8, Claude Code 2.1.332's default Opus 5.5 — or any model
// when the request carries the beta) checks where they stand and that they
// hold text only; any other model refuses them in the wording Claude Code
// recognises as "drop the beta and retry" (Input should be 'user' or
// 'assistant'). "" when the roles are fine.
func checkRoles(model, betas string, msgs []anInMessage) string {
	allowed := takesMidConversationSystem(model)
	for _, b := range strings.Split(betas, ",") {
		allowed = allowed || strings.TrimSpace(b) == midConversationSystemBeta
	}
	for i, m := range msgs {
		switch m.Role {
		case "user", "assistant":
			continue
		case "system":
			if allowed {
				break
			}
			fallthrough
		default:
			return fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		switch {
		case i == 0:
			return `messages.0: use the top-level "system" parameter for the initial system prompt`
		case msgs[i-1].Role != "user" && !endsInServerToolUse(msgs[i-1].Content):
			return fmt.Sprintf(`messages.%d: role "system" must follow a user message or an assistant message that ends in a server tool use`, i)
		case i+1 < len(msgs) && msgs[i+1].Role != "assistant":
			return fmt.Sprintf(`messages.%d: role "system" must precede an assistant message or be the last message`, i)
		}
		var blocks []struct {
			Type string `json:"type"`
		}
		var str string
		if json.Unmarshal(m.Content, &str) != nil {
			if json.Unmarshal(m.Content, &blocks) != nil || len(blocks) == 0 {
				return fmt.Sprintf("messages.%d.content: Input should be a valid string or list of text blocks", i)
			}
			for j, b := range blocks {
				if b.Type != "text" {
					return fmt.Sprintf(`messages.%d.content.%d: text-only role "system" messages require text blocks, got %q`, i, j, b.Type)
				}
			}
		}
	}
	return ""
}

// endsInServerToolUse reports whether an assistant message's content ends
// with a server tool use (a system message may follow one).
func endsInServerToolUse(content json.RawMessage) bool {
	var blocks []struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(content, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	return blocks[len(blocks)-1].Type == "server_tool_use"
}

func kindName(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Type != nil {
		return te.Type.Kind().String()
	}
	return "value"
}

// jsonErrorPosition describes a syntax error as "<reason>: line L column C (char O)".
func jsonErrorPosition(body []byte, err error) string {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return err.Error()
	}
	off := int(se.Offset)
	if off > 0 {
		off-- // Offset counts the bad byte itself
	}
	before := body[:min(off, len(body))]
	line := 1 + strings.Count(string(before), "\n")
	col := off - strings.LastIndex(string(before), "\n")
	return fmt.Sprintf("%s: line %d column %d (char %d)", se.Error(), line, col, off)
}

// blocksText returns the text of an Anthropic content value (a string or an
// array of blocks): text blocks joined by "\n", and separately the text of
// tool_result blocks.
func blocksText(raw json.RawMessage) (text, toolResults string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var texts, results []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_result":
			t, _ := blocksText(b.Content)
			results = append(results, t)
		}
	}
	return strings.Join(texts, "\n"), strings.Join(results, "\n")
}

// texts returns the last user message text and all prompt text of req.
func (req *anRequest) texts() (lastUser, prompt string) {
	sys, _ := blocksText(req.System)
	all := []string{sys}
	for _, m := range *req.Messages {
		t, results := blocksText(m.Content)
		all = append(all, t, results)
		if m.Role == "user" {
			lastUser = t
			if t == "" {
				lastUser = results
			}
		}
	}
	return lastUser, strings.Join(all, "")
}

func (s *Server) anthropicCountTokens(w http.ResponseWriter, r *http.Request, body []byte) {
	var req anRequest
	if !s.decodeAnthropic(w, r, body, &req, false) {
		return
	}
	_, prompt := req.texts()
	writeJSON(w, http.StatusOK, map[string]int{"input_tokens": estimateTokens(prompt)})
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request, body []byte) {
	var req anRequest
	if !s.decodeAnthropic(w, r, body, &req, true) {
		return
	}
	lastUser, prompt := req.texts()
	firstTool := ""
	if len(req.Tools) > 0 {
		firstTool = req.Tools[0].Name
	}
	b := s.next(lastUser)
	if !s.prepare(w, r, b, func(status int) { anthropicFail(w, status) }) {
		return
	}
	rep := buildReply(b, lastUser, prompt, firstTool, *req.MaxTokens, "toolu_01")
	if msg := s.cfg.pcache.anthropic(req.Model, body, &rep); msg != "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}

	stop := "end_turn"
	switch {
	case rep.toolName != "":
		stop = "tool_use"
	case rep.truncated:
		stop = "max_tokens"
	}
	usage := anUsage{
		InputTokens: rep.inputTokens, CacheCreationInputTokens: rep.cacheWrite,
		CacheReadInputTokens: rep.cacheRead, OutputTokens: rep.outputTokens, ServiceTier: "standard",
	}
	msg := anMessage{ID: newID("msg_01", 22), Type: "message", Role: "assistant", Model: req.Model, Content: []anBlock{}, Usage: usage}

	// The full content; streams send each block empty first, then deltas.
	var blocks []anBlock
	if rep.thinking != "" {
		blocks = append(blocks, anBlock{Type: "thinking", Thinking: &rep.thinking, Signature: &rep.signature})
	}
	if rep.text != "" || rep.toolName == "" {
		blocks = append(blocks, anBlock{Type: "text", Text: &rep.text})
	}
	if rep.toolName != "" {
		input := json.RawMessage(rep.toolArgs)
		if !json.Valid(input) {
			input = json.RawMessage("{}")
		}
		blocks = append(blocks, anBlock{Type: "tool_use", ID: rep.toolID, Name: rep.toolName, Input: input})
	}

	if !req.Stream {
		msg.Content, msg.StopReason = blocks, &stop
		finishJSON(w, b, msg)
		return
	}

	bad := "event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + "\n\n"
	sw := s.newSSE(w, r, b, bad)
	start := msg
	start.Usage.OutputTokens = 1
	sw.send("message_start", anEvent{Type: "message_start", Message: &start})
	for i, blk := range blocks {
		idx := i
		delta := func(d anDelta) {
			sw.send("content_block_delta", anEvent{Type: "content_block_delta", Index: &idx, Delta: d})
		}
		empty := ""
		head := anBlock{Type: blk.Type}
		switch blk.Type {
		case "thinking":
			head.Thinking = &empty
		case "text":
			head.Text = &empty
		case "tool_use":
			head.ID, head.Name, head.Input = blk.ID, blk.Name, json.RawMessage("{}")
		}
		sw.send("content_block_start", anEvent{Type: "content_block_start", Index: &idx, ContentBlock: &head})
		if i == 0 {
			sw.send("ping", anEvent{Type: "ping"})
		}
		switch blk.Type {
		case "thinking":
			for _, piece := range splitWords(rep.thinking, 3) {
				delta(anDelta{Type: "thinking_delta", Thinking: &piece})
			}
			delta(anDelta{Type: "signature_delta", Signature: &rep.signature})
		case "text":
			for _, piece := range rep.textPieces() {
				delta(anDelta{Type: "text_delta", Text: &piece})
			}
		case "tool_use":
			delta(anDelta{Type: "input_json_delta", PartialJSON: &empty})
			for _, piece := range splitBytes(rep.toolArgs, 8) {
				delta(anDelta{Type: "input_json_delta", PartialJSON: &piece})
			}
		}
		sw.send("content_block_stop", anEvent{Type: "content_block_stop", Index: &idx})
	}
	sw.send("message_delta", messageDelta{
		Type:  "message_delta",
		Delta: messageDeltaBody{StopReason: stop},
		Usage: anUsage{InputTokens: usage.InputTokens, CacheCreationInputTokens: usage.CacheCreationInputTokens,
			CacheReadInputTokens: usage.CacheReadInputTokens, OutputTokens: usage.OutputTokens},
	})
	sw.end("message_stop", `{"type":"message_stop"}`)
}

// messageDelta is the message_delta event; stop_sequence is sent as null.
type messageDelta struct {
	Type  string           `json:"type"`
	Delta messageDeltaBody `json:"delta"`
	Usage anUsage          `json:"usage"`
}

type messageDeltaBody struct {
	StopReason   string  `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}
