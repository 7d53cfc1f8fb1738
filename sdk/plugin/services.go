package plugin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/bardoinference/bardo/sdk/wire"
)

// The host's services (ABI v1.2): local models, a vector index partitioned
// per plugin and tenant, and internal completions routed like any request.
// Each is a host function taking a wire-encoded request and returning a
// status-prefixed reply; a host that does not offer one answers with an
// error, never a trap (docs/abi.md, "Services").

// Service names, as imported from the bardo_v1 module.
const (
	svcEmbed        = "embed"
	svcClassify     = "classify"
	svcVectorInsert = "vector_insert"
	svcVectorSearch = "vector_search"
	svcVectorDelete = "vector_delete"
	svcComplete     = "complete"
)

const (
	replyErr byte = 0
	replyOK  byte = 1
)

func callService(name string, req []byte) (*wire.Decoder, error) {
	reply, err := hostService(name, req)
	if err != nil {
		return nil, err
	}
	if len(reply) == 0 {
		return nil, fmt.Errorf("%s: empty reply from the host", name)
	}
	if reply[0] != replyOK {
		return nil, errors.New(string(reply[1:]))
	}
	return wire.NewDecoder(reply[1:]), nil
}

// Embed turns texts into unit vectors with the host's model named model (as
// declared in pipeline.toml's [[model]] tables). The dot product of two
// vectors is their cosine similarity.
func Embed(model string, texts []string) ([][]float32, error) {
	var e wire.Encoder
	e.Reset() // the format-version byte the host checks
	e.String(model)
	e.Strings(texts)
	d, err := callService(svcEmbed, e.Bytes())
	if err != nil {
		return nil, err
	}
	dim := int(d.Uint())
	flat := d.Raw()
	if d.Err() != nil || dim == 0 || len(flat) != 4*dim*len(texts) {
		return nil, fmt.Errorf("embed: malformed reply (%d bytes for %d texts of dim %d)", len(flat), len(texts), dim)
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = decodeFloats(flat[4*dim*i : 4*dim*(i+1)])
	}
	return out, nil
}

// Classify scores texts with the host's classifier named model: per text,
// one probability per label, aligned with the returned labels.
func Classify(model string, texts []string) (labels []string, scores [][]float32, err error) {
	var e wire.Encoder
	e.Reset() // the format-version byte the host checks
	e.String(model)
	e.Strings(texts)
	d, err := callService(svcClassify, e.Bytes())
	if err != nil {
		return nil, nil, err
	}
	labels = d.Strings()
	flat := d.Raw()
	n := len(labels)
	if d.Err() != nil || n == 0 || len(flat) != 4*n*len(texts) {
		return nil, nil, fmt.Errorf("classify: malformed reply")
	}
	// Labels alias the reply buffer; copy them out with the scores.
	for i, l := range labels {
		labels[i] = string(append([]byte(nil), l...))
	}
	scores = make([][]float32, len(texts))
	for i := range scores {
		scores[i] = decodeFloats(flat[4*n*i : 4*n*(i+1)])
	}
	return labels, scores, nil
}

// classifyEnc is ClassifyLabel's request, reused: an instance serves one
// call at a time, and inside wasm each growth of a new encoder's buffer is
// an allocation.
var classifyEnc wire.Encoder

// ClassifyLabel is Classify for a caller that wants one label's
// probability: it appends each text's probability of label (matched
// case-insensitively) to dst and returns it. Once dst and its request
// buffer have grown it allocates nothing: no copy of the reply, no label
// strings, no slice per text. An error names the model's labels when it has no
// label.
func ClassifyLabel(model, label string, texts []string, dst []float32) ([]float32, error) {
	e := &classifyEnc
	e.Reset() // the format-version byte the host checks
	e.String(model)
	e.Strings(texts)
	// The reply is read in place (nothing of it is kept, and no host call
	// comes before it is read): inside wasm a copy is an allocation.
	reply, err := hostServiceView(svcClassify, e.Bytes())
	if err != nil {
		return dst, err
	}
	if len(reply) == 0 {
		return dst, errors.New("classify: empty reply from the host")
	}
	if reply[0] != replyOK {
		return dst, errors.New(string(reply[1:]))
	}
	var d wire.Decoder
	d.Init(reply[1:])
	// The reply: the labels (a count, then each), then every text's
	// scores, one float32 per label, text after text.
	n := int(d.Uint())
	li := -1
	for i := 0; i < n && d.Err() == nil; i++ {
		if strings.EqualFold(d.String(), label) {
			li = i
		}
	}
	flat := d.Raw()
	if d.Err() != nil || n == 0 || len(flat) != 4*n*len(texts) {
		return dst, errors.New("classify: malformed reply")
	}
	if li < 0 {
		var ld wire.Decoder
		ld.Init(reply[1:])
		return dst, fmt.Errorf("model %q has no label %q (labels: %s)", model, label, strings.Join(ld.Strings(), ", "))
	}
	for i := range texts {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(flat[4*(n*i+li):])))
	}
	return dst, nil
}

