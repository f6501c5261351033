package provider_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory/text"
)

func TestName(t *testing.T) {
	if got := provider.NewOpenAI(provider.Config{}).Name(); got != "openai-compatible" {
		t.Errorf("Name() = %q", got)
	}
}

func TestComplete(t *testing.T) {
	const reply = "Paris is the capital of France."
	tests := []struct {
		name      string
		behavior  providertest.Behavior
		maxTokens int
		want      llm.Usage
	}{
		{
			name:      "usage from the provider",
			behavior:  providertest.Behavior{Reply: reply, Usage: providertest.Usage{Prompt: 20, Completion: 7}},
			maxTokens: 64,
			want:      llm.Usage{PromptTokens: 20, CompletionTokens: 7, TotalTokens: 27},
		},
		{
			name:     "usage counted when the provider sends none",
			behavior: providertest.Behavior{Reply: reply, NoUsage: true},
			want: llm.Usage{
				PromptTokens:     text.Tokens("You answer from the passages.") + text.Tokens("What is the capital of France?"),
				CompletionTokens: text.Tokens(reply),
				TotalTokens:      text.Tokens("You answer from the passages.") + text.Tokens("What is the capital of France?") + text.Tokens(reply),
				Counted:          true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(tt.behavior)
			r := request()
			r.MaxTokens = tt.maxTokens
			got, err := newModel(fake, nil).Complete(t.Context(), r)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := llm.Reply{Content: reply, Model: "gpt-test", Usage: tt.want, FinishReason: "stop"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reply = %+v, want %+v", got, want)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 {
				t.Fatalf("server received %d requests, want 1", len(reqs))
			}
			rec := reqs[0]
			if !reflect.DeepEqual(rec.Messages, r.Messages) {
				t.Errorf("messages = %+v, want %+v", rec.Messages, r.Messages)
			}
			if rec.Model != "gpt-test" || rec.MaxTokens != tt.maxTokens || rec.Stream {
				t.Errorf("received model %q, max tokens %d, stream %v", rec.Model, rec.MaxTokens, rec.Stream)
			}
			if got := rec.Header.Get("Authorization"); got != "Bearer "+testKey {
				t.Errorf("Authorization = %q", got)
			}
			if _, ok := rec.Body["max_tokens"]; ok != (tt.maxTokens > 0) {
				t.Errorf("max_tokens sent = %v, want %v", ok, tt.maxTokens > 0)
			}
		})
	}
}

func TestStream(t *testing.T) {
	const reply = "The capital of France is Paris, on the Seine."
	tests := []struct {
		name       string
		behavior   providertest.Behavior
		wantDeltas int
		wantUsage  llm.Usage
	}{
		{
			name:       "one delta per word, usage from the provider",
			behavior:   providertest.Behavior{Reply: reply},
			wantDeltas: len(strings.Fields(reply)),
			wantUsage:  llm.Usage{PromptTokens: 11, CompletionTokens: 9, TotalTokens: 20},
		},
		{
			name:       "three deltas",
			behavior:   providertest.Behavior{Reply: reply, Chunks: 3, ChunkDelay: 5 * time.Millisecond},
			wantDeltas: 3,
			wantUsage:  llm.Usage{PromptTokens: 11, CompletionTokens: 9, TotalTokens: 20},
		},
		{
			name:       "usage counted when the provider sends none",
			behavior:   providertest.Behavior{Reply: reply, NoUsage: true},
			wantDeltas: len(strings.Fields(reply)),
			wantUsage: llm.Usage{
				PromptTokens:     text.Tokens("You answer from the passages.") + text.Tokens("What is the capital of France?"),
				CompletionTokens: text.Tokens(reply),
				TotalTokens:      text.Tokens("You answer from the passages.") + text.Tokens("What is the capital of France?") + text.Tokens(reply),
				Counted:          true,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(tt.behavior)
			var deltas []string
			got, err := newModel(fake, nil).Stream(t.Context(), request(), collect(&deltas))
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if len(deltas) != tt.wantDeltas || strings.Join(deltas, "") != reply {
				t.Errorf("deltas = %q, want %d pieces of %q", deltas, tt.wantDeltas, reply)
			}
			want := llm.Reply{Content: reply, Model: "gpt-test", Usage: tt.wantUsage, FinishReason: "stop"}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reply = %+v, want %+v", got, want)
			}
			reqs := fake.Requests()
			if len(reqs) != 1 || !reqs[0].Stream {
				t.Fatalf("server received %+v, want one streamed request", reqs)
			}
			opts, _ := reqs[0].Body["stream_options"].(map[string]any)
			if opts["include_usage"] != true {
				t.Errorf("stream_options = %v, want include_usage", reqs[0].Body["stream_options"])
			}
		})
	}
}

