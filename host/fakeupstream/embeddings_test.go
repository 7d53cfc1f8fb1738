package fakeupstream

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The official SDK reads the fake's embeddings: vectors of unit length,
// deterministic, the dimensions asked, base64 equal to floats, usage at
// ceil(bytes/4) a text.
func TestEmbeddingsSDK(t *testing.T) {
	s := newServer(t)
	c := openai.NewClient(option.WithBaseURL(s.URL()+"/v1/"), option.WithAPIKey(DefaultAPIKey), option.WithMaxRetries(0))
	ctx := context.Background()
	res, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model:          openai.EmbeddingModelTextEmbedding3Small,
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"hello", "a longer text"}},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 2 || res.Data[1].Index != 1 || len(res.Data[0].Embedding) != DefaultEmbeddingDims ||
		res.Usage.PromptTokens != 2+4 || res.Usage.TotalTokens != 6 || res.Model != "text-embedding-3-small" {
		t.Fatalf("%s", res.RawJSON())
	}
	var norm float64
	want := FakeEmbedding("text-embedding-3-small", "hello", DefaultEmbeddingDims)
	for i, f := range res.Data[0].Embedding {
		norm += f * f
		if float32(f) != want[i] {
			t.Fatalf("[%d] %v, want %v", i, f, want[i])
		}
	}
	if math.Abs(norm-1) > 1e-5 {
		t.Errorf("norm² %v", norm)
	}

	b64, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "text-embedding-3-large", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("hello")},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64, Dimensions: openai.Int(64),
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := base64.StdEncoding.DecodeString(strings.Trim(b64.Data[0].JSON.Embedding.Raw(), `"`))
	want = FakeEmbedding("text-embedding-3-large", "hello", 64)
	if len(raw) != 4*64 || math.Float32frombits(binary.LittleEndian.Uint32(raw[8:])) != want[2] {
		t.Errorf("base64 vector of %d bytes", len(raw))
	}
}

// Errors are OpenAI's: a missing input, an unknown model, dimensions out
// of range, a wrong key, and a scripted status with its body.
func TestEmbeddingsErrors(t *testing.T) {
	s := newServer(t)
	url := s.URL() + "/v1/embeddings"
	for _, c := range []struct {
		headers map[string]string
		body    string
		status  int
		msg     string
	}{
		{openAIHeaders(), `{"model":"text-embedding-3-small"}`, 400, "'input' is a required property"},
		{openAIHeaders(), `{"model":"text-embedding-3-small","input":""}`, 400, "'$.input' is invalid"},
		{openAIHeaders(), `{"input":"x"}`, 400, "you must provide a model parameter"},
		{openAIHeaders(), `{"model":"gpt-5-unknown","input":"x"}`, 404, "does not exist"},
		{openAIHeaders(), `{"model":"text-embedding-3-small","input":"x","dimensions":4096}`, 400, "dimensions"},
		{map[string]string{"Authorization": "Bearer wrong-key-123456"}, `{"model":"text-embedding-3-small","input":"x"}`, 401, "Incorrect API key"},
	} {
		m := jsonBody(t, post(t, url, c.headers, c.body), c.status)
		msg, _ := m["error"].(map[string]any)["message"].(string)
		if !strings.Contains(msg, c.msg) {
			t.Errorf("%s: message %q, want %q", c.body, msg, c.msg)
		}
	}
	s.Script(Behaviour{Status: 429, RetryAfter: 2})
	resp := post(t, url, openAIHeaders(), `{"model":"text-embedding-3-small","input":"x"}`)
	if resp.Header.Get("retry-after") != "2" {
		t.Errorf("retry-after %q", resp.Header.Get("retry-after"))
	}
	jsonBody(t, resp, 429)

	c := openai.NewClient(option.WithBaseURL(s.URL()+"/v1/"), option.WithAPIKey(DefaultAPIKey), option.WithMaxRetries(0))
	s.Script(Behaviour{Status: 503})
	var e *openai.Error
	_, err := c.Embeddings.New(context.Background(), openai.EmbeddingNewParams{Model: "text-embedding-3-small",
		Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &e) || e.StatusCode != 503 || e.Type != "server_error" {
		t.Errorf("scripted 503: %v", err)
	}
}
