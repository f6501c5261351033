package telegram_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentplane/agentplane/shared/adapters/channels/telegram"
	"github.com/agentplane/agentplane/shared/adapters/channels/telegram/telegramtest"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

const (
	token  = "123456:AAH-secret-bot-token"
	secret = "s3cr3t_webhook-token"
	group  = int64(-100200300)
)

// link is a connection to the bot of tg.
func link(tg *telegramtest.Server) channels.Link {
	return channels.Link{ID: "conn1", APIBaseURL: tg.URL, WebhookURL: "https://agentplane.test/hooks/telegram/conn1",
		Credentials: channels.Credentials{"bot_token": tg.Token, "secret_token": secret}}
}

// request is a webhook call of u signed with sig.
func request(sig string, u any) channels.Request {
	body, err := json.Marshal(u)
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	if sig != "" {
		h.Set(telegram.SecretHeader, sig)
	}
	return channels.Request{Method: http.MethodPost, Header: h, Body: body, Now: time.Now()}
}

func TestReceiveSecretToken(t *testing.T) {
	update := telegramtest.TextUpdate(1, telegramtest.Alice.ID, telegramtest.Alice, "hi")
	cases := []struct {
		name       string
		connection string
		header     string
		code       string
	}{
		{name: "the connection's secret", connection: secret, header: secret},
		{name: "another secret", connection: secret, header: secret + "x", code: "telegram_secret_mismatch"},
		{name: "a prefix of the secret", connection: secret, header: secret[:5], code: "telegram_secret_mismatch"},
		{name: "no header", connection: secret, header: "", code: "telegram_secret_missing"},
		{name: "a connection without a secret", connection: "", header: "anything", code: "telegram_secret_mismatch"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := channels.Link{Credentials: channels.Credentials{"bot_token": token, "secret_token": tc.connection}}
			got, err := telegram.New(http.DefaultClient).Receive(t.Context(), l, request(tc.header, update))
			if tc.code == "" {
				if err != nil || len(got.Messages) != 1 {
					t.Fatalf("Receive = %+v, %v; want the message", got, err)
				}
				return
			}
			e := apperr.As(err)
			if e.Kind != apperr.Unauthorized || e.Code != tc.code || len(got.Messages) != 0 {
				t.Fatalf("Receive = %+v, %v; want Unauthorized %s and nothing taken", got, err, tc.code)
			}
			if strings.Contains(e.Error(), secret) {
				t.Fatalf("the error %q shows the secret", e)
			}
		})
	}
}

