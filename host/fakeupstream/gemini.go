package fakeupstream

// The Gemini API (generativelanguage.googleapis.com) side of the fake:
//
//	POST /v1beta/models/{model}:generateContent
//	POST /v1beta/models/{model}:streamGenerateContent?alt=sse   (SSE, CRLF framed)
//	POST /v1beta/models/{model}:streamGenerateContent           (a JSON array of chunks)
//	POST /v1beta/models/{model}:countTokens
//
// and the same under /v1/. The key is read from x-goog-api-key (or the ?key=
// query parameter, which Google accepts too); a missing key is Google's 403
// PERMISSION_DENIED, a wrong one its 400 INVALID_ARGUMENT with reason
// API_KEY_INVALID.
//
// Behaviours map as follows. ToolCall answers with a functionCall part (no
// id, as Gemini sends none) and finishReason STOP. Thinking adds
// thoughtsTokenCount and a thoughtSignature — on the functionCall part of a
// tool call, else on the (last) text part — and, only when the request set
// generationConfig.thinkingConfig.includeThoughts, a thought part with the
// reasoning text, as Gemini does. CacheRead is cachedContentTokenCount
// (included in promptTokenCount); CacheWrite has no Gemini counterpart.
// Status 429 is RESOURCE_EXHAUSTED with a RetryInfo detail and, like Google,
// no retry-after header; 500 INTERNAL; 503 and 529 UNAVAILABLE ("The model is
// overloaded"); 504 DEADLINE_EXCEEDED. A stream's last chunk carries the
// finishReason; CutStream closes the connection before it.
//
// Requests are validated the way Google does where adapters commonly go
// wrong: unknown top-level fields, unknown Schema fields in a function's
// `parameters` (e.g. "additionalProperties"), an OBJECT `parameters` without
// properties, empty parts, functionResponse without a name, roles other
// than user/model, and — for models named gemini-3* — a functionCall of the
// current turn without its thought_signature.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

