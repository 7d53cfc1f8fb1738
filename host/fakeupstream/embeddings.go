package fakeupstream

// POST /v1/embeddings in OpenAI's wire format: {"object":"list","data":
// [{"object":"embedding","index":i,"embedding":[…]}],"model":…,"usage":
// {"prompt_tokens":n,"total_tokens":n}}, float or base64 vectors, the
// dimensions parameter, and OpenAI's error bodies. Vectors are
// deterministic: a unit vector seeded by the SHA-256 of the model and the
// input, so a test can compare answers. The scripted Behaviour's Status
// and Latency apply, as for a generation (CutStream cuts the body
// halfway, MalformedChunk answers half of it).

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
)

// DefaultEmbeddingDims is the length of a vector when the request gives no
// dimensions: text-embedding-3-small's (and ada-002's).
const DefaultEmbeddingDims = 1536

// embedding3LargeDims is text-embedding-3-large's native length.
const embedding3LargeDims = 3072

type oaEmbeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int            `json:"dimensions"`
}

// embeddingModel reports whether the fake serves model's embeddings: an
// id containing "embed", or one of its listed models.
func (s *Server) embeddingModel(model string) bool {
	if strings.Contains(model, "embed") {
		return true
	}
	for _, m := range s.cfg.models {
		if m == model {
			return true
		}
	}
	return false
}

func (s *Server) openAIEmbeddings(w http.ResponseWriter, r *http.Request, body []byte) {
	if !s.openAIAuth(w, r) {
		return
	}
	if !json.Valid(body) {
		openAIError(w, http.StatusBadRequest, oaBadJSON, "invalid_request_error", nil, nil)
		return
	}
	var req oaEmbeddingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		openAIError(w, http.StatusBadRequest, "Invalid type: "+err.Error(), "invalid_request_error", nil, "invalid_type")
		return
	}
	if req.Model == "" {
		openAIError(w, http.StatusBadRequest, "you must provide a model parameter", "invalid_request_error", nil, nil)
		return
	}
	if req.Input == nil || string(req.Input) == "null" {
		openAIError(w, http.StatusBadRequest, "'input' is a required property", "invalid_request_error", nil, nil)
		return
	}
	inputs, tokens, ok := embeddingInputs(req.Input)
	if !ok {
		openAIError(w, http.StatusBadRequest, "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference.", "invalid_request_error", nil, nil)
		return
	}
	b := s.next(strings.Join(inputs, " "))
	if !s.prepare(w, r, b, func(status int) { openAIFail(w, status, req.Model, b.RetryAfter) }) {
		return
	}
	if !s.embeddingModel(req.Model) {
		openAIError(w, http.StatusNotFound, "The model `"+req.Model+"` does not exist or you do not have access to it.", "invalid_request_error", nil, "model_not_found")
		return
	}
	dims := DefaultEmbeddingDims
	if strings.Contains(req.Model, "3-large") {
		dims = embedding3LargeDims
	}
	if req.Dimensions != nil {
		if *req.Dimensions < 1 || *req.Dimensions > dims || strings.Contains(req.Model, "ada-002") {
			openAIError(w, http.StatusBadRequest, "This model does not support specifying dimensions.", "invalid_request_error", "dimensions", nil)
			return
		}
		dims = *req.Dimensions
	}
	if f := req.EncodingFormat; f != "" && f != "float" && f != "base64" {
		openAIError(w, http.StatusBadRequest, "'"+f+"' is not one of ['float', 'base64'] - 'encoding_format'", "invalid_request_error", nil, nil)
		return
	}
	out := make([]byte, 0, 64+len(inputs)*dims*12)
	out = append(out, "{\n  \"object\": \"list\",\n  \"data\": ["...)
	for i, in := range inputs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, "\n    {\n      \"object\": \"embedding\",\n      \"index\": "...)
		out = strconv.AppendInt(out, int64(i), 10)
		out = append(out, ",\n      \"embedding\": "...)
		out = appendVector(out, FakeEmbedding(req.Model, in, dims), req.EncodingFormat == "base64")
		out = append(out, "\n    }"...)
	}
	m, _ := json.Marshal(req.Model)
	out = append(out, "\n  ],\n  \"model\": "...)
	out = append(out, m...)
	out = append(out, ",\n  \"usage\": {\n    \"prompt_tokens\": "...)
	out = strconv.AppendInt(out, int64(tokens), 10)
	out = append(out, ",\n    \"total_tokens\": "...)
	out = strconv.AppendInt(out, int64(tokens), 10)
	out = append(out, "\n  }\n}\n"...)
	switch {
	case b.CutStream: // the body stops halfway and the connection closes
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out[:len(out)/2])
		abort(w)
	case b.MalformedChunk:
		writeRaw(w, http.StatusOK, out[:len(out)/2])
	default:
		writeRaw(w, http.StatusOK, out)
	}
}

// embeddingInputs reads input as OpenAI takes it: a string, an array of
// strings, an array of token ids or an array of such arrays. Texts count
// ceil(bytes/4) tokens (the fake's rule), token arrays their length. A
// token array is embedded as its JSON text.
func embeddingInputs(raw json.RawMessage) (inputs []string, tokens int, ok bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, estimateTokens(one), one != ""
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil || len(many) == 0 || len(many) > 2048 {
		return nil, 0, false
	}
	var ids []int
	if json.Unmarshal(raw, &ids) == nil {
		return []string{string(raw)}, len(ids), true
	}
	for _, el := range many {
		var s string
		if json.Unmarshal(el, &s) == nil {
			if s == "" {
				return nil, 0, false
			}
			inputs, tokens = append(inputs, s), tokens+estimateTokens(s)
			continue
		}
		if json.Unmarshal(el, &ids) != nil || len(ids) == 0 {
			return nil, 0, false
		}
		inputs, tokens = append(inputs, string(el)), tokens+len(ids)
	}
	return inputs, tokens, true
}

// FakeEmbedding is the vector the fake answers for input: dims float32s
// of unit length, a function of model and input only.
func FakeEmbedding(model, input string, dims int) []float32 {
	h := sha256.Sum256([]byte(model + "\x00" + input))
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(h[:8]), binary.LittleEndian.Uint64(h[8:16])))
	v := make([]float32, dims)
	var norm float64
	for i := range v {
		f := rng.NormFloat64()
		v[i] = float32(f)
		norm += f * f
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

func appendVector(b []byte, v []float32, b64 bool) []byte {
	if b64 {
		raw := make([]byte, 0, 4*len(v))
		for _, f := range v {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
		}
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, raw)
		return append(b, '"')
	}
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return append(b, ']')
}
