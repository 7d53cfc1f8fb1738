package wire

import "strings"

// KV is an ordered key/value pair (headers, annotations, metric labels).
type KV struct {
	Key   string
	Value string
}

// Header returns the value of the first pair named name, ignoring ASCII case
// as HTTP header names do; "" when there is none.
func Header(kvs []KV, name string) string {
	for i := range kvs {
		if strings.EqualFold(kvs[i].Key, name) {
			return kvs[i].Value
		}
	}
	return ""
}

// Dialect names an HTTP API wire format.
type Dialect uint8

// Dialects the host speaks natively.
const (
	DialectNone      Dialect = 0
	DialectOpenAI    Dialect = 1 // OpenAI Chat Completions
	DialectAnthropic Dialect = 2 // Anthropic Messages
	// DialectResponses is the OpenAI Responses API (POST /v1/responses):
	// a caller's dialect, and an upstream's for adapters that speak it.
	// Appended (ABI v1.4): a plugin built before it sees an unknown
	// dialect, as for any value it does not know.
	DialectResponses Dialect = 3
)

// String returns the dialect's lower-case name.
func (d Dialect) String() string {
	switch d {
	case DialectOpenAI:
		return "openai"
	case DialectAnthropic:
		return "anthropic"
	case DialectResponses:
		return "responses"
	}
	return "none"
}

// Part is a bit set naming the sections of a Request a layer reads or writes.
// The host encodes only the parts a layer declared it reads, and applies only
// the parts it declared it writes: a layer that reads nothing costs almost
// nothing to call.
type Part uint32

// Request parts.
const (
	PartModel    Part = 1 << iota // Request.Model
	PartSystem                    // Request.System
	PartMessages                  // Request.Messages
	PartTools                     // Request.Tools and Request.ToolChoice
	PartParams                    // Request.Params
	PartExtra                     // Request.Extra (unknown top-level fields)

	PartAll = PartModel | PartSystem | PartMessages | PartTools | PartParams | PartExtra
)

// Phase is a bit set of the pipeline phases a layer takes part in.
type Phase uint32

// Phases.
const (
	PhaseRequest  Phase = 1 << iota // before routing, in pipeline order
	PhaseResponse                   // on a complete (non-streamed) response, reverse order
	PhaseStream                     // on each batch of stream events, reverse order
	// PhaseFallback: every provider failed; a layer that keeps answers
	// (a cache) may serve one it would otherwise consider stale. In
	// pipeline order, with the request as it left the request phase and
	// the annotations the layers wrote there (ABI v1.3).
	PhaseFallback
)

// BlockType is the kind of a content block.
type BlockType uint8

// Content block kinds: the superset of OpenAI and Anthropic content.
const (
	BlockText             BlockType = 1
	BlockImage            BlockType = 2 // Data: raw JSON source ({"type":"base64",...} or {"type":"url",...})
	BlockToolUse          BlockType = 3 // ID, Name, Data: input JSON
	BlockToolResult       BlockType = 4 // ID: tool_use id, Text and/or Data: structured content JSON, IsError
	BlockThinking         BlockType = 5 // Text, Signature
	BlockRedactedThinking BlockType = 6 // Data: the opaque redacted payload (as a JSON string)
	BlockDocument         BlockType = 7 // Data: raw JSON of the block
	BlockOther            BlockType = 8 // Data: raw JSON of a block type this ABI does not model
)

// Block is one content block.
type Block struct {
	Type         BlockType
	Text         string
	ID           string
	Name         string
	Data         []byte // raw JSON; meaning depends on Type
	Signature    string
	IsError      bool
	CacheControl []byte // raw JSON of the block's cache_control, nil when absent
	// Extra holds the block's members this model has no field for (text
	// "citations", a tool_use's "caller", …) as a raw JSON object, so a
	// request a layer rewrote is re-encoded with them. Requests only: it
	// travels in the appended section of ABI v1.4 (see requestExtras).
	Extra []byte
}