type gmRequest struct {
	Contents          *[]gmContent `json:"contents"`
	SystemInstruction *gmContent   `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig *struct {
		MaxOutputTokens int `json:"maxOutputTokens"`
		ThinkingConfig  *struct {
			IncludeThoughts bool `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

type gmContent struct {
	Role  string   `json:"role"`
	Parts []gmPart `json:"parts"`
}

type gmPart struct {
	Text             *string `json:"text,omitempty"`
	Thought          bool    `json:"thought,omitempty"`
	FunctionCall     *gmCall `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
}

type gmCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Response side, fields in the order Gemini sends them.

type gmResponse struct {
	Candidates    []gmCandidate `json:"candidates"`
	UsageMetadata gmUsage       `json:"usageMetadata"`
	ModelVersion  string        `json:"modelVersion"`
	ResponseID    string        `json:"responseId"`
}

type gmCandidate struct {
	Content      gmContent `json:"content"`
	FinishReason string    `json:"finishReason,omitempty"`
	Index        int       `json:"index"`
}

type gmUsage struct {
	PromptTokenCount        int              `json:"promptTokenCount"`
	CandidatesTokenCount    int              `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int              `json:"totalTokenCount"`
	CachedContentTokenCount int              `json:"cachedContentTokenCount,omitempty"`
	PromptTokensDetails     []gmModalityInfo `json:"promptTokensDetails"`
	CacheTokensDetails      []gmModalityInfo `json:"cacheTokensDetails,omitempty"`
	ThoughtsTokenCount      int              `json:"thoughtsTokenCount,omitempty"`
}

type gmModalityInfo struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

// gmStatus names the google.rpc.Code of an HTTP status.
func gmStatus(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

// geminiError writes {"error":{"code","message","status"[,"details"]}}.
func geminiError(w http.ResponseWriter, code int, message string, details ...any) {
	type body struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []any  `json:"details,omitempty"`
	}
	writeJSON(w, code, map[string]body{"error": {code, message, gmStatus(code), details}})
}

const (
	gmNoKey      = "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."
	gmBadKey     = "API key not valid. Please pass a valid API key."
	gmOverloaded = "The model is overloaded. Please try again later."
)

func (s *Server) geminiAuth(w http.ResponseWriter, r *http.Request) bool {
	key := r.Header.Get("x-goog-api-key")
	if key == "" {
		key = r.URL.Query().Get("key")
	}
	switch {
	case key == "":
		geminiError(w, http.StatusForbidden, gmNoKey)
	case key != s.cfg.apiKey:
		geminiError(w, http.StatusBadRequest, gmBadKey,
			map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
				"metadata": map[string]string{"service": "generativelanguage.googleapis.com"}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": gmBadKey})
	default:
		return true
	}
	return false
}

// geminiFail writes the error Gemini answers with for a scripted status.
func geminiFail(w http.ResponseWriter, status int, model string, retryAfter int) {
	w.Header().Del("retry-after") // Google says when to retry in the body only
	switch status {
	case http.StatusTooManyRequests:
		details := []any{
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				"quotaDimensions": map[string]string{
					"location": "global", "model": model},
				"quotaValue": "10"}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.Help", "links": []any{map[string]string{
				"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}}},
		}
		msg := "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 10, model: " + model
		if retryAfter > 0 {
			msg += fmt.Sprintf("\nPlease retry in %d.583120412s.", retryAfter)
			details = append(details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": fmt.Sprintf("%ds", retryAfter)})
		}
		geminiError(w, status, msg, details...)
	case http.StatusInternalServerError:
		geminiError(w, status, "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting")
	case http.StatusServiceUnavailable, 529:
		geminiError(w, http.StatusServiceUnavailable, gmOverloaded)
	case http.StatusGatewayTimeout:
		geminiError(w, status, "Deadline expired before operation could complete.")
	default:
		geminiError(w, status, http.StatusText(status))
	}
}

// gemini answers the Gemini API paths; it reports false for any other path.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, body []byte) bool {
	var rest string
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/v1beta/"):
		rest = p[len("/v1beta/"):]
	case strings.HasPrefix(p, "/v1/models/") && strings.Contains(p, ":"):
		rest = p[len("/v1/"):]
	default:
		return false
	}
	if !s.geminiAuth(w, r) {
		return true
	}
	model, method, ok := strings.Cut(strings.TrimPrefix(rest, "models/"), ":")
	if !strings.HasPrefix(rest, "models/") || !ok || model == "" || r.Method != http.MethodPost {
		geminiError(w, http.StatusNotFound, "Method not found.")
		return true
	}
	switch method {
	case "generateContent":
		s.geminiGenerate(w, r, body, model, false)
	case "streamGenerateContent":
		s.geminiGenerate(w, r, body, model, true)
	case "countTokens":
		s.geminiCountTokens(w, body)
	default:
		geminiError(w, http.StatusNotFound, fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for %s. Call ListModels to see the list of available models and their supported methods.", model, method))
	}
	return true
}

// gmTopLevel are the request fields Gemini knows; any other is a 400.
var gmTopLevel = []string{"contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
	"safetySettings", "safety_settings", "generationConfig", "generation_config", "cachedContent", "cached_content", "labels"}

// decodeGemini parses and validates a generateContent body; it returns false
// when it already answered with an error.
func decodeGemini(w http.ResponseWriter, body []byte, req *gmRequest, model string) bool {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		geminiError(w, http.StatusBadRequest, "Invalid JSON payload received. "+jsonErrorPosition(body, err))
		return false
	}
	for k := range top {
		if !slices.Contains(gmTopLevel, k) {
			geminiError(w, http.StatusBadRequest, fmt.Sprintf("Invalid JSON payload received. Unknown name %q: Cannot find field.", k))
			return false
		}
	}
	if err := json.Unmarshal(body, req); err != nil {
		geminiError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return false
	}
	bad := func(field, msg string) bool {
		geminiError(w, http.StatusBadRequest, "* GenerateContentRequest."+field+": "+msg+"\n")
		return false
	}
	if req.Contents == nil || len(*req.Contents) == 0 {
		return bad("contents", "contents is not specified")
	}
	for i, c := range *req.Contents {
		if c.Role != "" && c.Role != "user" && c.Role != "model" {
			geminiError(w, http.StatusBadRequest, "Please use a valid role: user, model.")
			return false
		}
		if len(c.Parts) == 0 {
			return bad(fmt.Sprintf("contents[%d].parts", i), "contents.parts must not be empty.")
		}
		for j, p := range c.Parts {
			switch {
			case p.FunctionCall != nil && p.FunctionCall.Name == "":
				return bad(fmt.Sprintf("contents[%d].parts[%d].function_call.name", i, j), "Name cannot be empty.")
			case p.FunctionResponse != nil && p.FunctionResponse.Name == "":
				return bad(fmt.Sprintf("contents[%d].parts[%d].function_response.name", i, j), "Name cannot be empty.")
			}
		}
	}
	for i, t := range req.Tools {
		for j, f := range t.FunctionDeclarations {
			at := fmt.Sprintf("tools[%d].function_declarations[%d]", i, j)
			if f.Name == "" {
				return bad(at+".name", "Name cannot be empty.")
			}
			if len(f.Parameters) == 0 || string(f.Parameters) == "null" {
				continue
			}
			if msg := checkSchema(f.Parameters, at+".parameters"); msg != "" {
				geminiError(w, http.StatusBadRequest, msg)
				return false
			}
			var p struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
			}
			_ = json.Unmarshal(f.Parameters, &p)
			if strings.EqualFold(p.Type, "object") && len(p.Properties) == 0 {
				return bad(at+".parameters.properties", "should be non-empty for OBJECT type")
			}
		}
	}
	if strings.HasPrefix(model, "gemini-3") {
		contents := *req.Contents
		start := 0 // the current turn begins after the last user text
		for i, c := range contents {
			if c.Role != "model" && slices.ContainsFunc(c.Parts, func(p gmPart) bool { return p.Text != nil }) {
				start = i + 1
			}
		}
		for i := start; i < len(contents); i++ {
			if contents[i].Role != "model" {
				continue
			}
			for _, p := range contents[i].Parts {
				if p.FunctionCall != nil {
					if p.ThoughtSignature == "" {
						geminiError(w, http.StatusBadRequest, fmt.Sprintf("Function call `%s` in the %d. content block is missing a `thought_signature`. Learn more: https://ai.google.dev/gemini-api/docs/thought-signatures", p.FunctionCall.Name, i+1))
						return false
					}
					break // only the first call of a step carries one
				}
			}
		}
	}
	return true
}

