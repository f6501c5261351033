package slack_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/channels/slack"
	"github.com/agentplane/agentplane/shared/adapters/channels/slack/slacktest"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

const secret = "8f742231b10e8888abcd99yyyzzz85a5"

var now = time.Unix(1700000300, 0)

func link(apiURL string) channels.Link {
	return channels.Link{ID: "conn1", APIBaseURL: apiURL, Credentials: channels.Credentials{
		slack.CredBotToken: slacktest.Token, slack.CredSigningSecret: secret}}
}

// request is d as the adapter is handed it, signed with secret at signedAt, arriving at now.
func request(d slacktest.Delivery, secret string, signedAt time.Time) channels.Request {
	return channels.Request{Method: http.MethodPost, Header: d.Header(secret, signedAt), Body: d.Body, Now: now}
}

// A call is taken only when its v0 signature is the signing secret's HMAC of its timestamp and
// body, and its timestamp is within five minutes of its arrival.
func TestReceiveSignature(t *testing.T) {
	t.Parallel()
	d := slacktest.Event(slacktest.Message{EventID: "Ev1", Channel: "D1", ChannelType: "im", User: "U1",
		Text: "hi", TS: "1700000000.000100"})
	unsigned := func(r channels.Request) channels.Request {
		r.Header = r.Header.Clone()
		r.Header.Del("X-Slack-Signature")
		return r
	}
	undated := func(r channels.Request) channels.Request {
		r.Header = r.Header.Clone()
		r.Header.Del("X-Slack-Request-Timestamp")
		return r
	}
	tampered := func(r channels.Request) channels.Request {
		r.Body = append([]byte(nil), r.Body...)
		r.Body[len(r.Body)-2] = ' '
		return r
	}
	cases := []struct {
		name string
		req  channels.Request
		code string
	}{
		{"signed now", request(d, secret, now), ""},
		{"signed 4 minutes before arrival", request(d, secret, now.Add(-4*time.Minute)), ""},
		{"another secret", request(d, "another-secret", now), "slack_signature_invalid"},
		{"body changed after signing", tampered(request(d, secret, now)), "slack_signature_invalid"},
		{"signed 6 minutes before arrival", request(d, secret, now.Add(-6*time.Minute)), "slack_timestamp_stale"},
		{"signed 6 minutes after arrival", request(d, secret, now.Add(6*time.Minute)), "slack_timestamp_stale"},
		{"no signature", unsigned(request(d, secret, now)), "slack_signature_missing"},
		{"no timestamp", undated(request(d, secret, now)), "slack_signature_missing"},
	}
	p := slack.New(http.DefaultClient)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Receive(t.Context(), link(""), c.req)
			if c.code == "" {
				if err != nil || len(got.Messages) != 1 || got.Answer.Status != http.StatusOK {
					t.Fatalf("a call Slack signed: %+v, %v", got, err)
				}
				return
			}
			if e := apperr.As(err); e.Kind != apperr.Unauthorized || e.Code != c.code {
				t.Fatalf("error %v, want Unauthorized %s", err, c.code)
			}
			if len(got.Messages) != 0 {
				t.Fatalf("a refused call was read: %+v", got.Messages)
			}
		})
	}
}

// Slack's check of the request URL is answered 200 with its challenge.
func TestReceiveURLVerification(t *testing.T) {
	t.Parallel()
	got, err := slack.New(http.DefaultClient).Receive(t.Context(), link(""),
		request(slacktest.URLVerification("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"), secret, now))
	want := channels.Answer{Status: http.StatusOK, ContentType: "text/plain",
		Body: []byte("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P")}
	if err != nil || !reflect.DeepEqual(got.Answer, want) || len(got.Messages) != 0 {
		t.Fatalf("answer %+v (%q), %v", got, got.Answer.Body, err)
	}
}