// VectorMatch is one result of VectorSearch.
type VectorMatch struct {
	ID      string
	Score   float32 // cosine similarity
	Tags    []string
	Payload []byte
}

// VectorScope chooses the partition of the plugin's vector index: the
// caller's tenant (the default, and the safe choice) or the plugin's shared
// space every tenant sees.
type VectorScope uint64

const (
	// TenantScope is the partition of the tenant the current call serves.
	TenantScope VectorScope = 0
	// SharedScope is the plugin's partition shared by every tenant.
	SharedScope VectorScope = 1
)

// VectorInsert stores vec under id (replacing an earlier entry) for ttl, with
// tags (for bulk invalidation by VectorDelete) and a payload returned by
// searches. The host bounds each partition and evicts the least recently
// used entries.
func VectorInsert(scope VectorScope, id string, vec []float32, ttl time.Duration, tags []string, payload []byte) error {
	var e wire.Encoder
	e.Reset() // the format-version byte the host checks
	e.Uint(uint64(scope))
	e.String(id)
	e.Raw(encodeFloats(vec))
	e.Int(ttl.Milliseconds())
	e.Strings(tags)
	e.Raw(payload)
	_, err := callService(svcVectorInsert, e.Bytes())
	return err
}

// VectorSearch returns up to k entries whose cosine similarity to vec is at
// least minScore, best first. Expired entries are never returned.
func VectorSearch(scope VectorScope, vec []float32, k int, minScore float32) ([]VectorMatch, error) {
	var e wire.Encoder
	e.Reset() // the format-version byte the host checks
	e.Uint(uint64(scope))
	e.Raw(encodeFloats(vec))
	e.Uint(uint64(k))
	e.Float(float64(minScore))
	d, err := callService(svcVectorSearch, e.Bytes())
	if err != nil {
		return nil, err
	}
	n := int(d.Uint())
	if d.Err() != nil || n > k {
		return nil, fmt.Errorf("vector_search: malformed reply")
	}
	ms := make([]VectorMatch, n)
	for i := range ms {
		ms[i].ID = string(append([]byte(nil), d.String()...))
		ms[i].Score = float32(d.Float())
		for _, t := range d.Strings() {
			ms[i].Tags = append(ms[i].Tags, string(append([]byte(nil), t...)))
		}
		ms[i].Payload = append([]byte(nil), d.Raw()...)
	}
	if d.Err() != nil {
		return nil, fmt.Errorf("vector_search: malformed reply: %w", d.Err())
	}
	return ms, nil
}

// VectorDelete removes the entry id (if not empty) and every entry carrying
// tag (if not empty) from the partition; it returns how many went.
func VectorDelete(scope VectorScope, id, tag string) (int, error) {
	var e wire.Encoder
	e.Reset() // the format-version byte the host checks
	e.Uint(uint64(scope))
	e.String(id)
	e.String(tag)
	d, err := callService(svcVectorDelete, e.Bytes())
	if err != nil {
		return 0, err
	}
	return int(d.Uint()), d.Err()
}

// Completion asks the gateway for an internal text completion, routed by
// Subsystem like any request (e.g. "session_compact" for L5's summaries)
// and billed to the tenant the current call serves. It is the simple form of
// CompleteRequest.
type Completion struct {
	Subsystem string
	Model     string // optional: an explicit model instead of the intent's choice
	System    string
	Messages  []CompletionMessage
	MaxTokens int // 0: the host's default (1024)
}

