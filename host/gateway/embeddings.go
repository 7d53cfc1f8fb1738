package gateway

// POST /v1/embeddings in OpenAI's shape, served by the local models
// ([[model]] entries of kind embedder, e.g. the offline GloVe "embed"),
// free, when the model field names a [[model]]; any other model goes to
// the upstream providers that offer embeddings (embedupstream.go), priced
// and billed. An Anthropic-only gateway (Anthropic has no embeddings API)
// serves exactly its local models and answers 404 for the rest.

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/bardoinference/bardo/host/models/registry"
	"github.com/bardoinference/bardo/host/pipeline"
	"github.com/bardoinference/bardo/sdk/wire"
)

// Embedder runs the local embedding models; *registry.Registry fits.
type Embedder interface {
	Embed(ctx context.Context, model string, texts []string) ([][]float32, error)
}

// Embedding request bounds: OpenAI's (2048 inputs), and a text length
// past which no local model reads further anyway.
const (
	maxEmbedInputs = 2048
	maxEmbedText   = 1 << 20
	embedBatch     = 256 // texts per model call, as the embed service takes
	embedTimeout   = 30 * time.Second
)

type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embeddings serves POST /v1/embeddings: a model named by a [[model]]
// entry is embedded locally (free), any other is routed to the upstream
// providers that offer embeddings (embedupstream.go).
func (g *Gateway) embeddings(ctx *fasthttp.RequestCtx, method string) {
	const d = wire.DialectOpenAI
	began := time.Now()
	rid := newRequestID()
	ctx.Response.Header.Set(HeaderRequestID, rid)
	// refuse answers a request turned away before it was admitted; it is
	// settled like the engine front's refusals.
	refuse := func(e *wire.Error) {
		g.refused(rid, d, e, began)
		WriteError(ctx, d, e)
	}
	if method != fasthttp.MethodPost {
		ctx.Response.Header.Set("Allow", "POST")
		refuse(&wire.Error{Status: 405, Kind: wire.ErrInvalidRequest, Message: "method " + method + " is not allowed on /v1/embeddings; use POST"})
		return
	}
	var req embeddingRequest
	if err := json.Unmarshal(ctx.PostBody(), &req); err != nil {
		refuse(&wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "invalid request: " + err.Error()})
		return
	}
	if req.Model == "" {
		refuse(&wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "model: is required (a [[model]] embedder of pipeline.toml, e.g. \"embed\", or an upstream embedding model)"})
		return
	}
	p, release := g.Pipelines.Acquire()
	defer release()
	if !localModel(p, req.Model) {
		g.embedUpstream(ctx, p, rid, &req, began)
		return
	}
	texts, werr := embeddingInputs(req.Input)
	if werr == nil && req.EncodingFormat != "" && req.EncodingFormat != "float" && req.EncodingFormat != "base64" {
		werr = &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "encoding_format: must be float or base64"}
	}
	if werr != nil {
		refuse(werr)
		return
	}
	// A local model costs nothing: admitted as a read (Spends false), so
	// keys, scopes and the account's headers apply, and no tab opens. The
	// answer is settled (the metrics count it) under provider "local".
	s := Settlement{RequestID: rid, Dialect: d, Asked: req.Model, Path: PathLocal, Provider: LocalProvider, Model: req.Model, Status: 200}
	fail := func(e *wire.Error) {
		s.Path, s.Err = PathError, e
		s.Status, _ = codecFor(d).EncodeError(e)
		WriteError(ctx, d, e)
	}
	defer func() {
		s.Latency = time.Since(began)
		g.settle(&s)
	}()
	caller, werr := g.admit(context.Background(), &Admission{Dialect: d, Path: "/v1/embeddings", Header: &ctx.Request.Header,
		RemoteIP: remoteIP(ctx), Model: req.Model, Method: "POST", Body: ctx.PostBody()})
	s.Tenant, s.Key = caller.Tenant, caller.Key
	for _, kv := range caller.Headers {
		ctx.Response.Header.Set(kv.Key, kv.Value)
	}
	if werr != nil {
		s.Provider, s.Model = "", ""
		fail(werr)
		return
	}
	if g.Embedder == nil {
		fail(&wire.Error{Status: 404, Kind: wire.ErrNotFound, Message: "this gateway serves no embedding models"})
		return
	}
	cctx, cancel := context.WithTimeout(context.Background(), embedTimeout)
	defer cancel()
	vecs := make([][]float32, 0, len(texts))
	for i := 0; i < len(texts); i += embedBatch {
		out, err := g.Embedder.Embed(cctx, req.Model, texts[i:min(i+embedBatch, len(texts))])
		if err != nil {
			fail(embedError(req.Model, err))
			return
		}
		vecs = append(vecs, out...)
	}
	if req.Dimensions != nil && len(vecs) > 0 && *req.Dimensions != len(vecs[0]) {
		fail(&wire.Error{Status: 400, Kind: wire.ErrInvalidRequest,
			Message: "dimensions: model " + req.Model + " gives " + strconv.Itoa(len(vecs[0])) + "-dimensional vectors; it cannot shorten them"})
		return
	}
	ctx.Response.Header.Set(HeaderProvider, LocalProvider)
	ctx.Response.Header.Set(HeaderModel, req.Model)
	ctx.SetContentType("application/json")
	ctx.SetBody(appendEmbeddings(nil, req.Model, texts, vecs, req.EncodingFormat == "base64"))
}