// gmSchemaKeys are the fields of Gemini's Schema object.
var gmSchemaKeys = []string{"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
	"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
	"anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}

// checkSchema returns Google's message for the first field of a Schema (or
// a nested one) that Gemini does not know, or "".
func checkSchema(raw json.RawMessage, at string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return fmt.Sprintf("Invalid JSON payload received. Invalid value at '%s' (type.googleapis.com/google.ai.generativelanguage.v1beta.Schema): not an object.", at)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(gmSchemaKeys, k) {
			return fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, at)
		}
	}
	var props map[string]json.RawMessage
	_ = json.Unmarshal(m["properties"], &props)
	names := make([]string, 0, len(props))
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	for i, k := range names {
		if msg := checkSchema(props[k], fmt.Sprintf("%s.properties[%d].value", at, i)); msg != "" {
			return msg
		}
	}
	if items := m["items"]; len(items) > 0 {
		if msg := checkSchema(items, at+".items"); msg != "" {
			return msg
		}
	}
	var alts []json.RawMessage
	_ = json.Unmarshal(m["anyOf"], &alts)
	for i, a := range alts {
		if msg := checkSchema(a, fmt.Sprintf("%s.any_of[%d]", at, i)); msg != "" {
			return msg
		}
	}
	return ""
}

// partsText joins a content's text parts (thoughts excluded), or else the
// results of its function responses.
func partsText(c *gmContent) (text, results string) {
	var texts, res []string
	for _, p := range c.Parts {
		switch {
		case p.Text != nil && !p.Thought:
			texts = append(texts, *p.Text)
		case p.FunctionResponse != nil:
			res = append(res, functionResult(p.FunctionResponse.Response))
		}
	}
	return strings.Join(texts, "\n"), strings.Join(res, "\n")
}

