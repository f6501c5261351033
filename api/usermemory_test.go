package api_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/tasks"
)

// userMemories reads the agent's memories of user (all its users' when ""), with more of the
// query, as "type: content" by id.
func (a chatAPI) userMemories(t *testing.T, user, extra string) map[string]string {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/memory/readall?" + a.query("&user_uuid="+user+extra), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	var list struct {
		Memories []struct{ ID, Type, Content string }
	}
	res.Decode(t, &list)
	out := map[string]string{}
	for _, m := range list.Memories {
		out[m.ID] = m.Type + ": " + m.Content
	}
	return out
}

// waitMemory waits until one of user's memories says what, and returns its id.
func (a chatAPI) waitMemory(t *testing.T, user, what string) string {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; waitABit() {
		for id, m := range a.userMemories(t, user, "") {
			if strings.Contains(m, what) {
				return id
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no memory of %s says %q: %v", user, what, a.userMemories(t, user, ""))
		}
	}
}

// memoryCount is the count endpoint's answer for user.
func (a chatAPI) memoryCount(t *testing.T, user string) float64 {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/memory/count?" + a.query("&user_uuid="+user), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["count"].(float64)
}

// visitor opens a session of a new end user on the agent's page: its token and the
// subscriber's id.
func (a chatAPI) visitor(t *testing.T) (string, string) {
	t.Helper()
	bot := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: a.b.key}).JSON(t)["bot"].(map[string]any)
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/public/v1/session", Body: map[string]any{"subdomain": bot["subdomain"]}})
	expect(t, res, http.StatusOK, "")
	s := res.JSON(t)
	return s["token"].(string), s["subscriber_id"].(string)
}

// say sends message as the end user of the session token, and waits for the answer.
func (a chatAPI) say(t *testing.T, token, message string) {
	t.Helper()
	if status, body := publicChat(t, a.b, token, `{"message":"`+message+`"}`); status != http.StatusOK || !strings.Contains(body, "event: done") {
		t.Fatalf("chat: %d %s", status, body)
	}
}

// lastPrompt is the system prompt of the provider's last request.
func lastPrompt(t *testing.T, fake *providertest.Server) string {
	t.Helper()
	reqs := fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the provider got no request")
	}
	return reqs[len(reqs)-1].Messages[0].Content
}

// With the offline model, explicit statements become memories of the user who made them (here,
// with an API key, the account), stated again they stay one, the next prompts get them, and a
// deleted one leaves the next prompt at once. BoostGPT's client lists, counts and deletes them
// as it calls its other groups.
func TestUserMemoryOffline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Reply: "Noted."})
	a := b.chatBot(t, nil)
	c := &boostClient{t: t, b: b, body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID}}

	said := c.call("POST", "/v1/bot/chat", map[string]any{"message": "Hi! My name is Ana. I prefer email over phone.", "memory": true, "chat_id": nil, "stream": false})
	user := said["chat"].(map[string]any)["user"].(map[string]any)["user"].(map[string]any)["uuid"].(string)
	a.waitMemory(t, user, "The user prefers email over phone.")
	a.waitMemory(t, user, "The user's name is Ana.")
	c.call("POST", "/v1/bot/chat", map[string]any{"message": "i PREFER  email over phone!! And call me Anna."})
	nameID := a.waitMemory(t, user, "The user's name is Anna.")
	if got := a.userMemories(t, user, ""); len(got) != 2 || a.memoryCount(t, user) != 2 {
		t.Fatalf("memories after restating one and renaming: %v", got)
	}
	q := []string{"project_id", b.project.ID, "bot_id", a.botID, "user_uuid", user}
	if n := c.call("GET", "/v1/bot/memory/count", nil, q...)["count"]; n != float64(2) {
		t.Fatalf("count %v", n)
	}
	if list := c.call("GET", "/v1/bot/memory/readall", nil, append(q, "type", "semantic", "page", "1", "per_page", "10")...); list["total"] != float64(2) {
		t.Fatalf("semantic memories %v", list)
	}
	for _, c := range []struct {
		name, query string
		status      int
		code        string
		want        int
	}{
		{"another type", "&type=episodic", http.StatusOK, "", 0},
		{"a type in capitals", "&type=SEMANTIC", http.StatusOK, "", 2},
		{"no type", "&type=", http.StatusOK, "", 2},
		{"an unknown type", "&type=belief", http.StatusUnprocessableEntity, "invalid_field", 0},
		{"another user", "&user_uuid=someone-else", http.StatusOK, "", 0},
		{"a bad page", "&per_page=1000", http.StatusUnprocessableEntity, "invalid_field", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/memory/readall?" + a.query(c.query), Key: b.key})
			expect(t, res, c.status, c.code)
			if c.status == http.StatusOK && res.JSON(t)["total"] != float64(c.want) {
				t.Fatalf("%s", res.Body)
			}
		})
	}

	ask := func(question string) string {
		t.Helper()
		if res, chat := a.chat(t, map[string]any{"message": question, "provider_host": fake.URL, "provider_key": "sk-test"}); chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		return lastPrompt(t, fake)
	}
	if prompt := ask("Can you send me an email?"); !strings.Contains(prompt, "<user_memories>\n- The user prefers email over phone.\n- The user's name is Anna.\n</user_memories>") {
		t.Fatalf("the prompt does not carry the user's memories, most relevant first: %q", prompt)
	}
	c.call("DELETE", "/v1/bot/memory/"+nameID, nil, "project_id", b.project.ID, "bot_id", a.botID)
	if prompt := ask("What is my name?"); strings.Contains(prompt, "Anna") || !strings.Contains(prompt, "email over phone") {
		t.Fatalf("the prompt after the deletion: %q", prompt)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/memory/" + nameID + "?" + a.query(""), Key: b.key}), http.StatusNotFound, "memory_not_found")
	if n := a.memoryCount(t, user); n != 1 {
		t.Fatalf("count after the deletion %v", n)
	}

	// An agent whose memory flag is off, or a request that turns memory off, gets no memories.
	if prompt := func() string {
		if res, chat := a.chat(t, map[string]any{"message": "Hello?", "memory": false, "provider_host": fake.URL}); chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		return lastPrompt(t, fake)
	}(); strings.Contains(prompt, "user_memories") {
		t.Fatalf("memory: false still gets memories: %q", prompt)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"memory": "0"})}), http.StatusOK, "")
	if prompt := ask("Hello again?"); strings.Contains(prompt, "user_memories") {
		t.Fatalf("an agent with memory 0 still gets memories: %q", prompt)
	}
}

