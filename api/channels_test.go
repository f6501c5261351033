package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/channels/telegram/telegramtest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// createChannel connects the agent of a to a platform and returns the connection answered.
func (a chatAPI) createChannel(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/channel/create", Key: a.b.key, Body: a.body(body)})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["channel"].(map[string]any)
}

// waitFor polls got until it reports done, failing the test after 20 s with what it last saw.
func waitFor(t *testing.T, what string, got func() (bool, any)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		done, last := got()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s; last saw %v", what, last)
		}
		waitABit()
	}
}

// sentTexts are the texts of the messages the Telegram server took.
func sentTexts(tg *telegramtest.Server) []string {
	var out []string
	for _, c := range tg.Sent() {
		out = append(out, c.Params["text"])
	}
	return out
}

// A Telegram bot is connected with two calls (the agent, then its channel, which sets the
// bot's webhook), and its users talk to the agent: each message is answered once in the chat's
// own conversation, whatever Telegram's retries; a bot's message and a call without the secret
// are not answered; an outage of Telegram's API delays an answer and loses none; a paused or
// deleted connection answers 404 and runs nothing. The bot token appears in no answer and no
// log line.
func TestTelegramChannel(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	b, a, fake := agentSetup(t, map[string]any{"name": "Helper", "reasoning_type": "standard"}, withLogs(logs))
	fake.Set(providertest.Behavior{Reply: "Hello from the agent."})
	const token = "123456:telegram-secret-bot-token"
	tg := telegramtest.New(t, token)
	ch := a.createChannel(t, map[string]any{"type": "telegram", "name": "Support bot", "api_base_url": tg.URL,
		"credentials": map[string]any{"bot_token": token}})
	id := ch["id"].(string)
	if ch["webhook_url"] != b.client.URL+"/hooks/telegram/"+id || ch["status"] != "active" {
		t.Fatalf("connection %v", ch)
	}
	hook := tg.Webhook()
	if hook.URL != ch["webhook_url"] || len(hook.SecretToken) < 32 || strings.Join(hook.AllowedUpdates, ",") != "message,callback_query" {
		t.Fatalf("Telegram's webhook is %+v, want the connection's webhook_url with a secret", hook)
	}
	ctx := context.Background()
	deliver := func(u any) int {
		t.Helper()
		var status int
		var err error
		switch u := u.(type) {
		case int:
			status, _, err = tg.Deliver(ctx, telegramtest.TextUpdate(u, 42, telegramtest.Alice, "Hi there, message "+string(rune('0'+u))))
		default:
			t.Fatalf("unknown update %v", u)
		}
		if err != nil {
			t.Fatal(err)
		}
		return status
	}
	answered := func(n int) {
		t.Helper()
		waitFor(t, "the answers sent", func() (bool, any) { return len(tg.Sent()) >= n, sentTexts(tg) })
	}

	if got := deliver(1); got != http.StatusOK {
		t.Fatalf("the webhook answered %d", got)
	}
	answered(1)
	if sent := tg.Sent()[0]; sent.Params["chat_id"] != "42" || !strings.Contains(sent.Params["text"], "Hello from the agent.") {
		t.Fatalf("sent %+v", sent)
	}

	t.Run("RetriesAndBotsAreNotAnswered", func(t *testing.T) {
		if got := deliver(1); got != http.StatusOK {
			t.Fatalf("the retry was answered %d", got)
		}
		bot := telegramtest.Bot
		if status, _, err := tg.Deliver(ctx, telegramtest.TextUpdate(3, 42, bot, "I am a bot")); err != nil || status != http.StatusOK {
			t.Fatalf("a bot's message: %d %v", status, err)
		}
		deliver(2)
		answered(2)
		if n := len(fake.Requests()); n != 2 {
			t.Fatalf("the provider was asked %d times, want 2 (the two messages of Alice)", n)
		}
	})

	t.Run("OneChatPerConversationAndTheUserIsASubscriber", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/readall?" + a.query(""), Key: b.key})
		expect(t, res, http.StatusOK, "")
		chats := res.JSON(t)["chats"].([]any)
		if len(chats) != 1 {
			t.Fatalf("%d chats, want 1: %v", len(chats), chats)
		}
		history := a.history(t, chats[0].(map[string]any)["uuid"].(string), "")["conversation"].([]any)
		if len(history) != 4 {
			t.Fatalf("%d messages, want 4", len(history))
		}
		first := history[0].(map[string]any)
		if first["channel"] != "telegram" || first["user"].(map[string]any)["name"] != "Alice Liddell" || history[1].(map[string]any)["channel"] != "telegram" {
			t.Fatalf("messages %v", history[:2])
		}
		res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/subscriber/readall?" + a.query(""), Key: b.key})
		expect(t, res, http.StatusOK, "")
		subs := res.JSON(t)["subscribers"].([]any)
		if len(subs) != 1 || subs[0].(map[string]any)["external_id"] != "telegram:5001" || subs[0].(map[string]any)["chats_count"] != float64(1) {
			t.Fatalf("subscribers %v", subs)
		}
	})

	t.Run("AWrongSecretIsRefused", func(t *testing.T) {
		for _, secret := range []string{"", "not-the-secret"} {
			req, err := telegramtest.WebhookRequest(ctx, hook.URL, secret, telegramtest.TextUpdate(9, 42, telegramtest.Alice, "forged"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusUnauthorized {
				t.Fatalf("secret %q: %d, want 401", secret, res.StatusCode)
			}
		}
	})

	t.Run("AnOutageDelaysButLosesNothing", func(t *testing.T) {
		before := len(tg.Sent())
		tg.Fail(2, http.StatusTooManyRequests, time.Second)
		deliver(4)
		answered(before + 1)
		var refused int
		for _, c := range tg.Calls() {
			if c.Method == "sendMessage" && c.Status == http.StatusTooManyRequests {
				refused++
			}
		}
		if refused != 2 {
			t.Fatalf("%d refused sends, want 2", refused)
		}
		res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/metrics"})
		if want := `agentplane_channel_messages_total{outcome="retried",type="telegram"} 2`; !strings.Contains(string(res.Body), want) {
			t.Fatalf("the metrics lack %s", want)
		}
	})

	t.Run("ARefusalForGoodShowsInTheStatus", func(t *testing.T) {
		read := func() map[string]any {
			res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/channel/read?" + a.query("&channel_id="+id), Key: b.key})
			expect(t, res, http.StatusOK, "")
			return res.JSON(t)["channel"].(map[string]any)
		}
		tg.Fail(1, http.StatusBadRequest, 0)
		deliver(7)
		waitFor(t, "the connection in error", func() (bool, any) { ch := read(); return ch["status"] == "error", ch })
		if ch := read(); !strings.Contains(ch["last_error"].(string), "Telegram sendMessage failed") {
			t.Fatalf("last_error %v", ch["last_error"])
		}
		before := len(tg.Sent())
		deliver(8)
		answered(before + 1)
		waitFor(t, "the connection active again", func() (bool, any) { ch := read(); return ch["status"] == "active", ch })
	})

	t.Run("PausedAndDeletedConnectionsRunNothing", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/channel/update", Key: b.key,
			Body: a.body(map[string]any{"channel_id": id, "status": "paused"})})
		expect(t, res, http.StatusOK, "")
		if got := deliver(5); got != http.StatusNotFound {
			t.Fatalf("a paused connection answered %d", got)
		}
		res = b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/channel/delete?" + a.query("&channel_id="+id), Key: b.key})
		expect(t, res, http.StatusOK, "")
		if got := deliver(6); got != http.StatusNotFound {
			t.Fatalf("a deleted connection answered %d", got)
		}
	})

	if strings.Contains(logs.String(), token) || strings.Contains(logs.String(), hook.SecretToken) {
		t.Fatal("a log line holds the bot token or the secret")
	}
}