// Events are read as the messages to answer: a thread is one conversation, the bot's mention is
// left out of the text, the bot's own messages are marked, and what carries nothing to answer
// is answered 200 with no message.
func TestReceiveEvents(t *testing.T) {
	t.Parallel()
	reply := func(channel, thread string) channels.Target {
		return channels.Target{slack.TargetChannel: channel, slack.TargetThreadTS: thread}
	}
	cases := []struct {
		name string
		d    slacktest.Delivery
		want []channels.Inbound
	}{
		{"a mention in a channel starts a thread",
			slacktest.Event(slacktest.Message{EventID: "Ev01", Type: "app_mention", Channel: "C1", User: "U1",
				Text: "<@U0BOT> what is our refund policy?", TS: "1700000000.000100"}),
			[]channels.Inbound{{ID: "Ev01", Conversation: "C1:1700000000.000100", User: "U1",
				Text: "what is our refund policy?", Reply: reply("C1", "1700000000.000100")}}},
		{"a mention in a thread belongs to the thread",
			slacktest.Event(slacktest.Message{EventID: "Ev02", Type: "app_mention", Channel: "C1", User: "U2",
				Text: "and for <@U0BOT> gift cards?", TS: "1700000050.000200", ThreadTS: "1700000000.000100"}),
			[]channels.Inbound{{ID: "Ev02", Conversation: "C1:1700000000.000100", User: "U2",
				Text: "and for gift cards?", Reply: reply("C1", "1700000000.000100")}}},
		{"a direct message",
			slacktest.Event(slacktest.Message{EventID: "Ev03", Channel: "D1", ChannelType: "im", User: "U1",
				Text: "hello", TS: "1700000100.000300"}),
			[]channels.Inbound{{ID: "Ev03", Conversation: "D1:1700000100.000300", User: "U1", Text: "hello",
				Reply: reply("D1", "1700000100.000300")}}},
		{"a retry carries the event's id",
			withRetry(slacktest.Event(slacktest.Message{EventID: "Ev03", Channel: "D1", ChannelType: "im",
				User: "U1", Text: "hello", TS: "1700000100.000300"}), 1),
			[]channels.Inbound{{ID: "Ev03", Conversation: "D1:1700000100.000300", User: "U1", Text: "hello",
				Reply: reply("D1", "1700000100.000300")}}},
		{"a file shared with a message",
			slacktest.Event(slacktest.Message{EventID: "Ev04", Subtype: "file_share", Channel: "D1",
				ChannelType: "im", User: "U1", Text: "see this", TS: "1700000200.000400"}),
			[]channels.Inbound{{ID: "Ev04", Conversation: "D1:1700000200.000400", User: "U1", Text: "see this",
				Reply: reply("D1", "1700000200.000400")}}},
		{"the bot's own answer",
			slacktest.Event(slacktest.Message{EventID: "Ev05", Channel: "C1", ChannelType: "channel",
				User: slacktest.BotUserID, BotID: slacktest.BotID, Text: "Our policy is…", TS: "1700000060.000500",
				ThreadTS: "1700000000.000100"}),
			[]channels.Inbound{{ID: "Ev05", Conversation: "C1:1700000000.000100", User: slacktest.BotUserID,
				Text: "Our policy is…", FromBot: true, Reply: reply("C1", "1700000000.000100")}}},
		{"another bot's message",
			slacktest.Event(slacktest.Message{EventID: "Ev06", Subtype: "bot_message", Channel: "D1",
				ChannelType: "im", Text: "deploy done", TS: "1700000300.000600"}),
			[]channels.Inbound{{ID: "Ev06", Conversation: "D1:1700000300.000600", Text: "deploy done",
				FromBot: true, Reply: reply("D1", "1700000300.000600")}}},
		{"a channel message that mentions the bot is left to its app_mention",
			slacktest.Event(slacktest.Message{EventID: "Ev07", Channel: "C1", ChannelType: "channel", User: "U1",
				Text: "<@U0BOT> hi", TS: "1700000400.000700"}),
			nil},
		{"an edit",
			slacktest.Event(slacktest.Message{EventID: "Ev08", Subtype: "message_changed", Channel: "D1",
				ChannelType: "im", TS: "1700000500.000800"}),
			nil},
		{"someone joining",
			slacktest.Event(slacktest.Message{EventID: "Ev09", Subtype: "channel_join", Channel: "C1",
				ChannelType: "channel", User: "U3", Text: "<@U3> has joined the channel", TS: "1700000600.000900"}),
			nil},
		{"an event of another type",
			slacktest.Event(slacktest.Message{EventID: "Ev10", Type: "reaction_added", User: "U1", TS: "1700000700.001000"}),
			nil},
	}
	p := slack.New(http.DefaultClient)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Receive(t.Context(), link(""), request(c.d, secret, now))
			if err != nil {
				t.Fatal(err)
			}
			if got.Answer.Status != http.StatusOK || len(got.Answer.Body) != 0 {
				t.Fatalf("answer %+v, want 200 and nothing", got.Answer)
			}
			if !reflect.DeepEqual(got.Messages, c.want) {
				t.Fatalf("messages\n%+v\nwant\n%+v", got.Messages, c.want)
			}
		})
	}
}

