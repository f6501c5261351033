package api_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/channels/slack"
	"github.com/agentplane/agentplane/shared/adapters/channels/slack/slacktest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// slackSecret is the signing secret of the tests' Slack app.
const slackSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// connectSlack connects the agent of a to the Slack workspace srv plays and returns the
// connection's webhook_url, having checked that the connection checked the bot token.
func (a chatAPI) connectSlack(t *testing.T, srv *slacktest.Server) string {
	t.Helper()
	ch := a.createChannel(t, map[string]any{"type": "slack", "name": "Support app", "api_base_url": srv.URL,
		"credentials": map[string]any{"bot_token": slacktest.Token, "signing_secret": slackSecret}})
	if ch["webhook_url"] != a.b.client.URL+"/hooks/slack/"+ch["id"].(string) || ch["status"] != "active" {
		t.Fatalf("connection %v", ch)
	}
	if calls := srv.Calls(); len(calls) != 1 || calls[0].Path != "/api/auth.test" || calls[0].Token != slacktest.Token {
		t.Fatalf("Slack saw %+v, want the bot token checked with auth.test", calls)
	}
	return ch["webhook_url"].(string)
}

// deliverSlack posts d to hook as Slack does, signed with secret at time at (unsigned when
// secret is ""), and returns the status and body answered.
func deliverSlack(t *testing.T, hook string, d slacktest.Delivery, secret string, at time.Time) (int, string) {
	t.Helper()
	req, err := d.Request(context.Background(), hook, secret, at)
	if err != nil {
		t.Fatal(err)
	}
	if secret == "" {
		req.Header.Del("X-Slack-Signature")
		req.Header.Del("X-Slack-Request-Timestamp")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// slackPosts are the chat.postMessage calls Slack took (answered 200 and ok).
func slackPosts(srv *slacktest.Server) []slacktest.Call {
	return slices.DeleteFunc(srv.Sent(), func(c slacktest.Call) bool { return c.Status != http.StatusOK })
}

// waitSlackPosts waits until Slack took n posts, and returns them.
func waitSlackPosts(t *testing.T, srv *slacktest.Server, n int) []slacktest.Call {
	t.Helper()
	waitFor(t, "Slack's posts", func() (bool, any) { return len(slackPosts(srv)) >= n, slackPosts(srv) })
	return slackPosts(srv)
}

// mention is a user's mention of the app's bot in channel C1, the message ts, in thread (""
// for none).
func mention(eventID, text, ts, thread string) slacktest.Delivery {
	return slacktest.Event(slacktest.Message{EventID: eventID, Type: "app_mention", Channel: "C1", User: slacktest.UserID,
		Text: "<@" + slacktest.BotUserID + "> " + text, TS: ts, ThreadTS: thread})
}

// A Slack app is connected in one call (its bot token checked), and Slack's users talk to the
// agent: a mention in a channel and a direct message are answered in their thread, in mrkdwn;
// Slack's URL check is answered with its challenge; a call not signed with the signing secret,
// or signed too long ago, is refused (401) and runs nothing; Slack's retries, a replayed call
// and the bot's own messages are not answered; an outage of Slack's API (503, then 429 with
// Retry-After) delays an answer and loses none. The token and the secret appear in no log line.
func TestSlackChannel(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	_, a, fake := agentSetup(t, map[string]any{"name": "Helper", "reasoning_type": "standard"}, withLogs(logs))
	fake.Set(providertest.Behavior{Reply: "Hello from the **agent**, see [the guide](https://docs.example.com/start?a=1&b=2)."})
	const answer = "Hello from the *agent*, see <https://docs.example.com/start?a=1&b=2|the guide>."
	srv := slacktest.Start(t)
	hook := a.connectSlack(t, srv)

	t.Run("MessagesAreAnsweredInTheirThread", func(t *testing.T) {
		cases := []struct {
			name            string
			delivery        slacktest.Delivery
			asked           string
			channel, thread string
		}{
			{"a mention in a channel", mention("Ev001", "what is new?", "1700000001.000100", ""),
				"what is new?", "C1", "1700000001.000100"},
			{"a mention in a thread", mention("Ev002", "and since Monday?", "1700000002.000100", "1700000000.000900"),
				"and since Monday?", "C1", "1700000000.000900"},
			{"a direct message", slacktest.Event(slacktest.Message{EventID: "Ev003", Channel: "D1", ChannelType: "im",
				User: slacktest.UserID, Text: "hello in private", TS: "1700000003.000100"}),
				"hello in private", "D1", "1700000003.000100"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if status, body := deliverSlack(t, hook, c.delivery, slackSecret, time.Now()); status != http.StatusOK || body != "" {
					t.Fatalf("the webhook answered %d %q", status, body)
				}
				posts := waitSlackPosts(t, srv, i+1)
				got := posts[i]
				if got.Token != slacktest.Token || got.Params["channel"] != c.channel || got.Params["thread_ts"] != c.thread || got.Params["text"] != answer {
					t.Fatalf("Slack took %+v, want %q in %s thread %s", got, answer, c.channel, c.thread)
				}
				reqs := fake.Requests()
				msgs := reqs[len(reqs)-1].Messages
				if asked := msgs[len(msgs)-1].Content; !strings.Contains(asked, c.asked) || strings.Contains(asked, "<@") {
					t.Fatalf("the model was asked %q, want %q without the mention", asked, c.asked)
				}
			})
		}
	})

	t.Run("URLCheckRefusalsAndRepeatsAnswerNothing", func(t *testing.T) {
		posts, asked := len(slackPosts(srv)), len(fake.Requests())
		botMessage := slacktest.Event(slacktest.Message{EventID: "Ev010", Subtype: "bot_message", Channel: "C1", ChannelType: "channel",
			BotID: slacktest.BotID, Text: "Hello from the agent", TS: "1700000010.000100"})
		edited := slacktest.Event(slacktest.Message{EventID: "Ev011", Subtype: "message_changed", Channel: "C1", ChannelType: "channel",
			TS: "1700000011.000100"})
		retry := mention("Ev001", "what is new?", "1700000001.000100", "")
		retry.Retry = 1
		forged := mention("Ev012", "forged", "1700000012.000100", "")
		cases := []struct {
			name     string
			delivery slacktest.Delivery
			secret   string
			at       time.Time
			status   int
			body     string
		}{
			{"the URL check", slacktest.URLVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"), slackSecret, time.Now(),
				http.StatusOK, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"},
			{"the URL check signed with another secret", slacktest.URLVerification("challenge"), "another-secret", time.Now(),
				http.StatusUnauthorized, ""},
			{"a message signed with another secret", forged, "another-secret", time.Now(), http.StatusUnauthorized, ""},
			{"an unsigned message", forged, "", time.Now(), http.StatusUnauthorized, ""},
			{"a message signed six minutes ago", forged, slackSecret, time.Now().Add(-6 * time.Minute), http.StatusUnauthorized, ""},
			{"a message signed six minutes ahead", forged, slackSecret, time.Now().Add(6 * time.Minute), http.StatusUnauthorized, ""},
			{"Slack's retry of an answered message", retry, slackSecret, time.Now(), http.StatusOK, ""},
			{"a replay of an answered message, signed a minute ago", mention("Ev001", "what is new?", "1700000001.000100", ""),
				slackSecret, time.Now().Add(-time.Minute), http.StatusOK, ""},
			{"the bot's own message", botMessage, slackSecret, time.Now(), http.StatusOK, ""},
			{"an edit", edited, slackSecret, time.Now(), http.StatusOK, ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				status, body := deliverSlack(t, hook, c.delivery, c.secret, c.at)
				if status != c.status || (c.status == http.StatusOK && body != c.body) {
					t.Fatalf("the webhook answered %d %q, want %d %q", status, body, c.status, c.body)
				}
			})
		}
		// A message after them is answered, and it alone.
		if status, _ := deliverSlack(t, hook, mention("Ev013", "one more thing", "1700000013.000100", ""), slackSecret, time.Now()); status != http.StatusOK {
			t.Fatalf("the webhook answered %d", status)
		}
		got := waitSlackPosts(t, srv, posts+1)
		if len(got) != posts+1 || got[posts].Params["thread_ts"] != "1700000013.000100" {
			t.Fatalf("Slack took %+v, want only the answer to the last message", got[posts:])
		}
		if n := len(fake.Requests()); n != asked+1 {
			t.Fatalf("the model was asked %d times, want once (the last message)", n-asked)
		}
	})

	t.Run("AnOutageDelaysButLosesNothing", func(t *testing.T) {
		posts := len(slackPosts(srv))
		srv.Fail(1, http.StatusServiceUnavailable, 0)
		srv.Fail(1, http.StatusTooManyRequests, time.Second)
		if status, _ := deliverSlack(t, hook, mention("Ev020", "are you there?", "1700000020.000100", ""), slackSecret, time.Now()); status != http.StatusOK {
			t.Fatalf("the webhook answered %d", status)
		}
		got := waitSlackPosts(t, srv, posts+1)
		if len(got) != posts+1 || got[posts].Params["thread_ts"] != "1700000020.000100" || got[posts].Params["text"] != answer {
			t.Fatalf("Slack took %+v, want the answer once", got[posts:])
		}
		var statuses []int
		for _, c := range srv.Sent() {
			if c.Params["thread_ts"] == "1700000020.000100" {
				statuses = append(statuses, c.Status)
			}
		}
		if want := []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusOK}; !slices.Equal(statuses, want) {
			t.Fatalf("Slack answered the posts %v, want %v", statuses, want)
		}
	})

	if l := logs.String(); strings.Contains(l, slacktest.Token) || strings.Contains(l, slackSecret) {
		t.Fatal("a log line holds the bot token or the signing secret")
	}
}

