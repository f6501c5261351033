package provider

import (
	"crypto/sha256"
	"net/http"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/agentplane/agentplane/shared/llm"
)

// Pool reuses model clients: one per (base URL, key, HTTP client, timeout), the most recently
// used kept, so that requests naming the same provider and key share a client instead of
// building one each.
type Pool struct {
	clients *lru.Cache[poolKey, llm.Model]
}

type poolKey struct {
	baseURL string
	// key is the API key's hash: the pool's keys are compared, never shown.
	key     [sha256.Size]byte
	client  *http.Client
	timeout time.Duration
}

// NewPool keeps up to size clients.
func NewPool(size int) *Pool {
	c, err := lru.New[poolKey, llm.Model](size)
	if err != nil {
		panic(err)
	}
	return &Pool{clients: c}
}

// OpenAI is the pool's client for c, made with NewOpenAI the first time.
func (p *Pool) OpenAI(c Config) llm.Model {
	k := poolKey{baseURL: c.BaseURL, key: sha256.Sum256([]byte(c.APIKey)), client: c.HTTPClient, timeout: c.Timeout}
	if m, ok := p.clients.Get(k); ok {
		return m
	}
	m := NewOpenAI(c)
	p.clients.Add(k, m)
	return m
}