func TestStreamInterrupted(t *testing.T) {
	const reply = "one two three four five six seven eight nine ten eleven twelve"
	errStop := errors.New("client went away")
	tests := []struct {
		name string
		// onDelta is called with the number of the delta and a cancel of the call's context.
		onDelta     func(n int, cancel context.CancelFunc) error
		wantErr     error
		wantContent string
	}{
		{
			name: "onDelta error cancels the call",
			onDelta: func(n int, _ context.CancelFunc) error {
				if n == 2 {
					return errStop
				}
				return nil
			},
			wantErr:     errStop,
			wantContent: "one two ",
		},
		{
			name: "context cancelled mid-stream returns the partial reply",
			onDelta: func(n int, cancel context.CancelFunc) error {
				if n == 3 {
					cancel()
				}
				return nil
			},
			wantErr:     context.Canceled,
			wantContent: "one two three ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(providertest.Behavior{Reply: reply, ChunkDelay: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			n := 0
			got, err := newModel(fake, nil).Stream(ctx, request(), func(string) error {
				n++
				return tt.onDelta(n, cancel)
			})
			if err != tt.wantErr {
				t.Fatalf("error = %v, want exactly %v", err, tt.wantErr)
			}
			if got.Content != tt.wantContent || got.Model != "gpt-test" || !got.Usage.Counted {
				t.Errorf("partial reply = %+v, want content %q", got, tt.wantContent)
			}
			fake.WaitCancelled(t, 1, time.Second)
		})
	}
}

func TestCompleteCancelled(t *testing.T) {
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Hang: true})
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err := newModel(fake, nil).Complete(ctx, request())
	if err != context.Canceled {
		t.Fatalf("error = %v, want exactly context.Canceled", err)
	}
	fake.WaitCancelled(t, 1, time.Second)
}

