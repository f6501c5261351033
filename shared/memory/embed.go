package memory

import "context"

// Embedder turns texts into vectors of one dimension: an OpenAI-compatible embeddings endpoint
// (shared/adapters/provider).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}
