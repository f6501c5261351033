package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/channels/telegram/telegramtest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/agents"
)

// operator creates an operator of the agent's project and returns its id and token.
func (a chatAPI) operator(t *testing.T, name string) (string, string) {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: a.b.key,
		Body: map[string]any{"project_id": a.b.project.ID, "name": name, "email": strings.ToLower(name) + "@example.com", "availability": "online"}})
	expect(t, res, http.StatusOK, "")
	got := res.JSON(t)
	return got["operator"].(map[string]any)["id"].(string), got["token"].(string)
}

// inbox sends an inbox action on the chat with key (an API key or an operator's token).
func (a chatAPI) inbox(t *testing.T, key, action, chatID string, body map[string]any) *apitest.Response {
	t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	body["chat_id"] = chatID
	return a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/inbox/" + action, Key: key, Body: a.body(body)})
}

// handoffs lists the project's inbox with key.
func (a chatAPI) handoffs(t *testing.T, key, query string) []any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/inbox?project_id=" + a.b.project.ID + query, Key: key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["handoffs"].([]any)
}

// A chat is flagged for a person, once, when the agent calls its handoff tool, when the end
// user asks for a person (told the agent's handoff_message, with no model call), when the agent
// answers with low confidence (not when it answers from its memory), and when a workflow's
// request_handoff fires.
func TestHandoffRequests(t *testing.T) {
	t.Parallel()
	t.Run("TheAgentsTool", func(t *testing.T) {
		t.Parallel()
		_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "agent", "human_handoff": true})
		fake.Set(providertest.Behavior{Script: []providertest.Turn{call("handoff", `{"reason":"The customer is upset about billing.","urgency":"high"}`),
			{Reply: "A person of the team will answer you here."}}})
		_, chat := a.chat(t, map[string]any{"message": "I was charged twice!", "reasoning_mode": "agent"})
		if chat == nil || chat["reply"] != "A person of the team will answer you here." {
			t.Fatalf("reply %v", chat)
		}
		list := a.handoffs(t, a.b.key, "")
		if len(list) != 1 {
			t.Fatalf("the chat is flagged %d times: inbox %v", len(list), list)
		}
		if h := list[0].(map[string]any); h["chat_id"] != chat["chat_id"] || h["source"] != "tool" || h["urgency"] != "high" ||
			h["reason"] != "The customer is upset about billing." || h["status"] != "waiting" {
			t.Fatalf("inbox %v", list)
		}
	})
	t.Run("TheEndUserAsks", func(t *testing.T) {
		t.Parallel()
		_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true, "handoff_message": "Hold on, a colleague is coming."})
		fake.Set(providertest.Behavior{Reply: "A model answer."})
		_, chat := a.chat(t, map[string]any{"message": "Can I talk to a HUMAN please?"})
		if chat == nil || chat["reply"] != "Hold on, a colleague is coming." || len(fake.Requests()) != 0 {
			t.Fatalf("reply %v after %d model calls", chat, len(fake.Requests()))
		}
		_, again := a.chat(t, map[string]any{"message": "Real person, now.", "chat_id": chat["chat_id"]})
		if again == nil || again["reply"] != "Hold on, a colleague is coming." {
			t.Fatalf("second reply %v", again)
		}
		if list := a.handoffs(t, a.b.key, "&source=user"); len(list) != 1 || list[0].(map[string]any)["chat_id"] != chat["chat_id"] {
			t.Fatalf("inbox %v", list)
		}
		_, other := a.chat(t, map[string]any{"message": "What are your opening hours?"})
		if other == nil || other["reply"] != "A model answer." || len(a.handoffs(t, a.b.key, "")) != 1 || len(fake.Requests()) != 1 {
			t.Fatalf("an ordinary question: %v after %d model calls", other, len(fake.Requests()))
		}
	})
	t.Run("TheModelReadsARequest", func(t *testing.T) {
		t.Parallel()
		_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true, "handoff_classify": true})
		fake.Set(providertest.Behavior{Reply: "A model answer.", Structured: `{"asks_for_person": true}`})
		asked := "I'd rather sort this out with someone from your billing team."
		_, chat := a.chat(t, map[string]any{"message": asked})
		reqs := fake.Requests()
		if chat == nil || chat["reply"] != agents.DefaultHandoffMessage || len(reqs) != 1 || reqs[0].Schema != "handoff_request" ||
			reqs[len(reqs)-1].Messages[1].Content != asked {
			t.Fatalf("reply %v after %d model calls", chat, len(reqs))
		}
		list := a.handoffs(t, a.b.key, "&source=user")
		if len(list) != 1 || list[0].(map[string]any)["chat_id"] != chat["chat_id"] ||
			list[0].(map[string]any)["reason"] != "The agent's model read the end user's message as a request for a person." {
			t.Fatalf("inbox %v", list)
		}
		fake.Set(providertest.Behavior{Reply: "A model answer.", Structured: `{"asks_for_person": false}`})
		_, other := a.chat(t, map[string]any{"message": "Which of your plans has SSO?"})
		if other == nil || other["reply"] != "A model answer." || len(a.handoffs(t, a.b.key, "")) != 1 || len(fake.Requests()) != 3 {
			t.Fatalf("an ordinary question: %v after %d model calls", other, len(fake.Requests()))
		}
	})
	t.Run("AnAnswerOfLowConfidence", func(t *testing.T) {
		t.Parallel()
		_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true, "handoff_on_low_confidence": true})
		a.ingest(t, map[string]any{"type": "text", "title": "Warranty", "source": "The X200 comes with a two-year warranty."})
		fake.Set(providertest.Behavior{Reply: "Two years [1]."})
		_, sure := a.chat(t, map[string]any{"message": "What is the warranty on the X200?"})
		if sure == nil || sure["agent"].(map[string]any)["confidence"] != "high" {
			t.Fatalf("an answer from memory %v", sure)
		}
		fake.Set(providertest.Behavior{Reply: "I am not sure."})
		_, chat := a.chat(t, map[string]any{"message": "Do you ship to Iceland?"})
		if chat == nil || chat["reply"] != "I am not sure." || chat["agent"].(map[string]any)["confidence"] != "low" {
			t.Fatalf("reply %v", chat)
		}
		if list := a.handoffs(t, a.b.key, ""); len(list) != 1 || list[0].(map[string]any)["chat_id"] != chat["chat_id"] ||
			list[0].(map[string]any)["source"] != "confidence" {
			t.Fatalf("inbox %v, want only the chat answered with low confidence (%v), not the one answered from memory (%v)", list, chat["chat_id"], sure["chat_id"])
		}
	})
	t.Run("OnlyWhenTheAgentHandsOff", func(t *testing.T) {
		t.Parallel()
		_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard"})
		fake.Set(providertest.Behavior{Reply: "I am the agent."})
		if _, chat := a.chat(t, map[string]any{"message": "talk to a human"}); chat == nil || chat["reply"] != "I am the agent." {
			t.Fatalf("reply %v", chat)
		}
		if list := a.handoffs(t, a.b.key, ""); len(list) != 0 {
			t.Fatalf("inbox %v", list)
		}
	})
	t.Run("AWorkflow", func(t *testing.T) {
		t.Parallel()
		b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard"})
		fake.Set(providertest.Behavior{Reply: "Hello."})
		_, chat := a.chat(t, map[string]any{"message": "Hi"})
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(map[string]any{
			"name": "Escalate", "trigger_type": "manual", "actions": []map[string]any{{"type": "request_handoff",
				"params": map[string]any{"chat_id": chat["chat_id"], "reason": "VIP customer", "urgency": "high"}}}})})
		expect(t, res, http.StatusOK, "")
		res = b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/workflow/run", Key: b.key,
			Body: a.body(map[string]any{"workflow_id": res.JSON(t)["workflow"].(map[string]any)["uuid"]})})
		expect(t, res, http.StatusOK, "")
		waitFor(t, "the workflow's handoff", func() (bool, any) {
			list := a.handoffs(t, b.key, "&source=workflow")
			return len(list) == 1 && list[0].(map[string]any)["reason"] == "VIP customer", list
		})
	})
}

