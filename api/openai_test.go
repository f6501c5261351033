package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// openAIClient is OpenAI's official Go client, unchanged, pointed at the API with key; every
// answer it gets is held to the OpenAPI document.
func openAIClient(b *bundle, key string, opts ...oaoption.RequestOption) openai.Client {
	return openai.NewClient(append([]oaoption.RequestOption{oaoption.WithBaseURL(b.client.URL + "/v1/"), oaoption.WithAPIKey(key),
		oaoption.WithMaxRetries(0), oaoption.WithHTTPClient(b.client.HTTP(nil))}, opts...)...)
}

// agentplaneOf is what only agentplane answers with a completion.
type agentplaneExt struct {
	ChatID      string `json:"chat_id"`
	ExecutionID string `json:"execution_id"`
	Sources     []struct {
		Title string `json:"title"`
	} `json:"sources"`
}

func agentplaneOf(t *testing.T, extra map[string]respjson.Field) agentplaneExt {
	t.Helper()
	var ext agentplaneExt
	f, ok := extra["agentplane"]
	if !ok {
		t.Fatal("no agentplane field in the answer")
	}
	if err := json.Unmarshal([]byte(f.Raw()), &ext); err != nil || ext.ChatID == "" {
		t.Fatalf("agentplane field %s (%v)", f.Raw(), err)
	}
	return ext
}

// conversation is a chat's messages, oldest first, as role: content.
func conversation(t *testing.T, a chatAPI, chatID string) []string {
	t.Helper()
	var out []string
	for _, m := range a.history(t, chatID, "&per_page=100")["conversation"].([]any) {
		msg := m.(map[string]any)
		out = append(out, msg["role"].(string)+": "+msg["content"].(string))
	}
	return out
}

// OpenAI's official Go client talks to an agent as to a model: the agents are the key's
// models; a completion is a turn of one of the agent's chats, readable as any other; the
// conversation a client holds is the chat's start, or metadata.chat_id names the chat to go on
// with; a system message is the turn's instruction; streams are OpenAI's chunks, with usage last
// when asked for.
func TestOpenAIChatCompletions(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	a.ingest(t, map[string]any{"type": "text", "title": "Opening hours", "source": "The shop opens at nine and closes at six, Monday to Saturday."})
	client := openAIClient(b, b.key)
	ctx := context.Background()
	model := "agent:" + a.botID

	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(models.Data) != 1 || !strings.HasPrefix(models.Data[0].ID, "agent:") || models.Data[0].OwnedBy != b.project.ID {
		t.Fatalf("models %+v", models.Data)
	}
	model = models.Data[0].ID
	if one, err := client.Models.Get(ctx, model); err != nil || one.ID != model {
		t.Fatalf("model %+v (%v)", one, err)
	}

	fake.Set(providertest.Behavior{Reply: "We open at nine [1]."})
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage("Answer in one sentence."), openai.UserMessage("When do you open?")}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "chat.completion" || len(res.Choices) != 1 || res.Choices[0].Message.Content != "We open at nine [1]." ||
		res.Choices[0].FinishReason != "stop" || res.Model != model || res.Usage.TotalTokens == 0 {
		t.Fatalf("completion %s", res.RawJSON())
	}
	ext := agentplaneOf(t, res.JSON.ExtraFields)
	if len(ext.Sources) != 1 || ext.Sources[0].Title != "Opening hours" {
		t.Fatalf("sources %+v", ext.Sources)
	}
	if got := conversation(t, a, ext.ChatID); !slices.Equal(got, []string{"user: When do you open?", "agent: We open at nine [1]."}) {
		t.Fatalf("the chat holds %q", got)
	}
	sent := fake.Requests()[len(fake.Requests())-1]
	if !strings.Contains(sent.Messages[0].Content, "Answer in one sentence.") {
		t.Fatalf("the system message is not the instruction: %q", sent.Messages[0].Content)
	}

	// The conversation the client holds starts a chat; the model reads it as the history.
	fake.Set(providertest.Behavior{Reply: "Until six."})
	res, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("Hi"), openai.AssistantMessage("Hello! How can I help?"), openai.UserMessage("And until when?")}})
	if err != nil {
		t.Fatal(err)
	}
	held := agentplaneOf(t, res.JSON.ExtraFields)
	if held.ChatID == ext.ChatID {
		t.Fatal("a conversation held by the client went on with another chat")
	}
	if got := conversation(t, a, held.ChatID); !slices.Equal(got, []string{"user: Hi", "agent: Hello! How can I help?", "user: And until when?", "agent: Until six."}) {
		t.Fatalf("the chat of a held conversation holds %q", got)
	}
	var roles []string
	for _, m := range fake.Requests()[len(fake.Requests())-1].Messages {
		roles = append(roles, m.Role+": "+m.Content)
	}
	if !slices.Contains(roles, "user: Hi") || !slices.Contains(roles, "assistant: Hello! How can I help?") {
		t.Fatalf("the model was not given the conversation: %q", roles)
	}

	// metadata.chat_id goes on with a chat; the client's earlier messages are then the chat's own.
	fake.Set(providertest.Behavior{Reply: "Yes, on Saturdays too."})
	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: model,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Ignored, the chat has its own"), openai.UserMessage("Saturdays too?")},
		Metadata:      shared.Metadata{"chat_id": ext.ChatID},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		chunk := stream.Current()
		if chunk.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s", chunk.RawJSON())
		}
		acc.AddChunk(chunk)
		chunks++
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 || acc.Choices[0].Message.Content != "Yes, on Saturdays too." || acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens == 0 {
		t.Fatalf("%d chunks made %+v", chunks, acc.ChatCompletion)
	}
	if got := conversation(t, a, ext.ChatID); len(got) != 4 || got[2] != "user: Saturdays too?" || got[3] != "agent: Yes, on Saturdays too." {
		t.Fatalf("the named chat holds %q", got)
	}
}

