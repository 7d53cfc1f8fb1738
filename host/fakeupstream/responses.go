package fakeupstream

// POST /v1/responses: the OpenAI Responses API, as a Responses-speaking
// upstream answers it — a response object with output items (reasoning,
// message, function_call), or the event stream (response.created …
// response.completed, no [DONE]). Behaviours and magic phrases work as
// for Chat Completions; the "last user message" is the last user message's
// text or the last function_call_output's output.

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

type respRequest struct {
	Model        string          `json:"model"`
	Input        json.RawMessage `json:"input"`
	Instructions string          `json:"instructions"`
	Stream       bool            `json:"stream"`
	Tools        []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	MaxOutputTokens int `json:"max_output_tokens"`
}

type respInputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
	CallID  string          `json:"call_id"`
}

// respText is the text of a Responses content value: a string, or its
// text parts joined by "\n".
func respText(raw json.RawMessage) string {
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
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

type respItem map[string]any

func (s *Server) openAIResponses(w http.ResponseWriter, r *http.Request, body []byte) {
	if !s.openAIAuth(w, r) {
		return
	}
	var req respRequest
	if !json.Valid(body) || json.Unmarshal(body, &req) != nil {
		openAIError(w, http.StatusBadRequest, oaBadJSON, "invalid_request_error", nil, nil)
		return
	}
	if req.Model == "" {
		openAIError(w, http.StatusBadRequest, "Missing required parameter: 'model'.", "invalid_request_error", "model", "missing_required_parameter")
		return
	}
	var items []respInputItem
	var s1 string
	if json.Unmarshal(req.Input, &s1) == nil {
		items = []respInputItem{{Type: "message", Role: "user", Content: req.Input}}
	} else if json.Unmarshal(req.Input, &items) != nil || len(items) == 0 {
		openAIError(w, http.StatusBadRequest, "Missing required parameter: 'input'.", "invalid_request_error", "input", "missing_required_parameter")
		return
	}
	var lastUser string
	all := req.Instructions
	for _, it := range items {
		switch {
		case it.Type == "function_call_output":
			t := respText(it.Output)
			all += t
			lastUser = t
		case it.Type == "message" || (it.Type == "" && it.Role != ""):
			t := respText(it.Content)
			all += t
			if it.Role == "user" {
				lastUser = t
			}
		}
	}
	firstTool := ""
	for _, t := range req.Tools {
		if t.Type == "function" {
			firstTool = t.Name
			break
		}
	}
	b := s.next(lastUser)
	if !s.prepare(w, r, b, func(status int) { openAIFail(w, status, req.Model, b.RetryAfter) }) {
		return
	}
	rep := buildReply(b, lastUser, all, firstTool, req.MaxOutputTokens, "call_")
	w.Header().Set("x-request-id", newID("req_", 32))
	id, created := newID("resp_", 48), time.Now().Unix()
	var out []respItem
	if rep.thinking != "" {
		out = append(out, respItem{"type": "reasoning", "id": newID("rs_", 48),
			"summary": []any{map[string]any{"type": "summary_text", "text": rep.thinking}}, "encrypted_content": rep.signature})
	}
	if rep.text != "" {
		out = append(out, respItem{"type": "message", "id": newID("msg_", 48), "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.text, "annotations": []any{}, "logprobs": []any{}}}})
	}
	if rep.toolName != "" {
		out = append(out, respItem{"type": "function_call", "id": newID("fc_", 48), "call_id": rep.toolID,
			"name": rep.toolName, "arguments": rep.toolArgs, "status": "completed"})
	}
	status, incomplete := "completed", any(nil)
	if rep.truncated {
		status, incomplete = "incomplete", map[string]string{"reason": "max_output_tokens"}
	}
	usage := map[string]any{
		"input_tokens":          rep.inputTokens + rep.cacheRead,
		"input_tokens_details":  map[string]int{"cached_tokens": rep.cacheRead},
		"output_tokens":         rep.outputTokens,
		"output_tokens_details": map[string]int{"reasoning_tokens": rep.reasoningTokens},
		"total_tokens":          rep.inputTokens + rep.cacheRead + rep.outputTokens,
	}
	response := func(status string, output []respItem, usage any) map[string]any {
		if output == nil {
			output = []respItem{}
		}
		return map[string]any{"id": id, "object": "response", "created_at": created, "status": status,
			"error": nil, "incomplete_details": incomplete, "instructions": nil, "model": req.Model,
			"output": output, "parallel_tool_calls": true, "store": true, "text": map[string]any{"format": map[string]string{"type": "text"}},
			"tool_choice": "auto", "tools": []any{}, "usage": usage, "metadata": map[string]any{}}
	}
	if !req.Stream {
		finishJSON(w, b, response(status, out, usage))
		return
	}

	seq := 0
	bad := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\n\n"
	sw := s.newSSE(w, r, b, bad)
	send := func(typ string, m map[string]any) {
		m["type"] = typ
		m["sequence_number"] = seq
		seq++
		sw.send(typ, m)
	}
	send("response.created", map[string]any{"response": response("in_progress", nil, nil)})
	send("response.in_progress", map[string]any{"response": response("in_progress", nil, nil)})
	for i, it := range out {
		head := respItem{}
		for k, v := range it {
			head[k] = v
		}
		itemID := it["id"]
		switch it["type"] {
		case "message":
			head["status"], head["content"] = "in_progress", []any{}
			send("response.output_item.added", map[string]any{"output_index": i, "item": head})
			part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
			send("response.content_part.added", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "part": part})
			for _, piece := range rep.textPieces() {
				send("response.output_text.delta", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "delta": piece, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "text": rep.text, "logprobs": []any{}})
			part["text"] = rep.text
			send("response.content_part.done", map[string]any{"item_id": itemID, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			head["status"], head["arguments"] = "in_progress", ""
			send("response.output_item.added", map[string]any{"output_index": i, "item": head})
			for _, piece := range splitBytes(rep.toolArgs, 8) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": itemID, "output_index": i, "delta": piece})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": itemID, "output_index": i, "name": rep.toolName, "arguments": rep.toolArgs})
		case "reasoning":
			head["summary"] = []any{}
			delete(head, "encrypted_content")
			send("response.output_item.added", map[string]any{"output_index": i, "item": head})
			part := map[string]any{"type": "summary_text", "text": ""}
			send("response.reasoning_summary_part.added", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "part": part})
			for _, piece := range splitWords(rep.thinking, 3) {
				send("response.reasoning_summary_text.delta", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "delta": piece})
			}
			send("response.reasoning_summary_text.done", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "text": rep.thinking})
			part["text"] = rep.thinking
			send("response.reasoning_summary_part.done", map[string]any{"item_id": itemID, "output_index": i, "summary_index": 0, "part": part})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	typ := "response.completed"
	if status == "incomplete" {
		typ = "response.incomplete"
	}
	if b.CutStream {
		abort(w)
	}
	send(typ, map[string]any{"response": response(status, out, usage)})
}
