package discord_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/channels/discord"
	"github.com/agentplane/agentplane/shared/adapters/channels/discord/discordtest"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// now is when the tests' interactions arrive.
var now = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

// setup is the platform and a connection's link to a fresh local Discord.
func setup(t *testing.T) (*discord.Platform, *discordtest.Server, channels.Link) {
	t.Helper()
	s := discordtest.NewServer(t)
	link := channels.Link{ID: "conn-1", APIBaseURL: s.URL, Credentials: s.Credentials(),
		WebhookURL: "https://agents.example/hooks/discord/conn-1"}
	return discord.New(http.DefaultClient), s, link
}

// signed is body as Discord delivers it, signed at at.
func signed(s *discordtest.Server, body []byte, at time.Time) channels.Request {
	return channels.Request{Method: http.MethodPost, Header: s.Sign(body, at), Body: body, Now: now}
}

func TestReceiveVerifiesTheSignature(t *testing.T) {
	p, s, link := setup(t)
	other := discordtest.NewServer(t)
	ping := s.Ping().Body
	tests := []struct {
		name string
		req  channels.Request
		code string // "" for accepted
	}{
		{"signed by the application's key, just now", signed(s, ping, now), ""},
		{"signed 4 minutes ago", signed(s, ping, now.Add(-4*time.Minute)), ""},
		{"no signature headers", channels.Request{Method: http.MethodPost, Header: http.Header{}, Body: ping, Now: now}, "missing_signature"},
		{"no timestamp", func() channels.Request {
			r := signed(s, ping, now)
			r.Header.Del("X-Signature-Timestamp")
			return r
		}(), "missing_signature"},
		{"signature of another body", func() channels.Request {
			r := signed(s, ping, now)
			r.Body = s.Ping().Body
			return r
		}(), "invalid_signature"},
		{"signed by another key", signed(other, ping, now), "invalid_signature"},
		{"signature not hex", func() channels.Request {
			r := signed(s, ping, now)
			r.Header.Set("X-Signature-Ed25519", "not-hex")
			return r
		}(), "invalid_signature"},
		{"timestamp changed after signing", func() channels.Request {
			r := signed(s, ping, now)
			r.Header.Set("X-Signature-Timestamp", "1")
			return r
		}(), "invalid_signature"},
		{"signed 6 minutes ago (a replay)", signed(s, ping, now.Add(-6*time.Minute)), "stale_timestamp"},
		{"signed 6 minutes ahead", signed(s, ping, now.Add(6*time.Minute)), "stale_timestamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Receive(context.Background(), link, tt.req)
			if tt.code == "" {
				if err != nil {
					t.Fatalf("Receive: %v", err)
				}
				if string(got.Answer.Body) != `{"type":1}` {
					t.Fatalf("answer %s, want the PONG", got.Answer.Body)
				}
				return
			}
			e := apperr.As(err)
			if err == nil || e.Kind != apperr.Unauthorized || e.Code != tt.code {
				t.Fatalf("Receive = %+v, %v; want Unauthorized %s", got, err, tt.code)
			}
			if !reflect.DeepEqual(got, channels.Received{}) {
				t.Fatalf("a refused call brought %+v", got)
			}
		})
	}
}

func TestReceiveRefusesAConnectionWithoutAPublicKey(t *testing.T) {
	p, s, link := setup(t)
	link.Credentials["public_key"] = "zz"
	_, err := p.Receive(context.Background(), link, signed(s, s.Ping().Body, now))
	if e := apperr.As(err); e.Kind != apperr.Invalid || e.Details[0].Field != "public_key" {
		t.Fatalf("Receive with a broken public key = %v, want Invalid public_key", err)
	}
}