// Each end user's memories reach their own prompts only: two visitors of the agent's page and
// the account's key, with memories extracted from the provider's JSON answers.
func TestUserMemoryIsolation(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	visitor := func() (string, string) { return a.visitor(t) }
	say := func(token, message string) { a.say(t, token, message) }
	named := func(name string) providertest.Behavior {
		return providertest.Behavior{Reply: "Hello.", Structured: `{"memories":[{"type":"semantic","subject":"name","content":"The user's name is ` + name + `."},` +
			`{"type":"episodic","subject":"","content":"The user's order of ` + name + ` arrived damaged."}]}`}
	}
	ana, anaID := visitor()
	bo, boID := visitor()
	fake.Set(named("Ana"))
	say(ana, "I'm Ana and my order came broken.")
	a.waitMemory(t, anaID, "The user's name is Ana.")
	fake.Set(named("Bo"))
	say(bo, "I'm Bo; my order came broken too.")
	a.waitMemory(t, boID, "The user's name is Bo.")

	fake.Set(providertest.Behavior{Reply: "Hello."})
	for _, c := range []struct {
		name, token, has, hasNot string
	}{
		{"Ana", ana, "Ana", "Bo"},
		{"Bo", bo, "Bo", "Ana"},
	} {
		say(c.token, "What do you know about me?")
		if prompt := lastPrompt(t, fake); !strings.Contains(prompt, "The user's name is "+c.has) || strings.Contains(prompt, c.hasNot) {
			t.Errorf("%s's prompt: %q", c.name, prompt)
		}
	}
	if _, chat := a.chat(t, map[string]any{"message": "What do you know about me?"}); chat == nil || strings.Contains(lastPrompt(t, fake), "user_memories") {
		t.Errorf("the account's prompt: %q", lastPrompt(t, fake))
	}
	all := a.userMemories(t, "", "")
	if len(all) != 4 || len(a.userMemories(t, anaID, "")) != 2 || len(a.userMemories(t, anaID, "&type=episodic")) != 1 {
		t.Fatalf("the agent's memories: %v", all)
	}
}

// A provider's answer that is not the JSON schema asked for ends its task for good (no retry)
// and stores nothing.
func TestUserMemoryMalformedAnswerIsDropped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Reply: "Hello Zed.", Structured: "Sure! The user's name is Zed."})
	a := b.chatBot(t, nil)
	res, chat := a.chat(t, map[string]any{"message": "My name is Zed.", "provider_host": fake.URL, "provider_key": "sk-test"})
	if chat == nil {
		t.Fatalf("chat: %d %s", res.Status, res.Body)
	}
	user := chat["user"].(map[string]any)
	inspector := asynqInspector(t)
	id := tasks.TypeMemoryExtract + ":" + user["uuid"].(string)
	for deadline := time.Now().Add(20 * time.Second); ; waitABit() {
		info, err := inspector.GetTaskInfo(b.queue, id)
		if errors.Is(err, asynq.ErrTaskNotFound) {
			break // done: a task that failed would wait for its retry, or be archived
		}
		if err != nil {
			t.Fatal(err)
		}
		if info.State == asynq.TaskStateRetry || info.State == asynq.TaskStateArchived || time.Now().After(deadline) {
			t.Fatalf("the task is %v (%s)", info.State, info.LastErr)
		}
	}
	if len(fake.Requests()) != 2 {
		t.Fatalf("the provider got %d requests, want the reply's and one extraction", len(fake.Requests()))
	}
	if got := a.userMemories(t, user["user"].(map[string]any)["uuid"].(string), ""); len(got) != 0 {
		t.Fatalf("a malformed answer was stored: %v", got)
	}
}

