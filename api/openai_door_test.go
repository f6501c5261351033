package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// The promises of docs/openai.md ("Using OpenAI's clients"), over plain HTTP: every answer here
// goes through apitest, which holds it (streams event by event) to the OpenAPI document.

// door sends body to an OpenAI door's path (/v1/chat/completions, /v1/responses) as the test's
// key.
func door(t *testing.T, b *bundle, path string, body map[string]any) *apitest.Response {
	t.Helper()
	return b.client.Do(apitest.Request{Method: http.MethodPost, Path: path, Key: b.key, Body: body})
}

// userSays is a Chat Completions request of the agent's model asking message.
func userSays(a chatAPI, message string) map[string]any {
	return map[string]any{"model": "agent:" + a.botID, "messages": []any{map[string]any{"role": "user", "content": message}}}
}

// with is body with more fields.
func with(body map[string]any, more ...any) map[string]any {
	for i := 0; i+1 < len(more); i += 2 {
		body[more[i].(string)] = more[i+1]
	}
	return body
}

// executionOf is the agentplane.execution_id of a completion or response: the agent run that
// answered it, "" for a standard reply.
func executionOf(t *testing.T, res *apitest.Response) string {
	t.Helper()
	expect(t, res, http.StatusOK, "")
	ext, ok := res.JSON(t)["agentplane"].(map[string]any)
	if !ok {
		t.Fatalf("no agentplane field: %s", res.Body)
	}
	id, _ := ext["execution_id"].(string)
	return id
}

// A streamed completion ends with data: [DONE], once, after the chunk that ends the choice:
// a standard reply's stream, and an agent run's that waits for approval; a stream the
// provider cut ends with the error, then [DONE].
func TestOpenAIStreamEndsWithDone(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	for _, tt := range []struct {
		name, effort, reason string
		behavior             providertest.Behavior
	}{
		{"Standard", "none", "stop", providertest.Behavior{Reply: "We open at nine."}},
		{"PausedRun", "high", "tool_calls", providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added."}}}},
		{"CutByTheProvider", "none", "", providertest.Behavior{Reply: "We open at nine, Monday to Saturday.", BreakAfter: 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake.Set(tt.behavior)
			res := door(t, b, "/v1/chat/completions", with(userSays(a, "Add a deal for Acme"), "stream", true, "reasoning_effort", tt.effort,
				"stream_options", map[string]any{"include_usage": true}))
			expect(t, res, http.StatusOK, "")
			events := apitest.Events(res.Body)
			if len(events) < 3 || events[len(events)-1].Data != "[DONE]" {
				t.Fatalf("the stream does not end with [DONE]: %s", res.Body)
			}
			if n := strings.Count(string(res.Body), "data: [DONE]"); n != 1 {
				t.Fatalf("[DONE] %d times: %s", n, res.Body)
			}
			if tt.reason == "" {
				var failed struct {
					Error struct{ Code string } `json:"error"`
				}
				if err := json.Unmarshal([]byte(events[len(events)-2].Data), &failed); err != nil || failed.Error.Code == "" {
					t.Fatalf("the event before [DONE] is %s, not the error (%v)", events[len(events)-2].Data, err)
				}
				return
			}
			var ending struct {
				Choices []struct {
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(events[len(events)-3].Data), &ending); err != nil || len(ending.Choices) != 1 ||
				ending.Choices[0].FinishReason == nil || *ending.Choices[0].FinishReason != tt.reason {
				t.Fatalf("the chunk before usage and [DONE] is %s (%v)", events[len(events)-3].Data, err)
			}
		})
	}
}

// reasoning_effort none, minimal and low answer in the standard mode (one model call), medium
// and high with an agent run, in both doors; metadata.reasoning_mode wins over it. The message
// is one the auto mode would answer with a run, so a standard reply comes of the effort only.
func TestOpenAIReasoningEffort(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Done."})
	const ask = "Please create a deal for Acme and book a meeting with them tomorrow."
	for _, tt := range []struct {
		name, effort, mode string
		run                bool
	}{
		{"None", "none", "", false},
		{"Minimal", "minimal", "", false},
		{"Low", "low", "", false},
		{"Medium", "medium", "", true},
		{"High", "high", "", true},
		{"ModeStandardOverHigh", "high", "standard", false},
		{"ModeAgentOverNone", "none", "agent", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			completion := with(userSays(a, ask), "reasoning_effort", tt.effort)
			response := map[string]any{"model": "agent:" + a.botID, "input": ask, "reasoning": map[string]any{"effort": tt.effort}}
			if tt.mode != "" {
				completion["metadata"] = map[string]any{"reasoning_mode": tt.mode}
				response["metadata"] = map[string]any{"reasoning_mode": tt.mode}
			}
			for path, body := range map[string]map[string]any{"/v1/chat/completions": completion, "/v1/responses": response} {
				if run := executionOf(t, door(t, b, path, body)) != ""; run != tt.run {
					t.Errorf("%s: answered by an agent run: %v, want %v", path, run, tt.run)
				}
			}
		})
	}
	res := door(t, b, "/v1/chat/completions", with(userSays(a, ask), "reasoning_effort", "extreme"))
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	if !strings.Contains(string(res.Body), `"param":"reasoning_effort"`) {
		t.Fatalf("an unknown effort: %s", res.Body)
	}
}

// Not streamed, a run longer than AGENTPLANE_RUN_WAIT is 504 run_in_progress in OpenAI's
// shape; it goes on, and its reply lands in the chat.
func TestOpenAIRunInProgress(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil, withRunWait(300*time.Millisecond))
	fake.Set(providertest.Behavior{FirstByteDelay: 700 * time.Millisecond, Script: []providertest.Turn{call("list_deals", `{}`), {Reply: "No deals yet."}}})
	for _, path := range []string{"/v1/chat/completions", "/v1/responses"} {
		t.Run(strings.TrimPrefix(path, "/v1/"), func(t *testing.T) {
			body := with(userSays(a, "Which deals are open?"), "reasoning_effort", "high")
			if path == "/v1/responses" {
				body = map[string]any{"model": "agent:" + a.botID, "input": "Which deals are open?", "reasoning": map[string]any{"effort": "high"}}
			}
			res := door(t, b, path, body)
			expect(t, res, http.StatusGatewayTimeout, "run_in_progress")
			var e struct {
				Error struct{ Message, Type string } `json:"error"`
			}
			res.Decode(t, &e)
			_, chatID, ok := strings.Cut(e.Error.Message, "read the chat ")
			chatID = strings.TrimSuffix(chatID, " later.")
			if !ok || chatID == "" || e.Error.Type != "api_error" {
				t.Fatalf("504 %s", res.Body)
			}
			for deadline := time.Now().Add(30 * time.Second); ; waitABit() {
				got := conversation(t, a, chatID)
				if len(got) == 2 && got[1] == "agent: No deals yet." {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the run's reply did not land in the chat: %q", got)
				}
			}
		})
	}
}