// An operator who takes a chat over pauses the agent on it (the end user's three messages are
// kept, no model answers them), answers as themselves, leaves notes the end user never sees, and
// hands it back with a note the agent's next prompt carries. The handoff statistics count it,
// answered, with the time from the take to the operator's first reply.
func TestTakeover(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "The agent answers."})
	_, chat := a.chat(t, map[string]any{"message": "Hello"})
	chatID := chat["chat_id"].(string)
	opID, token := a.operator(t, "Maria")
	taken := time.Now()
	res := a.inbox(t, token, "take", chatID, nil)
	expect(t, res, http.StatusOK, "")
	if h := res.JSON(t)["handoff"].(map[string]any); h["status"] != "taken" || h["operator_id"] != opID || h["source"] != "operator" {
		t.Fatalf("taken %v", h)
	}
	before := len(fake.Requests())
	for _, msg := range []string{"Are you there?", "I need a refund.", "Order 42."} {
		_, reply := a.chat(t, map[string]any{"message": msg, "chat_id": chatID})
		if reply == nil || reply["reply"] != "" || reply["type"] != "human" {
			t.Fatalf("a message to a taken chat was answered %v", reply)
		}
	}
	if n := len(fake.Requests()) - before; n != 0 {
		t.Fatalf("the provider was asked %d times while the chat was taken", n)
	}
	expect(t, a.inbox(t, token, "note", chatID, map[string]any{"content": "Refund approved by finance."}), http.StatusOK, "")
	res = a.inbox(t, token, "reply", chatID, map[string]any{"content": "Hi, Maria here: your refund is on its way."})
	expect(t, res, http.StatusOK, "")
	replyWithin := time.Since(taken).Milliseconds()
	history := a.history(t, chatID, "")["conversation"].([]any)
	var texts []string
	for _, m := range history {
		texts = append(texts, m.(map[string]any)["content"].(string))
	}
	last := history[len(history)-1].(map[string]any)
	if len(history) != 6 || last["content"] != "Hi, Maria here: your refund is on its way." || last["user"].(map[string]any)["name"] != "Maria" ||
		strings.Contains(strings.Join(texts, "|"), "Refund approved by finance.") {
		t.Fatalf("history %q", texts)
	}
	res = a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/inbox/read?" + a.query("&chat_id="+chatID), Key: token})
	expect(t, res, http.StatusOK, "")
	if read := res.JSON(t); read["total"] != float64(6) || read["handoff"].(map[string]any)["status"] != "taken" ||
		len(read["handoff"].(map[string]any)["notes"].([]any)) != 1 {
		t.Fatalf("the operator reads %v", read)
	}
	expect(t, a.inbox(t, token, "release", chatID, map[string]any{"note": "Refund done; offer a discount code if asked."}), http.StatusOK, "")
	_, after := a.chat(t, map[string]any{"message": "Thanks! Anything else?", "chat_id": chatID})
	if after == nil || after["reply"] != "The agent answers." {
		t.Fatalf("after hand back %v", after)
	}
	reqs := fake.Requests()
	if sys := reqs[len(reqs)-1].Messages[0].Content; !strings.Contains(sys, "Refund done; offer a discount code if asked.") {
		t.Fatalf("the prompt after hand back lacks the note: %q", sys)
	}
	_, next := a.chat(t, map[string]any{"message": "Bye", "chat_id": chatID})
	if sys := fake.Requests()[len(fake.Requests())-1].Messages[0].Content; next == nil || strings.Contains(sys, "Refund done") {
		t.Fatal("the note stays in later prompts")
	}
	if list := a.handoffs(t, a.b.key, "&status=released"); len(list) != 1 {
		t.Fatalf("inbox %v", list)
	}
	waitFor(t, "the handoff statistics", func() (bool, any) {
		res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/stats/handoffs?" + a.query(""), Key: a.b.key})
		expect(t, res, http.StatusOK, "")
		st := res.JSON(t)["handoffs"].(map[string]any)["stats"].(map[string]any)
		first := st["first_reply_ms"].(map[string]any)
		return st["handoffs"] == float64(1) && st["by_source"].(map[string]any)["operator"] == float64(1) && st["replied"] == float64(1) &&
			first["count"] == float64(1) && first["max"].(float64) > 0 && first["max"].(float64) <= float64(replyWithin) && st["share"] == float64(1), st
	})
}

