package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sse "github.com/tmaxmax/go-sse"
	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/devenv/devstack"
)

// chatAPI is a test's agent with memory, over HTTP.
type chatAPI struct {
	sourcesAPI
}

// chatBot creates an agent with the creation fields of bot, then updates it with the others.
func (b *bundle) chatBot(t *testing.T, bot map[string]any) chatAPI {
	t.Helper()
	create, update := map[string]any{}, map[string]any{}
	for k, v := range bot {
		switch k {
		case "name", "model", "instruction", "status":
			create[k] = v
		default:
			update[k] = v
		}
	}
	a := chatAPI{sourcesAPI{b: b, botID: b.createBot(t, create)["uuid"].(string)}}
	if len(update) > 0 {
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(update)})
		expect(t, res, http.StatusOK, "")
	}
	return a
}

// chat sends a message and returns the status and the decoded body.
func (a chatAPI) chat(t *testing.T, body map[string]any) (*apitest.Response, map[string]any) {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/chat", Key: a.b.key, Body: a.body(body)})
	if res.Status != http.StatusOK {
		return res, nil
	}
	return res, res.JSON(t)["chat"].(map[string]any)
}

func (a chatAPI) history(t *testing.T, chatID, extra string) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/read?" + a.query("&chat_id="+chatID+extra), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)
}

func TestChatWithTheOfflineModel(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.chatBot(t, map[string]any{"no_answer_reply": "Sorry, I cannot help with that."})
	a.ingest(t, map[string]any{"title": "Hours", "type": "text", "tags": []string{"shop"},
		"source": "The shop opens at nine in the morning. It closes at six in the evening, except on Sundays."})

	res, chat := a.chat(t, map[string]any{"message": "When does the shop close?", "top": "3", "type": "text", "title": "left over from a source call"})
	if chat == nil {
		t.Fatalf("chat: %d %s", res.Status, res.Body)
	}
	if !strings.Contains(chat["reply"].(string), "closes at six") || !strings.Contains(chat["reply"].(string), "[1]") {
		t.Fatalf("reply %q", chat["reply"])
	}
	sources := chat["sources"].([]any)
	if len(sources) != 1 || sources[0].(map[string]any)["citation_number"] != float64(1) || sources[0].(map[string]any)["title"] != "Hours" {
		t.Fatalf("sources %v", sources)
	}
	user, agent := chat["user"].(map[string]any), chat["agent"].(map[string]any)
	chatID := chat["chat_id"].(string)
	if user["chat_id"] != chatID || agent["chat_id"] != chatID || user["role"] != "user" || agent["role"] != "agent" ||
		agent["credit_used"] != "1" || agent["model"] != "offline-extractive" || agent["confidence"] != "high" || agent["tokens"].(float64) < 1 {
		t.Fatalf("messages user %v agent %v", user, agent)
	}
	if usage := chat["usage"].(map[string]any); usage["total_tokens"].(float64) < 10 || usage["conversation_count"] != float64(2) {
		t.Fatalf("usage %v", usage)
	}

	_, second := a.chat(t, map[string]any{"message": "Is it open on Sundays?", "chat_id": chatID})
	if second["chat_id"] != chatID {
		t.Fatalf("second message went to chat %v", second["chat_id"])
	}
	_, none := a.chat(t, map[string]any{"message": "Explain quantum chromodynamics", "chat_id": chatID})
	if none["reply"] != "Sorry, I cannot help with that." || len(none["sources"].([]any)) != 0 || none["agent"].(map[string]any)["confidence"] != "low" {
		t.Fatalf("no answer %v", none)
	}
	_, off := a.chat(t, map[string]any{"message": "When does the shop close?", "chat_id": chatID, "memory": false})
	if off["reply"] != "Sorry, I cannot help with that." {
		t.Fatalf("memory false still retrieved: %v", off["reply"])
	}

	h := a.history(t, chatID, "&per_page=3")
	conv := h["conversation"].([]any)
	if h["total"] != float64(8) || len(conv) != 3 || conv[0].(map[string]any)["content"] != "When does the shop close?" ||
		conv[1].(map[string]any)["role"] != "agent" || conv[0].(map[string]any)["user"] == nil {
		t.Fatalf("history %v", h)
	}
	for _, tt := range []struct {
		query           string
		n, page, pages  int
		firstContentHas string
	}{
		{"&per_page=3&page=3", 2, 3, 3, "When does the shop close?"},
		{"&per_page=3&page=4", 0, 4, 3, ""},
		{"&per_page=10", 8, 1, 1, "When does the shop close?"},
	} {
		h := a.history(t, chatID, tt.query)
		p := h["pagination"].(map[string]any)
		conv := h["conversation"].([]any)
		if len(conv) != tt.n || p["page"] != float64(tt.page) || p["total_pages"] != float64(tt.pages) || p["total"] != float64(8) {
			t.Errorf("history%s: %d messages, pagination %v", tt.query, len(conv), p)
		}
		if tt.n > 0 && !strings.Contains(conv[0].(map[string]any)["content"].(string), tt.firstContentHas) {
			t.Errorf("history%s starts with %v", tt.query, conv[0])
		}
	}
	evs := streamEvents(t, "", b.project.ID, 10)
	n := 0
	for _, ev := range evs {
		if ev.Type == "chat.message.created" {
			n++
		}
	}
	if n != 8 {
		t.Fatalf("%d chat.message.created events, want 8", n)
	}

	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/readall?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if res.JSON(t)["total"] != float64(1) {
		t.Fatalf("chats %s", res.Body)
	}
	res = b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/chat/delete?" + a.query("&chat_id="+chatID), Key: b.key, ContentType: "application/json"})
	expect(t, res, http.StatusOK, "")
	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/read?" + a.query("&chat_id="+chatID), Key: b.key})
	expect(t, res, http.StatusNotFound, "chat_not_found")
}

func TestChatValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"MessageRequired", map[string]any{"message": " "}, "message"},
		{"MessageWrongType", map[string]any{"message": 3}, "message"},
		{"TopTooLarge", map[string]any{"message": "hi", "top": 51}, "top"},
		{"TopZero", map[string]any{"message": "hi", "top": 0}, "top"},
		{"MaxReplyTokens", map[string]any{"message": "hi", "max_reply_tokens": -1}, "max_reply_tokens"},
		{"ReasoningMode", map[string]any{"message": "hi", "reasoning_mode": "deep"}, "reasoning_mode"},
		{"ChatMode", map[string]any{"message": "hi", "chat_mode": "draw"}, "chat_mode"},
		{"ProviderHost", map[string]any{"message": "hi", "provider_host": "ftp://models.example.com"}, "provider_host"},
		{"StreamWrongType", map[string]any{"message": "hi", "stream": "yes please"}, "stream"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := a.chat(t, tt.body)
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}
	t.Run("EmptyModesAreDefaults", func(t *testing.T) {
		if res, chat := a.chat(t, map[string]any{"message": "hi", "reasoning_mode": "", "chat_mode": ""}); chat == nil {
			t.Fatalf("%d %s", res.Status, res.Body)
		}
	})
	t.Run("UnknownChat", func(t *testing.T) {
		res, _ := a.chat(t, map[string]any{"message": "hi", "chat_id": "nope"})
		expect(t, res, http.StatusNotFound, "chat_not_found")
	})
	t.Run("AnotherAgentsChat", func(t *testing.T) {
		_, chat := a.chat(t, map[string]any{"message": "hi"})
		other := b.chatBot(t, nil)
		res, _ := other.chat(t, map[string]any{"message": "hi", "chat_id": chat["chat_id"]})
		expect(t, res, http.StatusNotFound, "chat_not_found")
	})
	t.Run("AnotherAccountsHistory", func(t *testing.T) {
		_, chat := a.chat(t, map[string]any{"message": "hi"})
		otherKey, _ := b.newTenant(t)
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Key: otherKey, Path: "/v1/bot/chat/read?" + a.query("&chat_id="+chat["chat_id"].(string))})
		expect(t, res, http.StatusNotFound, "project_not_found")
	})
	t.Run("HistoryPerPageBound", func(t *testing.T) {
		_, chat := a.chat(t, map[string]any{"message": "hi"})
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Key: b.key, Path: "/v1/bot/chat/read?" + a.query("&per_page=101&chat_id="+chat["chat_id"].(string))})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		expectField(t, res, "per_page")
	})
	t.Run("InactiveAgent", func(t *testing.T) {
		inactive := b.chatBot(t, map[string]any{"status": 0})
		res, _ := inactive.chat(t, map[string]any{"message": "hi"})
		expect(t, res, http.StatusForbidden, "bot_inactive")
	})
	t.Run("UnknownAgent", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/chat", Key: b.key,
			Body: map[string]any{"project_id": b.project.ID, "bot_id": "nope", "message": "hi"}})
		expect(t, res, http.StatusNotFound, "bot_not_found")
	})
}