// A tool message decides on the call a run waits for: approve, yes, ok, true and
// {"approve": true} run the tool; anything else rejects it.
func TestOpenAIApprovalWords(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	for _, tt := range []struct {
		content string
		runs    bool
	}{
		{"approve", true}, {"yes", true}, {"ok", true}, {"true", true}, {`{"approve": true}`, true}, {" Yes! ", true},
		{"no", false}, {"nope", false}, {`{"approve": false}`, false}, {"approve it later", false}, {"", false},
	} {
		t.Run(fmt.Sprintf("%q", tt.content), func(t *testing.T) {
			fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Over."}}})
			ask := userSays(a, "Add a deal for Acme to the CRM")
			paused := door(t, b, "/v1/chat/completions", with(ask, "reasoning_effort", "high"))
			expect(t, paused, http.StatusOK, "")
			var p struct {
				Choices []struct {
					Message struct {
						ToolCalls []struct{ ID string } `json:"tool_calls"`
					} `json:"message"`
				} `json:"choices"`
			}
			paused.Decode(t, &p)
			if len(p.Choices) != 1 || len(p.Choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("no tool call: %s", paused.Body)
			}
			decision := map[string]any{"model": "agent:" + a.botID, "messages": []any{
				map[string]any{"role": "tool", "tool_call_id": p.Choices[0].Message.ToolCalls[0].ID, "content": tt.content}}}
			expect(t, door(t, b, "/v1/chat/completions", decision), http.StatusOK, "")
			last := fake.Requests()[len(fake.Requests())-1].Messages
			observation := last[len(last)-1].Content
			if rejected := strings.Contains(observation, "reject"); rejected == tt.runs {
				t.Fatalf("after %q the model read %q", tt.content, observation)
			}
		})
	}
}

