// Command gemini is the provider adapter for the Google Gemini API
// (generativelanguage.googleapis.com, generateContent and
// streamGenerateContent).
//
// Gemini speaks its own format, so unlike the OpenAI and Anthropic adapters
// this one translates inside the plugin: Encode writes the Gemini JSON body
// itself (BodyRaw, no ResponseDialect), and the host hands every response
// back to Decode (whole bodies and errors) and DecodeStream (SSE events, one
// batch at a time, with the adapter's State round-tripped). See README.md for
// the mapping and what degrades.
package main

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"

	"github.com/bardoinference/bardo/sdk/plugin"
	"github.com/bardoinference/bardo/sdk/routing"
	"github.com/bardoinference/bardo/sdk/wire"
)

type config struct {
	// APIVersion is the path segment before /models ("v1beta" or "v1").
	// It is not added when base_url already ends with a version.
	APIVersion string `json:"api_version"`
	// Headers are added to every upstream request.
	Headers map[string]string `json:"headers"`
	// SignatureFallback is sent as the thoughtSignature of a model turn's
	// first functionCall when the conversation carries no Gemini signature
	// for that turn (the caller spoke OpenAI, or the turn came from another
	// model). Gemini 3 refuses such history otherwise. "" sends nothing.
	SignatureFallback *string `json:"signature_fallback"`
	// SchemaMode is "parameters" (default: tool schemas are reduced to the
	// OpenAPI subset Gemini's `parameters` accepts) or "json_schema" (sent
	// untouched as `parametersJsonSchema`).
	SchemaMode string `json:"schema_mode"`
	// IncludeThoughts asks for thought summaries on every request, not only
	// when the caller asked for thinking.
	IncludeThoughts bool `json:"include_thoughts"`
	// SafetySettings is sent as the request's safetySettings, verbatim.
	SafetySettings json.RawMessage `json:"safety_settings"`
}

const (
	defaultBaseURL = "https://generativelanguage.googleapis.com"
	// defaultSignatureFallback is the value Google documents for history
	// whose thought signatures are not available.
	defaultSignatureFallback = "skip_thought_signature_validator"
	// sigPrefix marks the thinking signatures this adapter hands to callers,
	// so a signature from another provider (an Anthropic one, say) is never
	// sent to Gemini, which would refuse it as corrupted.
	sigPrefix = "gemini:"
)

var (
	cfg        config
	headerKeys []string // sorted keys of cfg.Headers
)

func init() {
	plugin.RegisterProvider(plugin.Provider{
		Name:    "gemini",
		Version: "1.0.0",
		Reads:   wire.PartAll,
		Init: func() error {
			cfg = config{}
			if err := plugin.DecodeConfig(&cfg); err != nil {
				return err
			}
			if cfg.APIVersion == "" {
				cfg.APIVersion = "v1beta"
			}
			if cfg.SignatureFallback == nil {
				s := defaultSignatureFallback
				cfg.SignatureFallback = &s
			}
			headerKeys = headerKeys[:0]
			for k := range cfg.Headers {
				headerKeys = append(headerKeys, k)
			}
			slices.Sort(headerKeys)
			return nil
		},
		Encode:       encode,
		Decode:       decode,
		DecodeStream: decodeStream,
		// Gemini takes thinking budgets its own way (the gemini parameter
		// style); its model list carries no prices, so the catalog is
		// pipeline.toml's.
		Describe: func() (routing.ProviderDescription, error) {
			return routing.ProviderDescription{Params: routing.StyleGemini}, nil
		},
	})
}

func main() {}

// Gemini JSON, request and response side (the same Content and Part shapes
// travel both ways).

type gContent struct {
	Role  string  `json:"role,omitempty"`
	Parts []gPart `json:"parts"`
}

type gPart struct {
	Text             *string            `json:"text,omitempty"`
	Thought          bool               `json:"thought,omitempty"`
	InlineData       *gBlob             `json:"inlineData,omitempty"`
	FileData         *gFileData         `json:"fileData,omitempty"`
	FunctionCall     *gFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *gFunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string             `json:"thoughtSignature,omitempty"`
}

type gBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type gFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type gFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type gFunctionResponse struct {
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type gRequest struct {
	Contents          []gContent      `json:"contents"`
	SystemInstruction *gContent       `json:"systemInstruction,omitempty"`
	Tools             []gTool         `json:"tools,omitempty"`
	ToolConfig        *gToolConfig    `json:"toolConfig,omitempty"`
	SafetySettings    json.RawMessage `json:"safetySettings,omitempty"`
	GenerationConfig  *gGenConfig     `json:"generationConfig,omitempty"`
}

type gTool struct {
	FunctionDeclarations []gFunctionDecl `json:"functionDeclarations"`
}

type gFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	Parameters           json.RawMessage `json:"parameters,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type gToolConfig struct {
	FunctionCallingConfig gCallingConfig `json:"functionCallingConfig"`
}

type gCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type gGenConfig struct {
	StopSequences      []string         `json:"stopSequences,omitempty"`
	ResponseMimeType   string           `json:"responseMimeType,omitempty"`
	ResponseSchema     json.RawMessage  `json:"responseSchema,omitempty"`
	ResponseJSONSchema json.RawMessage  `json:"responseJsonSchema,omitempty"`
	MaxOutputTokens    *int64           `json:"maxOutputTokens,omitempty"`
	Temperature        *float64         `json:"temperature,omitempty"`
	TopP               *float64         `json:"topP,omitempty"`
	TopK               *int64           `json:"topK,omitempty"`
	Seed               *int64           `json:"seed,omitempty"`
	ThinkingConfig     *gThinkingConfig `json:"thinkingConfig,omitempty"`
}

type gThinkingConfig struct {
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
	ThinkingBudget  *int64 `json:"thinkingBudget,omitempty"`
}

func invalid(msg string) *wire.Error {
	return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: msg}
}

func encode(in *wire.EncodeInput, res *wire.EncodeResult) error {
	model := in.Route.Model
	if model == "" {
		model = in.Request.Model
	}
	model = strings.TrimPrefix(model, "models/")
	if model == "" {
		res.Error = invalid("no model given for provider " + in.Route.Provider)
		return nil
	}
	body, werr := buildRequest(&in.Request, in.Meta.Annotations)
	if werr != nil {
		res.Error = werr
		return nil
	}
	for i := range in.Request.Messages {
		if in.Request.Messages[i].Role == "system" {
			res.Degraded = append(res.Degraded, DegradedSystemAsUser)
			break
		}
	}
	for i := range in.Request.Tools {
		if t := &in.Request.Tools[i]; hostedTool(t) {
			res.Degraded = append(res.Degraded, "hosted-tool-dropped:"+t.Name)
		}
	}
	b, err := json.Marshal(body)
	if err != nil {
		res.Error = &wire.Error{Status: 500, Kind: wire.ErrInternal, Message: "gemini adapter: encoding the request: " + err.Error()}
		return nil
	}
	headers := []wire.KV{
		{Key: "Content-Type", Value: "application/json"},
		{Key: "x-goog-api-key", Value: "${credential}"},
	}
	u := endpoint(in.Route.BaseURL, model)
	if in.Request.Stream {
		u += ":streamGenerateContent?alt=sse"
		headers = append(headers, wire.KV{Key: "Accept", Value: "text/event-stream"})
	} else {
		u += ":generateContent"
	}
	for _, k := range headerKeys {
		headers = append(headers, wire.KV{Key: k, Value: cfg.Headers[k]})
	}
	res.Call = &wire.UpstreamCall{
		Method:   "POST",
		URL:      u,
		Headers:  headers,
		BodyMode: wire.BodyRaw,
		Body:     b,
		Stream:   in.Request.Stream,
	}
	return nil
}

// endpoint returns {base}/{version}/models/{model}, without the method.
func endpoint(base, model string) string {
	base = strings.TrimRight(base, "/")
	if base == "" {
		base = defaultBaseURL
	}
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		switch base[i+1:] {
		case "v1", "v1beta", "v1alpha":
			return base + "/models/" + url.PathEscape(model)
		}
	}
	return base + "/" + cfg.APIVersion + "/models/" + url.PathEscape(model)
}

// extraFields are the caller's top-level fields (Request.Extra) this
// adapter understands.
type extraFields struct {
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens *int64 `json:"budget_tokens"`
	} `json:"thinking"`
	ReasoningEffort string `json:"reasoning_effort"`
	ResponseFormat  *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Schema json.RawMessage `json:"schema"`
		} `json:"json_schema"`
	} `json:"response_format"`
	// The Responses API's spellings of the same: reasoning.effort, and
	// text.format (json_schema's members flattened into it).
	Reasoning *struct {
		Effort string `json:"effort"`
	} `json:"reasoning"`
	Text *struct {
		Format *struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"format"`
	} `json:"text"`
}

