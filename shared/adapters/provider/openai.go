package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/llm"
)

// Defaults and bounds of [NewOpenAI].
const (
	defaultBaseURL    = "https://api.openai.com/v1"
	defaultTimeout    = 60 * time.Second
	defaultMaxRetries = 2
)

// openAI is the OpenAI-compatible [llm.Model].
type openAI struct {
	svc        openai.ChatCompletionService
	key        string
	timeout    time.Duration
	maxRetries int
	// completionTokens sends the reply cap as max_completion_tokens (which OpenAI's reasoning
	// models require) rather than max_tokens (which other compatible servers understand).
	completionTokens bool
}

// NewOpenAI returns a model calling the OpenAI-compatible chat completions API at c.BaseURL.
//
// The SDK's own retries are disabled: the model retries itself, only before the first byte of
// an answer, within c.Timeout. The SDK reads no OPENAI_* environment variable. The reply cap
// ([llm.Request.MaxTokens]) is sent as max_completion_tokens to OpenAI and Azure OpenAI hosts and
// as max_tokens to any other host, since many compatible servers know only the latter.
func NewOpenAI(c Config) llm.Model {
	if c.BaseURL == "" {
		c.BaseURL = defaultBaseURL
	}
	if c.Timeout <= 0 {
		c.Timeout = defaultTimeout
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = defaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: Transport()}
	}
	return &openAI{
		svc: openai.NewChatCompletionService(
			option.WithBaseURL(c.BaseURL),
			option.WithAPIKey(c.APIKey),
			option.WithHTTPClient(hc),
			option.WithMaxRetries(0),
		),
		key:              c.APIKey,
		timeout:          c.Timeout,
		maxRetries:       c.MaxRetries,
		completionTokens: isOpenAIHost(c.BaseURL),
	}
}

// isOpenAIHost reports whether baseURL is OpenAI's or Azure OpenAI's API.
func isOpenAIHost(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return host == "api.openai.com" || strings.HasSuffix(host, ".openai.azure.com")
}

// Name implements [llm.Model].
func (m *openAI) Name() string { return "openai-compatible" }

// Complete implements [llm.Model].
func (m *openAI) Complete(ctx context.Context, r llm.Request) (llm.Reply, error) {
	reply, err := m.complete(ctx, r)
	return reply, m.scrub(err)
}

// Stream implements [llm.Model].
func (m *openAI) Stream(ctx context.Context, r llm.Request, onDelta func(string) error) (llm.Reply, error) {
	reply, err := m.stream(ctx, r, onDelta)
	return reply, m.scrub(err)
}

func (m *openAI) complete(ctx context.Context, r llm.Request) (llm.Reply, error) {
	params, err := m.params(r)
	if err != nil {
		return llm.Reply{}, err
	}
	c := m.begin(ctx)
	defer c.end()
	for attempt := 0; ; attempt++ {
		var x exchange
		res, err := m.svc.New(c.ctx, params, option.WithMiddleware(x.observe))
		if err == nil {
			return completion(res, r)
		}
		wait, retry, out := c.failed(err, &x, attempt, badAnswer)
		if !retry {
			return llm.Reply{}, out
		}
		if err := c.sleep(wait); err != nil {
			return llm.Reply{}, err
		}
	}
}

