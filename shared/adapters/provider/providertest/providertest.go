// Package providertest is a fake OpenAI-compatible model provider for tests: a real HTTP server
// (package httptest) answering POST /chat/completions with JSON, or with server-sent events when
// the request has "stream": true, as OpenAI does. It records every request it receives and
// counts the ones whose client went away before the answer was complete.
//
// Use its URL as the BaseURL of provider.NewOpenAI, and [Server.Set] a [Behavior] to make it
// slow, failing, hanging, held or cut off:
//
//	fake := providertest.New(t)
//	fake.Set(providertest.Behavior{Reply: "Paris.", ChunkDelay: 10 * time.Millisecond})
//	m := provider.NewOpenAI(provider.Config{BaseURL: fake.URL, APIKey: "sk-test"})
package providertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/llm"
)

// Defaults of a zero [Behavior].
const (
	DefaultReply        = "Hello from the fake provider."
	DefaultPromptTokens = 11
	// DefaultModel is the model answering requests that name none.
	DefaultModel = "fake-model"
)

// Usage is the token usage the server reports.
type Usage struct{ Prompt, Completion int }

// Behavior is how the server answers; the zero value answers [DefaultReply] at once.
type Behavior struct {
	// Reply is the content returned (streamed in Chunks pieces when streaming); DefaultReply
	// when empty, unless Empty.
	Reply string
	// Empty makes the content returned empty (a model that answers nothing).
	Empty bool
	// Chunks is the number of stream deltas; one per word when zero.
	Chunks int
	// ChunkDelay is the pause between stream deltas.
	ChunkDelay time.Duration
	// FirstByteDelay is the pause before sending anything, headers included.
	FirstByteDelay time.Duration
	// Hang makes the server never answer, until the client goes away.
	Hang bool
	// Hold, when not nil, makes the server wait until it is closed before it answers (a client
	// that goes away meanwhile counts as cancelled): a test releases the answer when it wants.
	Hold <-chan struct{}
	// Status is a non-200 status to answer with, with the body
	// {"error": {"message": ErrorMessage, "type": ..., "param": null, "code": ...}}.
	Status int
	// ErrorMessage is the message of the error body; the status text when empty.
	ErrorMessage string
	// FailTimes makes the server answer Status (503 when Status is zero) this many times
	// first, then succeed. When zero, a non-200 Status is answered every time.
	FailTimes int
	// RetryAfter is the Retry-After header of failures, when not empty.
	RetryAfter string
	// NoUsage omits the usage from answers. Streams report usage only when the request asks
	// for it with stream_options.include_usage, as OpenAI does.
	NoUsage bool
	// Usage is the reported usage; zero fields default to DefaultPromptTokens and to the
	// number of words of the reply.
	Usage Usage
	// BreakAfter, when streaming, cuts the connection after this many deltas (for mid-stream
	// errors). Zero never cuts.
	BreakAfter int
	// Script drives multi-step runs: a request is answered with the turn whose index is the
	// number of tool results it carries (messages of role tool, or user messages beginning
	// "Observation:" in the text protocol), so a retried step gets the same answer. Requests
	// past the script, and turns without a Call, answer the turn's Reply (Reply when empty).
	// A request with tool_choice "none" is answered in text even when its turn is a Call.
	Script []Turn
	// NoTools answers 400, as providers without tool calling do, to any request offering tools.
	NoTools bool
	// Structured is the content answered to requests that ask for a JSON schema
	// (response_format json_schema); Reply when empty.
	Structured string
}

// Turn is one answer of a [Behavior.Script]: a tool call, or a reply.
type Turn struct {
	Reply string
	Call  *Call
}

// Call is a tool call the fake makes; Arguments is a JSON object text.
type Call struct {
	Name      string
	Arguments string
}

// Received is a request the server received.
type Received struct {
	// At is when the request arrived.
	At     time.Time
	Header http.Header
	// Body is the decoded request JSON.
	Body     map[string]any
	Model    string
	Messages []llm.Message
	// MaxTokens is max_tokens or max_completion_tokens, whichever was sent; 0 when neither.
	MaxTokens int
	Stream    bool
	// Tools are the names of the tools offered; ToolChoice is tool_choice when it is a string.
	Tools      []string
	ToolChoice string
	// Schema is the name of the JSON schema the request asks the answer to follow
	// (response_format json_schema), "" when it asks for none; Strict is its strict flag.
	Schema string
	Strict bool
}

// results is how many tool results the request carries.
func (r Received) results() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == llm.RoleTool || (m.Role == llm.RoleUser && strings.HasPrefix(m.Content, "Observation:")) {
			n++
		}
	}
	return n
}

// Server is a running fake provider.
type Server struct {
	// URL is the base URL of the API, to use as provider.Config.BaseURL.
	URL string

	srv  *httptest.Server
	done chan struct{} // closed when the test ends, to release hanging handlers

	mu        sync.Mutex
	behavior  Behavior
	failed    int // failures answered under the current behavior
	requests  []Received
	cancelled int
}

// New starts a fake provider, closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{done: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL
	t.Cleanup(func() {
		close(s.done)
		s.srv.Close()
	})
	return s
}