// Two operators assigning one waiting chat at once: one gets it, the other 409; an operator
// cannot take a chat another took.
func TestInboxConflicts(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "x"})
	_, chat := a.chat(t, map[string]any{"message": "talk to a human"})
	chatID := chat["chat_id"].(string)
	_, one := a.operator(t, "Ana")
	_, two := a.operator(t, "Ben")
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i, token := range []string{one, two} {
		wg.Go(func() { statuses[i] = a.inbox(t, token, "assign", chatID, nil).Status })
	}
	wg.Wait()
	if !(statuses[0] == http.StatusOK && statuses[1] == http.StatusConflict) && !(statuses[0] == http.StatusConflict && statuses[1] == http.StatusOK) {
		t.Fatalf("two assignments at once answered %v, want one 200 and one 409", statuses)
	}
	winner, loser := one, two
	if statuses[1] == http.StatusOK {
		winner, loser = two, one
	}
	expect(t, a.inbox(t, loser, "assign", chatID, nil), http.StatusConflict, "handoff_assigned")
	expect(t, a.inbox(t, winner, "take", chatID, nil), http.StatusOK, "")
	expect(t, a.inbox(t, loser, "take", chatID, nil), http.StatusConflict, "handoff_taken")
	expect(t, a.inbox(t, loser, "reply", chatID, map[string]any{"content": "Me too"}), http.StatusConflict, "handoff_not_taken")
	expect(t, a.inbox(t, winner, "close", chatID, nil), http.StatusOK, "")
	expect(t, a.inbox(t, winner, "close", chatID, nil), http.StatusConflict, "handoff_not_open")
}