func TestChatThroughAProvider(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.chatBot(t, map[string]any{"instruction": "You are the teapot shop's assistant.", "model": "gpt-4o-mini"})
	a.ingest(t, map[string]any{"title": "Care", "type": "document", "source": "# Teapots\n\n## Cleaning\n\nNever wash a teapot with soap; rinse it with warm water."})
	fake.Set(providertest.Behavior{Reply: "Rinse it with warm water [1].", Usage: struct{ Prompt, Completion int }{120, 8}})

	_, chat := a.chat(t, map[string]any{"message": "How do I clean my teapot?", "provider_host": fake.URL, "provider_key": "sk-secret-test-key", "max_reply_tokens": 77})
	if chat == nil || chat["reply"] != "Rinse it with warm water [1]." {
		t.Fatalf("chat %v", chat)
	}
	agent := chat["agent"].(map[string]any)
	if agent["model"] != "gpt-4o-mini" || agent["estimated_cost"] != "0.000023" || agent["tokens"] != float64(8) {
		t.Fatalf("agent message %v", agent)
	}
	if u := chat["usage"].(map[string]any); u["prompt_tokens"] != float64(120) || u["completion_tokens"] != float64(8) || u["total_tokens"] != float64(128) {
		t.Fatalf("usage %v", u)
	}
	_, _ = a.chat(t, map[string]any{"message": "And the lid?", "chat_id": chat["chat_id"], "provider_host": fake.URL, "provider_key": "sk-secret-test-key"})

	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d provider requests", len(reqs))
	}
	first, second := reqs[0], reqs[1]
	if first.Model != "gpt-4o-mini" || first.MaxTokens != 77 || first.Header.Get("Authorization") != "Bearer sk-secret-test-key" {
		t.Fatalf("provider received model %q max tokens %d auth %q", first.Model, first.MaxTokens, first.Header.Get("Authorization"))
	}
	sys := first.Messages[0]
	if sys.Role != "system" || !strings.Contains(sys.Content, "teapot shop's assistant") || !strings.Contains(sys.Content, "[1] Care › Teapots › Cleaning\n") ||
		!strings.Contains(sys.Content, "rinse it with warm water") {
		t.Fatalf("system prompt %q", sys.Content)
	}
	var roles []string
	for _, m := range second.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "system user assistant user" || second.Messages[3].Content != "And the lid?" {
		t.Fatalf("second prompt roles %s: %v", got, second.Messages)
	}
	for _, coll := range []string{"chats", "bots"} {
		n, err := b.db.Collection(coll).CountDocuments(context.Background(), map[string]any{})
		if err != nil || n == 0 {
			t.Fatalf("%s: %d %v", coll, n, err)
		}
		cur, _ := b.db.Collection(coll).Find(context.Background(), map[string]any{})
		var docs []map[string]any
		_ = cur.All(context.Background(), &docs)
		raw, _ := json.Marshal(docs)
		if bytes.Contains(raw, []byte("sk-secret-test-key")) {
			t.Fatalf("the provider key was stored in %s", coll)
		}
	}
}

