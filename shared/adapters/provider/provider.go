// Package provider is the adapter of the domain's language model (package llm).
//
// Two models implement [llm.Model]:
//
//   - [NewOpenAI] calls any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM,
//     LM Studio...) through the official openai-go SDK, with its own retries and deadlines so
//     that a streamed answer is never retried once it has begun;
//   - [NewOffline] is a built-in extractive model that answers from the retrieved memory
//     passages, so the product works with no key and no network.
//
// Every failure of a provider is an [*apperr.Error] with one of the codes "provider_timeout"
// (GatewayTimeout), "provider_error", "provider_unreachable" or "provider_stream_error"
// (BadGateway). A cancelled caller context is returned as ctx.Err() itself, so callers can tell
// a client that went away from a failing provider. The API key never appears in an error.
package provider

import (
	"net/http"
	"sync"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory/text"
)

// Config configures [NewOpenAI].
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or http://localhost:11434/v1;
	// https://api.openai.com/v1 when empty.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when not empty.
	APIKey string
	// HTTPClient sends the requests. Callers pass the SSRF-guarded client of package safehttp
	// for user-supplied hosts; nil means a plain client over [Transport] without a timeout (the
	// deadlines below apply).
	HTTPClient *http.Client
	// Timeout bounds a whole non-streamed call, and the time to the first chunk of a stream,
	// retries and their waits included; 60s when zero or negative.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried on 429, 5xx and transient connection
	// errors, before the first byte of the answer only: 2 when zero, none when negative.
	// Retries wait an exponential backoff with jitter starting near 200ms, or what the
	// provider's Retry-After asks when that is at most 5s (a longer Retry-After ends the
	// retries).
	MaxRetries int
}

// Transport is the one connection layer of calls to the operator's own endpoints (the configured
// provider, the embeddings service), which the SSRF guard does not check: net/http's default,
// shared by the process's clients as [http.DefaultTransport] is, keeping as many idle connections
// a host as the guarded client does (net/http's default of 2 dialed again every connection of
// concurrent calls beyond the second).
func Transport() *http.Transport { return pooled() }

var pooled = sync.OnceValue(func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = safehttp.IdleConnsPerHost
	return t
})

// countUsage estimates the usage of a call whose provider reported none.
func countUsage(msgs []llm.Message, reply string) llm.Usage {
	prompt := 0
	for _, m := range msgs {
		prompt += text.Tokens(m.Content)
	}
	completion := text.Tokens(reply)
	return llm.Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion, Counted: true}
}
