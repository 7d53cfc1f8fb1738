package sandbox

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/bardoinference/bardo/sdk/wire"
)

// Services are the host's heavier capabilities (ABI v1.2): local models, the
// vector index and internal completions. Each is optional; a plugin calling a
// service the host does not offer gets a clear error, not a trap.
//
// Every service host function has one shape,
//
//	fn(in_ptr, in_len, out_ptr, out_cap) -> i64
//
// with a wire-encoded request in and a status-prefixed reply out (first byte
// svcOK or svcErr, then the payload or the error text). The return value is
// the reply's full length; when it exceeds out_cap nothing is written and the
// reply is kept so the guest's immediate retry with a larger buffer gets the
// same bytes without running the model twice.
type Services struct {
	Models    Models
	Vectors   Vectors
	Completer Completer
}

// Models serves the embed and classify host functions.
type Models interface {
	Embed(ctx context.Context, model string, texts []string) ([][]float32, error)
	Classify(ctx context.Context, model string, texts []string) (labels []string, scores [][]float32, err error)
}

// VectorMatch is one vector_search result.
type VectorMatch struct {
	ID      string
	Score   float32
	Tags    []string
	Payload []byte
}

// Vectors serves the vector_* host functions. Space names a plugin's index
// partition for one tenant (or its shared space); the host builds it, so a
// plugin can never reach another plugin's or tenant's vectors.
type Vectors interface {
	Insert(space, id string, vec []float32, ttl time.Duration, tags []string, payload []byte) error
	Search(space string, vec []float32, k int, minScore float32) ([]VectorMatch, error)
	Delete(space, id string) bool
	DeleteTagged(space, tag string) int
}

// Completion is an internal completion a plugin asks the gateway for (L5's
// summaries, L4's meta-tool loop): routed by intent like any request, billed
// to the tenant.
type Completion struct {
	Subsystem string // routing intent, e.g. "session_compact"
	// Request is the whole canonical request: model (empty or "auto": by
	// the subsystem's intent), system, messages with any blocks (tool_use,
	// tool_result…), tools, tool_choice, params and extra fields. It is
	// never streamed. The Completer may modify it.
	Request *wire.Request
}

// CompletionResult is what the completion produced.
type CompletionResult struct {
	Response *wire.Response // content blocks (text, tool_use…), stop reason, usage
	Provider string         // the provider that answered
	Model    string         // the model it was routed to
}

// Completer performs internal completions for the complete host function.
type Completer interface {
	Complete(ctx context.Context, tenant string, c Completion) (CompletionResult, error)
}

// Reply status bytes of the service host functions.
const (
	svcErr byte = 0
	svcOK  byte = 1
)

// Service request bounds: a guest cannot make the host embed or allocate
// without limit in one call.
const (
	maxServiceInput = 4 << 20
	maxServiceTexts = 256
	maxVectorDim    = 8192
	maxSearchK      = 100
)

// Flags of the vector_* requests.
const vectorShared = 1

var (
	errNoService = errors.New("not offered by this host")
	errBadInput  = errors.New("malformed request")
)

