package api_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/channels/whatsapp/whatsapptest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// waUser is the WhatsApp user who writes to the agent's business number.
const waUser = "16315551181"

// waHook is a WhatsApp connection's webhook as Meta calls it.
type waHook struct {
	url string
	srv *whatsapptest.Server
}

// connectWhatsApp connects the agent of a to the WhatsApp server srv and returns its webhook.
func connectWhatsApp(t *testing.T, a chatAPI, srv *whatsapptest.Server) waHook {
	t.Helper()
	creds := map[string]any{}
	for k, v := range whatsapptest.Credentials() {
		creds[k] = v
	}
	ch := a.createChannel(t, map[string]any{"type": "whatsapp", "name": "Support line", "api_base_url": srv.URL, "credentials": creds})
	if ch["status"] != "active" || !strings.HasSuffix(ch["webhook_url"].(string), "/hooks/whatsapp/"+ch["id"].(string)) {
		t.Fatalf("connection %v", ch)
	}
	return waHook{url: ch["webhook_url"].(string), srv: srv}
}

// do makes req and returns the answer's status and body.
func (h waHook) do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(body)
}

// post delivers body as Meta does, signed with the app secret, after change (when not nil)
// alters the request; it returns the answer's status.
func (h waHook) post(t *testing.T, body []byte, change func(*http.Request)) int {
	t.Helper()
	req, err := whatsapptest.HTTPRequest(context.Background(), h.url, body)
	if err != nil {
		t.Fatal(err)
	}
	if change != nil {
		change(req)
	}
	status, _ := h.do(t, req)
	return status
}

// say delivers the user's text message id, which must be taken.
func (h waHook) say(t *testing.T, id, text string) {
	t.Helper()
	if got := h.post(t, whatsapptest.Notification(whatsapptest.Message{ID: id, From: waUser, Name: "Kerry Fisher", Text: text}), nil); got != http.StatusOK {
		t.Fatalf("the message %s was answered %d", id, got)
	}
}

// sent waits until the server took n messages and returns them.
func (h waHook) sent(t *testing.T, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	waitFor(t, "the messages sent", func() (bool, any) { got = h.srv.Sent(); return len(got) >= n, got })
	return got
}

// waText is the text of a message sent, "" when it is not a text.
func waText(m map[string]any) string {
	text, _ := m["text"].(map[string]any)
	body, _ := text["body"].(string)
	return body
}

// refusedSends counts the calls to /messages the server answered status.
func refusedSends(srv *whatsapptest.Server, status int) int {
	var n int
	for _, c := range srv.Calls() {
		if strings.HasSuffix(c.Path, "/messages") && c.Status == status {
			n++
		}
	}
	return n
}