func withRetry(d slacktest.Delivery, n int) slacktest.Delivery {
	d.Retry = n
	return d
}

// A click on an approval button is read as the decision on the execution its value names, by
// the user who clicked, in the thread of the message.
func TestReceiveClick(t *testing.T) {
	t.Parallel()
	click := func(actionID string) slacktest.Delivery {
		return slacktest.BlockActions(slacktest.Click{User: "U1", UserName: "ada", Channel: "C1",
			MessageTS: "1700000060.000500", ThreadTS: "1700000000.000100", ActionID: actionID, Value: "exec-42",
			ActionTS: "1700000070.123456", TriggerID: "1234.5678.abcd"})
	}
	in := func(approve bool) []channels.Inbound {
		return []channels.Inbound{{ID: "action:1700000070.123456:1234.5678.abcd",
			Conversation: "C1:1700000000.000100", User: "U1", UserName: "ada",
			Decision: &channels.Decision{ExecutionID: "exec-42", Approve: approve},
			Reply:    channels.Target{slack.TargetChannel: "C1", slack.TargetThreadTS: "1700000000.000100"}}}
	}
	cases := []struct {
		name string
		d    slacktest.Delivery
		want []channels.Inbound
	}{
		{"approve", click(slack.ActionApprove), in(true)},
		{"reject", click(slack.ActionReject), in(false)},
		{"another app's button", click("open_ticket"), nil},
	}
	p := slack.New(http.DefaultClient)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := p.Receive(t.Context(), link(""), request(c.d, secret, now))
			if err != nil || got.Answer.Status != http.StatusOK {
				t.Fatalf("%+v, %v", got.Answer, err)
			}
			if !reflect.DeepEqual(got.Messages, c.want) {
				t.Fatalf("messages\n%+v\nwant\n%+v", got.Messages, c.want)
			}
		})
	}
}

// A correctly signed call whose body Slack would not send is refused as invalid.
func TestReceiveMalformed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		d    slacktest.Delivery
	}{
		{"not JSON", slacktest.Delivery{Body: []byte("event=1"), ContentType: "application/json"}},
		{"a form without payload", slacktest.Delivery{Body: []byte("command=%2Fask"),
			ContentType: "application/x-www-form-urlencoded"}},
		{"a payload that is not JSON", slacktest.Delivery{Body: []byte("payload=%7Bnope"),
			ContentType: "application/x-www-form-urlencoded"}},
	}
	p := slack.New(http.DefaultClient)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := p.Receive(t.Context(), link(""), request(c.d, secret, now)); apperr.As(err).Kind != apperr.Invalid {
				t.Fatalf("error %v, want Invalid", err)
			}
		})
	}
}

// The deliveries slacktest builds arrive over HTTP as Slack sends them: a handler that hands
// the call to Receive answers the URL check with its challenge and reads the message.
func TestReceiveOverHTTP(t *testing.T) {
	t.Parallel()
	p := slack.New(http.DefaultClient)
	got := make(chan []channels.Inbound, 1)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec, err := p.Receive(r.Context(), link(""), channels.Request{Method: r.Method, Header: r.Header,
			Query: r.URL.Query(), Body: body, Now: time.Now()})
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		got <- rec.Messages
		w.Header().Set("Content-Type", rec.Answer.ContentType)
		w.WriteHeader(rec.Answer.Status)
		_, _ = w.Write(rec.Answer.Body)
	}))
	t.Cleanup(hook.Close)
	deliver := func(d slacktest.Delivery) (int, string) {
		req, err := d.Request(t.Context(), hook.URL+"/hooks/slack/conn1", secret, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}

	if status, body := deliver(slacktest.URLVerification("challenge-123")); status != http.StatusOK || body != "challenge-123" {
		t.Fatalf("URL check answered %d %q", status, body)
	}
	<-got
	status, _ := deliver(slacktest.Event(slacktest.Message{EventID: "Ev1", Channel: "D1", ChannelType: "im",
		User: "U1", Text: "hi", TS: "1700000000.000100"}))
	if status != http.StatusOK {
		t.Fatalf("message answered %d", status)
	}
	if msgs := <-got; len(msgs) != 1 || msgs[0].ID != "Ev1" || msgs[0].Text != "hi" {
		t.Fatalf("message read %+v", msgs)
	}
}