// LocalProvider is what X-Bardo-Provider says of an answer a local
// [[model]] gave.
const LocalProvider = "local"

// localModel reports whether model names a [[model]] entry of the
// pipeline's configuration (an embedder, or a classifier, which then says
// it cannot embed).
func localModel(p *pipeline.Pipeline, model string) bool {
	if p == nil || p.Config == nil {
		return false
	}
	for i := range p.Config.ModelSpecs {
		if p.Config.ModelSpecs[i].Name == model {
			return true
		}
	}
	return false
}

// embeddingInputs reads input: a string or an array of strings (token
// arrays are refused: a local model tokenizes itself).
func embeddingInputs(raw json.RawMessage) ([]string, *wire.Error) {
	bad := func(msg string) *wire.Error {
		return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: "input: " + msg}
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, bad("must not be empty")
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, bad("must be a string or an array of strings (token arrays are not supported)")
	}
	if len(many) == 0 || len(many) > maxEmbedInputs {
		return nil, bad("must hold 1 to " + strconv.Itoa(maxEmbedInputs) + " strings")
	}
	for i, s := range many {
		if s == "" || len(s) > maxEmbedText {
			return nil, bad("[" + strconv.Itoa(i) + "] must be a non-empty string of at most 1 MiB")
		}
	}
	return many, nil
}

func embedError(model string, err error) *wire.Error {
	switch {
	case errors.Is(err, registry.ErrUnknownModel):
		return &wire.Error{Status: 404, Kind: wire.ErrNotFound,
			Message: "The model `" + model + "` does not exist: embeddings are served by the [[model]] embedders of pipeline.toml"}
	case errors.Is(err, context.DeadlineExceeded):
		return &wire.Error{Status: 504, Kind: wire.ErrTimeout, Message: "embedding model " + model + " did not answer in time"}
	}
	return &wire.Error{Status: 400, Kind: wire.ErrInvalidRequest, Message: err.Error()}
}

// appendEmbeddings writes OpenAI's embedding list. Usage is estimated at
// four bytes a token (local models bill nothing).
func appendEmbeddings(b []byte, model string, texts []string, vecs [][]float32, b64 bool) []byte {
	tokens := 0
	for _, t := range texts {
		tokens += (len(t) + 3) / 4
	}
	b = append(b, `{"object":"list","data":[`...)
	var raw []byte
	for i, v := range vecs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"object":"embedding","index":`...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, `,"embedding":`...)
		if b64 {
			raw = raw[:0]
			for _, f := range v {
				raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
			}
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, raw)
			b = append(b, '"')
		} else {
			b = append(b, '[')
			for j, f := range v {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	b = append(b, `],"model":`...)
	m, _ := json.Marshal(model)
	b = append(b, m...)
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(tokens), 10)
	return append(b, `}}`...)
}