func TestStreamBrokenMidStream(t *testing.T) {
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Reply: "one two three four five", BreakAfter: 2})
	var deltas []string
	got, err := newModel(fake, nil).Stream(t.Context(), request(), collect(&deltas))
	wantError(t, err, apperr.BadGateway, "provider_stream_error")
	if got.Content != "one two " || strings.Join(deltas, "") != got.Content {
		t.Errorf("partial reply %q, deltas %q, want %q", got.Content, deltas, "one two ")
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("server received %d requests, want 1: no retry after the first byte", n)
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		behavior   providertest.Behavior
		maxRetries int
		stream     bool
		wantCode   string // "" for success
		wantMsg    string
		wantReqs   int
		// minGap is the least time the server saw between the first request and the last: the
		// backoff, or the Retry-After asked, waited before the retries.
		minGap time.Duration
	}{
		{
			name:     "429 twice then success",
			behavior: providertest.Behavior{Status: http.StatusTooManyRequests, FailTimes: 2},
			wantReqs: 3,
			minGap:   300 * time.Millisecond, // about 200ms then 400ms, ±25%
		},
		{
			name:     "503 once then a stream",
			behavior: providertest.Behavior{Status: http.StatusServiceUnavailable, FailTimes: 1},
			stream:   true,
			wantReqs: 2,
		},
		{
			name:     "503 forever",
			behavior: providertest.Behavior{Status: http.StatusServiceUnavailable, ErrorMessage: "The engine is currently overloaded"},
			wantCode: "provider_error",
			wantMsg:  "503 Service Unavailable: The engine is currently overloaded",
			wantReqs: 3,
		},
		{
			name:       "503 forever, streamed, one retry",
			behavior:   providertest.Behavior{Status: http.StatusServiceUnavailable, ErrorMessage: "overloaded"},
			maxRetries: 1,
			stream:     true,
			wantCode:   "provider_error",
			wantMsg:    "overloaded",
			wantReqs:   2,
		},
		{
			name:       "no retries",
			behavior:   providertest.Behavior{Status: http.StatusBadGateway},
			maxRetries: -1,
			wantCode:   "provider_error",
			wantMsg:    "502 Bad Gateway",
			wantReqs:   1,
		},
		{
			name:     "400 is not retried",
			behavior: providertest.Behavior{Status: http.StatusBadRequest, ErrorMessage: "unknown model"},
			wantCode: "provider_error",
			wantMsg:  "unknown model",
			wantReqs: 1,
		},
		{
			name:     "Retry-After honoured",
			behavior: providertest.Behavior{Status: http.StatusTooManyRequests, FailTimes: 1, RetryAfter: "1"},
			wantReqs: 2,
			minGap:   time.Second,
		},
		{
			name:     "Retry-After beyond 5s ends the retries",
			behavior: providertest.Behavior{Status: http.StatusTooManyRequests, RetryAfter: "30", ErrorMessage: "slow down"},
			wantCode: "provider_error",
			wantMsg:  "429 Too Many Requests: slow down",
			wantReqs: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(tt.behavior)
			m := newModel(fake, func(c *provider.Config) { c.MaxRetries = tt.maxRetries; c.Timeout = 5 * time.Second })
			start := time.Now()
			var (
				got llm.Reply
				err error
			)
			if tt.stream {
				var deltas []string
				got, err = m.Stream(t.Context(), request(), collect(&deltas))
			} else {
				got, err = m.Complete(t.Context(), request())
			}
			elapsed := time.Since(start)
			if tt.wantCode == "" {
				if err != nil || got.Content != providertest.DefaultReply {
					t.Fatalf("reply %q, error %v; want success", got.Content, err)
				}
			} else {
				e := wantError(t, err, apperr.BadGateway, tt.wantCode)
				if !strings.Contains(e.Message, tt.wantMsg) {
					t.Errorf("message %q does not contain %q", e.Message, tt.wantMsg)
				}
			}
			if n := len(fake.Requests()); n != tt.wantReqs {
				t.Errorf("server received %d requests, want %d", n, tt.wantReqs)
			}
			if reqs := fake.Requests(); len(reqs) > 1 && reqs[len(reqs)-1].At.Sub(reqs[0].At) < tt.minGap {
				t.Errorf("the retries came %s after the first request, want at least %s", reqs[len(reqs)-1].At.Sub(reqs[0].At), tt.minGap)
			}
			// A hang guard, not a measure: no case waits anything like it (Retry-After: 30 must
			// end the retries at once).
			if elapsed > 10*time.Second {
				t.Errorf("took %s", elapsed)
			}
		})
	}
}

func TestTimeouts(t *testing.T) {
	const timeout = 150 * time.Millisecond
	tests := []struct {
		name     string
		behavior providertest.Behavior
		stream   bool
	}{
		{name: "first byte too late", behavior: providertest.Behavior{FirstByteDelay: time.Second}},
		{name: "first byte too late, streamed", behavior: providertest.Behavior{FirstByteDelay: time.Second}, stream: true},
		{name: "hang", behavior: providertest.Behavior{Hang: true}},
		{name: "hang, streamed", behavior: providertest.Behavior{Hang: true}, stream: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(tt.behavior)
			m := newModel(fake, func(c *provider.Config) { c.Timeout = timeout })
			start := time.Now()
			var err error
			if tt.stream {
				var deltas []string
				_, err = m.Stream(t.Context(), request(), collect(&deltas))
			} else {
				_, err = m.Complete(t.Context(), request())
			}
			// The error, not the time taken, shows the timeout applied: a call that waited for the
			// late first byte would have succeeded, one that ignored it would still hang (the
			// bound is only a guard against that).
			wantError(t, err, apperr.GatewayTimeout, "provider_timeout")
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("took %s with a timeout of %s", elapsed, timeout)
			}
			if n := len(fake.Requests()); n != 1 {
				t.Errorf("server received %d requests, want 1: timeouts are not retried", n)
			}
			fake.WaitCancelled(t, 1, time.Second)
		})
	}
}