// completion turns a chat completion into a Reply.
func completion(res *openai.ChatCompletion, r llm.Request) (llm.Reply, error) {
	if len(res.Choices) == 0 {
		return llm.Reply{}, badAnswer(errors.New("the answer has no choices"))
	}
	ch := res.Choices[0]
	content := ch.Message.Content
	if content == "" {
		content = ch.Message.Refusal
	}
	model := res.Model
	if model == "" {
		model = r.Model
	}
	var calls []llm.ToolCall
	for _, c := range ch.Message.ToolCalls {
		if c.Type == "function" || c.Type == "" {
			calls = append(calls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return llm.Reply{
		Content:      content,
		Model:        model,
		Usage:        usageOf(res.Usage, res.JSON.Usage.Valid(), r.Messages, content),
		FinishReason: ch.FinishReason,
		ToolCalls:    calls,
	}, nil
}

func (m *openAI) stream(ctx context.Context, r llm.Request, onDelta func(string) error) (llm.Reply, error) {
	if onDelta == nil {
		onDelta = func(string) error { return nil }
	}
	params, err := m.params(r)
	if err != nil {
		return llm.Reply{}, err
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	c := m.begin(ctx)
	defer c.end()
	for attempt := 0; ; attempt++ {
		var x exchange
		acc := accumulator{model: r.Model}
		s := m.svc.NewStreaming(c.ctx, params, option.WithMiddleware(x.observe))
		started, err := c.read(s, &acc, onDelta)
		var de *deltaError
		switch {
		case err == nil:
			return acc.reply(r.Messages), nil
		case errors.As(err, &de):
			return acc.reply(r.Messages), de.err
		case ctx.Err() != nil:
			return acc.reply(r.Messages), ctx.Err()
		case errors.Is(err, errTimeout):
			return llm.Reply{}, timeoutError(m.timeout)
		case started:
			return acc.reply(r.Messages), streamError(err)
		}
		wait, retry, out := c.failed(err, &x, attempt, streamError)
		if !retry {
			return llm.Reply{}, out
		}
		if err := c.sleep(wait); err != nil {
			return llm.Reply{}, err
		}
	}
}

// deltaError carries the error of the caller's onDelta out of call.read.
type deltaError struct{ err error }

func (e *deltaError) Error() string { return e.err.Error() }

// read consumes the stream s into acc, passing each piece of content to onDelta. It reports
// whether any chunk arrived, and the error that ended the stream: nil at its end, a
// *deltaError when onDelta failed (the call is then cancelled), errTimeout when the first
// chunk came after the deadline.
func (c *call) read(s *ssestream.Stream[openai.ChatCompletionChunk], acc *accumulator, onDelta func(string) error) (bool, error) {
	defer s.Close()
	started := false
	for s.Next() {
		if !started {
			started = true
			if !c.timer.Stop() {
				return true, errTimeout
			}
		}
		delta := acc.add(s.Current())
		if delta == "" {
			continue
		}
		if err := onDelta(delta); err != nil {
			c.cancel(err)
			return true, &deltaError{err: err}
		}
	}
	return started, s.Err()
}

// accumulator gathers the chunks of a stream.
type accumulator struct {
	content  strings.Builder
	model    string
	finish   string
	usage    openai.CompletionUsage
	reported bool // the provider sent usage
	calls    []llm.ToolCall
}

// add records a chunk and returns the content it adds to the reply.
func (a *accumulator) add(ch openai.ChatCompletionChunk) string {
	if ch.Model != "" {
		a.model = ch.Model
	}
	if ch.JSON.Usage.Valid() {
		a.usage, a.reported = ch.Usage, true
	}
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		if choice.FinishReason != "" {
			a.finish = choice.FinishReason
		}
		for _, d := range choice.Delta.ToolCalls {
			a.toolCall(d)
		}
		delta := choice.Delta.Content + choice.Delta.Refusal
		a.content.WriteString(delta)
		return delta
	}
	return ""
}

// toolCall adds a piece of a streamed tool call: the first piece of a call (by index) carries
// its id and name, the following ones more of its arguments.
func (a *accumulator) toolCall(d openai.ChatCompletionChunkChoiceDeltaToolCall) {
	i := int(d.Index)
	if i < 0 || i > 63 {
		return
	}
	for len(a.calls) <= i {
		a.calls = append(a.calls, llm.ToolCall{})
	}
	c := &a.calls[i]
	if d.ID != "" {
		c.ID = d.ID
	}
	c.Name += d.Function.Name
	c.Arguments += d.Function.Arguments
}

// reply is the reply accumulated so far.
func (a *accumulator) reply(msgs []llm.Message) llm.Reply {
	content := a.content.String()
	var calls []llm.ToolCall
	for _, c := range a.calls {
		if c.Name != "" {
			calls = append(calls, c)
		}
	}
	return llm.Reply{Content: content, Model: a.model, Usage: usageOf(a.usage, a.reported, msgs, content), FinishReason: a.finish, ToolCalls: calls}
}

// usageOf is the provider's usage u when it reported one, else an estimate.
func usageOf(u openai.CompletionUsage, reported bool, msgs []llm.Message, reply string) llm.Usage {
	if !reported || u.PromptTokens+u.CompletionTokens+u.TotalTokens == 0 {
		return countUsage(msgs, reply)
	}
	total := int(u.TotalTokens)
	if total == 0 {
		total = int(u.PromptTokens + u.CompletionTokens)
	}
	return llm.Usage{
		PromptTokens:     int(u.PromptTokens),
		CompletionTokens: int(u.CompletionTokens),
		TotalTokens:      total,
		CachedTokens:     int(u.PromptTokensDetails.CachedTokens),
		ReasoningTokens:  int(u.CompletionTokensDetails.ReasoningTokens),
	}
}

// params builds the SDK request of r.
func (m *openAI) params(r llm.Request) (openai.ChatCompletionNewParams, error) {
	msgs := make([]openai.ChatCompletionMessageParamUnion, 0, len(r.Messages))
	for i, msg := range r.Messages {
		switch msg.Role {
		case llm.RoleSystem:
			msgs = append(msgs, openai.SystemMessage(msg.Content))
		case llm.RoleUser:
			msgs = append(msgs, openai.UserMessage(msg.Content))
		case llm.RoleAssistant:
			msgs = append(msgs, assistantMessage(msg))
		case llm.RoleTool:
			msgs = append(msgs, openai.ToolMessage(msg.Content, msg.ToolCallID))
		default:
			return openai.ChatCompletionNewParams{}, apperr.Invalidf(fmt.Sprintf("messages[%d].role", i),
				"must be %q, %q, %q or %q, not %q", llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool, msg.Role)
		}
	}
	p := openai.ChatCompletionNewParams{Model: r.Model, Messages: msgs}
	for _, t := range r.Tools {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: openai.FunctionParameters(t.Parameters)}))
	}
	if len(r.Tools) > 0 && r.NoTools {
		p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String(string(openai.ChatCompletionToolChoiceOptionAutoNone))}
	}
	if r.Schema != nil {
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &openai.ResponseFormatJSONSchemaParam{
			JSONSchema: openai.ResponseFormatJSONSchemaJSONSchemaParam{Name: r.Schema.Name, Strict: openai.Bool(true), Schema: r.Schema.Schema}}}
	}
	if r.MaxTokens > 0 {
		if m.completionTokens {
			p.MaxCompletionTokens = openai.Int(int64(r.MaxTokens))
		} else {
			p.MaxTokens = openai.Int(int64(r.MaxTokens))
		}
	}
	return p, nil
}

// assistantMessage is an assistant turn, with the tools it called.
func assistantMessage(msg llm.Message) openai.ChatCompletionMessageParamUnion {
	if len(msg.ToolCalls) == 0 {
		return openai.AssistantMessage(msg.Content)
	}
	a := openai.ChatCompletionAssistantMessageParam{}
	if msg.Content != "" {
		a.Content.OfString = openai.String(msg.Content)
	}
	for _, c := range msg.ToolCalls {
		a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
			ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: c.Arguments}}})
	}
	return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}
}

// scrub removes the API key from err, should a provider have echoed it. Keys shorter than 8
// characters are not looked for, since they would match ordinary words.
func (m *openAI) scrub(err error) error {
	var e *apperr.Error
	if len(m.key) < 8 || !errors.As(err, &e) {
		return err
	}
	e.Message = strings.ReplaceAll(e.Message, m.key, "[redacted]")
	if e.Err != nil && strings.Contains(e.Err.Error(), m.key) {
		e.Err = nil
	}
	return err
}