func TestReceivePingIsAnsweredPong(t *testing.T) {
	p, s, link := setup(t)
	got, err := p.Receive(context.Background(), link, signed(s, s.Ping().Body, now))
	if err != nil {
		t.Fatal(err)
	}
	want := channels.Received{Answer: channels.Answer{Status: 200, ContentType: "application/json", Body: []byte(`{"type":1}`)}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PING read as %+v (%s), want %+v", got, got.Answer.Body, want)
	}
}

func TestReceiveAsk(t *testing.T) {
	p, s, link := setup(t)
	tests := []struct {
		name string
		ask  discordtest.Ask
		want func(in discordtest.Interaction) channels.Inbound
	}{
		{
			name: "in a server, by a member with a display name",
			ask: discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "What is **new**?",
				User: discordtest.User{ID: "4000", Username: "ada", GlobalName: "Ada Lovelace"}},
			want: func(in discordtest.Interaction) channels.Inbound {
				return channels.Inbound{ID: in.ID, Conversation: "2000", User: "4000", UserName: "Ada Lovelace",
					Text: "What is **new**?", Reply: channels.Target{"application_id": s.ApplicationID, "token": in.Token}}
			},
		},
		{
			name: "in a direct message, by a user with a username only",
			ask: discordtest.Ask{ChannelID: "2001", Question: "hello",
				User: discordtest.User{ID: "4001", Username: "grace"}},
			want: func(in discordtest.Interaction) channels.Inbound {
				return channels.Inbound{ID: in.ID, Conversation: "2001", User: "4001", UserName: "grace",
					Text: "hello", Reply: channels.Target{"application_id": s.ApplicationID, "token": in.Token}}
			},
		},
		{
			name: "by a bot",
			ask: discordtest.Ask{ChannelID: "2002", GuildID: "3000", Question: "ping",
				User: discordtest.User{ID: "4002", Username: "other-bot", Bot: true}},
			want: func(in discordtest.Interaction) channels.Inbound {
				return channels.Inbound{ID: in.ID, Conversation: "2002", User: "4002", UserName: "other-bot",
					Text: "ping", FromBot: true, Reply: channels.Target{"application_id": s.ApplicationID, "token": in.Token}}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := s.Ask(tt.ask)
			got, err := p.Receive(context.Background(), link, signed(s, in.Body, now))
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Answer.Body) != `{"type":5}` || got.Answer.Status != 200 {
				t.Fatalf("answer %d %s, want 200 DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE", got.Answer.Status, got.Answer.Body)
			}
			if want := []channels.Inbound{tt.want(in)}; !reflect.DeepEqual(got.Messages, want) {
				t.Fatalf("messages\n got %+v\nwant %+v", got.Messages, want)
			}
			again, err := p.Receive(context.Background(), link, signed(s, in.Body, now.Add(time.Second)))
			if err != nil || again.Messages[0].ID != got.Messages[0].ID {
				t.Fatalf("the same interaction delivered again read as %+v, %v; want the same ID", again.Messages, err)
			}
		})
	}
}

func TestReceiveAnotherCommandIsToldOnlyAskIsAnswered(t *testing.T) {
	p, s, link := setup(t)
	body := strings.Replace(string(s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000",
		User: discordtest.User{ID: "4000", Username: "ada"}}).Body), `"name":"ask"`, `"name":"weather"`, 1)
	got, err := p.Receive(context.Background(), link, signed(s, []byte(body), now))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":4,"data":{"tts":false,"content":"This app answers /ask only.","components":null,"embeds":null,"flags":64}}`
	if string(got.Answer.Body) != want || len(got.Messages) != 0 {
		t.Fatalf("another command read as %s %+v, want an ephemeral note and no message", got.Answer.Body, got.Messages)
	}
}