func TestReceiveUpdates(t *testing.T) {
	alice := telegramtest.Alice
	bot := tgbotapi.User{ID: 999, IsBot: true, FirstName: "Other bot"}
	nameless := tgbotapi.User{ID: 7, UserName: "nameless"}
	edited := tgbotapi.Update{UpdateID: 20, EditedMessage: telegramtest.TextUpdate(20, alice.ID, alice, "edited").Message}
	joined := map[string]any{"update_id": 21, "my_chat_member": map[string]any{
		"chat": map[string]any{"id": group, "type": "group"}, "from": alice, "date": 1,
		"old_chat_member": map[string]any{"status": "left", "user": telegramtest.Bot},
		"new_chat_member": map[string]any{"status": "member", "user": telegramtest.Bot}}}
	anonymous := telegramtest.TextUpdate(24, group, tgbotapi.User{ID: 1087968824, IsBot: true, FirstName: "Group", UserName: "GroupAnonymousBot"}, "from an admin")
	anonymous.Message.SenderChat = &tgbotapi.Chat{ID: group, Type: "supergroup", Title: "Test group"}
	forwarded := telegramtest.TextUpdate(25, group, tgbotapi.User{ID: 777000, FirstName: "Telegram"}, "a channel's post")
	forwarded.Message.SenderChat = &tgbotapi.Chat{ID: -100999, Type: "channel", Title: "News"}
	forwarded.Message.IsAutomaticForward = true
	photo := telegramtest.TextUpdate(22, alice.ID, alice, "")
	photo.Message.Photo = []tgbotapi.PhotoSize{{FileID: "f1", FileUniqueID: "u1", Width: 9, Height: 9}}
	ack := func(id, text string) string {
		return `{"callback_query_id":"` + id + `","method":"answerCallbackQuery","text":"` + text + `"}`
	}
	cases := []struct {
		name   string
		update any
		want   []channels.Inbound
		answer string
	}{
		{name: "a private message", update: telegramtest.TextUpdate(17, alice.ID, alice, "What is *new*?"),
			want: []channels.Inbound{{ID: "17", Conversation: "5001", User: "5001", UserName: "Alice Liddell",
				Text: "What is *new*?", Reply: channels.Target{"chat_id": "5001"}}}},
		{name: "a message in a group", update: telegramtest.TextUpdate(18, group, alice, "hello all"),
			want: []channels.Inbound{{ID: "18", Conversation: "-100200300", User: "5001", UserName: "Alice Liddell",
				Text: "hello all", Reply: channels.Target{"chat_id": "-100200300"}}}},
		{name: "a user with only a username", update: telegramtest.TextUpdate(19, group, nameless, "hey"),
			want: []channels.Inbound{{ID: "19", Conversation: "-100200300", User: "7", UserName: "nameless",
				Text: "hey", Reply: channels.Target{"chat_id": "-100200300"}}}},
		{name: "a bot's message", update: telegramtest.TextUpdate(23, group, bot, "beep"),
			want: []channels.Inbound{{ID: "23", Conversation: "-100200300", User: "999", UserName: "Other bot",
				Text: "beep", FromBot: true, Reply: channels.Target{"chat_id": "-100200300"}}}},
		{name: "an anonymous admin's message", update: anonymous,
			want: []channels.Inbound{{ID: "24", Conversation: "-100200300", User: "-100200300", UserName: "Test group",
				Text: "from an admin", Reply: channels.Target{"chat_id": "-100200300"}}}},
		{name: "a channel's post forwarded to its group", update: forwarded,
			want: []channels.Inbound{{ID: "25", Conversation: "-100200300", User: "-100999", UserName: "News",
				Text: "a channel's post", FromBot: true, Reply: channels.Target{"chat_id": "-100200300"}}}},
		{name: "an approval", update: telegramtest.ClickUpdate(30, alice.ID, alice, "a:exec_01JABCDEF"),
			want: []channels.Inbound{{ID: "30", Conversation: "5001", User: "5001", UserName: "Alice Liddell",
				Decision: &channels.Decision{ExecutionID: "exec_01JABCDEF", Approve: true}, Reply: channels.Target{"chat_id": "5001"}}},
			answer: ack("cb30", "Approved.")},
		{name: "a rejection in a group", update: telegramtest.ClickUpdate(31, group, alice, "r:exec_01JABCDEF"),
			want: []channels.Inbound{{ID: "31", Conversation: "-100200300", User: "5001", UserName: "Alice Liddell",
				Decision: &channels.Decision{ExecutionID: "exec_01JABCDEF"}, Reply: channels.Target{"chat_id": "-100200300"}}},
			answer: ack("cb31", "Rejected.")},
		{name: "a button that is not an approval", update: telegramtest.ClickUpdate(32, alice.ID, alice, "other"),
			answer: ack("cb32", "This button is no longer in use.")},
		{name: "an edited message", update: edited},
		{name: "the bot added to a group", update: joined},
		{name: "a photo without text", update: photo},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := channels.Link{Credentials: channels.Credentials{"bot_token": token, "secret_token": secret}}
			got, err := telegram.New(http.DefaultClient).Receive(t.Context(), l, request(secret, tc.update))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Messages, tc.want) {
				t.Errorf("messages = %+v\nwant %+v", got.Messages, tc.want)
			}
			if got.Answer.Status != http.StatusOK || string(got.Answer.Body) != tc.answer {
				t.Errorf("answer = %d %s; want 200 %s", got.Answer.Status, got.Answer.Body, tc.answer)
			}
			if tc.answer != "" && got.Answer.ContentType != "application/json" {
				t.Errorf("answer's content type = %q; want application/json", got.Answer.ContentType)
			}
		})
	}
}