// hostedTool reports whether t is a caller's server-side tool (a
// Responses API web_search or namespace, an Anthropic server tool): its
// Extra names a type other than function or custom, and Gemini has no
// function to declare for it.
func hostedTool(t *wire.Tool) bool {
	if len(t.Extra) == 0 {
		return false
	}
	var x struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(t.Extra, &x) == nil && x.Type != "" && x.Type != "function" && x.Type != "custom"
}

func buildRequest(r *wire.Request, anns []wire.KV) (*gRequest, *wire.Error) {
	out := &gRequest{SafetySettings: cfg.SafetySettings}

	var sys []gPart
	for i := range r.System {
		if b := &r.System[i]; b.Type == wire.BlockText && b.Text != "" {
			sys = append(sys, textPart(b.Text))
		}
	}
	if len(sys) > 0 {
		out.SystemInstruction = &gContent{Parts: sys}
	}

	contents, werr := buildContents(r.Messages)
	if werr != nil {
		return nil, werr
	}
	if len(contents) == 0 {
		return nil, invalid("Gemini needs at least one user or assistant message with content")
	}
	out.Contents = contents

	if len(r.Tools) > 0 {
		decls := make([]gFunctionDecl, 0, len(r.Tools))
		for i := range r.Tools {
			t := &r.Tools[i]
			if hostedTool(t) {
				continue // encode names it in X-Bardo-Degraded
			}
			d := gFunctionDecl{Name: t.Name, Description: t.Description}
			if cfg.SchemaMode == "json_schema" {
				if len(t.Schema) > 0 && string(t.Schema) != "null" {
					d.ParametersJSONSchema = t.Schema
				}
			} else {
				d.Parameters = parametersSchema(t.Schema)
			}
			decls = append(decls, d)
		}
		if len(decls) > 0 {
			out.Tools = []gTool{{FunctionDeclarations: decls}}
		}
		if tc, keep := toolConfig(r.ToolChoice); tc != nil && len(decls) > 0 {
			out.ToolConfig = tc
			if keep != nil {
				filtered := decls[:0]
				for _, d := range decls {
					if slices.Contains(keep, d.Name) {
						filtered = append(filtered, d)
					}
				}
				out.Tools[0].FunctionDeclarations = filtered
			}
		}
	}

	gc := &gGenConfig{StopSequences: r.Params.Stop}
	p := &r.Params
	if p.Set&wire.HasMaxTokens != 0 {
		gc.MaxOutputTokens = &p.MaxTokens
	}
	if p.Set&wire.HasTemperature != 0 {
		gc.Temperature = &p.Temperature
	}
	if p.Set&wire.HasTopP != 0 {
		gc.TopP = &p.TopP
	}
	if p.Set&wire.HasTopK != 0 {
		gc.TopK = &p.TopK
	}
	if p.Set&wire.HasSeed != 0 {
		gc.Seed = &p.Seed
	}
	callerThinking := false
	if len(r.Extra) > 2 {
		callerThinking = applyExtra(r.Extra, gc)
	}
	if !callerThinking {
		gc.ThinkingConfig = profileThinking(anns)
	}
	if cfg.IncludeThoughts {
		if gc.ThinkingConfig == nil {
			gc.ThinkingConfig = &gThinkingConfig{}
		}
		gc.ThinkingConfig.IncludeThoughts = true
	}
	if gc.StopSequences != nil || gc.ResponseMimeType != "" || gc.MaxOutputTokens != nil || gc.Temperature != nil ||
		gc.TopP != nil || gc.TopK != nil || gc.Seed != nil || gc.ThinkingConfig != nil {
		out.GenerationConfig = gc
	}
	return out, nil
}