func TestReceiveClick(t *testing.T) {
	p, s, link := setup(t)
	clicker := discordtest.User{ID: "4000", Username: "ada", GlobalName: "Ada"}
	tests := []struct {
		name     string
		customID string
		want     *channels.Decision
	}{
		{"Approve", "a:exec-42", &channels.Decision{ExecutionID: "exec-42", Approve: true}},
		{"Reject", "r:exec-42", &channels.Decision{ExecutionID: "exec-42", Approve: false}},
		{"a button that is not an approval", "menu:next", nil},
		{"an approval prefix without an execution", "a:", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := s.Click(discordtest.Click{ChannelID: "2000", GuildID: "3000", User: clicker, CustomID: tt.customID})
			got, err := p.Receive(context.Background(), link, signed(s, in.Body, now))
			if err != nil {
				t.Fatal(err)
			}
			if string(got.Answer.Body) != `{"type":6}` {
				t.Fatalf("answer %s, want DEFERRED_UPDATE_MESSAGE", got.Answer.Body)
			}
			var want []channels.Inbound
			if tt.want != nil {
				want = []channels.Inbound{{ID: in.ID, Conversation: "2000", User: "4000", UserName: "Ada",
					Decision: tt.want, Reply: channels.Target{"application_id": s.ApplicationID, "token": in.Token}}}
			}
			if !reflect.DeepEqual(got.Messages, want) {
				t.Fatalf("messages\n got %+v\nwant %+v", got.Messages, want)
			}
		})
	}
}

func TestSend(t *testing.T) {
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 60) // 3,420 characters
	tests := []struct {
		name string
		out  func(to channels.Target) channels.Outgoing
		want []discordtest.Message
	}{
		{
			name: "Markdown and links as they are",
			out: func(to channels.Target) channels.Outgoing {
				return channels.Outgoing{To: to, Text: "**Yes.** See [the docs](https://docs.example/a) @everyone"}
			},
			want: []discordtest.Message{{Content: "**Yes.** See [the docs](https://docs.example/a) @everyone"}},
		},
		{
			name: "past 2,000 characters, in several messages",
			out:  func(to channels.Target) channels.Outgoing { return channels.Outgoing{To: to, Text: long} },
			want: func() []discordtest.Message {
				var out []discordtest.Message
				for _, piece := range channels.Split(long, 2000) {
					out = append(out, discordtest.Message{Content: piece})
				}
				return out
			}(),
		},
		{
			name: "an approval after the text, with its buttons",
			out: func(to channels.Target) channels.Outgoing {
				return channels.Outgoing{To: to, Text: "I need to look this up.",
					Approval: &channels.Approval{ExecutionID: "exec-42", Tool: "web_search"}}
			},
			want: []discordtest.Message{
				{Content: "I need to look this up."},
				{Content: "The agent asks to use the tool `web_search`. Allow it?", Buttons: []discordtest.Button{
					{Label: "Approve", Style: 3, CustomID: "a:exec-42"},
					{Label: "Reject", Style: 4, CustomID: "r:exec-42"},
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s, link := setup(t)
			in := s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "q", User: discordtest.User{ID: "4000", Username: "ada"}})
			to := channels.Target{"application_id": s.ApplicationID, "token": in.Token}
			if err := p.Send(context.Background(), link, tt.out(to)); err != nil {
				t.Fatal(err)
			}
			for i := range tt.want {
				tt.want[i].ApplicationID, tt.want[i].Token = s.ApplicationID, in.Token
				tt.want[i].AllowedMentions = map[string]any{"parse": []any{}, "replied_user": false}
			}
			if got := s.Sent(); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Discord got\n%+v\nwant\n%+v", got, tt.want)
			}
			for _, c := range s.Calls() {
				if c.Method != http.MethodPost || c.Path != "/webhooks/"+s.ApplicationID+"/"+in.Token ||
					c.Query.Get("wait") != "true" || c.Authorization != "" {
					t.Fatalf("call %s %s?%s (Authorization %q), want POST /webhooks/{application_id}/{token}?wait=true without the bot token",
						c.Method, c.Path, c.Query.Encode(), c.Authorization)
				}
			}
		})
	}
}