// A chat deleted leaves the inbox with it: the operators' list no longer shows its handoff.
func TestInboxForgetsDeletedChats(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "x"})
	_, gone := a.chat(t, map[string]any{"message": "talk to a human"})
	_, kept := a.chat(t, map[string]any{"message": "speak to a person"})
	if list := a.handoffs(t, b.key, ""); len(list) != 2 {
		t.Fatalf("inbox %v", list)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/chat/delete?" + a.query("&chat_id="+gone["chat_id"].(string)),
		Key: b.key, ContentType: "application/json"}), http.StatusOK, "")
	if list := a.handoffs(t, b.key, ""); len(list) != 1 || list[0].(map[string]any)["chat_id"] != kept["chat_id"] {
		t.Fatalf("inbox after the chat's deletion %v", list)
	}
	_, op := a.operator(t, "Ida")
	expect(t, a.inbox(t, op, "take", gone["chat_id"].(string), nil), http.StatusNotFound, "")
}

// A channel's conversation taken over: the platform user's messages reach no model, and the
// operator's reply is delivered to them on the platform.
func TestTakeoverOnAChannel(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "The agent answers."})
	tg := telegramtest.New(t, "21:takeover-token")
	a.createChannel(t, map[string]any{"type": "telegram", "api_base_url": tg.URL, "credentials": map[string]any{"bot_token": tg.Token}})
	ctx := context.Background()
	if status, _, err := tg.Deliver(ctx, telegramtest.TextUpdate(1, 55, telegramtest.Alice, "Hello")); err != nil || status != http.StatusOK {
		t.Fatalf("the message: %d %v", status, err)
	}
	waitFor(t, "the agent's answer", func() (bool, any) { return len(tg.Sent()) == 1, sentTexts(tg) })
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/readall?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	chatID := res.JSON(t)["chats"].([]any)[0].(map[string]any)["uuid"].(string)
	_, token := a.operator(t, "Omar")
	expect(t, a.inbox(t, token, "take", chatID, nil), http.StatusOK, "")
	if status, _, err := tg.Deliver(ctx, telegramtest.TextUpdate(2, 55, telegramtest.Alice, "I want a person")); err != nil || status != http.StatusOK {
		t.Fatalf("the message: %d %v", status, err)
	}
	waitFor(t, "the message kept", func() (bool, any) {
		history := a.history(t, chatID, "")["conversation"].([]any)
		return len(history) == 3, len(history)
	})
	expect(t, a.inbox(t, token, "reply", chatID, map[string]any{"content": "Omar here, how can I help?"}), http.StatusOK, "")
	waitFor(t, "the operator's reply on Telegram", func() (bool, any) { return len(tg.Sent()) == 2, sentTexts(tg) })
	if got := sentTexts(tg); got[1] != "Omar here, how can I help?" || len(fake.Requests()) != 1 {
		t.Fatalf("Telegram got %q after %d model calls", got, len(fake.Requests()))
	}
}