// Message is one conversation turn.
//
// Role is "user", "assistant" or "system". Leading system (and developer)
// turns are folded into Request.System and tool turns into tool_result
// blocks; a "system" message is one that comes later in the conversation
// (Anthropic's mid-conversation system messages, an OpenAI system or
// developer message after the first turn), kept in its place. Its blocks are
// text; a developer message's blocks have Name "developer".
type Message struct {
	Role    string
	Content []Block
	Name    string
	// Extra holds the message's members this model has no field for
	// (a system message's cache_control, OpenAI's "refusal", …) as a raw
	// JSON object (ABI v1.4, see Block.Extra).
	Extra []byte
}

// Tool is one tool definition offered to the model.
type Tool struct {
	Name         string
	Description  string
	Schema       []byte // raw JSON Schema of the input
	CacheControl []byte
	// Extra holds the tool's other members as a raw JSON object: Claude
	// Code's "defer_loading", "eager_input_streaming", OpenAI's function
	// "strict", and an Anthropic server tool's "type" and settings (a tool
	// whose Extra has a "type" other than "custom" has no input schema).
	// ABI v1.4, see Block.Extra.
	Extra []byte
}

// Params flags say which optional sampling parameters are set.
const (
	HasTemperature uint32 = 1 << iota
	HasTopP
	HasTopK
	HasMaxTokens
	HasSeed
)

// Params are the sampling and length parameters that change the answer.
type Params struct {
	Set         uint32 // Has* flags
	MaxTokens   int64
	Temperature float64
	TopP        float64
	TopK        int64
	Seed        int64
	Stop        []string
}

// Request is the canonical chat request: a lossless superset of OpenAI Chat
// Completions and Anthropic Messages requests.
type Request struct {
	Model      string
	System     []Block
	Messages   []Message
	Tools      []Tool
	ToolChoice []byte // raw JSON, canonical form {"type":"auto"|"any"|"none"|"tool","name":...}
	Params     Params
	Stream     bool
	Extra      []byte // unknown top-level fields as a raw JSON object, for lossless round trips
}

// Usage counts tokens.
type Usage struct {
	InputTokens      int64 // prompt tokens not read from cache
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
}

// Stop reasons (canonical, Anthropic-style names).
const (
	StopEndTurn       = "end_turn"
	StopMaxTokens     = "max_tokens"
	StopSequence      = "stop_sequence"
	StopToolUse       = "tool_use"
	StopRefusal       = "refusal"
	StopPauseTurn     = "pause_turn"
	StopContentFilter = "content_filter"
)

// Response is a complete canonical answer.
type Response struct {
	ID         string
	Model      string
	Content    []Block
	StopReason string
	StopSeq    string
	Usage      Usage
}

// EventType is the kind of a canonical stream event. The event grammar follows
// Anthropic's (the richer of the two); the host translates it to OpenAI chunks.
type EventType uint8

// Stream event kinds.
const (
	EventMessageStart EventType = 1 // ID, Model, Usage (input side)
	EventBlockStart   EventType = 2 // Index, Block (type, id, name)
	EventDelta        EventType = 3 // Index, DeltaKind, Text
	EventBlockStop    EventType = 4 // Index
	EventMessageDelta EventType = 5 // StopReason, StopSeq, Usage (output side)
	EventMessageStop  EventType = 6
	EventError        EventType = 7 // Error
	EventPing         EventType = 8
)

// DeltaKind is what an EventDelta carries.
type DeltaKind uint8

// Delta kinds.
const (
	DeltaText      DeltaKind = 1 // text
	DeltaInputJSON DeltaKind = 2 // a fragment of a tool_use input's JSON
	DeltaThinking  DeltaKind = 3 // thinking text
	DeltaSignature DeltaKind = 4 // a thinking block's signature
)

// Event is one canonical stream event.
type Event struct {
	Type       EventType
	Index      int64
	ID         string
	Model      string
	Block      Block
	Delta      DeltaKind
	Text       string
	StopReason string
	StopSeq    string
	Usage      Usage
	Error      *Error
}