func TestTimeoutIsToTheFirstByteOfAStream(t *testing.T) {
	fake := providertest.New(t)
	const reply = "a slow but steady answer"
	fake.Set(providertest.Behavior{Reply: reply, ChunkDelay: 60 * time.Millisecond})
	m := newModel(fake, func(c *provider.Config) { c.Timeout = 100 * time.Millisecond })
	var deltas []string
	got, err := m.Stream(t.Context(), request(), collect(&deltas))
	if err != nil || got.Content != reply {
		t.Fatalf("reply %q, error %v; want %q: the timeout ends at the first byte", got.Content, err, reply)
	}
}

func TestUnreachable(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/v1"
	closed.Close()
	fake := providertest.New(t)

	tests := []struct {
		name    string
		config  provider.Config
		wantMsg string
	}{
		{
			name:    "connection refused",
			config:  provider.Config{BaseURL: closedURL, APIKey: testKey, MaxRetries: 1},
			wantMsg: "connection refused",
		},
		{
			name: "blocked by the SSRF guard",
			config: provider.Config{BaseURL: fake.URL, APIKey: testKey,
				HTTPClient: safehttp.New(safehttp.Options{}).HTTPClient()},
			wantMsg: "blocked by the outbound request policy",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := provider.NewOpenAI(tt.config)
			_, err := m.Complete(t.Context(), request())
			e := wantError(t, err, apperr.BadGateway, "provider_unreachable")
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.wantMsg)
			}
			var deltas []string
			_, err = m.Stream(t.Context(), request(), collect(&deltas))
			wantError(t, err, apperr.BadGateway, "provider_unreachable")
		})
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("the guarded client reached the server %d times", n)
	}
}

func TestErrorBody(t *testing.T) {
	tests := []struct {
		name     string
		message  string
		wantMsg  string
		maxChars int
	}{
		{name: "provider message", message: "Incorrect API key provided", wantMsg: "401 Unauthorized: Incorrect API key provided"},
		{name: "key echoed by the provider is redacted", message: "Incorrect API key provided: " + testKey, wantMsg: "Incorrect API key provided: [redacted]"},
		{name: "long message truncated", message: strings.Repeat("x", 2000), wantMsg: strings.Repeat("x", 500) + "…", maxChars: 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(providertest.Behavior{Status: http.StatusUnauthorized, ErrorMessage: tt.message})
			_, err := newModel(fake, nil).Complete(t.Context(), request())
			e := wantError(t, err, apperr.BadGateway, "provider_error")
			if !strings.Contains(e.Message, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.wantMsg)
			}
			if tt.maxChars > 0 && len([]rune(e.Message)) > tt.maxChars {
				t.Errorf("message has %d characters, want at most %d", len([]rune(e.Message)), tt.maxChars)
			}
		})
	}
}

// TestMaxTokensField checks that OpenAI gets max_completion_tokens and other hosts max_tokens.
func TestMaxTokensField(t *testing.T) {
	fake := providertest.New(t)
	addr := strings.TrimPrefix(fake.URL, "http://")
	// A client that reaches the fake server whatever the host name (no DNS, no network).
	transport := &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport}

	tests := []struct {
		baseURL string
		want    string
	}{
		{baseURL: "http://api.openai.com/v1", want: "max_completion_tokens"},
		{baseURL: "http://my-resource.openai.azure.com/openai/v1", want: "max_completion_tokens"},
		{baseURL: "http://localhost:11434/v1", want: "max_tokens"},
	}
	for i, tt := range tests {
		host := must(url.Parse(tt.baseURL)).Hostname()
		t.Run(host, func(t *testing.T) {
			m := provider.NewOpenAI(provider.Config{BaseURL: tt.baseURL, HTTPClient: client})
			r := request()
			r.MaxTokens = 100
			if _, err := m.Complete(t.Context(), r); err != nil {
				t.Fatalf("Complete: %v", err)
			}
			rec := fake.Requests()[i]
			if rec.MaxTokens != 100 || len(rec.Body) == 0 || rec.Body[tt.want] == nil {
				t.Errorf("body %v, want %s: 100", rec.Body, tt.want)
			}
			if got := rec.Header.Get("Authorization"); got != "" {
				t.Errorf("Authorization %q sent without a key", got)
			}
		})
	}
}