func TestReceiveRetryCarriesTheSameID(t *testing.T) {
	l := channels.Link{Credentials: channels.Credentials{"bot_token": token, "secret_token": secret}}
	p := telegram.New(http.DefaultClient)
	var ids []string
	for range 2 {
		got, err := p.Receive(t.Context(), l, request(secret, telegramtest.TextUpdate(41, group, telegramtest.Alice, "again")))
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("Receive = %+v, %v", got, err)
		}
		ids = append(ids, got.Messages[0].ID)
	}
	if ids[0] != "41" || ids[1] != ids[0] {
		t.Fatalf("ids = %v; want 41 twice", ids)
	}
}

func TestReceiveMalformedBody(t *testing.T) {
	l := channels.Link{Credentials: channels.Credentials{"bot_token": token, "secret_token": secret}}
	r := request(secret, nil)
	r.Body = []byte(`{"update_id": "not a number"`)
	_, err := telegram.New(http.DefaultClient).Receive(t.Context(), l, r)
	if e := apperr.As(err); e.Kind != apperr.Invalid {
		t.Fatalf("Receive = %v; want Invalid", err)
	}
}

// keyboard is a sendMessage's inline keyboard.
func keyboard(t *testing.T, c telegramtest.Call) [][]tgbotapi.InlineKeyboardButton {
	t.Helper()
	var m tgbotapi.InlineKeyboardMarkup
	if err := c.Decode("reply_markup", &m); err != nil {
		t.Fatal(err)
	}
	return m.InlineKeyboard
}

