package trace

import (
	"encoding/json"

	"go.opentelemetry.io/otel/attribute"

	"github.com/bardoinference/bardo/sdk/wire"
)

// The GenAI semantic conventions' attributes (OpenTelemetry semconv,
// "gen-ai-spans", development status; the cache token counts as named
// since semconv 1.40). Declared here: the otel module's semconv packages
// lag the spec.
const (
	GenAIOperationName                 = attribute.Key("gen_ai.operation.name")
	GenAIProviderName                  = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel                  = attribute.Key("gen_ai.request.model")
	GenAIRequestMaxTokens              = attribute.Key("gen_ai.request.max_tokens")
	GenAIRequestTemperature            = attribute.Key("gen_ai.request.temperature")
	GenAIRequestTopP                   = attribute.Key("gen_ai.request.top_p")
	GenAIResponseModel                 = attribute.Key("gen_ai.response.model")
	GenAIResponseID                    = attribute.Key("gen_ai.response.id")
	GenAIResponseFinishReasons         = attribute.Key("gen_ai.response.finish_reasons")
	GenAIUsageInputTokens              = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens             = attribute.Key("gen_ai.usage.output_tokens")
	GenAIUsageCacheReadInputTokens     = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	GenAIUsageCacheCreationInputTokens = attribute.Key("gen_ai.usage.cache_creation.input_tokens")
	// Opt-in content (capture_content = true): JSON, in the conventions'
	// message shape.
	GenAIInputMessages  = attribute.Key("gen_ai.input.messages")
	GenAIOutputMessages = attribute.Key("gen_ai.output.messages")
)

// The gateway's own attributes.
const (
	BardoRequestID        = attribute.Key("bardo.request.id")        // X-Bardo-Request-Id
	BardoDialect          = attribute.Key("bardo.dialect")           // the caller's: openai, anthropic, responses
	BardoStream           = attribute.Key("bardo.stream")            // the caller asked for a stream
	BardoPath             = attribute.Key("bardo.path")              // how the answer came about (gateway.Path)
	BardoCache            = attribute.Key("bardo.cache")             // the layers' X-Bardo-Cache verdict
	BardoStreamEnd        = attribute.Key("bardo.stream.end")        // ended, broken, client_gone
	BardoFirstByteMs      = attribute.Key("bardo.first_byte_ms")     // a stream's time to its first byte
	BardoFailover         = attribute.Key("bardo.failover")          // failed attempts, as X-Bardo-Fallback
	BardoDegraded         = attribute.Key("bardo.degraded")          // X-Bardo-Degraded
	BardoLayers           = attribute.Key("bardo.layers")            // the layers called, in order
	BardoCostMicros       = attribute.Key("bardo.cost_micro_usd")    // what the providers billed
	BardoChargeMicros     = attribute.Key("bardo.charge_micro_usd")  // what the caller was charged
	BardoSavingsMicros    = attribute.Key("bardo.savings_micro_usd") // X-Bardo-Savings
	BardoRouteMode        = attribute.Key("bardo.route.mode")        // explicit, or the intent's source
	BardoLayerName        = attribute.Key("bardo.layer.name")        // a layer call's layer
	BardoLayerOp          = attribute.Key("bardo.layer.op")          // on_request, on_response, on_stream, on_fallback
	BardoAttemptTry       = attribute.Key("bardo.attempt.try")       // 1 or 2 (the retry of the same provider)
	BardoAttemptTransient = attribute.Key("bardo.attempt.transient") // another try or provider may succeed
)

// part and message are the conventions' message shape
// ({"role", "parts": [{"type": "text", "content"}]}).
type part struct {
	Type      string          `json:"type"`
	Content   string          `json:"content,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Response  string          `json:"response,omitempty"`
}

type message struct {
	Role         string `json:"role"`
	Parts        []part `json:"parts"`
	FinishReason string `json:"finish_reason,omitempty"`
}

func parts(bs []wire.Block) []part {
	ps := make([]part, 0, len(bs))
	for i := range bs {
		b := &bs[i]
		switch b.Type {
		case wire.BlockText:
			ps = append(ps, part{Type: "text", Content: b.Text})
		case wire.BlockThinking:
			ps = append(ps, part{Type: "reasoning", Content: b.Text})
		case wire.BlockToolUse:
			var args json.RawMessage
			if json.Valid(b.Data) {
				args = b.Data
			}
			ps = append(ps, part{Type: "tool_call", ID: b.ID, Name: b.Name, Arguments: args})
		case wire.BlockToolResult:
			r := b.Text
			if r == "" {
				r = string(b.Data)
			}
			ps = append(ps, part{Type: "tool_call_response", ID: b.ID, Response: r})
		}
	}
	return ps
}

// inputMessages is the request as it went upstream (after the layers:
// personal data masked), system first.
func inputMessages(req *wire.Request) string {
	ms := make([]message, 0, len(req.Messages)+1)
	if len(req.System) > 0 {
		ms = append(ms, message{Role: "system", Parts: parts(req.System)})
	}
	for i := range req.Messages {
		ms = append(ms, message{Role: req.Messages[i].Role, Parts: parts(req.Messages[i].Content)})
	}
	b, _ := json.Marshal(ms)
	return string(b)
}

func outputMessages(resp *wire.Response) string {
	b, _ := json.Marshal([]message{{Role: "assistant", Parts: parts(resp.Content), FinishReason: resp.StopReason}})
	return string(b)
}