// Error is a failure the caller sees, in its own dialect.
type Error struct {
	Status       int64  // HTTP status, e.g. 400, 429, 502
	Kind         string // canonical kind, see Err* constants
	Message      string
	Retryable    bool
	RetryAfterMs int64
}

// Canonical error kinds; the host maps each to the caller's dialect.
const (
	ErrInvalidRequest = "invalid_request"
	ErrAuthentication = "authentication"
	ErrPermission     = "permission"
	ErrNotFound       = "not_found"
	ErrRateLimit      = "rate_limit"
	ErrOverloaded     = "overloaded"
	ErrTimeout        = "timeout"
	ErrUpstream       = "upstream"
	ErrInternal       = "internal"
)

// Meta describes the request being served. Every plugin call receives it.
type Meta struct {
	RequestID   string
	Tenant      string
	Session     string
	Dialect     Dialect // the caller's dialect
	Model       string  // the model the caller asked for
	Stream      bool
	Annotations []KV // set by earlier layers (see LayerResult.Annotations)
}

// Descriptor is what a plugin says about itself (export bardo_describe).
type Descriptor struct {
	ABI     uint32 // ABI major version the plugin was built for
	Name    string
	Version string
	Kind    string // "layer" or "provider"
	Phases  Phase  // layers: phases taken part in
	Reads   Part   // layers: request parts read
	Writes  Part   // layers: request parts written
	// Flags are the layer's Flag bits (ABI v1.6, appended; written only
	// when set, so a descriptor without them is what v1.5 wrote).
	Flags Flag
}

// Flag is a bit set of what a layer declares about itself beyond its
// phases (Descriptor.Flags, ABI v1.6). A host that does not know a flag
// ignores it, so a flag may only ask for something the layer also copes
// without.
type Flag uint32

// Layer flags.
const (
	// FlagWatchStream: the layer only watches answers and never rewrites
	// a stream. A host that knows the flag does not call its on_stream:
	// it assembles the streamed answer itself and, when the stream ended
	// complete, calls the layer's on_response once with it (the layer
	// must take part in the response phase); the headers and replacement
	// of that call are ignored, since the answer has gone out. The layer
	// keeps its on_stream for hosts before v1.6.
	FlagWatchStream Flag = 1 << iota
)

// Actions a layer may take on a request.
const (
	ActionContinue uint8 = 0 // go on, with any patches applied
	ActionAnswer   uint8 = 1 // answer now with LayerResult.Answer (a cache hit)
	ActionReject   uint8 = 2 // refuse with LayerResult.Error
)

// LayerRequest is the input of a layer's request phase. Request holds only the
// parts the layer declared it reads.
type LayerRequest struct {
	Meta    Meta
	Request Request
}

// LayerResult is the output of a layer's request phase.
type LayerResult struct {
	Action      uint8
	Patched     Part    // parts of Request replaced by this layer (must be within Writes)
	Request     Request // the replaced parts
	Answer      *Response
	Error       *Error
	Headers     []KV // response headers to add; the host keeps only X-Bardo-* names
	Annotations []KV // visible to later layers (Meta.Annotations) and to routing
	// SkipAnswer: the layer has nothing to do in this request's response
	// and stream phases (pii masked nothing: no value to restore), so a
	// v1.6 host does not call them for it. Read with ActionContinue and
	// ActionAnswer; an older host ignores it and calls them as before.
	SkipAnswer bool
}

// LayerResponse is the input of a layer's response phase.
type LayerResponse struct {
	Meta     Meta
	Response Response
}

// LayerResponseResult is the output of a layer's response phase.
type LayerResponseResult struct {
	Replaced bool // Response below replaces the one given
	Response Response
	Headers  []KV
}

// LayerStream is the input of a layer's stream phase: a batch of events and the
// layer's own opaque state from its previous batch of this stream (nil first).
// Final is set on the last call of a stream, so a layer can flush what it held back.
type LayerStream struct {
	Meta   Meta
	Events []Event
	State  []byte
	Final  bool
	// UnchangedOK: the host reads LayerStreamResult.Unchanged (ABI v1.6,
	// appended). Only then may a result say so: an older host would read
	// the missing events as none.
	UnchangedOK bool
}