func TestChatProviderFailures(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	a := b.chatBot(t, map[string]any{"provider_key": "sk-agent-key"})
	for _, tt := range []struct {
		name   string
		set    providertest.Behavior
		status int
		code   string
		text   string
	}{
		{"BadKey", providertest.Behavior{Status: 401, ErrorMessage: "Incorrect API key provided"}, 502, "provider_error", "Incorrect API key provided"},
		{"Overloaded", providertest.Behavior{Status: 503, ErrorMessage: "overloaded"}, 502, "provider_error", "overloaded"},
		{"Slow", providertest.Behavior{FirstByteDelay: 3 * time.Second}, 504, "provider_timeout", ""},
		{"RateLimitedThenFine", providertest.Behavior{Status: 429, FailTimes: 1, Reply: "Fine now."}, 200, "", "Fine now."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake.Set(tt.set)
			res, chat := a.chat(t, map[string]any{"message": "hello"})
			expect(t, res, tt.status, tt.code)
			if tt.status == 200 && chat["reply"] != tt.text || tt.status != 200 && !strings.Contains(string(res.Body), tt.text) {
				t.Fatalf("%s", res.Body)
			}
			if bytes.Contains(res.Body, []byte("sk-agent-key")) {
				t.Fatal("the answer shows the provider key")
			}
		})
	}
}

// streamChat posts a streamed chat and returns the raw response for reading as it comes.
func (a chatAPI) streamChat(t *testing.T, ctx context.Context, body map[string]any) *http.Response {
	t.Helper()
	raw, _ := json.Marshal(a.body(body))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, a.b.client.URL+"/v1/bot/chat", bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+a.b.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL), withHeartbeat(30*time.Millisecond))
	a := b.chatBot(t, map[string]any{"provider_key": "k"})
	fake.Set(providertest.Behavior{Reply: "One two three four five", ChunkDelay: 40 * time.Millisecond})

	res := a.streamChat(t, context.Background(), map[string]any{"message": "count", "stream": true})
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" || res.Header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	var types []string
	var deltas strings.Builder
	var done map[string]any
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		var data map[string]any
		if err := json.Unmarshal([]byte(ev.Data), &data); err != nil {
			t.Fatal(err)
		}
		switch ev.Type {
		case "delta":
			deltas.WriteString(data["content"].(string))
		case "done":
			done = data["chat"].(map[string]any)
		}
	}
	if types[0] != "stored" || types[len(types)-1] != "done" || strings.Count(strings.Join(types, " "), "delta") < 3 {
		t.Fatalf("events %v", types)
	}
	if deltas.String() != "One two three four five" || done["reply"] != deltas.String() {
		t.Fatalf("deltas %q, done %v", deltas.String(), done)
	}

	t.Run("HeartbeatsWhileTheProviderIsSilent", func(t *testing.T) {
		fake.Set(providertest.Behavior{Reply: "slow answer", ChunkDelay: 200 * time.Millisecond})
		res := a.streamChat(t, context.Background(), map[string]any{"message": "wait", "stream": true})
		defer res.Body.Close()
		var raw bytes.Buffer
		_, _ = raw.ReadFrom(res.Body)
		if !strings.Contains(raw.String(), ": ping") {
			t.Fatalf("no heartbeat in %s", raw.String())
		}
	})
	t.Run("ErrorAfterStreamingBegan", func(t *testing.T) {
		fake.Set(providertest.Behavior{Reply: "a b c d e f", BreakAfter: 2})
		res := a.streamChat(t, context.Background(), map[string]any{"message": "break", "stream": true})
		defer res.Body.Close()
		var last sse.Event
		for ev, err := range sse.Read(res.Body, nil) {
			if err != nil {
				t.Fatal(err)
			}
			last = ev
		}
		if last.Type != "error" || !strings.Contains(last.Data, "provider_stream_error") {
			t.Fatalf("last event %+v", last)
		}
	})
	t.Run("ErrorBeforeStreamingIsJSON", func(t *testing.T) {
		res := a.streamChat(t, context.Background(), map[string]any{"message": "", "stream": true})
		defer res.Body.Close()
		if res.StatusCode != 422 || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %s", res.StatusCode, res.Header.Get("Content-Type"))
		}
	})
}