// CompletionMessage is one turn of a Completion.
type CompletionMessage struct {
	Role string // "user" or "assistant"
	Text string
}

// CompletionResult is the answer to a Completion.
type CompletionResult struct {
	Text         string // the answer's text blocks, joined
	Provider     string
	Model        string
	InputTokens  int // including tokens read from the prompt cache
	OutputTokens int
}

// Complete runs c through the gateway and returns the answer's text.
func Complete(c Completion) (CompletionResult, error) {
	req := &wire.Request{Model: c.Model}
	if c.System != "" {
		req.System = []wire.Block{{Type: wire.BlockText, Text: c.System}}
	}
	for _, m := range c.Messages {
		req.Messages = append(req.Messages, wire.Message{Role: m.Role, Content: []wire.Block{{Type: wire.BlockText, Text: m.Text}}})
	}
	if c.MaxTokens > 0 {
		req.Params.MaxTokens = int64(c.MaxTokens)
		req.Params.Set |= wire.HasMaxTokens
	}
	resp, provider, model, err := complete(c.Subsystem, req)
	if err != nil {
		return CompletionResult{}, err
	}
	var text []byte
	for i := range resp.Content {
		if resp.Content[i].Type == wire.BlockText {
			text = append(text, resp.Content[i].Text...)
		}
	}
	return CompletionResult{
		Text:         string(text),
		Provider:     provider,
		Model:        model,
		InputTokens:  int(resp.Usage.InputTokens + resp.Usage.CacheReadTokens),
		OutputTokens: int(resp.Usage.OutputTokens),
	}, nil
}

// CompleteRequest runs a whole canonical request through the gateway as an
// internal completion and returns the whole response: content blocks
// (tool_use included), stop reason and usage. The request may carry tools,
// tool_choice and a conversation with tool_use and tool_result blocks, so a
// layer can run a tool loop of its own. An empty or "auto" req.Model is
// routed by the subsystem's intent, another model by the providers' model
// globs; either way with failover, skipping the layers, and billed to the
// tenant the current call serves. It is never streamed (req.Stream is
// ignored); without a max_tokens the host applies its default (1024).
// Each call is an upstream round trip: the layer's timeout must cover it.
func CompleteRequest(subsystem string, req *wire.Request) (*wire.Response, error) {
	resp, _, _, err := complete(subsystem, req)
	return resp, err
}

// complete is the complete service: the original text-only fields, empty,
// then the request appended (docs/abi.md, "Services"); the reply's original
// fields give the provider and model, the appended response the rest.
func complete(subsystem string, req *wire.Request) (resp *wire.Response, provider, model string, err error) {
	if req == nil || len(req.Messages) == 0 {
		return nil, "", "", errors.New("complete: the request has no messages")
	}
	var full wire.Encoder
	wire.EncodeLayerRequest(&full, &wire.Meta{}, req, wire.PartAll)
	var e wire.Encoder
	e.Reset() // the format-version byte the host checks
	e.String(subsystem)
	e.String("")   // model (text-only form)
	e.String("")   // system
	e.Strings(nil) // roles
	e.Strings(nil) // texts
	e.Uint(0)      // max tokens
	e.Raw(full.Bytes())
	d, err := callService(svcComplete, e.Bytes())
	if err != nil {
		return nil, "", "", err
	}
	_ = d.String() // text: the response has it
	provider = string(append([]byte(nil), d.String()...))
	model = string(append([]byte(nil), d.String()...))
	d.Uint() // input tokens
	d.Uint() // output tokens
	raw := d.Raw()
	if d.Err() != nil || len(raw) == 0 {
		return nil, "", "", errors.New("complete: the host's reply carries no response")
	}
	// The response aliases what it is decoded from: a private copy.
	var r wire.LayerResponseResult
	if err := r.Decode(append([]byte(nil), raw...)); err != nil || !r.Replaced {
		return nil, "", "", fmt.Errorf("complete: malformed response: %v", err)
	}
	return &r.Response, provider, model, nil
}

func encodeFloats(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func decodeFloats(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