// A WhatsApp number is connected with two calls (the agent, then its channel, whose access
// token is checked by reading the number) and Meta's verification is answered with the verify
// token only; the users' messages are answered in their own conversation in WhatsApp's format,
// once whatever Meta's retries; forged calls are refused and the business's own messages and
// status updates not answered; an outage of the Graph API delays an answer and loses none. No
// credential appears in a log line.
func TestWhatsAppChannel(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	_, a, fake := agentSetup(t, map[string]any{"name": "Helper", "reasoning_type": "standard"}, withLogs(logs))
	fake.Set(providertest.Behavior{Reply: "Hello from **the agent**, see [the docs](https://example.com/docs)."})
	srv := whatsapptest.Start(t)
	hook := connectWhatsApp(t, a, srv)
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Method != http.MethodGet || calls[0].Path != "/"+whatsapptest.PhoneNumberID ||
		calls[0].Authorization != "Bearer "+whatsapptest.AccessToken {
		t.Fatalf("connecting called %+v, want the phone number read with the access token", calls)
	}

	t.Run("Verification", func(t *testing.T) {
		tests := []struct {
			name       string
			token      string
			wantStatus int
			wantBody   string
		}{
			{name: "the verify token", token: whatsapptest.VerifyToken, wantStatus: http.StatusOK, wantBody: "challenge-1158201444"},
			{name: "another token", token: "guessed-token", wantStatus: http.StatusUnauthorized},
			{name: "no token", token: "", wantStatus: http.StatusUnauthorized},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				u, err := url.Parse(hook.url)
				if err != nil {
					t.Fatal(err)
				}
				u.RawQuery = whatsapptest.VerifyQuery(tt.token, "challenge-1158201444").Encode()
				req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil)
				if err != nil {
					t.Fatal(err)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = res.Body.Close() }()
				body, _ := io.ReadAll(res.Body)
				if res.StatusCode != tt.wantStatus {
					t.Fatalf("status %d, want %d: %s", res.StatusCode, tt.wantStatus, body)
				}
				if tt.wantBody != "" && (string(body) != tt.wantBody || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain")) {
					t.Fatalf("answered %q (%s), want the challenge as text", body, res.Header.Get("Content-Type"))
				}
				if tt.wantBody == "" && strings.Contains(string(body), "challenge-1158201444") {
					t.Fatalf("a wrong token got the challenge back: %s", body)
				}
			})
		}
	})

	hook.say(t, "wamid.HBgLMTYzMTU1NTExODEVAgASGBQzQTJ", "Hi, what are your opening hours?")
	first := hook.sent(t, 1)[0]
	want := map[string]any{"messaging_product": "whatsapp", "recipient_type": "individual", "to": waUser, "type": "text",
		"text": map[string]any{"preview_url": false, "body": "Hello from *the agent*, see the docs (https://example.com/docs)."}}
	if g, w := jsonOf(first), jsonOf(want); g != w {
		t.Fatalf("sent %s, want %s", g, w)
	}

	t.Run("ForgedAndOwnMessagesAreNotAnswered", func(t *testing.T) {
		forged := whatsapptest.Notification(whatsapptest.Message{ID: "wamid.forged", From: waUser, Text: "forged"})
		tests := []struct {
			name       string
			body       []byte
			change     func(*http.Request)
			wantStatus int
		}{
			{name: "signed with another secret", body: forged, wantStatus: http.StatusUnauthorized,
				change: func(r *http.Request) {
					r.Header.Set("X-Hub-Signature-256", whatsapptest.Sign("another-app-secret", forged))
				}},
			{name: "no signature", body: forged, wantStatus: http.StatusUnauthorized,
				change: func(r *http.Request) { r.Header.Del("X-Hub-Signature-256") }},
			{name: "the signature of another body", body: forged, wantStatus: http.StatusUnauthorized,
				change: func(r *http.Request) {
					r.Header.Set("X-Hub-Signature-256", whatsapptest.Sign(whatsapptest.AppSecret, []byte(`{"object":"whatsapp_business_account"}`)))
				}},
			{name: "a retry of the answered message", wantStatus: http.StatusOK,
				body: whatsapptest.Notification(whatsapptest.Message{ID: "wamid.HBgLMTYzMTU1NTExODEVAgASGBQzQTJ", From: waUser, Name: "Kerry Fisher", Text: "Hi, what are your opening hours?"})},
			{name: "the business app's echo", wantStatus: http.StatusOK,
				body: whatsapptest.EchoNotification("wamid.echo", waUser, "Written from the WhatsApp Business app")},
			{name: "a message from the business number", wantStatus: http.StatusOK,
				body: whatsapptest.Notification(whatsapptest.Message{ID: "wamid.own", From: whatsapptest.DisplayPhoneNumber, Text: "our own"})},
			{name: "a status update", wantStatus: http.StatusOK,
				body: whatsapptest.StatusNotification("wamid.sent-1", waUser, "read")},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := hook.post(t, tt.body, tt.change); got != tt.wantStatus {
					t.Fatalf("answered %d, want %d", got, tt.wantStatus)
				}
			})
		}
		before := len(srv.Sent())
		hook.say(t, "wamid.second", "And on Sundays?")
		sent := hook.sent(t, before+1)
		if len(sent) != before+1 || sent[before]["to"] != waUser {
			t.Fatalf("sent %v, want one answer to %s after the ignored calls", sent[before:], waUser)
		}
		if n := len(fake.Requests()); n != 2 {
			t.Fatalf("the provider was asked %d times, want 2 (the user's two messages)", n)
		}
	})

	t.Run("AnOutageDelaysButLosesNothing", func(t *testing.T) {
		before := len(srv.Sent())
		srv.Fail(1, whatsapptest.Failure{Status: http.StatusServiceUnavailable})
		srv.Fail(1, whatsapptest.Failure{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Code: 130429, Message: "(#130429) Rate limit hit"})
		hook.say(t, "wamid.third", "Are you there?")
		sent := hook.sent(t, before+1)
		if len(sent) != before+1 || waText(sent[before]) == "" {
			t.Fatalf("sent %v, want the answer once", sent[before:])
		}
		if n503, n429 := refusedSends(srv, http.StatusServiceUnavailable), refusedSends(srv, http.StatusTooManyRequests); n503 != 1 || n429 != 1 {
			t.Fatalf("%d sends refused with 503 and %d with 429, want 1 each", n503, n429)
		}
	})

	for _, secret := range []string{whatsapptest.AccessToken, whatsapptest.AppSecret, whatsapptest.VerifyToken} {
		if strings.Contains(logs.String(), secret) {
			t.Fatalf("a log line holds the credential %q", secret)
		}
	}
}

