package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/bardoinference/bardo/sdk/routing"
)

// Shape names the JSON a backend's GET /models answers with.
type Shape string

// Shapes.
const (
	// ShapeAuto detects the shape from the payload (see Decode).
	ShapeAuto Shape = "auto"
	// ShapeOpenAI: {"object":"list","data":[{"id","object":"model",
	// "created","owned_by"}]} — ids only, no prices
	// (https://platform.openai.com/docs/api-reference/models/list).
	// Anthropic's list ({"data":[{"type":"model","id","display_name",…}]},
	// https://docs.anthropic.com/en/api/models-list) reads the same way,
	// with display_name as the name.
	ShapeOpenAI Shape = "openai"
	// ShapeOpenRouter: OpenRouter's Models API
	// (https://openrouter.ai/docs/models,
	// https://openrouter.ai/docs/api/api-reference/models/get-models):
	// per model context_length, top_provider.max_completion_tokens,
	// architecture.{input,output}_modalities, supported_parameters, and
	// pricing.{prompt,completion,input_cache_read,input_cache_write} as
	// decimal strings in USD per token ("-1" where the price varies, as on
	// the openrouter/auto router).
	ShapeOpenRouter Shape = "openrouter"
	// ShapeVenice: Venice's GET /models
	// (https://docs.venice.ai/api-reference/endpoint/models/list): per model
	// type ("text", "image", …) and model_spec.{name, availableContextTokens,
	// maxCompletionTokens, capabilities.supports*, privacy, offline,
	// pricing.{input,output,cache_input,cache_write}.usd}, prices in USD per
	// million tokens (https://docs.venice.ai/pricing.md).
	ShapeVenice Shape = "venice"
	// ShapeBlockRun: BlockRun's GET /api/v1/models
	// (https://blockrun.ai/docs/api-reference/models): {"models":[{"id",
	// "name","provider","inputPrice","outputPrice","context_window",
	// "max_output","categories","available"}]}, prices in USD per million
	// tokens. Also read under "data", and with the prices as
	// pricing.{input,output}.
	ShapeBlockRun Shape = "blockrun"
)

// ParseShape returns the shape named s ("" is ShapeAuto).
func ParseShape(s string) (Shape, error) {
	switch sh := Shape(strings.ToLower(strings.TrimSpace(s))); sh {
	case "":
		return ShapeAuto, nil
	case ShapeAuto, ShapeOpenAI, ShapeOpenRouter, ShapeVenice, ShapeBlockRun:
		return sh, nil
	}
	return "", fmt.Errorf("unknown catalog shape %q (want auto, openai, openrouter, venice or blockrun)", s)
}

// Decoded is what Decode read from one /models payload.
type Decoded struct {
	Shape  Shape   // the shape used (detected for ShapeAuto)
	Models []Model // usable chat models, Origin dynamic, in payload order
	// Skipped counts entries left out: not chat models (image, embedding,
	// …), offline or unavailable, without an id, duplicated, or not JSON
	// objects.
	Skipped int
	// Problems describes fields that could not be read (the field is left
	// unknown, the model kept), at most 20.
	Problems []string
}

// ErrEmpty is returned for a model list with no usable model: a backend
// answering an empty list is far more likely broken than out of models, so
// it must not wipe the last good catalog.
var ErrEmpty = errors.New("no usable model in the list")