// functionResult reads a functionResponse.response: its "output", "result"
// or "error" string, else the JSON itself.
func functionResult(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "result", "error"} {
			var s string
			if json.Unmarshal(m[k], &s) == nil {
				return s
			}
		}
	}
	return string(raw)
}

// texts returns the last user message text and all prompt text of req.
func (req *gmRequest) texts() (lastUser, prompt string) {
	var all []string
	if req.SystemInstruction != nil {
		t, _ := partsText(req.SystemInstruction)
		all = append(all, t)
	}
	for i := range *req.Contents {
		c := &(*req.Contents)[i]
		t, results := partsText(c)
		all = append(all, t, results)
		if c.Role != "model" {
			lastUser = t
			if t == "" {
				lastUser = results
			}
		}
	}
	return lastUser, strings.Join(all, "")
}

func (s *Server) geminiCountTokens(w http.ResponseWriter, body []byte) {
	var req gmRequest
	var wrapped struct {
		GenerateContentRequest *gmRequest `json:"generateContentRequest"`
	}
	if json.Unmarshal(body, &wrapped) == nil && wrapped.GenerateContentRequest != nil {
		req = *wrapped.GenerateContentRequest
	} else if err := json.Unmarshal(body, &req); err != nil {
		geminiError(w, http.StatusBadRequest, "Invalid JSON payload received. "+err.Error())
		return
	}
	if req.Contents == nil {
		req.Contents = &[]gmContent{}
	}
	_, prompt := req.texts()
	n := estimateTokens(prompt)
	writeJSON(w, http.StatusOK, map[string]any{"totalTokens": n, "promptTokensDetails": []gmModalityInfo{{"TEXT", n}}})
}