// reasoningBudgets follows Google's own mapping of OpenAI reasoning_effort
// in its OpenAI-compatible endpoint.
var reasoningBudgets = map[string]int64{"minimal": 1024, "low": 1024, "medium": 8192, "high": 24576}

// Annotations the gateway sets from the routed subsystem's inference
// profile: the reasoning effort it asks of this provider, and whether it
// wants the reasoning text back.
const (
	annReasoningEffort = "bardo.profile.reasoning_effort"
	annVisibleThinking = "bardo.profile.visible_thinking"
)

// profileThinking is the thinkingConfig the gateway's profile annotation
// asks for, or nil. The levels budget like reasoning_effort; the top ones
// (OpenAI's "xhigh", the profile's "max") get the table's highest, which
// every budgeted Gemini model accepts. "none" sends nothing, as a disabled
// thinking does: some Gemini models cannot turn thinking off and refuse a
// budget of 0. Thought summaries only when the profile wants them visible.
func profileThinking(anns []wire.KV) *gThinkingConfig {
	level := annotation(anns, annReasoningEffort)
	b, ok := reasoningBudgets[level]
	if level == "xhigh" || level == "max" {
		b, ok = reasoningBudgets["high"], true
	}
	if !ok {
		return nil
	}
	return &gThinkingConfig{IncludeThoughts: annotation(anns, annVisibleThinking) == "true", ThinkingBudget: &b}
}

func annotation(anns []wire.KV, key string) string {
	for i := len(anns) - 1; i >= 0; i-- {
		if anns[i].Key == key {
			return anns[i].Value
		}
	}
	return ""
}

// applyExtra maps the caller's extra fields; it reports whether the caller
// set thinking or reasoning_effort itself (disabled counts: the caller's
// choice beats the gateway's profile).
func applyExtra(extra []byte, gc *gGenConfig) (callerThinking bool) {
	var x extraFields
	if json.Unmarshal(extra, &x) != nil {
		return false
	}
	if x.ReasoningEffort == "" && x.Reasoning != nil {
		x.ReasoningEffort = x.Reasoning.Effort
	}
	callerThinking = x.Thinking != nil || x.ReasoningEffort != ""
	switch {
	case x.Thinking != nil && (x.Thinking.Type == "enabled" || x.Thinking.Type == "adaptive"):
		gc.ThinkingConfig = &gThinkingConfig{IncludeThoughts: true}
		if x.Thinking.Type == "enabled" && x.Thinking.BudgetTokens != nil {
			gc.ThinkingConfig.ThinkingBudget = x.Thinking.BudgetTokens
		}
	case x.ReasoningEffort != "":
		if b, ok := reasoningBudgets[x.ReasoningEffort]; ok {
			gc.ThinkingConfig = &gThinkingConfig{IncludeThoughts: true, ThinkingBudget: &b}
		}
	}
	var format string
	var schema json.RawMessage
	switch {
	case x.ResponseFormat != nil:
		format = x.ResponseFormat.Type
		if x.ResponseFormat.JSONSchema != nil {
			schema = x.ResponseFormat.JSONSchema.Schema
		}
	case x.Text != nil && x.Text.Format != nil:
		format, schema = x.Text.Format.Type, x.Text.Format.Schema
	}
	switch format {
	case "json_object":
		gc.ResponseMimeType = "application/json"
	case "json_schema":
		gc.ResponseMimeType = "application/json"
		if len(schema) > 0 {
			if cfg.SchemaMode == "json_schema" {
				gc.ResponseJSONSchema = schema
			} else {
				gc.ResponseSchema = sanitizeSchema(schema, false)
			}
		}
	}
	return callerThinking
}