// An agent's tool call that waits for approval is asked in the Slack thread with an Approve and
// a Reject button; a click on Approve resumes the run, which creates the deal and answers in
// the thread; a click on Reject resumes it without the deal.
func TestSlackChannelApproval(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		action string
		reply  string
		deals  int
	}{
		{"approved", slack.ActionApprove, "Done: the deal is created.", 1},
		{"rejected", slack.ActionReject, "Understood, I did not create it.", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			logs := &syncBuffer{}
			b, a, fake := agentSetup(t, map[string]any{"name": "Sales", "reasoning_type": "agent"}, withLogs(logs))
			fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: c.reply}}})
			srv := slacktest.Start(t)
			hook := a.connectSlack(t, srv)
			const thread = "1700000030.000100"
			if status, _ := deliverSlack(t, hook, mention("Ev030", "Create a deal for Acme", thread, ""), slackSecret, time.Now()); status != http.StatusOK {
				t.Fatalf("the webhook answered %d", status)
			}
			asked := waitSlackPosts(t, srv, 1)
			if ask := "The agent wants to run *create_deal*. Allow it?"; asked[0].Params["text"] != ask {
				t.Fatalf("Slack took %+v, want the approval", asked)
			}
			buttons := asked[0].Blocks[1]["elements"].([]any)
			approve, reject := buttons[0].(map[string]any), buttons[1].(map[string]any)
			exec := approve["value"].(string)
			for _, p := range asked {
				if p.Params["channel"] != "C1" || p.Params["thread_ts"] != thread {
					t.Fatalf("posted to %+v, want the thread", p.Params)
				}
			}
			if approve["action_id"] != slack.ActionApprove || reject["action_id"] != slack.ActionReject || reject["value"] != exec || !strings.HasPrefix(exec, "ch-") {
				t.Fatalf("buttons %v", buttons)
			}
			deals := func() []any {
				res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
				expect(t, res, http.StatusOK, "")
				return res.JSON(t)["deals"].([]any)
			}
			if n := len(deals()); n != 0 {
				t.Fatalf("%d deals before the click", n)
			}

			click := slacktest.BlockActions(slacktest.Click{User: slacktest.UserID, UserName: "ada", Channel: "C1",
				MessageTS: "1700000000.100002", ThreadTS: thread, ActionID: c.action, Value: exec,
				ActionTS: "1700000031.000200", TriggerID: "13345224609.738474920.8088930838d88f008e0"})
			if status, body := deliverSlack(t, hook, click, slackSecret, time.Now()); status != http.StatusOK || body != "" {
				t.Fatalf("the click was answered %d %q", status, body)
			}
			done := waitSlackPosts(t, srv, 2)
			if len(done) != 2 || done[1].Params["text"] != c.reply || done[1].Params["channel"] != "C1" || done[1].Params["thread_ts"] != thread {
				t.Fatalf("Slack took %+v after the click, want %q in the thread", done[1:], c.reply)
			}
			if n := len(deals()); n != c.deals {
				t.Fatalf("%d deals after the click, want %d", n, c.deals)
			}
			if l := logs.String(); strings.Contains(l, slacktest.Token) || strings.Contains(l, slackSecret) {
				t.Fatal("a log line holds the bot token or the signing secret")
			}
		})
	}
}
