package sdktest

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	openaioption "github.com/openai/openai-go/v3/option"

	"github.com/bardoinference/bardo/host/fakeupstream"
	"github.com/bardoinference/bardo/host/testkit/modeltest"
	"github.com/bardoinference/bardo/host/testkit/testgateway"
)

func newEmbeddingsEnv(t *testing.T) (openai.Client, string) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.WithAPIKey(upKey))
	t.Cleanup(fake.Close)
	gw := testgateway.Start(t, modeltest.TOML(t)+pipelineTOML(fake, ""), testgateway.Options{Env: map[string]string{"UP_KEY": upKey}})
	return openai.NewClient(openaioption.WithBaseURL(gw.URL+"/v1/"), openaioption.WithAPIKey(clientKey),
		openaioption.WithMaxRetries(0), openaioption.WithRequestTimeout(requestTimeout)), gw.URL
}

func cosine(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

// TestEmbeddingsLocalModel: client.Embeddings.New against the local GloVe
// embedder ([[model]] "embed"), floats and base64; unknown models and
// classifiers are refused in OpenAI's error shape.
func TestEmbeddingsLocalModel(t *testing.T) {
	c, _ := newEmbeddingsEnv(t)
	var raw *http.Response
	resp, err := c.Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model: "embed",
		Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"the cat sat on the mat", "a kitten sat on a rug", "quarterly tax filing deadline"}},
	}, openaioption.WithResponseInto(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if raw.Header.Get("X-Bardo-Request-Id") == "" {
		t.Error("no X-Bardo-Request-Id")
	}
	if len(resp.Data) != 3 || resp.Model != "embed" || resp.Usage.PromptTokens == 0 {
		t.Fatalf("%s", resp.RawJSON())
	}
	for i, d := range resp.Data {
		if d.Index != int64(i) || len(d.Embedding) != 100 {
			t.Fatalf("data[%d]: index %d, %d dims", i, d.Index, len(d.Embedding))
		}
	}
	near, far := cosine(resp.Data[0].Embedding, resp.Data[1].Embedding), cosine(resp.Data[0].Embedding, resp.Data[2].Embedding)
	if near <= far {
		t.Errorf("cat/kitten %.3f is not closer than cat/tax %.3f", near, far)
	}

	// The SDK asks for base64 by default when no format is given; an
	// explicit float answer must match it.
	b64, err := c.Embeddings.New(ctx(t), openai.EmbeddingNewParams{
		Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("the cat sat on the mat")},
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatBase64,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := b64.Data[0].Embedding
	if len(got) == 0 {
		// openai-go decodes base64 for us only in some versions: decode here.
		raw := b64.Data[0].JSON.Embedding.Raw()
		bs, _ := base64.StdEncoding.DecodeString(strings.Trim(raw, `"`))
		for i := 0; i+4 <= len(bs); i += 4 {
			got = append(got, float64(math.Float32frombits(binary.LittleEndian.Uint32(bs[i:]))))
		}
	}
	if len(got) != 100 || math.Abs(cosine(got, resp.Data[0].Embedding)-1) > 1e-6 {
		t.Errorf("base64 embedding (%d dims) differs from the float one", len(got))
	}

	var apiErr *openai.Error
	_, err = c.Embeddings.New(ctx(t), openai.EmbeddingNewParams{Model: "text-embedding-3-small", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("unknown model: %v", err)
	}
	_, err = c.Embeddings.New(ctx(t), openai.EmbeddingNewParams{Model: "injection", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("a classifier: %v", err)
	}
	_, err = c.Embeddings.New(ctx(t), openai.EmbeddingNewParams{Model: "embed", Input: openai.EmbeddingNewParamsInputUnion{OfString: openai.String("x")}, Dimensions: openai.Int(50)})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 {
		t.Errorf("dimensions 50: %v", err)
	}
}