// An agent run's tool call waits for a click on the inline keyboard Telegram shows: Approve
// runs the tool and the run's answer follows in the chat; Reject runs nothing.
func TestTelegramApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, button, answer string
		deals                int
	}{
		{"Approve", "a:", "Done: the deal is created.", 1},
		{"Reject", "r:", "Done: nothing was created.", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "agent"})
			fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: tc.answer}}})
			tg := telegramtest.New(t, "42:approval-token")
			a.createChannel(t, map[string]any{"type": "telegram", "api_base_url": tg.URL, "credentials": map[string]any{"bot_token": tg.Token}})
			ctx := context.Background()
			if status, _, err := tg.Deliver(ctx, telegramtest.TextUpdate(1, 77, telegramtest.Alice, "Create a deal for Acme")); err != nil || status != http.StatusOK {
				t.Fatalf("the message: %d %v", status, err)
			}
			waitFor(t, "the approval asked", func() (bool, any) {
				sent := tg.Sent()
				return len(sent) > 0 && sent[len(sent)-1].Params["reply_markup"] != "", sentTexts(tg)
			})
			var keyboard struct {
				Rows [][]struct {
					Text string `json:"text"`
					Data string `json:"callback_data"`
				} `json:"inline_keyboard"`
			}
			asked := tg.Sent()[len(tg.Sent())-1]
			if err := asked.Decode("reply_markup", &keyboard); err != nil || len(keyboard.Rows) != 1 || len(keyboard.Rows[0]) != 2 ||
				!strings.Contains(asked.Params["text"], "create_deal") {
				t.Fatalf("the approval %+v (%v)", asked.Params, err)
			}
			var data string
			for _, button := range keyboard.Rows[0] {
				if strings.HasPrefix(button.Data, tc.button) {
					data = button.Data
				}
			}
			if data == "" {
				t.Fatalf("no %s button in %+v", tc.name, keyboard)
			}
			if status, _, err := tg.Deliver(ctx, telegramtest.ClickUpdate(2, 77, telegramtest.Alice, data)); err != nil || status != http.StatusOK {
				t.Fatalf("the click: %d %v", status, err)
			}
			waitFor(t, "the run's answer", func() (bool, any) {
				sent := tg.Sent()
				return strings.Contains(sent[len(sent)-1].Params["text"], tc.answer), sentTexts(tg)
			})
			res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
			expect(t, res, http.StatusOK, "")
			if deals := res.JSON(t)["deals"].([]any); len(deals) != tc.deals {
				t.Fatalf("%d deals, want %d", len(deals), tc.deals)
			}
		})
	}
}