// toolConfig maps the canonical tool_choice. keep, when non-nil, restricts
// the declared functions (OpenAI's allowed_tools in auto mode).
func toolConfig(choice []byte) (tc *gToolConfig, keep []string) {
	if len(choice) == 0 {
		return nil, nil
	}
	var c struct {
		Type         string `json:"type"`
		Name         string `json:"name"`
		AllowedTools *struct {
			Mode  string `json:"mode"`
			Tools []struct {
				Name     string `json:"name"`
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tools"`
		} `json:"allowed_tools"`
	}
	if json.Unmarshal(choice, &c) != nil {
		return nil, nil
	}
	switch c.Type {
	case "auto":
		return &gToolConfig{gCallingConfig{Mode: "AUTO"}}, nil
	case "any":
		return &gToolConfig{gCallingConfig{Mode: "ANY"}}, nil
	case "none":
		return &gToolConfig{gCallingConfig{Mode: "NONE"}}, nil
	case "tool":
		if c.Name != "" {
			return &gToolConfig{gCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{c.Name}}}, nil
		}
	case "allowed_tools":
		if c.AllowedTools == nil {
			return nil, nil
		}
		var names []string
		for _, t := range c.AllowedTools.Tools {
			if n := cmpOr(t.Function.Name, t.Name); n != "" {
				names = append(names, n)
			}
		}
		if c.AllowedTools.Mode == "required" {
			return &gToolConfig{gCallingConfig{Mode: "ANY", AllowedFunctionNames: names}}, nil
		}
		return &gToolConfig{gCallingConfig{Mode: "AUTO"}}, names
	}
	return nil, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func textPart(s string) gPart { return gPart{Text: &s} }

// buildContents maps messages to contents. Tool results need the function's
// name, which canonical tool_result blocks do not carry: it is recovered
// from the tool_use block with the same id earlier in the conversation.
func buildContents(msgs []wire.Message) ([]gContent, *wire.Error) {
	names := map[string]string{}
	for i := range msgs {
		for j := range msgs[i].Content {
			if b := &msgs[i].Content[j]; b.Type == wire.BlockToolUse && b.ID != "" {
				names[b.ID] = b.Name
			}
		}
	}
	out := make([]gContent, 0, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		role := "user"
		if m.Role == "assistant" || m.Role == "model" {
			role = "model"
		}
		content := m.Content
		if m.Role == "system" {
			content = systemAsUser(content)
		}
		parts, werr := buildParts(content, names, role == "model")
		if werr != nil {
			return nil, werr
		}
		if len(parts) == 0 {
			continue
		}
		// Consecutive user turns (tool results, then a question) become one
		// content; model turns stay apart, each is its own reasoning step.
		if n := len(out); n > 0 && role == "user" && out[n-1].Role == "user" {
			out[n-1].Parts = append(out[n-1].Parts, parts...)
			continue
		}
		out = append(out, gContent{Role: role, Parts: parts})
	}
	return out, nil
}

// DegradedSystemAsUser is the X-Bardo-Degraded note of a request whose
// mid-conversation system messages went to Gemini as user text.
const DegradedSystemAsUser = "system-as-user"

// systemAsUser turns a mid-conversation system message (Gemini has a system
// instruction only before the conversation) into user text, in place,
// marked the way agents mark instructions that are not the user's.
func systemAsUser(blocks []wire.Block) []wire.Block {
	var b strings.Builder
	b.WriteString("<system-reminder>\n")
	for i := range blocks {
		if blocks[i].Type == wire.BlockText {
			b.WriteString(blocks[i].Text)
			b.WriteByte('\n')
		}
	}
	b.WriteString("</system-reminder>")
	return []wire.Block{{Type: wire.BlockText, Text: b.String()}}
}

func buildParts(blocks []wire.Block, names map[string]string, model bool) ([]gPart, *wire.Error) {
	parts := make([]gPart, 0, len(blocks))
	pending := "" // a signature that rode on the part that follows it
	add := func(p gPart) {
		if pending != "" {
			if p.ThoughtSignature == "" {
				p.ThoughtSignature = pending
			} else { // the part has its own: the pending one rides on an empty part
				e := ""
				parts = append(parts, gPart{Text: &e, ThoughtSignature: pending})
			}
			pending = ""
		}
		parts = append(parts, p)
	}
	for i := range blocks {
		b := &blocks[i]
		switch b.Type {
		case wire.BlockText:
			if b.Text != "" {
				add(textPart(b.Text))
			}
		case wire.BlockImage:
			if p, ok := mediaPart(b.Data, false); ok {
				add(p)
			}
		case wire.BlockDocument:
			var d struct {
				Source json.RawMessage `json:"source"`
			}
			if json.Unmarshal(b.Data, &d) == nil {
				if p, ok := mediaPart(d.Source, true); ok {
					add(p)
				}
			}
		case wire.BlockToolUse:
			add(gPart{FunctionCall: &gFunctionCall{Name: b.Name, Args: argsObject(b.Data)}})
		case wire.BlockToolResult:
			name := names[b.ID]
			if name == "" {
				name = cmpOr(b.Name, b.ID)
			}
			if name == "" {
				return nil, invalid("a tool result has neither a tool_use id nor a name; Gemini needs the function name")
			}
			add(gPart{FunctionResponse: &gFunctionResponse{Name: name, Response: toolResponse(b)}})
		case wire.BlockThinking:
			sig, ours := strings.CutPrefix(b.Signature, sigPrefix)
			switch {
			case !ours:
				// Unsigned (OpenAI reasoning_content) or another provider's
				// thinking: Gemini cannot use it, and would refuse a foreign
				// signature as corrupted.
			case b.Text != "":
				add(gPart{Text: &b.Text, Thought: true, ThoughtSignature: sig})
			case sig != "":
				if pending != "" { // two bare signatures in a row: the first rides on an empty part
					add(textPart(""))
				}
				pending = sig
			}
		}
		// redacted_thinking and unknown blocks have no Gemini form.
	}
	if pending != "" {
		add(textPart(""))
	}
	if model && *cfg.SignatureFallback != "" {
		first, signed := -1, false
		for i := range parts {
			if parts[i].ThoughtSignature != "" {
				signed = true
			}
			if first < 0 && parts[i].FunctionCall != nil {
				first = i
			}
		}
		if first >= 0 && !signed {
			parts[first].ThoughtSignature = *cfg.SignatureFallback
		}
	}
	return parts, nil
}

// argsObject returns a tool_use input as the JSON object Gemini's args must be.
func argsObject(data []byte) json.RawMessage {
	t := strings.TrimSpace(string(data))
	if strings.HasPrefix(t, "{") && json.Valid(data) {
		return data
	}
	return json.RawMessage("{}")
}

// toolResponse builds functionResponse.response: a JSON object result is
// sent as is; any other text as {"output": text}, or {"error": text} for a
// failed call (the keys Gemini documents).
func toolResponse(b *wire.Block) json.RawMessage {
	text := b.Text
	if len(b.Data) > 0 {
		var items []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b.Data, &items) == nil {
			for _, it := range items {
				if it.Type == "text" && it.Text != "" {
					if text != "" {
						text += "\n"
					}
					text += it.Text
				}
			}
		}
	}
	if !b.IsError {
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "{") && json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
	}
	key := "output"
	if b.IsError {
		key = "error"
	}
	v, _ := json.Marshal(map[string]string{key: text})
	return v
}