type serviceFunc func(ctx context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error

func service(fn serviceFunc) hostFunc {
	return hostFunc{
		fn: func(ctx context.Context, m api.Module, stack []uint64) {
			serve(ctx, m, stack, fn)
		},
		params:  []api.ValueType{i32, i32, i32, i32},
		results: []api.ValueType{i64},
	}
}

func serve(ctx context.Context, m api.Module, stack []uint64, fn serviceFunc) {
	ip, in, op, oc := uint32(stack[0]), uint32(stack[1]), uint32(stack[2]), uint32(stack[3])
	stack[0] = math.MaxUint64
	cs := state(ctx)
	if cs == nil {
		return
	}
	input, ok := readBytes(m, ip, in, maxServiceInput)
	if !ok {
		return
	}
	// The retry after a too-small buffer: same request, same reply.
	if cs.pending != nil && cs.pendingIn == string(input) {
		reply := cs.pending
		if uint32(len(reply)) <= oc {
			cs.pending, cs.pendingIn = nil, ""
			m.Memory().Write(op, reply)
		}
		stack[0] = uint64(len(reply))
		return
	}
	// The decoder, the encoder and the reply are the instance's, reused: a
	// reply is written into the guest and dropped (kept, copied, only for
	// a retry).
	d, e := &cs.dec, &cs.enc
	d.Init(input)
	e.Reset() // the reply starts with the format-version byte the guest checks
	err := fn(ctx, cs, d, e)
	reply := cs.scratch[:0] // taken after fn, which may use the scratch
	if err != nil {
		reply = append(append(reply, svcErr), err.Error()...)
	} else {
		reply = append(append(reply, svcOK), e.Bytes()...)
	}
	cs.scratch = reply
	if uint32(len(reply)) > oc {
		cs.pending, cs.pendingIn = bytes.Clone(reply), string(input)
	} else {
		m.Memory().Write(op, reply)
	}
	stack[0] = uint64(len(reply))
}

// space is the vector index partition of this plugin for the caller's tenant,
// or its shared partition when the plugin asks for it.
func space(cs *callState, flags uint64) string {
	if flags&vectorShared != 0 {
		return SharedPrefix(cs.p.opts.Name)
	}
	return TenantPrefix(cs.p.opts.Name, cs.info.Tenant)
}

func texts(d *wire.Decoder) ([]string, error) {
	ts := d.Strings()
	if d.Err() != nil {
		return nil, errBadInput
	}
	if len(ts) == 0 || len(ts) > maxServiceTexts {
		return nil, fmt.Errorf("%d texts (1..%d per call)", len(ts), maxServiceTexts)
	}
	return ts, nil
}

func svcEmbed(ctx context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error {
	models := cs.p.opts.Services.Models
	if models == nil {
		return fmt.Errorf("embed: local models are %w", errNoService)
	}
	model := d.String()
	ts, err := texts(d)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	vecs, err := models.Embed(ctx, model, ts)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	dim := 0
	if len(vecs) > 0 {
		dim = len(vecs[0])
	}
	e.Uint(uint64(dim))
	flat := make([]byte, 0, 4*dim*len(vecs))
	for _, v := range vecs {
		flat = appendFloats(flat, v)
	}
	e.Raw(flat)
	return nil
}

func svcClassify(ctx context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error {
	models := cs.p.opts.Services.Models
	if models == nil {
		return fmt.Errorf("classify: local models are %w", errNoService)
	}
	model := d.String()
	ts, err := texts(d)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	labels, scores, err := models.Classify(ctx, model, ts)
	if err != nil {
		return fmt.Errorf("classify: %w", err)
	}
	e.Strings(labels)
	flat := make([]byte, 0, 4*len(labels)*len(scores))
	for _, s := range scores {
		flat = appendFloats(flat, s)
	}
	e.Raw(flat)
	return nil
}

func svcVectorInsert(_ context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error {
	vs := cs.p.opts.Services.Vectors
	if vs == nil {
		return fmt.Errorf("vector_insert: the vector index is %w", errNoService)
	}
	flags := d.Uint()
	id := d.String()
	vec, err := floats(d.Raw())
	ttl := time.Duration(d.Int()) * time.Millisecond
	tags := d.Strings()
	payload := d.Raw()
	if d.Err() != nil || err != nil {
		return fmt.Errorf("vector_insert: %w", errors.Join(errBadInput, err))
	}
	// The index keeps the payload; the decoder's view aliases guest memory.
	if err := vs.Insert(space(cs, flags), id, vec, ttl, tags, append([]byte(nil), payload...)); err != nil {
		return fmt.Errorf("vector_insert: %w", err)
	}
	return nil
}

func svcVectorSearch(_ context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error {
	vs := cs.p.opts.Services.Vectors
	if vs == nil {
		return fmt.Errorf("vector_search: the vector index is %w", errNoService)
	}
	flags := d.Uint()
	vec, err := floats(d.Raw())
	k := d.Uint()
	minScore := d.Float()
	if d.Err() != nil || err != nil {
		return fmt.Errorf("vector_search: %w", errors.Join(errBadInput, err))
	}
	if k == 0 || k > maxSearchK {
		return fmt.Errorf("vector_search: k = %d (1..%d)", k, maxSearchK)
	}
	ms, err := vs.Search(space(cs, flags), vec, int(k), float32(minScore))
	if err != nil {
		return fmt.Errorf("vector_search: %w", err)
	}
	e.Uint(uint64(len(ms)))
	for _, m := range ms {
		e.String(m.ID)
		e.Float(float64(m.Score))
		e.Strings(m.Tags)
		e.Raw(m.Payload)
	}
	return nil
}

func svcVectorDelete(_ context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error {
	vs := cs.p.opts.Services.Vectors
	if vs == nil {
		return fmt.Errorf("vector_delete: the vector index is %w", errNoService)
	}
	flags := d.Uint()
	id := d.String()
	tag := d.String()
	if d.Err() != nil {
		return fmt.Errorf("vector_delete: %w", errBadInput)
	}
	sp := space(cs, flags)
	n := 0
	if id != "" && vs.Delete(sp, id) {
		n++
	}
	if tag != "" {
		n += vs.DeleteTagged(sp, tag)
	}
	e.Uint(uint64(n))
	return nil
}

// svcComplete serves complete. The request's first fields are the original
// text-only form (subsystem, model, system, roles, texts, max tokens); a
// general request appends the whole canonical request, encoded as a
// LayerRequest (its Meta unused), and leaves roles and texts empty. The
// reply's first fields are the original ones (text, provider, model, input
// and output tokens), followed by the whole response, encoded as a
// LayerResponseResult. Both additions are appended fields (docs/abi.md,
// "Versioning"): a plugin built before them still works, and reads only the
// fields it knows.
func svcComplete(ctx context.Context, cs *callState, d *wire.Decoder, e *wire.Encoder) error {
	c := cs.p.opts.Services.Completer
	if c == nil {
		return fmt.Errorf("complete: internal completions are %w", errNoService)
	}
	req, subsystem, err := decodeCompletion(d)
	if err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	if cs.p.opts.Trusted && cs.p.opts.Timeout > 0 {
		// A trusted call is not cut at its timeout, but an upstream call
		// that hangs must not hold the request: the budget bounds it (an
		// untrusted call's context carries the timeout already).
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, cs.began.Add(cs.p.opts.Timeout))
		defer cancel()
	}
	cs.p.lend(cs.in)
	res, err := c.Complete(ctx, cs.info.Tenant, Completion{Subsystem: subsystem, Request: req})
	cs.p.reclaim(cs.in)
	if err != nil {
		return fmt.Errorf("complete: %w", err)
	}
	resp := res.Response
	if resp == nil {
		resp = &wire.Response{}
	}
	e.String(responseText(resp))
	e.String(res.Provider)
	e.String(res.Model)
	e.Uint(uint64(max(0, resp.Usage.InputTokens+resp.Usage.CacheReadTokens)))
	e.Uint(uint64(max(0, resp.Usage.OutputTokens)))
	var full wire.Encoder
	(&wire.LayerResponseResult{Replaced: true, Response: *resp}).Encode(&full)
	e.Raw(full.Bytes())
	return nil
}

// decodeCompletion reads a complete request in either form. Everything
// decoded is copied out of guest memory first: the completion is handed to
// other goroutines (upstream pool, events).
func decodeCompletion(d *wire.Decoder) (*wire.Request, string, error) {
	subsystem := clone(d.String())
	model := d.String()
	system := d.String()
	roles := d.Strings()
	texts := d.Strings()
	maxTokens := d.Uint()
	if d.Err() != nil || len(roles) != len(texts) {
		return nil, "", errBadInput
	}
	// The appended request; its absence (a plugin built before it) reads
	// as a truncation, which is no error here.
	if full := d.Raw(); d.Err() == nil && len(full) > 0 {
		var lr wire.LayerRequest
		if err := lr.Decode(append([]byte(nil), full...)); err != nil {
			return nil, "", fmt.Errorf("%w: %v", errBadInput, err)
		}
		if len(lr.Request.Messages) == 0 {
			return nil, "", fmt.Errorf("%w: no messages", errBadInput)
		}
		return &lr.Request, subsystem, nil
	}
	if len(texts) == 0 {
		return nil, "", errBadInput
	}
	req := &wire.Request{Model: clone(model)}
	if system != "" {
		req.System = []wire.Block{{Type: wire.BlockText, Text: clone(system)}}
	}
	for i, t := range texts {
		req.Messages = append(req.Messages, wire.Message{Role: clone(roles[i]), Content: []wire.Block{{Type: wire.BlockText, Text: clone(t)}}})
	}
	if maxTokens > 0 {
		req.Params.MaxTokens = int64(min(maxTokens, math.MaxInt32))
		req.Params.Set |= wire.HasMaxTokens
	}
	return req, subsystem, nil
}

// responseText joins a response's text blocks.
func responseText(r *wire.Response) string {
	n := 0
	for i := range r.Content {
		if r.Content[i].Type == wire.BlockText {
			n += len(r.Content[i].Text)
		}
	}
	b := make([]byte, 0, n)
	for i := range r.Content {
		if r.Content[i].Type == wire.BlockText {
			b = append(b, r.Content[i].Text...)
		}
	}
	return string(b)
}

func clone(s string) string { return string(append([]byte(nil), s...)) }

func appendFloats(b []byte, v []float32) []byte {
	for _, f := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
	}
	return b
}

func floats(b []byte) ([]float32, error) {
	if len(b)%4 != 0 || len(b)/4 > maxVectorDim {
		return nil, fmt.Errorf("vector of %d bytes (a multiple of 4, at most %d floats)", len(b), maxVectorDim)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