// The agent's rate limit counts a platform user's messages as it counts an end user's on its
// page: past it, the user is told the agent's message instead of an answer.
func TestChannelRateLimit(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard", "ratelimit_requests": 1, "ratelimit_seconds": 3600,
		"ratelimit_message": "Easy there: one question an hour."})
	fake.Set(providertest.Behavior{Reply: "The one answer."})
	tg := telegramtest.New(t, "9:limit-token")
	a.createChannel(t, map[string]any{"type": "telegram", "api_base_url": tg.URL, "credentials": map[string]any{"bot_token": tg.Token}})
	for id := 1; id <= 2; id++ {
		if status, _, err := tg.Deliver(context.Background(), telegramtest.TextUpdate(id, 5, telegramtest.Alice, "Question")); err != nil || status != http.StatusOK {
			t.Fatalf("message %d: %d %v", id, status, err)
		}
		waitFor(t, "the answer", func() (bool, any) { return len(tg.Sent()) == id, sentTexts(tg) })
	}
	if got := sentTexts(tg); got[0] != "The one answer." || got[1] != "Easy there: one question an hour." || len(fake.Requests()) != 1 {
		t.Fatalf("sent %q after %d model calls", got, len(fake.Requests()))
	}
}

// A workflow's send_message with a channel_id posts in the conversation's chat and delivers the
// message to the conversation on the platform, once however often its run is retried: the
// delivery done again under the action's key (a run retried after a crash between the delivery
// and the run's record) sends nothing more.
func TestWorkflowPostsToAChannel(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "Hello."})
	tg := telegramtest.New(t, "11:workflow-token")
	channel := a.createChannel(t, map[string]any{"type": "telegram", "api_base_url": tg.URL, "credentials": map[string]any{"bot_token": tg.Token}})
	if status, _, err := tg.Deliver(context.Background(), telegramtest.TextUpdate(1, 31, telegramtest.Alice, "Hi")); err != nil || status != http.StatusOK {
		t.Fatalf("the message: %d %v", status, err)
	}
	waitFor(t, "the answer", func() (bool, any) { return len(tg.Sent()) == 1, sentTexts(tg) })
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/readall?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	chatID := res.JSON(t)["chats"].([]any)[0].(map[string]any)["uuid"].(string)
	res = b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(map[string]any{
		"name": "Shipping notice", "trigger_type": "manual", "actions": []map[string]any{{"type": "send_message",
			"params": map[string]any{"message": "Your order has shipped.", "channel_id": channel["id"], "chat_id": chatID}}}})})
	expect(t, res, http.StatusOK, "")
	workflowID := res.JSON(t)["workflow"].(map[string]any)["uuid"].(string)
	res = b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/workflow/run", Key: b.key, Body: a.body(map[string]any{"workflow_id": workflowID})})
	expect(t, res, http.StatusOK, "")
	runID := res.JSON(t)["run"].(map[string]any)["uuid"].(string)
	waitFor(t, "the workflow's message", func() (bool, any) { return len(tg.Sent()) == 2, sentTexts(tg) })
	if sent := tg.Sent()[1]; sent.Params["chat_id"] != "31" || sent.Params["text"] != "Your order has shipped." {
		t.Fatalf("sent %+v", sent.Params)
	}
	history := a.history(t, chatID, "")["conversation"].([]any)
	if last := history[len(history)-1].(map[string]any); last["content"] != "Your order has shipped." || last["role"] != "agent" {
		t.Fatalf("the chat ends with %v", last)
	}
	d, err := b.app.Domain()
	if err != nil {
		t.Fatal(err)
	}
	ctx, channelID := context.Background(), channel["id"].(string)
	bot, err := b.agents.Get(ctx, b.project.ID, a.botID)
	if err != nil {
		t.Fatal(err)
	}
	// The run's first action, done again: its key is the run's id and the action's index.
	if err := d.Channels.Post(ctx, b.project.ID, bot.ID, channelID, chatID, "Your order has shipped.", runID+":0"); err != nil {
		t.Fatal(err)
	}
	if err := d.Channels.Post(ctx, b.project.ID, bot.ID, channelID, chatID, "Your parcel was delivered.", "another-run:0"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next message", func() (bool, any) {
		got := sentTexts(tg)
		return got[len(got)-1] == "Your parcel was delivered.", got
	})
	if got := sentTexts(tg); len(got) != 3 {
		t.Fatalf("Telegram got %q: the delivery done again under its key was sent again", got)
	}
}