func TestSendApprovalThenClickReadsTheDecision(t *testing.T) {
	p, s, link := setup(t)
	ask := s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "q", User: discordtest.User{ID: "4000", Username: "ada"}})
	err := p.Send(context.Background(), link, channels.Outgoing{
		To:       channels.Target{"application_id": s.ApplicationID, "token": ask.Token},
		Approval: &channels.Approval{ExecutionID: "65a1f0c2e4b0a1b2c3d4e5f6", Tool: "send_email"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false} {
		button := s.Sent()[0].Buttons[i]
		click := s.Click(discordtest.Click{ChannelID: "2000", GuildID: "3000", CustomID: button.CustomID,
			User: discordtest.User{ID: "4001", Username: "grace"}})
		got, err := p.Receive(context.Background(), link, signed(s, click.Body, now))
		if err != nil {
			t.Fatal(err)
		}
		if d := got.Messages[0].Decision; d == nil || d.ExecutionID != "65a1f0c2e4b0a1b2c3d4e5f6" || d.Approve != want || got.Messages[0].User != "4001" {
			t.Fatalf("a click on %q read as %+v, want the decision Approve=%v by 4001", button.Label, got.Messages[0], want)
		}
	}
}

func TestSendFailures(t *testing.T) {
	tests := []struct {
		name    string
		fail    func(s *discordtest.Server)
		to      func(s *discordtest.Server, token string) channels.Target
		retry   bool
		after   time.Duration
		errSays string
	}{
		{name: "429 retries after Discord's retry_after",
			fail:  func(s *discordtest.Server) { s.Fail(1, http.StatusTooManyRequests, 1500*time.Millisecond) },
			retry: true, after: 1500 * time.Millisecond, errSays: "You are being rate limited."},
		{name: "503 retries after the queue's back-off",
			fail:  func(s *discordtest.Server) { s.Fail(1, http.StatusServiceUnavailable, 0) },
			retry: true, errSays: "503 Service Unavailable"},
		{name: "an expired interaction token is permanent",
			to: func(s *discordtest.Server, _ string) channels.Target {
				return channels.Target{"application_id": s.ApplicationID, "token": "expired-token"}
			},
			errSays: "401 Invalid Webhook Token (code 50027)"},
		{name: "an unknown application is permanent",
			to: func(_ *discordtest.Server, token string) channels.Target {
				return channels.Target{"application_id": "999", "token": token}
			},
			errSays: "404 Unknown Webhook (code 10015)"},
		{name: "400 is permanent",
			fail:    func(s *discordtest.Server) { s.Fail(1, http.StatusBadRequest, 0) },
			errSays: "400 Bad Request"},
		{name: "a target without a token is permanent",
			to: func(s *discordtest.Server, _ string) channels.Target {
				return channels.Target{"application_id": s.ApplicationID}
			},
			errSays: "no application_id and token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s, link := setup(t)
			in := s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "q", User: discordtest.User{ID: "4000", Username: "ada"}})
			to := channels.Target{"application_id": s.ApplicationID, "token": in.Token}
			if tt.to != nil {
				to = tt.to(s, in.Token)
			}
			if tt.fail != nil {
				tt.fail(s)
			}
			err := p.Send(context.Background(), link, channels.Outgoing{To: to, Text: "short answer"})
			if err == nil {
				t.Fatal("Send succeeded")
			}
			after, retry := channels.IsRetryLater(err)
			if retry != tt.retry || after != tt.after {
				t.Fatalf("Send = %v: retry %v after %s, want retry %v after %s", err, retry, after, tt.retry, tt.after)
			}
			if !strings.Contains(err.Error(), tt.errSays) {
				t.Fatalf("error %q does not say %q", err, tt.errSays)
			}
			if strings.Contains(err.Error(), in.Token) || strings.Contains(err.Error(), s.BotToken) {
				t.Fatalf("error %q holds a token", err)
			}
			if got := s.Sent(); len(got) != 0 {
				t.Fatalf("delivered %+v", got)
			}
		})
	}
}

