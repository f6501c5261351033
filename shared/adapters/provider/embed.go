package provider

import (
	"context"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Embedder calls an OpenAI-compatible embeddings endpoint: the domain's memory.Embedder.
type Embedder struct {
	client openai.Client
	model  string
}

// NewEmbedder returns an embedder of the endpoint at baseURL (e.g. https://api.openai.com/v1).
func NewEmbedder(baseURL, key, model string, hc *http.Client) *Embedder {
	return &Embedder{
		client: openai.NewClient(option.WithBaseURL(baseURL), option.WithAPIKey(key), option.WithHTTPClient(hc), option.WithMaxRetries(2)),
		model:  model,
	}
}

// Embed returns one vector per text, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	res, err := e.client.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		Model:          openai.EmbeddingModel(e.model),
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	})
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if len(res.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %d vectors for %d texts", len(res.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range res.Data {
		if d.Index < 0 || int(d.Index) >= len(texts) {
			return nil, fmt.Errorf("embeddings: vector index %d out of range", d.Index)
		}
		v := make([]float32, len(d.Embedding))
		for i, f := range d.Embedding {
			v[i] = float32(f)
		}
		out[d.Index] = v
	}
	return out, nil
}
