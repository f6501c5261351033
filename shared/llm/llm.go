// Package llm is what the domain needs of a language model: a chat completion, whole or
// streamed, with tools and structured outputs, and the model of a provider a request or an
// agent names. The adapter shared/adapters/provider implements it (an OpenAI-compatible client
// and the built-in offline model); the composition root hands it to the domain.
//
// A model's failures are [*apperr.Error]s with one of the codes "provider_timeout",
// "provider_error", "provider_unreachable" or "provider_stream_error"; a cancelled caller
// context is returned as ctx.Err() itself.
package llm

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/memory"
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

// Offline names the built-in offline model: it answers from the passages with their own
// sentences, understanding nothing.
const Offline = "offline-extractive"

// IsOffline reports whether m is the offline model, which answers from passages and follows no
// JSON schema: callers that need structure use rules of their own instead.
func IsOffline(m Model) bool { return m.Name() == Offline }

// Endpoint is an OpenAI-compatible provider a request or an agent names, with its key.
type Endpoint struct {
	BaseURL string
	APIKey  string
	// Guarded is set for a host a request names: it is reached through the SSRF-guarded client.
	Guarded bool
}

// answered begins the message of a provider's error status; Permanent reads the status back.
const answered = "the model provider answered %d"

// ProviderError is the error of a provider that answered an error status, with detail (the
// provider's own message, may be empty).
func ProviderError(status int, detail string) *apperr.Error {
	msg := fmt.Sprintf(answered+" %s", status, http.StatusText(status))
	if detail != "" {
		msg += ": " + detail
	}
	return &apperr.Error{Kind: apperr.BadGateway, Code: "provider_error", Message: msg}
}

// Permanent reports whether err is a provider's refusal that asking again will not change: an
// answer of 4xx other than 429 (a bad key, an unknown model, a request it rejects).
func Permanent(err error) bool {
	e := apperr.As(err)
	if e.Code != "provider_error" {
		return false
	}
	var status int
	if _, scan := fmt.Sscanf(e.Message, answered, &status); scan != nil {
		return false
	}
	return status >= 400 && status < 500 && status != 429
}

// ToolsRefused reports whether err is a provider refusing a request because it offered tools:
// the caller may fall back to describing the tools in the prompt.
func ToolsRefused(err error) bool {
	return Permanent(err) && strings.Contains(strings.ToLower(apperr.As(err).Message), "tool")
}