// A message the agent cannot answer however often it is tried (its provider down) is not left
// unanswered: after the last attempt the user is told. A failed attempt before the last tells
// the user nothing: a message whose provider comes back in time gets its answer alone.
func TestChannelAnswerGivenUp(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Status: http.StatusServiceUnavailable})
	tg := telegramtest.New(t, "13:down-token")
	a.createChannel(t, map[string]any{"type": "telegram", "api_base_url": tg.URL, "credentials": map[string]any{"bot_token": tg.Token}})
	if status, _, err := tg.Deliver(context.Background(), telegramtest.TextUpdate(1, 8, telegramtest.Alice, "Anyone there?")); err != nil || status != http.StatusOK {
		t.Fatalf("the message: %d %v", status, err)
	}
	waitFor(t, "the user told", func() (bool, any) { return len(tg.Sent()) == 1, sentTexts(tg) })
	if got := sentTexts(tg)[0]; !strings.HasPrefix(got, "Sorry, the agent could not answer this time") || len(fake.Requests()) < 2 {
		t.Fatalf("sent %q after %d model calls", got, len(fake.Requests()))
	}
	// More failures than one attempt's provider retries: the message's first attempt fails.
	fake.Set(providertest.Behavior{Reply: "Back now.", FailTimes: 4})
	if status, _, err := tg.Deliver(context.Background(), telegramtest.TextUpdate(2, 8, telegramtest.Alice, "Hello?")); err != nil || status != http.StatusOK {
		t.Fatalf("the message: %d %v", status, err)
	}
	waitFor(t, "the answer once the provider is back", func() (bool, any) { return len(tg.Sent()) == 2, sentTexts(tg) })
	if got := sentTexts(tg)[1]; got != "Back now." {
		t.Fatalf("a message whose first attempt failed got %q, want the agent's answer", got)
	}
}