// A client that goes away mid-stream cancels the provider call; the partial reply is kept,
// marked interrupted; nothing is left running.
func TestChatStreamDisconnect(t *testing.T) {
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	a := b.chatBot(t, map[string]any{"provider_key": "k"})
	// The embedded store runs in this process: the connections the driver opens meanwhile are
	// served by goroutines of its own (FerretDB's and its proxy's), which are not the stream's.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/FerretDB/FerretDB/internal/clientconn.acceptLoop.func1"),
		goleak.IgnoreTopFunction("github.com/FerretDB/FerretDB/internal/clientconn.(*conn).run.func2"),
		goleak.IgnoreTopFunction("github.com/FerretDB/FerretDB/internal/util/ctxutil.WithDelay.func1"),
		goleak.IgnoreAnyFunction("github.com/agentplane/agentplane/shared/devenv/devstack.(*serializer).serve"))
	fake.Set(providertest.Behavior{Reply: "one two three four five six seven eight nine ten", ChunkDelay: 150 * time.Millisecond})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := a.streamChat(t, ctx, map[string]any{"message": "count slowly", "stream": true})
	var chatID string
	deltas := 0
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			break
		}
		if ev.Type == "stored" {
			var data struct {
				Message struct {
					ChatID string `json:"chat_id"`
				}
			}
			_ = json.Unmarshal([]byte(ev.Data), &data)
			chatID = data.Message.ChatID
		}
		if ev.Type == "delta" {
			if deltas++; deltas == 2 {
				cancel()
				break
			}
		}
	}
	res.Body.Close()
	fake.WaitCancelled(t, 1, time.Second)

	deadline := time.Now().Add(5 * time.Second)
	for {
		h := a.history(t, chatID, "")
		if conv := h["conversation"].([]any); len(conv) == 2 {
			agent := conv[1].(map[string]any)
			if agent["interrupted"] != true || !strings.HasPrefix(agent["content"].(string), "one") || strings.Contains(agent["content"].(string), "ten") {
				t.Fatalf("interrupted reply %v", agent)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the partial reply was not stored: %v", h)
		}
		waitABit()
	}
	http.DefaultClient.CloseIdleConnections()
	provider.Transport().CloseIdleConnections() // the configured provider's connections
}