// Set replaces the server's behavior for the requests that follow, and restarts the count of
// FailTimes.
func (s *Server) Set(b Behavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.behavior, s.failed = b, 0
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Cancelled returns how many requests saw their client go away before the answer was complete.
func (s *Server) Cancelled() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancelled
}

// WaitCancelled waits until at least n requests saw their client go away, and fails the test
// if that does not happen within the given time.
func (s *Server) WaitCancelled(t testing.TB, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for s.Cancelled() < n {
		if time.Now().After(deadline) {
			t.Fatalf("providertest: %d request(s) cancelled by their client after %s, want %d", s.Cancelled(), within, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// record stores a request and returns the behavior to answer it with (defaults applied) and
// the error status to answer, 0 to succeed.
func (s *Server) record(rec Received) (Behavior, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, rec)
	b := s.behavior
	if rec.Schema != "" && b.Structured != "" {
		b.Reply = b.Structured
	}
	if b.Reply == "" && !b.Empty {
		b.Reply = DefaultReply
	}
	if b.Usage.Prompt == 0 {
		b.Usage.Prompt = DefaultPromptTokens
	}
	if b.Usage.Completion == 0 {
		b.Usage.Completion = len(strings.Fields(b.Reply))
	}
	status := b.Status
	if status == 0 && b.FailTimes > 0 {
		status = http.StatusServiceUnavailable
	}
	if status == 0 || status == http.StatusOK || (b.FailTimes > 0 && s.failed >= b.FailTimes) {
		return b, 0
	}
	if b.FailTimes > 0 {
		s.failed++
	}
	return b, status
}

func (s *Server) noteCancelled() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cancelled++
}

// pause waits d; it returns false, counting the cancellation, when the client goes away
// meanwhile (or the test ends).
func (s *Server) pause(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return s.alive(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return s.alive(ctx)
	case <-ctx.Done():
		s.noteCancelled()
		return false
	case <-s.done:
		return false
	}
}

// alive reports whether the client is still there, counting it as cancelled when not.
func (s *Server) alive(ctx context.Context) bool {
	if ctx.Err() != nil {
		s.noteCancelled()
		return false
	}
	return true
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.Method+" "+r.URL.Path, "")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error(), "")
		return
	}
	rec, includeUsage, err := decode(r.Header, body)
	b, status := s.record(rec)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid request body: "+err.Error(), "")
		return
	}
	ctx := r.Context()
	if !s.pause(ctx, b.FirstByteDelay) {
		return
	}
	if b.Hold != nil {
		select {
		case <-b.Hold:
		case <-ctx.Done():
			s.noteCancelled()
			return
		case <-s.done:
			return
		}
	}
	if b.Hang {
		select {
		case <-ctx.Done():
			s.noteCancelled()
		case <-s.done:
		}
		return
	}
	if status != 0 {
		msg := b.ErrorMessage
		if msg == "" {
			msg = http.StatusText(status)
		}
		writeError(w, status, msg, b.RetryAfter)
		return
	}
	if b.NoTools && len(rec.Tools) > 0 {
		writeError(w, http.StatusBadRequest, "this model does not support tools", "")
		return
	}
	model := rec.Model
	if model == "" {
		model = DefaultModel
	}
	var call *Call
	if i := rec.results(); i < len(b.Script) {
		if t := b.Script[i]; t.Call != nil && rec.ToolChoice != "none" {
			call = t.Call
		} else if t.Reply != "" {
			b.Reply = t.Reply
		}
	}
	if rec.Stream {
		s.stream(ctx, w, b, call, callID(rec), model, includeUsage && !b.NoUsage)
		return
	}
	message, finish := map[string]any{"role": "assistant", "content": b.Reply, "refusal": nil}, "stop"
	if call != nil {
		message["content"], finish = nil, "tool_calls"
		message["tool_calls"] = []any{map[string]any{"id": callID(rec), "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": call.Arguments}}}
	}
	answer := map[string]any{
		"id": "chatcmpl-fake", "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": message, "logprobs": nil, "finish_reason": finish}},
	}
	if !b.NoUsage {
		answer["usage"] = usage(b.Usage)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// callID names the tool call answering rec.
func callID(rec Received) string { return fmt.Sprintf("call_%d", rec.results()+1) }

// stream answers with server-sent events: a role chunk, the content deltas (or the tool call,
// its arguments in two pieces), a finish chunk, the usage chunk when withUsage, and [DONE].
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, b Behavior, call *Call, id, model string, withUsage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(data string) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil || rc.Flush() != nil {
			s.noteCancelled()
			return false
		}
		return true
	}
	chunk := func(choices []any, extra map[string]any) string {
		c := map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk",
			"created": time.Now().Unix(), "model": model, "choices": choices}
		for k, v := range extra {
			c[k] = v
		}
		data, _ := json.Marshal(c)
		return string(data)
	}
	choice := func(delta map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	}
	if !send(chunk(choice(map[string]any{"role": "assistant", "content": ""}, nil), nil)) {
		return
	}
	if call != nil {
		// In two deltas, split between characters: a JSON string carries valid UTF-8 only.
		half := len(call.Arguments) / 2
		for half > 0 && !utf8.RuneStart(call.Arguments[half]) {
			half--
		}
		first := map[string]any{"index": 0, "id": id, "type": "function",
			"function": map[string]any{"name": call.Name, "arguments": call.Arguments[:half]}}
		rest := map[string]any{"index": 0, "function": map[string]any{"arguments": call.Arguments[half:]}}
		for _, d := range []map[string]any{first, rest} {
			if !send(chunk(choice(map[string]any{"tool_calls": []any{d}}, nil), nil)) {
				return
			}
		}
		if send(chunk(choice(map[string]any{}, "tool_calls"), nil)) && (!withUsage || send(chunk([]any{}, map[string]any{"usage": usage(b.Usage)}))) {
			send("[DONE]")
		}
		return
	}
	for i, piece := range pieces(b.Reply, b.Chunks) {
		if i > 0 && !s.pause(ctx, b.ChunkDelay) {
			return
		}
		if b.BreakAfter > 0 && i == b.BreakAfter {
			breakConnection(rc)
			return
		}
		if !send(chunk(choice(map[string]any{"content": piece}, nil), nil)) {
			return
		}
	}
	if !send(chunk(choice(map[string]any{}, "stop"), nil)) {
		return
	}
	if withUsage && !send(chunk([]any{}, map[string]any{"usage": usage(b.Usage)})) {
		return
	}
	send("[DONE]")
}