func TestConnectRegistersAsk(t *testing.T) {
	p, s, link := setup(t)
	for range 2 {
		if err := p.Connect(context.Background(), link); err != nil {
			t.Fatal(err)
		}
	}
	calls := s.Calls()
	if len(calls) != 4 {
		t.Fatalf("Discord got %d calls, want 2 per Connect: %+v", len(calls), calls)
	}
	wantCommand := map[string]any{"name": "ask", "description": "Ask the agent", "type": float64(1)}
	wantOption := map[string]any{"type": float64(3), "name": "question", "description": "Your question", "required": true}
	for i, wantStatus := range []int{http.StatusCreated, http.StatusOK} {
		read, register := calls[2*i], calls[2*i+1]
		if read.Method != http.MethodGet || read.Path != "/applications/@me" || read.Authorization != "Bot "+s.BotToken {
			t.Fatalf("first call %s %s (%q), want GET /applications/@me as the bot", read.Method, read.Path, read.Authorization)
		}
		if register.Method != http.MethodPost || register.Path != "/applications/"+s.ApplicationID+"/commands" ||
			register.Authorization != "Bot "+s.BotToken || register.Status != wantStatus {
			t.Fatalf("second call %s %s (%q) answered %d, want POST /applications/{id}/commands as the bot answered %d",
				register.Method, register.Path, register.Authorization, register.Status, wantStatus)
		}
		for k, v := range wantCommand {
			if register.Body[k] != v {
				t.Fatalf("command %s = %v, want %v (body %v)", k, register.Body[k], v, register.Body)
			}
		}
		options, _ := register.Body["options"].([]any)
		if len(options) != 1 {
			t.Fatalf("command options %v, want the question", register.Body["options"])
		}
		for k, v := range wantOption {
			if got := options[0].(map[string]any)[k]; got != v {
				t.Fatalf("option %s = %v, want %v", k, got, v)
			}
		}
	}
}

func TestConnectChecksTheCredentials(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *discordtest.Server, c channels.Credentials)
		field  string // the credential an Invalid error names; "" for a RetryLater
		after  time.Duration
	}{
		{name: "a bot token Discord refuses", field: "bot_token",
			change: func(_ *discordtest.Server, c channels.Credentials) { c["bot_token"] = "revoked" }},
		{name: "another application's id", field: "application_id",
			change: func(_ *discordtest.Server, c channels.Credentials) { c["application_id"] = "1100000000000000777" }},
		{name: "another application's public key", field: "public_key",
			change: func(_ *discordtest.Server, c channels.Credentials) {
				c["public_key"] = discordtest.NewServer(t).PublicKey
			}},
		{name: "a public key that is not one", field: "public_key",
			change: func(_ *discordtest.Server, c channels.Credentials) { c["public_key"] = "abc" }},
		{name: "no application id", field: "application_id",
			change: func(_ *discordtest.Server, c channels.Credentials) { delete(c, "application_id") }},
		{name: "Discord unavailable",
			change: func(s *discordtest.Server, _ channels.Credentials) { s.Fail(1, http.StatusBadGateway, 0) }},
		{name: "Discord rate limiting", after: 3 * time.Second,
			change: func(s *discordtest.Server, _ channels.Credentials) {
				s.Fail(1, http.StatusTooManyRequests, 3*time.Second)
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s, link := setup(t)
			tt.change(s, link.Credentials)
			err := p.Connect(context.Background(), link)
			if tt.field == "" {
				if after, ok := channels.IsRetryLater(err); !ok || after != tt.after {
					t.Fatalf("Connect = %v, want a RetryLater after %s", err, tt.after)
				}
			} else if e := apperr.As(err); e.Kind != apperr.Invalid || len(e.Details) != 1 || e.Details[0].Field != tt.field {
				t.Fatalf("Connect = %v, want Invalid %s", err, tt.field)
			}
			if err != nil && strings.Contains(err.Error(), s.BotToken) {
				t.Fatalf("error %q holds the bot token", err)
			}
			for _, c := range s.Calls() {
				if c.Method == http.MethodPost {
					t.Fatalf("the command was registered with credentials that do not hold: %+v", c)
				}
			}
		})
	}
}

