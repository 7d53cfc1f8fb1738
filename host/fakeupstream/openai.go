package fakeupstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// OpenAI wire types, fields in the order the real API sends them.

type oaRequest struct {
	Model         string         `json:"model"`
	Messages      *[]oaInMessage `json:"messages"`
	Stream        bool           `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
}

type oaInMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID string `json:"id"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
}

type oaCompletion struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Created           int64      `json:"created"`
	Model             string     `json:"model"`
	Choices           []oaChoice `json:"choices"`
	Usage             oaUsage    `json:"usage"`
	ServiceTier       string     `json:"service_tier"`
	SystemFingerprint string     `json:"system_fingerprint"`
}

type oaChoice struct {
	Index        int       `json:"index"`
	Message      oaMessage `json:"message"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
}

type oaMessage struct {
	Role             string       `json:"role"`
	Content          *string      `json:"content"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
	Refusal          *string      `json:"refusal"`
	Annotations      []struct{}   `json:"annotations"`
}

type oaToolCall struct {
	Index    *int       `json:"index,omitempty"` // streams only
	ID       string     `json:"id,omitempty"`
	Type     string     `json:"type,omitempty"`
	Function oaFunction `json:"function"`
}

type oaFunction struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type oaUsage struct {
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

type oaChunk struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	ServiceTier       string          `json:"service_tier"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []oaChunkChoice `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"` // null on every chunk when include_usage
}

type oaChunkChoice struct {
	Index        int       `json:"index"`
	Delta        oaDelta   `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type oaDelta struct {
	Role             string          `json:"role,omitempty"`
	Content          json.RawMessage `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall    `json:"tool_calls,omitempty"`
	Refusal          json.RawMessage `json:"refusal,omitempty"`
}

const (
	oaFingerprint = "fp_fa4e0b7c21"
	oaKeyHelp     = "You can find your API key at https://platform.openai.com/account/api-keys."
	oaNoKey       = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the basic auth username and password field. You can obtain an API key from https://platform.openai.com/account/api-keys."
	oaBadJSON     = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
)

var jsonNull = json.RawMessage("null")

func openAIError(w http.ResponseWriter, status int, message, typ string, param, code any) {
	type body struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Param   any    `json:"param"`
		Code    any    `json:"code"`
	}
	writeJSON(w, status, map[string]body{"error": {message, typ, param, code}})
}

// openAIFail writes the error OpenAI answers with for a scripted status.
func openAIFail(w http.ResponseWriter, status int, model string, retryAfter int) {
	switch status {
	case http.StatusTooManyRequests:
		openAIError(w, status, fmt.Sprintf("Rate limit reached for %s in organization org-fakeupstream on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in %ds. Visit https://platform.openai.com/account/rate-limits to learn more.", model, retryAfter), "requests", nil, "rate_limit_exceeded")
	case http.StatusInternalServerError:
		openAIError(w, status, "The server had an error while processing your request. Sorry about that!", "server_error", nil, nil)
	case http.StatusBadGateway: // Cloudflare's answer in front of the API
		writeRaw(w, status, []byte(`{"error":{"code":502,"message":"Bad gateway.","param":null,"type":"cf_bad_gateway"}}`))
	case http.StatusServiceUnavailable:
		openAIError(w, status, "The server is overloaded or not ready yet.", "server_error", nil, nil)
	default:
		typ := "invalid_request_error"
		if status >= 500 {
			typ = "server_error"
		}
		openAIError(w, status, http.StatusText(status), typ, nil, nil)
	}
}

func (s *Server) openAIAuth(w http.ResponseWriter, r *http.Request) bool {
	key, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	key = strings.TrimSpace(key)
	switch {
	case !bearer || key == "":
		openAIError(w, http.StatusUnauthorized, oaNoKey, "invalid_request_error", nil, nil)
		return false
	case key != s.cfg.apiKey:
		openAIError(w, http.StatusUnauthorized, "Incorrect API key provided: "+maskKey(key)+". "+oaKeyHelp, "invalid_request_error", nil, "invalid_api_key")
		return false
	}
	return true
}