// breakConnection closes the connection under a response being written, so that the client
// reads a truncated body.
func breakConnection(rc *http.ResponseController) {
	conn, _, err := rc.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: the server resets the stream
	}
	_ = conn.Close()
}

// pieces splits reply into n pieces of about the same length, or into words (each with its
// following space) when n is zero or negative.
func pieces(reply string, n int) []string {
	if n <= 0 {
		return slices.DeleteFunc(strings.SplitAfter(reply, " "), func(w string) bool { return w == "" })
	}
	runes := []rune(reply)
	n = min(n, len(runes))
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, string(runes[i*len(runes)/n:(i+1)*len(runes)/n]))
	}
	return out
}

func usage(u Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.Prompt, "completion_tokens": u.Completion, "total_tokens": u.Prompt + u.Completion}
}

// writeError answers an OpenAI-style error.
func writeError(w http.ResponseWriter, status int, msg, retryAfter string) {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status >= http.StatusInternalServerError:
		typ = "server_error"
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code},
	})
}

// decode reads a chat completions request; includeUsage reports stream_options.include_usage.
func decode(h http.Header, body []byte) (rec Received, includeUsage bool, err error) {
	rec.At, rec.Header = time.Now(), h.Clone()
	if err := json.Unmarshal(body, &rec.Body); err != nil {
		return rec, false, err
	}
	rec.Model, _ = rec.Body["model"].(string)
	rec.Stream, _ = rec.Body["stream"].(bool)
	for _, key := range []string{"max_tokens", "max_completion_tokens"} {
		if n, ok := rec.Body[key].(float64); ok {
			rec.MaxTokens = int(n)
		}
	}
	if opts, ok := rec.Body["stream_options"].(map[string]any); ok {
		includeUsage, _ = opts["include_usage"].(bool)
	}
	msgs, _ := rec.Body["messages"].([]any)
	for _, m := range msgs {
		obj, _ := m.(map[string]any)
		msg := llm.Message{Content: content(obj["content"])}
		msg.Role, _ = obj["role"].(string)
		msg.ToolCallID, _ = obj["tool_call_id"].(string)
		calls, _ := obj["tool_calls"].([]any)
		for _, c := range calls {
			call, _ := c.(map[string]any)
			fn, _ := call["function"].(map[string]any)
			tc := llm.ToolCall{}
			tc.ID, _ = call["id"].(string)
			tc.Name, _ = fn["name"].(string)
			tc.Arguments, _ = fn["arguments"].(string)
			msg.ToolCalls = append(msg.ToolCalls, tc)
		}
		rec.Messages = append(rec.Messages, msg)
	}
	tools, _ := rec.Body["tools"].([]any)
	for _, t := range tools {
		obj, _ := t.(map[string]any)
		fn, _ := obj["function"].(map[string]any)
		name, _ := fn["name"].(string)
		rec.Tools = append(rec.Tools, name)
	}
	rec.ToolChoice, _ = rec.Body["tool_choice"].(string)
	if format, _ := rec.Body["response_format"].(map[string]any); format["type"] == "json_schema" {
		schema, _ := format["json_schema"].(map[string]any)
		rec.Schema, _ = schema["name"].(string)
		rec.Strict, _ = schema["strict"].(bool)
	}
	return rec, includeUsage, nil
}

// content is the text of a message content: a string, or the text of an array of parts.
func content(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	parts, _ := v.([]any)
	var b strings.Builder
	for _, p := range parts {
		obj, _ := p.(map[string]any)
		text, _ := obj["text"].(string)
		b.WriteString(text)
	}
	return b.String()
}