func (s *Server) geminiGenerate(w http.ResponseWriter, r *http.Request, body []byte, model string, stream bool) {
	var req gmRequest
	if !decodeGemini(w, body, &req, model) {
		return
	}
	lastUser, prompt := req.texts()
	firstTool := ""
	if len(req.Tools) > 0 && len(req.Tools[0].FunctionDeclarations) > 0 {
		firstTool = req.Tools[0].FunctionDeclarations[0].Name
	}
	maxTokens, includeThoughts := 0, false
	if gc := req.GenerationConfig; gc != nil {
		maxTokens = gc.MaxOutputTokens
		includeThoughts = gc.ThinkingConfig != nil && gc.ThinkingConfig.IncludeThoughts
	}
	b := s.next(lastUser)
	if !s.prepare(w, r, b, func(status int) { geminiFail(w, status, model, b.RetryAfter) }) {
		return
	}
	rep := buildReply(b, lastUser, prompt, firstTool, maxTokens, "")

	finish := "STOP"
	if rep.truncated {
		finish = "MAX_TOKENS"
	}
	promptTokens := rep.inputTokens + rep.cacheRead
	usage := gmUsage{
		PromptTokenCount:        promptTokens,
		CandidatesTokenCount:    rep.outputTokens - rep.reasoningTokens,
		TotalTokenCount:         promptTokens + rep.outputTokens,
		CachedContentTokenCount: rep.cacheRead,
		PromptTokensDetails:     []gmModalityInfo{{"TEXT", promptTokens}},
		ThoughtsTokenCount:      rep.reasoningTokens,
	}
	if rep.cacheRead > 0 {
		usage.CacheTokensDetails = []gmModalityInfo{{"TEXT", rep.cacheRead}}
	}
	var call *gmCall
	if rep.toolName != "" {
		args := json.RawMessage(rep.toolArgs)
		if !json.Valid(args) || !strings.HasPrefix(strings.TrimSpace(rep.toolArgs), "{") {
			args = json.RawMessage("{}")
		}
		call = &gmCall{Name: rep.toolName, Args: args}
	}
	respID := newID("", 22)
	chunk := func(parts []gmPart, finish string, u gmUsage) gmResponse {
		return gmResponse{
			Candidates:    []gmCandidate{{Content: gmContent{Role: "model", Parts: parts}, FinishReason: finish}},
			UsageMetadata: u, ModelVersion: model, ResponseID: respID,
		}
	}
	// The reply's parts: thoughts (when asked for), text, the call; the
	// signature rides on the call, else on the text.
	var parts []gmPart
	if rep.thinking != "" && includeThoughts {
		parts = append(parts, gmPart{Text: &rep.thinking, Thought: true})
	}
	if rep.text != "" {
		parts = append(parts, gmPart{Text: &rep.text})
	}
	if call != nil {
		parts = append(parts, gmPart{FunctionCall: call})
	}
	if len(parts) == 0 {
		parts = append(parts, gmPart{Text: &rep.text})
	}
	if rep.signature != "" {
		parts[len(parts)-1].ThoughtSignature = rep.signature
	}

	sse := stream && r.URL.Query().Get("alt") == "sse"
	if !sse {
		if !stream {
			finishJSON(w, b, chunk(parts, finish, usage))
			return
		}
		finishJSON(w, b, []gmResponse{chunk(parts, finish, usage)})
		return
	}

	bad := `data: {"candidates": [{"content": {"parts": [{"text": ` + "\r\n\r\n"
	sw := s.newSSE(w, r, b, bad)
	running := gmUsage{PromptTokenCount: promptTokens, TotalTokenCount: promptTokens,
		CachedContentTokenCount: rep.cacheRead, PromptTokensDetails: usage.PromptTokensDetails, CacheTokensDetails: usage.CacheTokensDetails}
	send := func(c gmResponse, last bool) {
		data, err := json.Marshal(c)
		if err != nil {
			panic(err)
		}
		sw.crlfFrame(string(data), last)
	}
	// Every part but the last goes out in pieces of a few words; the last
	// chunk carries the last piece, the finishReason and the full usage.
	var pieces []gmPart
	for _, p := range parts {
		if p.Text == nil {
			pieces = append(pieces, p)
			continue
		}
		words := splitWords(*p.Text, 3)
		for i := range words {
			q := gmPart{Text: &words[i], Thought: p.Thought}
			if i == len(words)-1 {
				q.ThoughtSignature = p.ThoughtSignature
			}
			pieces = append(pieces, q)
		}
	}
	for _, p := range pieces[:len(pieces)-1] {
		send(chunk([]gmPart{p}, "", running), false)
	}
	send(chunk(pieces[len(pieces)-1:], finish, usage), true)
}

// crlfFrame writes one Gemini SSE frame ("data: …\r\n\r\n"), applying the
// behaviour's cut, malformed frame and per-frame delay like frame does.
// Gemini has no end marker: last marks the chunk with the finishReason,
// which a cut stream never sends.
func (sw *sseWriter) crlfFrame(data string, last bool) {
	if sw.b.CutStream && (last || sw.frames >= sw.b.CutAfter) {
		abort(sw.w)
	}
	if sw.b.MalformedChunk && !sw.malformed && sw.frames >= sw.b.MalformedAfter {
		sw.malformed = true
		sw.write(sw.bad)
	}
	if sw.frames > 0 && !sw.s.sleep(sw.ctx, sw.b.ChunkDelay) {
		abort(sw.w)
	}
	if sw.frames == 1 && sw.b.Hold != nil && !sw.s.wait(sw.ctx, sw.b.Hold) {
		abort(sw.w)
	}
	sw.write("data: " + data + "\r\n\r\n")
	sw.frames++
}