// An agent's own limit (ratelimit_requests per ratelimit_seconds, for each API key) applies and
// lifts. The limit is a rate: 2 messages at once, then one more every 4 s. How many chats it lets
// through before it refuses one depends on how long they take, so the test counts instead of
// assuming they are quick: it chats until one is refused and holds the number let through to what
// the rate allows in the time they took; it then waits the Retry-After the refusal asked for (at
// most the 4 s a message is owed back in), and the next message is answered.
func TestAgentRateLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		burst  = 2
		window = 8 * time.Second
		// owed is how long the limit takes to owe one message back.
		owed = window / burst
		// attempts bounds the chats sent before the limit must have refused one: they would all
		// be let through only if each took about owed on average.
		attempts = 20
	)
	a := b.chatBot(t, map[string]any{"ratelimit_requests": burst, "ratelimit_seconds": int(window / time.Second), "ratelimit_message": "Easy there, one moment please."})
	start := time.Now()
	var refused *apitest.Response
	answered := 0
	for refused == nil {
		if answered == attempts {
			t.Fatalf("%d chats in %s were all answered: the limit of %d per %s never applied", attempts, time.Since(start), burst, window)
		}
		res, chat := a.chat(t, map[string]any{"message": "hi"})
		if res.Status == http.StatusTooManyRequests {
			refused = res
			break
		}
		if chat == nil {
			t.Fatalf("message %d: %d %s", answered, res.Status, res.Body)
		}
		// The first message leaves burst-1; none leaves more.
		left, err := strconv.Atoi(res.Header.Get("X-RateLimit-Remaining"))
		if err != nil || res.Header.Get("X-RateLimit-Limit") != strconv.Itoa(burst) || left < 0 || left > burst-1 || (answered == 0 && left != burst-1) {
			t.Fatalf("message %d: limit %q, remaining %q", answered, res.Header.Get("X-RateLimit-Limit"), res.Header.Get("X-RateLimit-Remaining"))
		}
		answered++
	}
	took := time.Since(start)
	// The burst is always let through; past it, one message for each owed that went by.
	if most := burst + int(took/owed); answered < burst || answered > most {
		t.Fatalf("%d messages answered in %s before the first refusal, want %d to %d", answered, took, burst, most)
	}
	expect(t, refused, http.StatusTooManyRequests, "bot_rate_limited")
	if !strings.Contains(string(refused.Body), "Easy there, one moment please.") ||
		refused.Header.Get("X-RateLimit-Limit") != strconv.Itoa(burst) || refused.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("429: %v %s", refused.Header, refused.Body)
	}
	// The refusal asks for a wait of at most owed, and of at least what is left of owed since the
	// first message: the next message is owed back no sooner.
	retry, err := strconv.Atoi(refused.Header.Get("Retry-After"))
	if least := max(owed-took, time.Second); err != nil || time.Duration(retry)*time.Second < least || time.Duration(retry)*time.Second > owed {
		t.Fatalf("Retry-After %q: want %s to %s, %s after the first message", refused.Header.Get("Retry-After"), least, owed, took)
	}
	other := b.chatBot(t, nil)
	if res, chat := other.chat(t, map[string]any{"message": "hi"}); chat == nil {
		t.Fatalf("another agent was limited too: %d", res.Status)
	}
	// Waiting longer than asked can only leave more messages owed back, never fewer.
	time.Sleep(time.Duration(retry) * time.Second)
	if res, chat := a.chat(t, map[string]any{"message": "hi"}); chat == nil {
		t.Fatalf("the limit did not lift after the Retry-After of %d s: %d %s", retry, res.Status, res.Body)
	}
}

// The agent's limit fails closed: with Redis down a limited agent answers 503 (never
// unlimited), an agent without a limit still answers, and the limit holds again once Redis is
// back.
func TestAgentRateLimitWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	rs, err := devstack.StartRedisServer(ctx, dir, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	opt, _ := redis.ParseURL(rs.URL)
	opt.MaxRetries = -1
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	b := setup(t, withRedis(rdb), withRateLimit(0))
	limited := b.chatBot(t, map[string]any{"ratelimit_requests": 5, "ratelimit_seconds": 60})
	free := b.chatBot(t, nil)

	rs.Close()
	res, _ := limited.chat(t, map[string]any{"message": "hi"})
	expect(t, res, http.StatusServiceUnavailable, "dependency_unavailable")
	if res, chat := free.chat(t, map[string]any{"message": "hi"}); chat == nil {
		t.Fatalf("an agent without a limit needs no Redis: %d %s", res.Status, res.Body)
	}

	port, _ := strconv.Atoi(opt.Addr[len("127.0.0.1:"):])
	rs, err = devstack.StartRedisServer(ctx, dir, port, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rs.Close)
	if res, chat := limited.chat(t, map[string]any{"message": "hi"}); chat == nil || res.Header.Get("X-RateLimit-Remaining") != "4" {
		t.Fatalf("after Redis came back: %d %v", res.Status, res.Header)
	}
}