// LayerStreamResult replaces the batch of events with Events, and keeps State
// for the next batch of the same stream.
type LayerStreamResult struct {
	Events []Event
	State  []byte
	// Unchanged: the batch goes on as it came in, and Events is not sent
	// (ABI v1.6; only when the input's UnchangedOK was set). The Go SDK
	// sets it itself when a hook hands back in.Events untouched.
	Unchanged bool
}

// Route is what the host decided for a provider call.
type Route struct {
	Provider string // provider name from pipeline.toml
	Model    string // upstream model id
	BaseURL  string
}

// EncodeInput is the input of a provider's encode: the whole request.
// Original holds the caller's body when Pristine is set (same bytes the caller
// sent, no layer changed anything), so an adapter whose upstream speaks the
// caller's dialect can forward them untouched.
type EncodeInput struct {
	Meta     Meta
	Route    Route
	Request  Request
	Pristine bool
}

// Body modes of an UpstreamCall.
const (
	BodyRaw      uint8 = 0 // send Body as is
	BodyNative   uint8 = 1 // host encodes Request in BodyDialect (or forwards the caller's bytes when Pristine and the dialects match)
	BodyOriginal uint8 = 2 // host forwards the caller's original bytes (only valid when Pristine)
)

// UpstreamCall describes an HTTP request for the host to perform. Header values
// may contain the placeholder ${credential}, which the host replaces with the
// provider's configured secret: adapters never see secrets.
type UpstreamCall struct {
	Method          string
	URL             string
	Headers         []KV
	BodyMode        uint8
	BodyDialect     Dialect // with BodyNative
	Body            []byte  // with BodyRaw
	Stream          bool    // expect an SSE response
	ResponseDialect Dialect // non-zero: success bodies/streams are in this dialect and the host decodes them natively
	// BodyMerge, with BodyNative, is a JSON object whose members the host
	// sets on the body it encodes (replacing members of the same name): the
	// provider-specific fields of an otherwise standard body, such as
	// OpenRouter's "provider" preferences or Venice's "venice_parameters".
	// It makes the body non-pristine. (ABI v1.3; travels after Error.)
	BodyMerge []byte
	// VerifySuccess, with ResponseDialect, has the host call the adapter's
	// decode with a 2xx response before decoding it natively: the adapter
	// answers an Error to refuse it (a privacy header missing, a receipt
	// that does not verify) or neither a Response nor an Error to accept it.
	// A stream is verified by its status and headers (Body empty) before
	// its first byte reaches the caller. (ABI v1.3.)
	VerifySuccess bool
}

// EncodeResult is the output of a provider's encode: either a call to make, a
// local answer (a simulator, a provider-side cache), or an error.
type EncodeResult struct {
	Call  *UpstreamCall
	Local *Response
	Error *Error
	// Degraded names what the adapter approximated for its upstream (the
	// gemini adapter sends a mid-conversation system message as a user
	// turn: "system-as-user"); the host adds each to X-Bardo-Degraded.
	// ABI v1.4, appended.
	Degraded []string
}

// DecodeInput is an upstream's complete HTTP response.
type DecodeInput struct {
	Meta    Meta
	Route   Route
	Status  int64
	Headers []KV
	Body    []byte
}

// DecodeResult is the output of a provider's decode.
type DecodeResult struct {
	Response *Response
	Error    *Error
}

// SSE is one server-sent event as framed by the host.
type SSE struct {
	Event string
	Data  []byte
}

// DecodeStreamInput is a batch of upstream SSE events plus the adapter's state
// from the previous batch of the same stream.
type DecodeStreamInput struct {
	Meta   Meta
	Route  Route
	Events []SSE
	State  []byte
	Final  bool // the upstream closed the stream
	// Headers are the upstream's response headers (status 2xx), on every
	// batch: an adapter may refuse a stream by them (ABI v1.3).
	Headers []KV
}

// DecodeStreamResult is the canonical events for a batch.
type DecodeStreamResult struct {
	Events []Event
	State  []byte
	Error  *Error
}