// mediaPart maps a canonical image or document source: base64 data becomes
// inlineData, a URL fileData, plain text (documents) a text part.
func mediaPart(source []byte, document bool) (gPart, bool) {
	var s struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if json.Unmarshal(source, &s) != nil {
		return gPart{}, false
	}
	switch s.Type {
	case "base64":
		if s.Data == "" {
			return gPart{}, false
		}
		return gPart{InlineData: &gBlob{MimeType: s.MediaType, Data: s.Data}}, true
	case "url":
		if s.URL == "" {
			return gPart{}, false
		}
		mt := mimeFromURL(s.URL)
		if mt == "" && document {
			mt = "application/pdf"
		}
		return gPart{FileData: &gFileData{MimeType: mt, FileURI: s.URL}}, true
	case "text":
		if document && s.Data != "" {
			return textPart(s.Data), true
		}
	}
	return gPart{}, false
}

func mimeFromURL(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	dot := strings.LastIndexByte(u, '.')
	if dot < 0 {
		return ""
	}
	switch strings.ToLower(u[dot+1:]) {
	case "png":
		return "image/png"
	case "jpg", "jpeg":
		return "image/jpeg"
	case "webp":
		return "image/webp"
	case "gif":
		return "image/gif"
	case "heic":
		return "image/heic"
	case "heif":
		return "image/heif"
	case "pdf":
		return "application/pdf"
	}
	return ""
}