func TestSend(t *testing.T) {
	cases := []struct {
		name string
		out  channels.Outgoing
		// texts are the messages' texts, in order; a nil keyboard is none.
		texts    []string
		keyboard [][]string
	}{
		{name: "markdown", out: channels.Outgoing{To: channels.Target{"chat_id": "5001"},
			Text: "**Paris** is the capital; see [the source](https://example.org/a?b=1&c=2) & `x<y`."},
			texts: []string{`<b>Paris</b> is the capital; see <a href="https://example.org/a?b=1&amp;c=2">the source</a> &amp; <code>x&lt;y</code>.`}},
		{name: "an approval after the text", out: channels.Outgoing{To: channels.Target{"chat_id": "-100200300"},
			Text: "I need to search.", Approval: &channels.Approval{ExecutionID: "exec_01JABCDEFGHJKMNPQRSTVWXYZ", Tool: "web_search"}},
			texts:    []string{"I need to search.", "Allow the agent to use <b>web_search</b>?"},
			keyboard: [][]string{{"Approve", "a:exec_01JABCDEFGHJKMNPQRSTVWXYZ"}, {"Reject", "r:exec_01JABCDEFGHJKMNPQRSTVWXYZ"}}},
		{name: "an approval alone", out: channels.Outgoing{To: channels.Target{"chat_id": "5001"},
			Approval: &channels.Approval{ExecutionID: "e1", Tool: "<send>"}},
			texts:    []string{"Allow the agent to use <b>&lt;send&gt;</b>?"},
			keyboard: [][]string{{"Approve", "a:e1"}, {"Reject", "r:e1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.New(t, token)
			if err := telegram.New(http.DefaultClient).Send(t.Context(), link(tg), tc.out); err != nil {
				t.Fatal(err)
			}
			sent := tg.Sent()
			if len(sent) != len(tc.texts) || len(tg.Calls()) != len(tc.texts) {
				t.Fatalf("sent %d messages in %d calls; want %d", len(sent), len(tg.Calls()), len(tc.texts))
			}
			for i, c := range sent {
				if c.Params["chat_id"] != tc.out.To["chat_id"] || c.Params["parse_mode"] != "HTML" || c.Params["text"] != tc.texts[i] {
					t.Errorf("message %d = %v; want chat %s, HTML %q", i, c.Params, tc.out.To["chat_id"], tc.texts[i])
				}
				last := i == len(sent)-1
				if _, has := c.Params["reply_markup"]; has != (last && tc.keyboard != nil) {
					t.Errorf("message %d has a keyboard: %v", i, has)
				}
			}
			if tc.keyboard != nil {
				rows := keyboard(t, sent[len(sent)-1])
				var got [][]string
				for _, b := range rows[0] {
					got = append(got, []string{b.Text, *b.CallbackData})
				}
				if len(rows) != 1 || !reflect.DeepEqual(got, tc.keyboard) {
					t.Errorf("keyboard = %v; want one row %v", got, tc.keyboard)
				}
			}
		})
	}
}

func TestSendSplitsALongAnswer(t *testing.T) {
	tg := telegramtest.New(t, token)
	var b strings.Builder
	for i := range 300 {
		b.WriteString("Paragraph **" + strings.Repeat("x", i%7+1) + "** with a [link](https://example.org/" + strings.Repeat("p", i%5) + ") & more text.\n\n")
	}
	if err := telegram.New(http.DefaultClient).Send(t.Context(), link(tg), channels.Outgoing{To: channels.Target{"chat_id": "5001"}, Text: b.String()}); err != nil {
		t.Fatal(err)
	}
	sent := tg.Sent()
	if len(sent) < 3 || len(tg.Calls()) != len(sent) {
		t.Fatalf("%d messages sent in %d calls; want 3 or more, all accepted (at most 4096 characters, tags whole)", len(sent), len(tg.Calls()))
	}
	var paragraphs int
	for _, c := range sent {
		paragraphs += strings.Count(c.Params["text"], "Paragraph <b>")
	}
	if paragraphs != 300 {
		t.Fatalf("the messages carry %d paragraphs; want all 300", paragraphs)
	}
}

func TestSendFailures(t *testing.T) {
	out := channels.Outgoing{To: channels.Target{"chat_id": "5001"}, Text: "hello"}
	cases := []struct {
		name       string
		fail       func(*telegramtest.Server)
		token      string
		client     *http.Client
		retryAfter time.Duration
		retry      bool
		message    string
	}{
		{name: "429 with retry_after", fail: func(s *telegramtest.Server) { s.Fail(1, http.StatusTooManyRequests, 7*time.Second) },
			retry: true, retryAfter: 7 * time.Second, message: "Too Many Requests: retry after 7"},
		{name: "429 whose Retry-After header a proxy dropped", fail: func(s *telegramtest.Server) { s.Fail(1, http.StatusTooManyRequests, 12*time.Second) },
			client: &http.Client{Transport: dropRetryAfter{}}, retry: true, retryAfter: 12 * time.Second},
		{name: "503", fail: func(s *telegramtest.Server) { s.Fail(1, http.StatusServiceUnavailable, 0) },
			retry: true, message: "503 Service Unavailable"},
		{name: "502 with Retry-After", fail: func(s *telegramtest.Server) { s.Fail(1, http.StatusBadGateway, 30*time.Second) },
			retry: true, retryAfter: 30 * time.Second},
		{name: "a refused token", token: "123456:wrong", message: "Telegram refused the bot token (sendMessage Unauthorized)"},
		{name: "400", fail: func(s *telegramtest.Server) { s.Fail(1, http.StatusBadRequest, 0) }, message: "Telegram sendMessage failed: Bad Request: chat not found"},
		{name: "403", fail: func(s *telegramtest.Server) { s.Fail(1, http.StatusForbidden, 0) }, message: "Forbidden: bot was blocked by the user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.New(t, token)
			if tc.fail != nil {
				tc.fail(tg)
			}
			l := link(tg)
			if tc.token != "" {
				l.Credentials["bot_token"] = tc.token
			}
			client := http.DefaultClient
			if tc.client != nil {
				client = tc.client
			}
			err := telegram.New(client).Send(t.Context(), l, out)
			after, retry := channels.IsRetryLater(err)
			if err == nil || retry != tc.retry || after != tc.retryAfter {
				t.Fatalf("Send = %v (retry %v after %s); want retry %v after %s", err, retry, after, tc.retry, tc.retryAfter)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Errorf("error %q does not say %q", err, tc.message)
			}
			if strings.Contains(err.Error(), l.Credentials["bot_token"]) {
				t.Errorf("error %q shows the token", err)
			}
			if len(tg.Calls()) != 1 {
				t.Errorf("%d calls; want 1 (stop at the first failure)", len(tg.Calls()))
			}
		})
	}
}