// jsonOf is v as JSON, for comparisons that show what differs.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// An agent's tool call waits for the WhatsApp user's decision: the approval comes as a message
// with WhatsApp's reply buttons; a tap on Approve resumes the run, which creates the deal and
// answers, a tap on Reject resumes it without the deal.
func TestWhatsAppApproval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		button    string
		title     string
		reply     string
		wantDeals int // the deals named Acme after the tap
		// refuseApproval has WhatsApp take the approval's text, then refuse its buttons once.
		refuseApproval bool
	}{
		{name: "approved", button: "a:", title: "Approve", reply: "Done: the deal is created.", wantDeals: 1},
		{name: "rejected", button: "r:", title: "Reject", reply: "Understood, I did not create it.", wantDeals: 0},
		{name: "approved after WhatsApp refused the buttons once", button: "a:", title: "Approve", reply: "Done: the deal is created.", wantDeals: 1, refuseApproval: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, a, fake := agentSetup(t, map[string]any{"name": "Sales", "reasoning_type": "agent"})
			fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: tt.reply}}})
			srv := whatsapptest.Start(t)
			hook := connectWhatsApp(t, a, srv)
			deals := func() []any {
				res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
				expect(t, res, http.StatusOK, "")
				return res.JSON(t)["deals"].([]any)
			}

			if tt.refuseApproval {
				srv.FailAfter(0, 1, whatsapptest.Failure{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Code: 130429, Message: "(#130429) Rate limit hit"})
			}
			hook.say(t, "wamid.ask", "Create a deal for Acme")
			var sent []map[string]any
			waitFor(t, "the approval", func() (bool, any) {
				sent = srv.Sent()
				return len(sent) > 0 && sent[len(sent)-1]["type"] == "interactive", sent
			})
			if len(sent) != 1 {
				t.Fatalf("sent %s, want the buttons once", jsonOf(sent))
			}
			wantRefused := 0
			if tt.refuseApproval {
				wantRefused = 1
			}
			if n := refusedSends(srv, http.StatusTooManyRequests); n != wantRefused {
				t.Fatalf("%d sends refused, want %d", n, wantRefused)
			}
			ask := sent[0]
			in, _ := ask["interactive"].(map[string]any)
			buttons, _ := in["action"].(map[string]any)["buttons"].([]any)
			if ask["to"] != waUser || in["type"] != "button" || len(buttons) != 2 || !strings.Contains(in["body"].(map[string]any)["text"].(string), "create_deal") {
				t.Fatalf("the approval sent is %s", jsonOf(ask))
			}
			approve := buttons[0].(map[string]any)["reply"].(map[string]any)
			reject := buttons[1].(map[string]any)["reply"].(map[string]any)
			exec := strings.TrimPrefix(approve["id"].(string), "a:")
			if approve["title"] != "Approve" || reject["title"] != "Reject" || exec == "" || reject["id"] != "r:"+exec {
				t.Fatalf("buttons %s, want Approve and Reject carrying the run", jsonOf(buttons))
			}
			if got := deals(); len(got) != 0 {
				t.Fatalf("deals before the decision: %v", got)
			}

			tap := whatsapptest.Notification(whatsapptest.Message{ID: "wamid.tap", From: waUser, Name: "Kerry Fisher", ButtonID: tt.button + exec, ButtonTitle: tt.title})
			if got := hook.post(t, tap, nil); got != http.StatusOK {
				t.Fatalf("the tap was answered %d", got)
			}
			var last map[string]any
			waitFor(t, "the run's answer", func() (bool, any) {
				sent := srv.Sent()
				last = sent[len(sent)-1]
				return waText(last) == tt.reply, sent
			})
			if last["to"] != waUser {
				t.Fatalf("the answer went to %v, want %s", last["to"], waUser)
			}
			got := deals()
			if len(got) != tt.wantDeals || (tt.wantDeals == 1 && got[0].(map[string]any)["title"] != "Acme") {
				t.Fatalf("deals %v, want %d named Acme", got, tt.wantDeals)
			}
		})
	}
}