func TestSendRetriedSkipsThePiecesDiscordTook(t *testing.T) {
	long := strings.Repeat("Lorem ipsum dolor sit amet, consectetur adipiscing elit. ", 90) // 5,130 characters
	tests := []struct {
		name     string
		text     string
		approval *channels.Approval
		failAt   int // the piece Discord refuses on the first attempt, 1 for the first
		status   int
		after    time.Duration
	}{
		{name: "a 429 on piece 2 of 3", text: long, failAt: 2, status: http.StatusTooManyRequests, after: time.Second},
		{name: "a 503 on the approval after the text", text: "Let me check.",
			approval: &channels.Approval{ExecutionID: "exec-7", Tool: "create_deal"}, failAt: 2, status: http.StatusServiceUnavailable},
		{name: "a 429 on the first piece", text: long, failAt: 1, status: http.StatusTooManyRequests, after: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, s, link := setup(t)
			in := s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "q", User: discordtest.User{ID: "4000", Username: "ada"}})
			out := channels.Outgoing{To: channels.Target{"application_id": s.ApplicationID, "token": in.Token}, Text: tt.text, Approval: tt.approval}
			want := channels.Split(tt.text, discord.MessageLimit)
			if tt.approval != nil {
				want = append(want, "The agent asks to use the tool `"+tt.approval.Tool+"`. Allow it?")
			}
			s.FailAt(tt.failAt, tt.status, tt.after)

			err := p.Send(context.Background(), link, out)
			var later *channels.RetryLater
			if !errors.As(err, &later) || later.Sent != tt.failAt-1 || later.After != tt.after {
				t.Fatalf("the first attempt = %v, want a RetryLater after %s with Sent %d", err, tt.after, tt.failAt-1)
			}
			out.Sent = later.Sent
			if err := p.Send(context.Background(), link, out); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			var got []string
			for _, m := range s.Sent() {
				got = append(got, m.Content)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Discord took\n%q\nwant each piece once\n%q", got, want)
			}
		})
	}
}

func TestSendToAnUnreachableDiscordRetriesWithoutTheToken(t *testing.T) {
	p, s, link := setup(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	link.APIBaseURL = gone.URL
	in := s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "q", User: discordtest.User{ID: "4000", Username: "ada"}})
	err := p.Send(context.Background(), link, channels.Outgoing{
		To: channels.Target{"application_id": s.ApplicationID, "token": in.Token}, Text: "hi"})
	if _, retry := channels.IsRetryLater(err); !retry {
		t.Fatalf("Send to a closed port = %v, want a RetryLater", err)
	}
	if strings.Contains(err.Error(), in.Token) {
		t.Fatalf("error %q holds the interaction token", err)
	}
}

func TestSendRefusesAnExecutionIDNoButtonHolds(t *testing.T) {
	p, s, link := setup(t)
	in := s.Ask(discordtest.Ask{ChannelID: "2000", GuildID: "3000", Question: "q", User: discordtest.User{ID: "4000", Username: "ada"}})
	for _, id := range []string{"", strings.Repeat("x", 99)} {
		err := p.Send(context.Background(), link, channels.Outgoing{
			To:       channels.Target{"application_id": s.ApplicationID, "token": in.Token},
			Approval: &channels.Approval{ExecutionID: id, Tool: "send_email"}})
		if _, retry := channels.IsRetryLater(err); err == nil || retry {
			t.Fatalf("an approval for an execution id of %d characters: %v, want a permanent error", len(id), err)
		}
	}
	if calls := s.Calls(); len(calls) != 0 {
		t.Fatalf("Discord got %+v", calls)
	}
}