// dropRetryAfter is a transport that removes answers' Retry-After, as some proxies do.
type dropRetryAfter struct{}

func (dropRetryAfter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

func TestSendUnreachableHidesTheToken(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	l := channels.Link{APIBaseURL: down.URL, Credentials: channels.Credentials{"bot_token": token, "secret_token": secret}}
	err := telegram.New(http.DefaultClient).Send(t.Context(), l, channels.Outgoing{To: channels.Target{"chat_id": "1"}, Text: "hi"})
	if _, later := channels.IsRetryLater(err); !later || strings.Contains(err.Error(), token) || !strings.Contains(err.Error(), "telegram sendMessage") {
		t.Fatalf("Send = %v; want a retry later that names sendMessage and not the token", err)
	}
}

// secondRefused answers the second request 429 with Retry-After 3, as Telegram's limits do
// mid-answer, and passes the others on.
type secondRefused struct{ n int }

func (s *secondRefused) RoundTrip(r *http.Request) (*http.Response, error) {
	if s.n++; s.n == 2 {
		return &http.Response{StatusCode: http.StatusTooManyRequests, Status: "429 Too Many Requests", Header: http.Header{"Retry-After": {"3"}},
			Body: io.NopCloser(strings.NewReader(`{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`)), Request: r}, nil
	}
	return http.DefaultTransport.RoundTrip(r)
}

// A long answer refused on its second piece says how many pieces Telegram took; sent again
// from there, the pieces taken are not repeated.
func TestSendResumesAfterThePiecesTaken(t *testing.T) {
	tg := telegramtest.New(t, token)
	out := channels.Outgoing{To: channels.Target{"chat_id": "5001"}, Text: strings.Repeat("first piece words. ", 150) + "\n\n" +
		strings.Repeat("second piece words. ", 150), Approval: &channels.Approval{ExecutionID: "run-1", Tool: "create_deal"}}
	err := telegram.New(&http.Client{Transport: &secondRefused{}}).Send(t.Context(), link(tg), out)
	var later *channels.RetryLater
	if !errors.As(err, &later) || later.Sent != 1 || later.After != 3*time.Second {
		t.Fatalf("Send = %v; want a retry after 3s with 1 piece sent", err)
	}
	out.Sent = later.Sent
	if err := telegram.New(http.DefaultClient).Send(t.Context(), link(tg), out); err != nil {
		t.Fatal(err)
	}
	sent := tg.Sent()
	if len(sent) != 3 || !strings.HasPrefix(sent[0].Params["text"], "first piece") || !strings.HasPrefix(sent[1].Params["text"], "second piece") ||
		sent[2].Params["reply_markup"] == "" {
		t.Fatalf("Telegram took %d messages: %.300v; want the first piece once, the second, then the approval", len(sent), sentTexts(sent))
	}
}

func sentTexts(calls []telegramtest.Call) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Params["text"])
	}
	return out
}