// maskKey hides the middle of a key the way OpenAI error messages do.
func maskKey(k string) string {
	if len(k) <= 8 {
		return k
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

func (s *Server) openAIModels(w http.ResponseWriter, r *http.Request) {
	if !s.openAIAuth(w, r) {
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range s.cfg.models {
		list.Data = append(list.Data, model{id, "model", 1715367049, "system"})
	}
	writeJSON(w, http.StatusOK, list)
}

// contentText returns the text of an OpenAI message content: a string, or
// the text parts of an array joined by "\n".
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func (s *Server) openAIChat(w http.ResponseWriter, r *http.Request, body []byte) {
	if !s.openAIAuth(w, r) {
		return
	}
	if !json.Valid(body) {
		openAIError(w, http.StatusBadRequest, oaBadJSON, "invalid_request_error", nil, nil)
		return
	}
	var req oaRequest
	if err := json.Unmarshal(body, &req); err != nil {
		var te *json.UnmarshalTypeError
		field := "body"
		if errors.As(err, &te) {
			field = te.Field
		}
		openAIError(w, http.StatusBadRequest, fmt.Sprintf("Invalid type for '%s': %v", field, err), "invalid_request_error", field, "invalid_type")
		return
	}
	switch {
	case req.Model == "":
		openAIError(w, http.StatusBadRequest, "you must provide a model parameter", "invalid_request_error", nil, nil)
		return
	case req.Messages == nil:
		openAIError(w, http.StatusBadRequest, "Missing required parameter: 'messages'.", "invalid_request_error", "messages", "missing_required_parameter")
		return
	case len(*req.Messages) == 0:
		openAIError(w, http.StatusBadRequest, "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.", "invalid_request_error", "messages", "empty_array")
		return
	}

	if msg, param, code := checkOpenAIRoles(*req.Messages); msg != "" {
		openAIError(w, http.StatusBadRequest, msg, "invalid_request_error", param, code)
		return
	}

	var lastUser string
	var all strings.Builder
	for _, m := range *req.Messages {
		t := contentText(m.Content)
		all.WriteString(t)
		if m.Role == "user" || m.Role == "tool" {
			lastUser = t
		}
	}
	firstTool := ""
	if len(req.Tools) > 0 {
		firstTool = req.Tools[0].Function.Name
	}
	b := s.next(lastUser)
	if !s.prepare(w, r, b, func(status int) { openAIFail(w, status, req.Model, b.RetryAfter) }) {
		return
	}
	rep := buildReply(b, lastUser, all.String(), firstTool, pick(req.MaxTokens, req.MaxCompletionTokens), "call_")
	s.cfg.pcache.openAI(req.Model, body, &rep)

	w.Header().Set("x-request-id", newID("req_", 32))
	id, created := newID("chatcmpl-", 29), time.Now().Unix()
	usage := rep.openAIUsage()
	finish := "stop"
	switch {
	case rep.toolName != "":
		finish = "tool_calls"
	case rep.truncated:
		finish = "length"
	}
	if !req.Stream {
		msg := oaMessage{Role: "assistant", ReasoningContent: rep.thinking, Annotations: []struct{}{}}
		if rep.text != "" || rep.toolName == "" {
			msg.Content = &rep.text
		}
		if rep.toolName != "" {
			msg.ToolCalls = []oaToolCall{{ID: rep.toolID, Type: "function", Function: oaFunction{rep.toolName, rep.toolArgs}}}
		}
		finishJSON(w, b, oaCompletion{
			ID: id, Object: "chat.completion", Created: created, Model: req.Model,
			Choices: []oaChoice{{Message: msg, FinishReason: finish}},
			Usage:   usage, ServiceTier: "default", SystemFingerprint: oaFingerprint,
		})
		return
	}

	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	chunk := func(d oaDelta, finish *string) oaChunk {
		c := oaChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: req.Model,
			ServiceTier: "default", SystemFingerprint: oaFingerprint,
			Choices: []oaChunkChoice{{Delta: d, FinishReason: finish}}}
		if includeUsage {
			c.Usage = jsonNull
		}
		return c
	}
	bad := `data: {"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + "\n\n"
	sw := s.newSSE(w, r, b, bad)

	zero := 0
	toolHead := []oaToolCall{{Index: &zero, ID: rep.toolID, Type: "function", Function: oaFunction{Name: rep.toolName}}}
	if rep.text == "" && rep.thinking == "" {
		sw.send("", chunk(oaDelta{Role: "assistant", Content: jsonNull, ToolCalls: toolHead, Refusal: jsonNull}, nil))
		toolHead = nil
	} else {
		sw.send("", chunk(oaDelta{Role: "assistant", Content: jsonString(""), Refusal: jsonNull}, nil))
	}
	for _, piece := range splitWords(rep.thinking, 3) {
		sw.send("", chunk(oaDelta{ReasoningContent: piece}, nil))
	}
	for _, piece := range rep.textPieces() {
		sw.send("", chunk(oaDelta{Content: jsonString(piece)}, nil))
	}
	if rep.toolName != "" {
		if toolHead != nil {
			sw.send("", chunk(oaDelta{ToolCalls: toolHead}, nil))
		}
		for _, piece := range splitBytes(rep.toolArgs, 8) {
			sw.send("", chunk(oaDelta{ToolCalls: []oaToolCall{{Index: &zero, Function: oaFunction{Arguments: piece}}}}, nil))
		}
	}
	sw.send("", chunk(oaDelta{}, &finish))
	if includeUsage {
		u, _ := json.Marshal(usage)
		c := chunk(oaDelta{}, nil)
		c.Choices, c.Usage = []oaChunkChoice{}, u
		sw.send("", c)
	}
	sw.end("", "[DONE]")
}

func (rep reply) openAIUsage() oaUsage {
	var u oaUsage
	u.PromptTokens = rep.inputTokens + rep.cacheRead
	u.CompletionTokens = rep.outputTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = rep.cacheRead
	u.CompletionTokensDetails.ReasoningTokens = rep.reasoningTokens
	return u
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// checkOpenAIRoles validates roles as Chat Completions does: the six it
// knows, system and developer messages anywhere (agents send them after the
// first turn), and a tool message only in answer to a tool call of the
// assistant message before it. "" when the messages are fine.
func checkOpenAIRoles(msgs []oaInMessage) (msg string, param, code any) {
	open := map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "function":
		case "assistant":
			clear(open)
			for _, tc := range m.ToolCalls {
				open[tc.ID] = true
			}
			continue
		case "tool":
			if !open[m.ToolCallID] {
				return "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
					fmt.Sprintf("messages.[%d].role", i), nil
			}
			continue
		default:
			return fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role),
				fmt.Sprintf("messages[%d].role", i), "invalid_value"
		}
		clear(open)
	}
	return "", nil, nil
}