// A run that needs approval answers as a model calling a tool (finish_reason tool_calls), and
// the client's tool message decides: "approve" runs it, anything else rejects it; streamed or not.
func TestOpenAIToolApproval(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	client := openAIClient(b, b.key)
	ctx := context.Background()
	model := "agent:" + a.botID
	for _, tt := range []struct {
		name, decision, reply string
		stream                bool
	}{
		{"Approved", "approve", "Added Acme.", false},
		{"Rejected", "no, leave the CRM alone", "Left it.", false},
		{"ApprovedStreamed", "approve", "Added Acme.", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: tt.reply}}})
			ask := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Add a deal for Acme to the CRM")}
			params := openai.ChatCompletionNewParams{Model: model, Messages: ask, ReasoningEffort: shared.ReasoningEffortHigh}
			paused, err := client.Chat.Completions.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			choice := paused.Choices[0]
			if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 || choice.Message.ToolCalls[0].Function.Name != "create_deal" ||
				!strings.Contains(choice.Message.ToolCalls[0].Function.Arguments, "Acme") {
				t.Fatalf("a paused run answered %s", paused.RawJSON())
			}
			params.Messages = append(ask, choice.Message.ToParam(), openai.ToolMessage(tt.decision, choice.Message.ToolCalls[0].ID))
			var content, reason string
			if tt.stream {
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				content, reason = acc.Choices[0].Message.Content, acc.Choices[0].FinishReason
			} else {
				done, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				content, reason = done.Choices[0].Message.Content, done.Choices[0].FinishReason
			}
			if content != tt.reply || reason != "stop" {
				t.Fatalf("after %q: %q (%s)", tt.decision, content, reason)
			}
			last := fake.Requests()[len(fake.Requests())-1].Messages
			observation := last[len(last)-1].Content
			if rejected := strings.Contains(observation, "reject"); rejected != (tt.decision != "approve") {
				t.Fatalf("after %q the model read %q", tt.decision, observation)
			}
		})
	}
}