// A request that starts a chat brings at most 200 earlier messages: 200 are the chat's start,
// 201 are 422 naming messages.
func TestOpenAIEarlierMessagesCap(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Hello."})
	conversationOf := func(earlier int) map[string]any {
		var messages []any
		for i := range earlier {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			messages = append(messages, map[string]any{"role": role, "content": fmt.Sprintf("message %d", i)})
		}
		messages = append(messages, map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "And now?"})
		return map[string]any{"model": "agent:" + a.botID, "messages": messages}
	}
	res := door(t, b, "/v1/chat/completions", conversationOf(201))
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	if !strings.Contains(string(res.Body), `"param":"messages"`) || !strings.Contains(string(res.Body), "200") {
		t.Fatalf("201 earlier messages: %s", res.Body)
	}
	expect(t, door(t, b, "/v1/chat/completions", conversationOf(1)), http.StatusOK, "") // the caches warm
	// The earlier messages are stored with the chat: its oldest messages' pages in one insert,
	// the chat with its recent ones in another, then the reply; not a write a message. (A publish
	// that times out on a loaded machine marks its event for the relay: a command more.)
	commands := b.commandsOf(t, http.MethodPost, "/v1/chat/completions", func() {
		res = door(t, b, "/v1/chat/completions", conversationOf(200))
	})
	expect(t, res, http.StatusOK, "")
	if commands < 3 || commands > 6 {
		t.Errorf("a chat completion with 200 earlier messages made %d store commands, want 3 (and at most 3 more marks)", commands)
	}
	chatID := res.JSON(t)["agentplane"].(map[string]any)["chat_id"].(string)
	var conversation []any
	for page := 1; page <= 3; page++ {
		h := a.history(t, chatID, fmt.Sprintf("&per_page=100&page=%d", page))
		if h["total"] != float64(202) {
			t.Fatalf("the chat holds %v messages, want 200 earlier, the question and the reply", h["total"])
		}
		conversation = append(conversation, h["conversation"].([]any)...)
	}
	if len(conversation) != 202 {
		t.Fatalf("the history lists %d messages, want 202", len(conversation))
	}
	for i, m := range conversation {
		m := m.(map[string]any)
		content, role := fmt.Sprintf("message %d", i), []string{"user", "agent"}[i%2]
		switch i {
		case 200:
			content = "And now?"
		case 201:
			content = "Hello."
		}
		if m["content"] != content || m["role"] != role {
			t.Fatalf("message %d of the history is %v %q, want %s %q", i+1, m["role"], m["content"], role, content)
		}
	}
}

// The model names the agent as agent:<id>, or by its bare id or uuid (with or without the
// prefix); GET /v1/models/{model} reads it by any of them, and the OpenAI-Project header must
// then name its project.
func TestOpenAIModelNames(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Hello."})
	bot := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)
	id, uuid := bot["id"].(string), bot["uuid"].(string)
	if id == uuid {
		t.Fatalf("the agent's id and uuid are one: %v", bot)
	}
	for _, model := range []string{"agent:" + id, id, uuid, "agent:" + uuid} {
		t.Run(model, func(t *testing.T) {
			res := door(t, b, "/v1/chat/completions", map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}})
			expect(t, res, http.StatusOK, "")
			if got := res.JSON(t)["model"]; got != model {
				t.Fatalf("answered as model %v", got)
			}
			read := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/models/" + model, Key: b.key})
			expect(t, read, http.StatusOK, "")
			if got := read.JSON(t)["id"]; got != "agent:"+id {
				t.Fatalf("read as %v", got)
			}
		})
	}
	other, err := b.tenancy.CreateProject(t.Context(), b.project.AccountID, "another project")
	if err != nil {
		t.Fatal(err)
	}
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Key: b.key, Header: map[string]string{"OpenAI-Project": other.ID},
		Body: map[string]any{"model": id, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}})
	expect(t, res, http.StatusNotFound, "model_not_found")
	expect(t, b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Key: b.key, Header: map[string]string{"OpenAI-Project": b.project.ID},
		Body: map[string]any{"model": id, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}}), http.StatusOK, "")
}