// An assignment naming no one goes to the project's online operator with the fewest chats
// open, below its max_open (not merely the first with room); with none, 409.
func TestInboxRoundRobin(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "x"})
	create := func(name, availability string, maxOpen int) string {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/operator/create", Key: b.key, Body: map[string]any{
			"project_id": b.project.ID, "name": name, "email": strings.ToLower(name) + "@example.com", "availability": availability, "max_open": maxOpen}})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["operator"].(map[string]any)["id"].(string)
	}
	ana, ben, _ := create("Ana", "online", 1), create("Ben", "online", 5), create("Cal", "away", 5)
	var got []string
	for range 3 {
		_, chat := a.chat(t, map[string]any{"message": "talk to a human"})
		res := a.inbox(t, b.key, "assign", chat["chat_id"].(string), nil)
		expect(t, res, http.StatusOK, "")
		got = append(got, res.JSON(t)["handoff"].(map[string]any)["operator_id"].(string))
	}
	if strings.Join(got, ",") != strings.Join([]string{ana, ben, ben}, ",") {
		t.Fatalf("assigned to %v, want Ana (%s), then Ben (%s) twice", got, ana, ben)
	}
	dee := create("Dee", "online", 5)
	_, chat := a.chat(t, map[string]any{"message": "talk to a human"})
	res := a.inbox(t, b.key, "assign", chat["chat_id"].(string), nil)
	expect(t, res, http.StatusOK, "")
	if to := res.JSON(t)["handoff"].(map[string]any)["operator_id"]; to != dee {
		t.Fatalf("assigned to %v, want Dee (%s), who has no chat open, rather than Ben (%s), who has two", to, dee, ben)
	}
	for _, id := range []string{ben, dee} {
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/operator/update", Key: b.key,
			Body: map[string]any{"project_id": b.project.ID, "operator_id": id, "availability": "away"}})
		expect(t, res, http.StatusOK, "")
	}
	_, chat = a.chat(t, map[string]any{"message": "talk to a human"})
	expect(t, a.inbox(t, b.key, "assign", chat["chat_id"].(string), nil), http.StatusConflict, "no_operator_available")
}