// lastRunPrompt is the system prompt of the provider's last request of an agent run (one that
// offers tools: an extraction may come after it).
func lastRunPrompt(t *testing.T, fake *providertest.Server) string {
	t.Helper()
	reqs := fake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Tools) > 0 {
			return reqs[i].Messages[0].Content
		}
	}
	t.Fatalf("the provider got no request of an agent run among %d", len(reqs))
	return ""
}

// Agent runs remember as standard turns do: a run's prompt gets what its user said in a
// standard turn, and what the user states in a run becomes a memory (the offline model's rules).
func TestAgentRunUserMemory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	fake := providertest.New(t)
	fake.Set(providertest.Behavior{Reply: "Noted."})
	a := b.chatBot(t, nil)
	res, chat := a.chat(t, map[string]any{"message": "Hi! My name is Ana.", "reasoning_mode": "standard"})
	if chat == nil {
		t.Fatalf("chat: %d %s", res.Status, res.Body)
	}
	user := chat["user"].(map[string]any)["user"].(map[string]any)["uuid"].(string)
	a.waitMemory(t, user, "The user's name is Ana.")

	res, chat = a.chat(t, map[string]any{"message": "What is my name?", "reasoning_mode": "agent", "provider_host": fake.URL, "provider_key": "sk-test"})
	if chat == nil || chat["isComplete"] != true {
		t.Fatalf("agent run: %d %s", res.Status, res.Body)
	}
	if prompt := lastRunPrompt(t, fake); !strings.Contains(prompt, "<user_memories>\n- The user's name is Ana.\n</user_memories>") {
		t.Fatalf("the run's prompt does not carry the user's memories: %q", prompt)
	}

	res, chat = a.chat(t, map[string]any{"message": "I prefer email over phone.", "reasoning_mode": "agent"})
	if chat == nil || chat["isComplete"] != true {
		t.Fatalf("agent run: %d %s", res.Status, res.Body)
	}
	a.waitMemory(t, user, "The user prefers email over phone.")
}

// An end user's memories reach their own agent runs only, and what one states in a run is theirs
// (extracted from the provider's JSON answers).
func TestAgentRunUserMemoryIsolation(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	ana, anaID := a.visitor(t)
	bo, boID := a.visitor(t)
	fake.Set(providertest.Behavior{Reply: "Hello.", Structured: `{"memories":[{"type":"semantic","subject":"name","content":"The user's name is Ana."}]}`})
	a.say(t, ana, "My name is Ana.")
	a.waitMemory(t, anaID, "The user's name is Ana.")

	// Asking to book a meeting is answered by an agent run (reasoning mode auto).
	fake.Set(providertest.Behavior{Reply: "Booked.", Structured: `{"memories":[{"type":"procedural","subject":"","content":"Book the user's meetings in the morning."}]}`})
	a.say(t, bo, "Can you book a meeting for me? I want my meetings in the morning.")
	if prompt := lastRunPrompt(t, fake); strings.Contains(prompt, "user_memories") || strings.Contains(prompt, "Ana") {
		t.Errorf("Bo's run got another user's memories: %q", prompt)
	}
	a.waitMemory(t, boID, "Book the user's meetings in the morning.")
	a.say(t, ana, "Can you book a meeting for me?")
	if prompt := lastRunPrompt(t, fake); !strings.Contains(prompt, "The user's name is Ana.") || strings.Contains(prompt, "morning") {
		t.Errorf("Ana's run: %q", prompt)
	}
	if got := a.userMemories(t, anaID, ""); len(got) != 1 {
		t.Errorf("Ana's memories: %v", got)
	}
}

// Deleting an agent forgets what it remembered of its end users, and only that: another agent's
// memories of the same user stay.
func TestBotDeletionForgetsItsUsersMemories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	gone, kept := b.chatBot(t, nil), b.chatBot(t, nil)
	var user string
	for _, a := range []chatAPI{gone, kept} {
		res, chat := a.chat(t, map[string]any{"message": "My name is Ana. I prefer email over phone."})
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		user = chat["user"].(map[string]any)["user"].(map[string]any)["uuid"].(string)
		a.waitMemory(t, user, "The user's name is Ana.")
		a.waitMemory(t, user, "The user prefers email over phone.")
	}
	goneID := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + gone.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["id"]
	if n, err := b.db.Collection("user_memories").CountDocuments(t.Context(), map[string]any{"bot_id": goneID}); err != nil || n != 2 {
		t.Fatalf("the store holds %d memories of the agent before its deletion, want 2 (%v)", n, err)
	}
	res := b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/delete?" + gone.query(""), Key: b.key, ContentType: "application/json"})
	expect(t, res, http.StatusOK, "")
	if n, err := b.db.Collection("user_memories").CountDocuments(t.Context(), map[string]any{"bot_id": goneID}); err != nil || n != 0 {
		t.Fatalf("%d memories of the deleted agent left (%v)", n, err)
	}
	if got := kept.userMemories(t, user, ""); len(got) != 2 {
		t.Fatalf("the other agent's memories: %v", got)
	}
}
