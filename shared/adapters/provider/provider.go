// Package provider is how the chat pipeline talks to a language model.
//
// Two models implement [Model]:
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
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/agentplane/agentplane/shared/kit/apperr"

	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/memory/text"
)

// Roles of a [Message].
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	// RoleTool is the result of a tool call, answering the ToolCallID of an assistant message.
	RoleTool = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string // RoleSystem, RoleUser, RoleAssistant or RoleTool
	Content string
	// ToolCalls are the tools an assistant message called.
	ToolCalls []ToolCall
	// ToolCallID is the call a RoleTool message answers.
	ToolCallID string
}

// Tool is a function the model may call: its name, what it does, and its parameters as a JSON
// schema object.
type Tool struct {
	Name        string
	Description string
	Parameters  map[string]any
}

// ToolCall is a model's call of a tool, with its arguments as a JSON object text.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Request is one chat request.
type Request struct {
	Model    string
	Messages []Message
	// MaxTokens caps the length of the reply; 0 leaves it to the provider.
	MaxTokens int
	// Passages are the numbered memory passages the prompt cites ([1], [2], ... in order); the
	// offline model answers from them.
	Passages []memory.Passage
	// NoAnswer is what the offline model says when no passage is relevant.
	NoAnswer string
	// Tools are the tools the model may call instead of answering; none when empty. With
	// NoTools set they are described but the model must answer in text (the last step of a run).
	Tools   []Tool
	NoTools bool
	// Schema, when set, asks for an answer that is one JSON value of this schema (structured
	// outputs: response_format json_schema, strict). The caller still checks what it gets.
	Schema *Schema
}

// Schema is a JSON schema a reply must follow: its name (letters, digits, _ and -) and the
// schema object.
type Schema struct {
	Name   string
	Schema map[string]any
}

// Usage is the token count of one call.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
	CachedTokens     int
	ReasoningTokens  int
	// Counted is set when the provider reported no usage and the tokens were estimated with
	// text.Tokens (cl100k) over the messages and the reply.
	Counted bool
}

// Reply is a model's answer.
type Reply struct {
	Content string
	// Model is the model that answered, as the provider names it.
	Model        string
	Usage        Usage
	FinishReason string
	// ToolCalls are the tools the model chose to call, in order; empty when it answered.
	ToolCalls []ToolCall
}

// Model answers chat requests. Implementations are safe for concurrent use.
type Model interface {
	// Complete returns the whole reply at once.
	Complete(ctx context.Context, r Request) (Reply, error)
	// Stream calls onDelta for each piece of the reply as it arrives (in order, never
	// concurrently) and returns the complete reply. If onDelta returns an error, the call is
	// cancelled and that error is returned with the reply so far. If ctx is cancelled
	// mid-stream, Stream returns the partial reply so far together with ctx.Err(), so the
	// caller can store what was generated and mark it interrupted.
	Stream(ctx context.Context, r Request, onDelta func(string) error) (Reply, error)
	// Name names the implementation: "openai-compatible" or "offline-extractive".
	Name() string
}

// Config configures [NewOpenAI].
type Config struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1 or http://localhost:11434/v1;
	// https://api.openai.com/v1 when empty.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" when not empty.
	APIKey string
	// HTTPClient sends the requests. Callers pass the SSRF-guarded client of package safehttp
	// for user-supplied hosts; nil means a plain client without a timeout (the deadlines below
	// apply).
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

// countUsage estimates the usage of a call whose provider reported none.
func countUsage(msgs []Message, reply string) Usage {
	prompt := 0
	for _, m := range msgs {
		prompt += text.Tokens(m.Content)
	}
	completion := text.Tokens(reply)
	return Usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion, Counted: true}
}

// Permanent reports whether err is a provider's refusal that asking again will not change: an
// answer of 4xx other than 429 (a bad key, an unknown model, a request it rejects).
func Permanent(err error) bool {
	e := apperr.As(err)
	if e.Code != "provider_error" {
		return false
	}
	var status int
	if _, scan := fmt.Sscanf(e.Message, "the model provider answered %d", &status); scan != nil {
		return false
	}
	return status >= 400 && status < 500 && status != 429
}

// ToolsRefused reports whether err is a provider refusing a request because it offered tools:
// the caller may fall back to describing the tools in the prompt.
func ToolsRefused(err error) bool {
	return Permanent(err) && strings.Contains(strings.ToLower(apperr.As(err).Message), "tool")
}