// Errors come in OpenAI's shape, with the API's statuses: a bad key, an unknown agent, another
// account's agent, a request without a user's message, the agent's rate limit.
func TestOpenAIErrors(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"ratelimit_requests": 1, "ratelimit_seconds": 3600, "ratelimit_message": "One moment, please."})
	fake.Set(providertest.Behavior{Reply: "Hello."})
	otherKey, _ := b.newTenant(t)
	hi := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}
	client := openAIClient(b, b.key)
	if _, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "agent:" + a.botID, Messages: hi}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, key, model string
		messages         []openai.ChatCompletionMessageParamUnion
		status           int
		typ, code, param string
	}{
		{"BadKey", "ap_not-a-key", "agent:" + a.botID, hi, http.StatusUnauthorized, "authentication_error", "invalid_api_key", ""},
		{"UnknownAgent", b.key, "agent:no-such-agent", hi, http.StatusNotFound, "not_found_error", "model_not_found", ""},
		{"AnotherAccountsAgent", otherKey, "agent:" + a.botID, hi, http.StatusNotFound, "not_found_error", "model_not_found", ""},
		{"NoUserMessage", b.key, "agent:" + a.botID, []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief.")},
			http.StatusUnprocessableEntity, "invalid_request_error", "invalid_field", "messages"},
		{"RateLimited", b.key, "agent:" + a.botID, hi, http.StatusTooManyRequests, "rate_limit_error", "bot_rate_limited", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := openAIClient(b, tt.key)
			_, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: tt.model, Messages: tt.messages})
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v", err)
			}
			if apiErr.StatusCode != tt.status || apiErr.Type != tt.typ || apiErr.Code != tt.code || apiErr.Param != tt.param || apiErr.Message == "" {
				t.Fatalf("got %d %s", apiErr.StatusCode, apiErr.RawJSON())
			}
		})
	}
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Key: b.key,
		Body: map[string]any{"model": "agent:" + a.botID, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}})
	if res.Status != http.StatusTooManyRequests || !strings.Contains(string(res.Body), `"message":"One moment, please."`) || res.Header.Get("Retry-After") == "" {
		t.Fatalf("rate limited: %d %s %v", res.Status, res.Body, res.Header)
	}
}

// OpenAI's Responses API, through the official client: a response is a turn of one of the
// agent's chats, previous_response_id goes on with that chat, the stream is the API's typed
// events, and a paused run is a function_call that a function_call_output decides.
func TestOpenAIResponses(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	client := openAIClient(b, b.key)
	ctx := context.Background()
	model := "agent:" + a.botID

	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	first, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: model, Instructions: openai.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("When do you open?")}})
	if err != nil {
		t.Fatal(err)
	}
	if first.OutputText() != "We open at nine." || first.Status != "completed" || !strings.HasPrefix(first.ID, "resp_") || first.Usage.TotalTokens == 0 {
		t.Fatalf("response %s", first.RawJSON())
	}
	chatID := agentplaneOf(t, first.JSON.ExtraFields).ChatID

	fake.Set(providertest.Behavior{Reply: "Until six."})
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: model, PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("And until when?")}})
	var types []string
	var deltas strings.Builder
	var completed responses.Response
	for stream.Next() {
		ev := stream.Current()
		if len(types) == 0 || types[len(types)-1] != ev.Type {
			types = append(types, ev.Type)
		}
		switch ev.Type {
		case "response.output_text.delta":
			deltas.WriteString(ev.Delta)
		case "response.completed":
			completed = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"}
	if !slices.Equal(types, want) || deltas.String() != "Until six." || completed.OutputText() != "Until six." {
		t.Fatalf("events %q, text %q, completed %s", types, deltas.String(), completed.RawJSON())
	}
	if got := conversation(t, a, chatID); len(got) != 4 || got[2] != "user: And until when?" || got[3] != "agent: Until six." {
		t.Fatalf("previous_response_id did not go on with the chat: %q", got)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added Acme."}}})
	paused, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: model, PreviousResponseID: openai.String(first.ID),
		Reasoning: shared.ReasoningParam{Effort: shared.ReasoningEffortHigh},
		Input:     responses.ResponseNewParamsInputUnion{OfString: openai.String("Add a deal for Acme to the CRM")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(paused.Output) != 1 || paused.Output[0].Type != "function_call" || paused.Output[0].Name != "create_deal" ||
		!strings.Contains(paused.Output[0].RawJSON(), "Acme") {
		t.Fatalf("a paused run answered %s", paused.RawJSON())
	}
	decision := responses.ResponseInputItemParamOfFunctionCallOutput("approve")
	decision.OfFunctionCallOutput.CallID = openai.String(paused.Output[0].CallID)
	done, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: model, PreviousResponseID: openai.String(paused.ID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{decision}}})
	if err != nil || done.OutputText() != "Added Acme." {
		t.Fatalf("the decided run: %v %v", done, err)
	}

	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: model, PreviousResponseID: openai.String("resp_no-such-chat_0123456789ab"),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "previous_response_not_found" || apiErr.Param != "previous_response_id" {
		t.Fatalf("an unknown previous response: %v", err)
	}
}
