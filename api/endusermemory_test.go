package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/hibiken/asynq"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/tasks"
)

// asEndUser sends message to the agent through a door on behalf of the end user the request
// names ("" names none) and waits for the answer.
type asEndUser func(t *testing.T, b *bundle, a chatAPI, user, message string)

// pendingExtractions are the users of the memory:extract tasks waiting on the test's queue.
func pendingExtractions(t *testing.T, b *bundle) []string {
	t.Helper()
	list, err := asynqInspector(t).ListPendingTasks(b.queue)
	if err != nil && !errors.Is(err, asynq.ErrQueueNotFound) {
		t.Fatal(err)
	}
	var users []string
	for _, task := range list {
		if task.Type != tasks.TypeMemoryExtract {
			continue
		}
		var p tasks.MemoryExtractPayload
		if err := json.Unmarshal(task.Payload, &p); err != nil {
			t.Fatal(err)
		}
		users = append(users, p.UserUUID)
	}
	return users
}

// endUserMemoryIsolation holds a door that serves many people through one key to end-user
// memory per named user: what Ana states reaches Ana's prompts and never Bo's, and a request
// naming no one remembers nothing and recalls nothing (not even what the account itself
// stated through /v1/bot/chat). Extractions are queued while the turn is answered: before
// the worker starts, the queue shows whose each is.
func endUserMemoryIsolation(t *testing.T, say asEndUser) {
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	a := b.chatBot(t, map[string]any{"provider_key": "sk-run-key"})
	const ssn = "078-05-1120"
	fake.Set(providertest.Behavior{Reply: "Noted.", Structured: `{"memories":[{"type":"semantic","subject":"ssn","content":"The user's SSN is ` + ssn + `."}]}`})

	say(t, b, a, "", "My SSN is "+ssn+".")
	if got := pendingExtractions(t, b); len(got) != 0 {
		t.Fatalf("a turn naming no end user queued extractions for %q", got)
	}
	say(t, b, a, "ana", "My SSN is "+ssn+".")
	if got := pendingExtractions(t, b); len(got) != 1 || got[0] != "ana" {
		t.Fatalf("Ana's turn queued extractions for %q, want [ana]", got)
	}
	res, chat := a.chat(t, map[string]any{"message": "My SSN is " + ssn + "."})
	if chat == nil {
		t.Fatalf("chat: %d %s", res.Status, res.Body)
	}
	account := chat["user"].(map[string]any)["user"].(map[string]any)["uuid"].(string)

	b.startWorker(t, workerOptions{})
	a.waitMemory(t, "ana", ssn)
	a.waitMemory(t, account, ssn)
	if all := a.userMemories(t, "", ""); len(all) != 2 {
		t.Fatalf("the agent remembers %v, want Ana's and the account's", all)
	}

	fake.Set(providertest.Behavior{Reply: "I cannot say."})
	say(t, b, a, "bo", "What is my SSN?")
	if prompt := lastPrompt(t, fake); strings.Contains(prompt, ssn) || strings.Contains(prompt, "user_memories") {
		t.Errorf("Bo's prompt has another's memories: %q", prompt)
	}
	say(t, b, a, "", "What is my SSN?")
	if prompt := lastPrompt(t, fake); strings.Contains(prompt, ssn) || strings.Contains(prompt, "user_memories") {
		t.Errorf("the prompt of a turn naming no one has memories: %q", prompt)
	}
	say(t, b, a, "ana", "What is my SSN?")
	if prompt := lastPrompt(t, fake); !strings.Contains(prompt, "<user_memories>\n- The user's SSN is "+ssn+".\n</user_memories>") {
		t.Errorf("Ana's prompt does not have her memory: %q", prompt)
	}
}

// Chat Completions: the request's user names the end user.
func TestOpenAIEndUserMemory(t *testing.T) {
	t.Parallel()
	endUserMemoryIsolation(t, func(t *testing.T, b *bundle, a chatAPI, user, message string) {
		t.Helper()
		body := with(userSays(a, message), "reasoning_effort", "none")
		if user != "" {
			body["user"] = user
		}
		expect(t, door(t, b, "/v1/chat/completions", body), http.StatusOK, "")
	})
}

// An end user's name is at most 256 characters.
func TestOpenAIEndUserBound(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Hello."})
	expect(t, door(t, b, "/v1/chat/completions", with(userSays(a, "Hi"), "user", strings.Repeat("é", 256))), http.StatusOK, "")
	res := door(t, b, "/v1/chat/completions", with(userSays(a, "Hi"), "user", strings.Repeat("é", 257)))
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	if !strings.Contains(string(res.Body), `"param":"user"`) {
		t.Fatalf("a name too long: %s", res.Body)
	}
}

// Responses: safety_identifier names the end user (user too, as in Chat Completions).
func TestOpenAIResponsesEndUserMemory(t *testing.T) {
	t.Parallel()
	endUserMemoryIsolation(t, func(t *testing.T, b *bundle, a chatAPI, user, message string) {
		t.Helper()
		body := map[string]any{"model": "agent:" + a.botID, "input": message, "reasoning": map[string]any{"effort": "none"}}
		if user != "" {
			body["safety_identifier"] = user
		}
		expect(t, door(t, b, "/v1/responses", body), http.StatusOK, "")
	})
}

// The agent's MCP chat tool: its user argument names the end user.
func TestAgentMCPEndUserMemory(t *testing.T) {
	t.Parallel()
	endUserMemoryIsolation(t, func(t *testing.T, b *bundle, a chatAPI, user, message string) {
		t.Helper()
		cs, err := connectMCP(t, b, "/mcp/agents/"+a.botID, b.key)
		if err != nil {
			t.Fatal(err)
		}
		args := map[string]any{"message": message}
		if user != "" {
			args["user"] = user
		}
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "chat", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("chat: %+v, %v", res, err)
		}
	})
}