// openStream opens the event stream at url with token, for at most 30 s; it closes when the test
// ends.
func openStream(t *testing.T, url, token string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

// The inbox's live stream tells an operator of each handoff of its project as it happens.
func TestInboxStream(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "x"})
	_, token := a.operator(t, "Ida")
	res := openStream(t, a.b.client.URL+"/v1/bot/inbox/stream?project_id="+a.b.project.ID, token)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the stream answered %d", res.StatusCode)
	}
	var seen []string
	var chatID string
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatalf("the stream broke after %v: %v", seen, err)
		}
		seen = append(seen, ev.Type)
		switch ev.Type {
		case "ready":
			_, chat := a.chat(t, map[string]any{"message": "I want to speak to a person"})
			chatID = chat["chat_id"].(string)
			expect(t, a.inbox(t, token, "take", chatID, nil), http.StatusOK, "")
		case "handoff":
			var got struct {
				Type string `json:"type"`
				Data struct {
					ChatID string `json:"chat_id"`
					Status string `json:"status"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &got); err != nil || got.Data.ChatID != chatID {
				t.Fatalf("event %q: %v", ev.Data, err)
			}
			if got.Type == "handoff.taken" && got.Data.Status == "taken" {
				if strings.Join(seen, ",") != "ready,handoff,handoff" {
					t.Fatalf("events %v", seen)
				}
				return
			}
		}
	}
	t.Fatalf("the stream ended after %v", seen)
}

// The end user's stream of their chat (what the page opens while a person has it): it brings
// what the operator writes as they write it, never the agent's answers (which come with the
// end user's own turns), and only to the end user whose chat it is.
func TestPublicStream(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "human_handoff": true})
	fake.Set(providertest.Behavior{Reply: "The agent again."})
	v := visitorsOf(t, a)
	token := v.session(t, "")
	var asked struct {
		ChatID    string `json:"chat_id"`
		MessageID string `json:"message_id"`
		Human     bool   `json:"human"`
	}
	decode(t, done(t, v.chat(t, token, "", map[string]any{"message": "Let me talk to a human"})), &asked)
	if !asked.Human || asked.MessageID == "" {
		t.Fatalf("the answer to a request for a person: %+v", asked)
	}
	stream := func(token, query string) *http.Response {
		t.Helper()
		return openStream(t, a.b.client.URL+"/public/v1/stream?"+query, token)
	}
	for _, tt := range []struct {
		name, token, query, code string
		status                   int
	}{
		{"another visitor's chat", v.session(t, ""), "chat_id=" + asked.ChatID, "chat_not_found", http.StatusNotFound},
		{"no chat", token, "", "chat_id: is required", http.StatusUnprocessableEntity},
		{"an API key", a.b.key, "chat_id=" + asked.ChatID, "", http.StatusUnauthorized},
	} {
		res := stream(tt.token, tt.query)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != tt.status || !strings.Contains(string(body), tt.code) {
			t.Errorf("%s: %d %s", tt.name, res.StatusCode, body)
		}
	}

	_, op := a.operator(t, "Noor")
	res := stream(token, "chat_id="+asked.ChatID)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the stream answered %d", res.StatusCode)
	}
	var seen []string
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatalf("the stream broke after %v: %v", seen, err)
		}
		seen = append(seen, ev.Type)
		switch ev.Type {
		case "ready":
			expect(t, a.inbox(t, op, "take", asked.ChatID, nil), http.StatusOK, "")
			if h := v.history(token, asked.ChatID).JSON(t); h["human"] != true {
				t.Fatalf("the history of a chat taken over: %v", h)
			}
			expect(t, a.inbox(t, op, "reply", asked.ChatID, map[string]any{"content": "Noor here: **how can I help?**"}), http.StatusOK, "")
		case "message":
			var m struct{ ID, Role, Content, HTML string }
			if err := json.Unmarshal([]byte(ev.Data), &m); err != nil || m.ID == "" || m.Role != "agent" {
				t.Fatalf("message %s: %v", ev.Data, err)
			}
			switch m.Content {
			case "Noor here: **how can I help?**":
				if m.HTML != "<p>Noor here: <strong>how can I help?</strong></p>\n" {
					t.Fatalf("the operator's message as the page shows it: %q", m.HTML)
				}
				expect(t, a.inbox(t, op, "release", asked.ChatID, nil), http.StatusOK, "")
				var again struct{ Text string }
				decode(t, done(t, v.chat(t, token, "", map[string]any{"message": "Thanks", "chat_id": asked.ChatID})), &again)
				if again.Text != "The agent again." {
					t.Fatalf("the agent's answer after the hand back: %+v", again)
				}
				expect(t, a.inbox(t, op, "take", asked.ChatID, nil), http.StatusOK, "")
				expect(t, a.inbox(t, op, "reply", asked.ChatID, map[string]any{"content": "One more thing."}), http.StatusOK, "")
			case "One more thing.":
				if strings.Join(seen, ",") != "ready,message,message" {
					t.Fatalf("events %v", seen)
				}
				return
			default:
				t.Fatalf("the stream brought %q after %v", m.Content, seen)
			}
		}
	}
	t.Fatalf("the stream ended after %v", seen)
}