// Decode reads a GET /models payload of the given shape into the models of
// provider. With ShapeAuto the shape is detected: a top-level "models" array
// or entries with inputPrice/outputPrice/context_window/categories are
// BlockRun; entries with model_spec are Venice; entries with
// pricing.prompt, context_length, supported_parameters or architecture are
// OpenRouter; anything else is OpenAI's id list.
//
// A payload that is not JSON, has no "data"/"models" array, or yields no
// usable model is an error. Individual bad entries are skipped and bad
// fields left unknown, so one odd model does not cost the whole catalog.
func Decode(provider string, shape Shape, body []byte) (Decoded, error) {
	var top struct {
		Data   []json.RawMessage `json:"data"`
		Models []json.RawMessage `json:"models"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return Decoded{}, errors.New("want a JSON object with a data array")
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return Decoded{}, fmt.Errorf("decode model list: %w", err)
	}
	raw := top.Data
	if raw == nil {
		raw = top.Models
	}
	if raw == nil {
		return Decoded{}, errors.New("no data (or models) array in the model list")
	}
	d := Decoded{Shape: shape}
	entries := make([]wireModel, 0, len(raw))
	for _, r := range raw {
		var w wireModel
		if err := json.Unmarshal(r, &w); err != nil {
			d.Skipped++
			d.problem("entry %d: %v", len(entries)+d.Skipped, err)
			continue
		}
		entries = append(entries, w)
	}
	if shape == ShapeAuto || shape == "" {
		d.Shape = detect(top.Models != nil && top.Data == nil, entries)
	}
	seen := make(map[string]bool, len(entries))
	for i := range entries {
		w := &entries[i]
		id := strings.TrimSpace(w.ID)
		if id == "" || seen[id] || !w.usable(d.Shape) {
			d.Skipped++
			continue
		}
		seen[id] = true
		d.Models = append(d.Models, w.model(provider, id, d.Shape, &d))
	}
	if len(d.Models) == 0 {
		return d, ErrEmpty
	}
	return d, nil
}

func (d *Decoded) problem(format string, args ...any) {
	if len(d.Problems) < 20 {
		d.Problems = append(d.Problems, fmt.Sprintf(format, args...))
	}
}

func detect(blockrunTop bool, entries []wireModel) Shape {
	if blockrunTop {
		return ShapeBlockRun
	}
	for i := range entries {
		w := &entries[i]
		switch {
		case w.ModelSpec != nil:
			return ShapeVenice
		case w.InputPrice.set || w.OutputPrice.set || w.ContextWindow.set || w.Categories != nil:
			return ShapeBlockRun
		case (w.Pricing != nil && (w.Pricing.Prompt.set || w.Pricing.Completion.set)) ||
			w.ContextLength.set || w.SupportedParameters != nil || w.Architecture != nil:
			return ShapeOpenRouter
		}
	}
	return ShapeOpenAI
}

// num is a JSON value that may be a number or a numeric string (providers
// use both); it keeps the literal text so prices parse exactly.
type num struct {
	s   string
	set bool
}

func (n *num) UnmarshalJSON(b []byte) error {
	switch {
	case string(b) == "null":
		*n = num{}
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*n = num{s: strings.TrimSpace(s), set: true}
	case len(b) > 0 && (b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
		*n = num{s: string(b), set: true}
	default:
		return fmt.Errorf("want a number, got %s", b)
	}
	return nil
}

// tokens reads a token count (0, false when absent or not a positive
// integer).
func (n num) tokens() (int64, bool) {
	if !n.set {
		return 0, false
	}
	if v, err := strconv.ParseInt(n.s, 10, 64); err == nil {
		return v, v > 0
	}
	f, err := strconv.ParseFloat(n.s, 64)
	if err != nil || f <= 0 || f > math.MaxInt64 || f != math.Trunc(f) {
		return 0, false
	}
	return int64(f), true
}

type wirePricing struct {
	// OpenRouter, USD per token.
	Prompt     num `json:"prompt"`
	Completion num `json:"completion"`
	CacheRead  num `json:"input_cache_read"`
	CacheWrite num `json:"input_cache_write"`
	// BlockRun's alternative form, USD per million tokens.
	Input  num `json:"input"`
	Output num `json:"output"`
}

type veniceUSD struct {
	USD num `json:"usd"`
}

type veniceSpec struct {
	Name                   string          `json:"name"`
	AvailableContextTokens num             `json:"availableContextTokens"`
	MaxCompletionTokens    num             `json:"maxCompletionTokens"`
	Privacy                string          `json:"privacy"`
	Offline                bool            `json:"offline"`
	RawCapabilities        json.RawMessage `json:"capabilities"` // flags and e.g. "quantization": "fp16"
	Pricing                *struct {
		Input      *veniceUSD `json:"input"`
		Output     *veniceUSD `json:"output"`
		CacheInput *veniceUSD `json:"cache_input"`
		CacheWrite *veniceUSD `json:"cache_write"`
	} `json:"pricing"`
}

// wireModel is the union of every shape's model fields; json ignores what a
// payload does not have.
type wireModel struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	DisplayName string `json:"display_name"` // Anthropic
	Type        string `json:"type"`         // Venice: text, image, …; Anthropic: model

	// OpenRouter.
	ContextLength num          `json:"context_length"`
	Pricing       *wirePricing `json:"pricing"`
	TopProvider   *struct {
		ContextLength       num `json:"context_length"`
		MaxCompletionTokens num `json:"max_completion_tokens"`
	} `json:"top_provider"`
	SupportedParameters []string `json:"supported_parameters"`
	Architecture        *struct {
		InputModalities  []string `json:"input_modalities"`
		OutputModalities []string `json:"output_modalities"`
	} `json:"architecture"`

	// Venice.
	ModelSpec *veniceSpec `json:"model_spec"`

	// BlockRun.
	InputPrice    num      `json:"inputPrice"`
	OutputPrice   num      `json:"outputPrice"`
	ContextWindow num      `json:"context_window"`
	MaxOutput     num      `json:"max_output"`
	Categories    []string `json:"categories"`
	Available     *bool    `json:"available"`
}

// nonChatTypes are Venice model types that do not serve chat completions.
var nonChatTypes = map[string]bool{
	"image": true, "inpaint": true, "upscale": true, "video": true, "music": true,
	"tts": true, "asr": true, "embedding": true,
}

// usable reports whether the entry is a chat model that can take requests.
func (w *wireModel) usable(shape Shape) bool {
	if nonChatTypes[strings.ToLower(w.Type)] {
		return false
	}
	switch shape {
	case ShapeVenice:
		return w.ModelSpec == nil || !w.ModelSpec.Offline
	case ShapeBlockRun:
		if w.Available != nil && !*w.Available {
			return false
		}
		if len(w.Categories) == 0 {
			return true
		}
		// BlockRun also lists image, video, music and voice models.
		for _, c := range w.Categories {
			switch strings.ToLower(c) {
			case "chat", "reasoning", "coding", "vision":
				return true
			}
		}
		return false
	case ShapeOpenRouter:
		if w.Architecture == nil || len(w.Architecture.OutputModalities) == 0 {
			return true
		}
		for _, m := range w.Architecture.OutputModalities {
			if m == "text" {
				return true
			}
		}
		return false
	}
	return true
}

// model converts the entry; unreadable fields are left unknown and
// reported.
func (w *wireModel) model(provider, id string, shape Shape, d *Decoded) Model {
	m := Model{ID: id, Provider: provider, Origin: OriginDynamic, Name: w.Name}
	if m.Name == "" {
		m.Name = w.DisplayName
	}
	setTokens := func(dst *int64, f Fields, n num) {
		if v, ok := n.tokens(); ok {
			*dst = v
			m.Set |= f
		}
	}
	price := func(dst *Price, f Fields, n num, perToken bool) {
		if !n.set {
			return
		}
		if strings.HasPrefix(n.s, "-") {
			// OpenRouter's "-1": the price varies (a router); unknown.
			return
		}
		var p Price
		var err error
		if perToken {
			p, err = ParsePerTokenPrice(n.s)
		} else {
			p, err = ParsePrice(n.s)
		}
		if err != nil {
			d.problem("model %q: price: %v", id, err)
			return
		}
		*dst = p
		m.Set |= f
	}

	switch shape {
	case ShapeOpenRouter:
		setTokens(&m.ContextWindow, FieldContextWindow, w.ContextLength)
		if tp := w.TopProvider; tp != nil {
			if m.ContextWindow == 0 {
				setTokens(&m.ContextWindow, FieldContextWindow, tp.ContextLength)
			}
			setTokens(&m.MaxOutput, FieldMaxOutput, tp.MaxCompletionTokens)
		}
		if p := w.Pricing; p != nil {
			price(&m.Input, FieldInputPrice, p.Prompt, true)
			price(&m.Output, FieldOutputPrice, p.Completion, true)
			price(&m.CacheRead, FieldCacheReadPrice, p.CacheRead, true)
			price(&m.CacheWrite, FieldCacheWritePrice, p.CacheWrite, true)
		}
		for _, sp := range w.SupportedParameters {
			if f, ok := openRouterParams[sp]; ok {
				m.Features = m.Features.With(f)
			}
		}
		if a := w.Architecture; a != nil {
			for _, im := range a.InputModalities {
				switch im {
				case "image":
					m.Features = m.Features.With(routing.Vision)
				case "audio":
					m.Features = m.Features.With(routing.AudioInput)
				case "video":
					m.Features = m.Features.With(routing.VideoInput)
				}
			}
		}
		if m.CacheRead.Known() && m.CacheRead.Nanos() > 0 {
			m.Features = m.Features.With(routing.PromptCaching)
		}
		m.Set |= FieldFeatures

	case ShapeVenice:
		s := w.ModelSpec
		if s == nil {
			break
		}
		if s.Name != "" {
			m.Name = s.Name
		}
		setTokens(&m.ContextWindow, FieldContextWindow, s.AvailableContextTokens)
		setTokens(&m.MaxOutput, FieldMaxOutput, s.MaxCompletionTokens)
		if p := s.Pricing; p != nil {
			usd := func(v *veniceUSD) num {
				if v == nil {
					return num{}
				}
				return v.USD
			}
			price(&m.Input, FieldInputPrice, usd(p.Input), false)
			price(&m.Output, FieldOutputPrice, usd(p.Output), false)
			price(&m.CacheRead, FieldCacheReadPrice, usd(p.CacheInput), false)
			price(&m.CacheWrite, FieldCacheWritePrice, usd(p.CacheWrite), false)
		}
		var caps map[string]any
		if len(s.RawCapabilities) > 0 {
			if err := json.Unmarshal(s.RawCapabilities, &caps); err != nil {
				d.problem("model %q: capabilities: %v", id, err)
			}
		}
		for k, v := range caps {
			if on, _ := v.(bool); on {
				if f, ok := veniceCaps[k]; ok {
					m.Features = m.Features.With(f)
				}
			}
		}
		if strings.EqualFold(s.Privacy, "private") {
			m.Features = m.Features.With(routing.Privacy)
		}
		if m.CacheRead.Known() && m.CacheRead.Nanos() > 0 {
			m.Features = m.Features.With(routing.PromptCaching)
		}
		m.Set |= FieldFeatures

	case ShapeBlockRun:
		setTokens(&m.ContextWindow, FieldContextWindow, w.ContextWindow)
		setTokens(&m.MaxOutput, FieldMaxOutput, w.MaxOutput)
		in, out := w.InputPrice, w.OutputPrice
		if p := w.Pricing; p != nil {
			if !in.set {
				in = p.Input
			}
			if !out.set {
				out = p.Output
			}
		}
		price(&m.Input, FieldInputPrice, in, false)
		price(&m.Output, FieldOutputPrice, out, false)
		for _, c := range w.Categories {
			switch strings.ToLower(c) {
			case "reasoning":
				m.Features = m.Features.With(routing.Reasoning)
			case "vision":
				m.Features = m.Features.With(routing.Vision)
			}
		}
		m.Set |= FieldFeatures
	}
	if m.Name != "" {
		m.Set |= FieldName
	}
	if m.ContextWindow > 0 && m.MaxOutput > m.ContextWindow {
		d.problem("model %q: max output %d above context window %d; max output dropped", id, m.MaxOutput, m.ContextWindow)
		m.MaxOutput = 0
		m.Set &^= FieldMaxOutput
	}
	return m
}

// openRouterParams maps OpenRouter's supported_parameters to features.
// The sampling parameters matter to routing.MapProfile: with a model's
// features known, it only sends top_k, min_p and seed to a model that has
// them.
var openRouterParams = map[string]routing.Feature{
	"tools":              routing.ToolUse,
	"tool_choice":        routing.ToolUse,
	"reasoning":          routing.Reasoning,
	"include_reasoning":  routing.Reasoning,
	"structured_outputs": routing.StructuredOutputs,
	"logprobs":           routing.Logprobs,
	"top_logprobs":       routing.Logprobs,
	"web_search_options": routing.WebSearch,
	"top_k":              routing.TopK,
	"min_p":              routing.MinP,
	"seed":               routing.Seed,
}

// veniceCaps maps Venice's model_spec.capabilities flags to features.
var veniceCaps = map[string]routing.Feature{
	"supportsFunctionCalling": routing.ToolUse,
	"supportsVision":          routing.Vision,
	"supportsReasoning":       routing.Reasoning,
	"supportsReasoningEffort": routing.ReasoningEffort,
	"supportsResponseSchema":  routing.StructuredOutputs,
	"supportsWebSearch":       routing.WebSearch,
	"supportsTeeAttestation":  routing.TEE,
	"supportsE2EE":            routing.E2EE,
	"supportsLogProbs":        routing.Logprobs,
	"supportsAudioInput":      routing.AudioInput,
	"supportsVideoInput":      routing.VideoInput,
}