func TestInvalidRole(t *testing.T) {
	fake := providertest.New(t)
	r := request()
	r.Messages = append(r.Messages, llm.Message{Role: "function", Content: "x"})
	_, err := newModel(fake, nil).Complete(t.Context(), r)
	wantError(t, err, apperr.Invalid, "invalid_field")
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("server received %d requests", n)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestToolCalls holds the tool-calling round trip: the tools offered, the model's call (whole
// or streamed in pieces), and the call and its result sent back on the next request.
func TestToolCalls(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			fake := providertest.New(t)
			fake.Set(providertest.Behavior{Script: []providertest.Turn{
				{Call: &providertest.Call{Name: "get_deal", Arguments: `{"deal_id":"d-1"}`}},
				{Reply: "The deal is won."},
			}})
			m := newModel(fake, nil)
			tools := []llm.Tool{{Name: "get_deal", Description: "Reads a deal.", Parameters: map[string]any{
				"type": "object", "properties": map[string]any{"deal_id": map[string]any{"type": "string"}}}}}
			r := request()
			r.Tools = tools
			call := func(r llm.Request) llm.Reply {
				t.Helper()
				var got llm.Reply
				var err error
				if stream {
					got, err = m.Stream(t.Context(), r, nil)
				} else {
					got, err = m.Complete(t.Context(), r)
				}
				if err != nil {
					t.Fatalf("call: %v", err)
				}
				return got
			}
			first := call(r)
			want := []llm.ToolCall{{ID: "call_1", Name: "get_deal", Arguments: `{"deal_id":"d-1"}`}}
			if !reflect.DeepEqual(first.ToolCalls, want) || first.Content != "" || first.FinishReason != "tool_calls" {
				t.Fatalf("first reply %+v, want the call %+v", first, want)
			}
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, ToolCalls: first.ToolCalls},
				llm.Message{Role: llm.RoleTool, ToolCallID: "call_1", Content: `{"status":"won"}`})
			second := call(r)
			if second.Content != "The deal is won." || len(second.ToolCalls) != 0 {
				t.Fatalf("second reply %+v", second)
			}
			reqs := fake.Requests()
			if !slices.Equal(reqs[0].Tools, []string{"get_deal"}) {
				t.Errorf("tools offered %v", reqs[0].Tools)
			}
			if got := reqs[1].Messages[len(reqs[1].Messages)-2:]; !reflect.DeepEqual(got, r.Messages[len(r.Messages)-2:]) {
				t.Errorf("call and result sent back as %+v", got)
			}
		})
	}
}

// TestConcurrentCallsReuseTheirConnections makes 16 calls at once to a provider, twice, through
// the default client (the configured provider's): the second round reuses the first round's
// connections, where net/http's default transport kept two and dialed the others again.
func TestConcurrentCallsReuseTheirConnections(t *testing.T) {
	const calls = 16
	var inFlight sync.WaitGroup
	var dialed atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		inFlight.Done()
		inFlight.Wait() // every call of the round holds its connection until all have one
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dialed.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	m := provider.NewOpenAI(provider.Config{BaseURL: srv.URL, APIKey: "sk-test"})
	for round := 1; round <= 2; round++ {
		inFlight.Add(calls)
		var done sync.WaitGroup
		for range calls {
			done.Go(func() {
				if _, err := m.Complete(t.Context(), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
					t.Error(err)
				}
			})
		}
		done.Wait()
		if n := dialed.Load(); n != calls {
			t.Fatalf("after round %d the provider saw %d connections, want %d (one a call, reused in the second round)", round, n, calls)
		}
	}
}