func TestSendRefusesWhatTelegramWouldNot(t *testing.T) {
	cases := []struct {
		name  string
		out   channels.Outgoing
		field string
	}{
		{name: "no chat", out: channels.Outgoing{Text: "hi"}, field: "chat_id"},
		{name: "an execution id too long for a button", out: channels.Outgoing{To: channels.Target{"chat_id": "1"},
			Approval: &channels.Approval{ExecutionID: strings.Repeat("e", 63), Tool: "t"}}, field: "execution_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := telegramtest.New(t, token)
			err := telegram.New(http.DefaultClient).Send(t.Context(), link(tg), tc.out)
			if e := apperr.As(err); e.Kind != apperr.Invalid || len(e.Details) != 1 || e.Details[0].Field != tc.field {
				t.Fatalf("Send = %v; want Invalid %s", err, tc.field)
			}
			if len(tg.Calls()) != 0 {
				t.Fatalf("%d calls; want none", len(tg.Calls()))
			}
		})
	}
}

func TestConnect(t *testing.T) {
	tg := telegramtest.New(t, token)
	if err := telegram.New(http.DefaultClient).Connect(t.Context(), link(tg)); err != nil {
		t.Fatal(err)
	}
	calls := tg.Calls()
	if len(calls) != 2 || calls[0].Method != "getMe" || calls[1].Method != "setWebhook" {
		t.Fatalf("calls = %+v; want getMe, setWebhook", calls)
	}
	want := telegramtest.Webhook{URL: "https://agentplane.test/hooks/telegram/conn1", SecretToken: secret,
		AllowedUpdates: []string{"message", "callback_query"}}
	if got := tg.Webhook(); !reflect.DeepEqual(got, want) {
		t.Fatalf("webhook = %+v; want %+v", got, want)
	}
}

func TestConnectRefusedToken(t *testing.T) {
	tg := telegramtest.New(t, token)
	l := link(tg)
	l.Credentials["bot_token"] = "999:not-the-token"
	err := telegram.New(http.DefaultClient).Connect(t.Context(), l)
	if e := apperr.As(err); e.Code != "telegram_token_refused" || strings.Contains(e.Error(), "not-the-token") {
		t.Fatalf("Connect = %v; want telegram_token_refused without the token", err)
	}
	if calls := tg.Calls(); len(calls) != 1 || calls[0].Method != "getMe" {
		t.Fatalf("calls = %+v; want getMe alone", calls)
	}
}

// TestOverHTTP connects a bot to a webhook served over HTTP and has the server deliver to it
// as Telegram does: a message read, a click read and acknowledged by the webhook's answer.
func TestOverHTTP(t *testing.T) {
	tg := telegramtest.New(t, token)
	p := telegram.New(http.DefaultClient)
	received := make(chan []channels.Inbound, 2)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got, err := p.Receive(r.Context(), link(tg), channels.Request{Method: r.Method, Header: r.Header, Body: body, Now: time.Now()})
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		received <- got.Messages
		w.Header().Set("Content-Type", got.Answer.ContentType)
		w.WriteHeader(got.Answer.Status)
		_, _ = w.Write(got.Answer.Body)
	}))
	t.Cleanup(hook.Close)
	l := link(tg)
	l.WebhookURL = hook.URL
	if err := p.Connect(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	deliver := func(u tgbotapi.Update) []channels.Inbound {
		status, body, err := tg.Deliver(t.Context(), u)
		if err != nil || status != http.StatusOK {
			t.Fatalf("Deliver = %d %s, %v", status, body, err)
		}
		return <-received
	}
	if got := deliver(telegramtest.TextUpdate(50, telegramtest.Alice.ID, telegramtest.Alice, "hi")); len(got) != 1 || got[0].Text != "hi" {
		t.Fatalf("messages = %+v; want hi", got)
	}
	if got := deliver(telegramtest.ClickUpdate(51, telegramtest.Alice.ID, telegramtest.Alice, "a:exec9")); len(got) != 1 || got[0].Decision == nil || !got[0].Decision.Approve {
		t.Fatalf("messages = %+v; want an approval", got)
	}
	calls := tg.Calls()
	last := calls[len(calls)-1]
	if last.Method != "answerCallbackQuery" || !last.ViaWebhookReply || last.Status != http.StatusOK ||
		last.Params["callback_query_id"] != "cb51" || last.Params["text"] != "Approved." {
		t.Fatalf("last call = %+v; want the click acknowledged in the webhook's answer", last)
	}
}
