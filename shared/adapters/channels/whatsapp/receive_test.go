package whatsapp_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/channels/whatsapp"
	"github.com/agentplane/agentplane/shared/adapters/channels/whatsapp/whatsapptest"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// link is a connection to WhatsApp with the test server's credentials (Receive calls no API).
func link() channels.Link {
	return channels.Link{ID: "conn-1", Credentials: whatsapptest.Credentials()}
}

// wantErr checks that err is an apperr of kind and code.
func wantErr(t *testing.T, err error, kind apperr.Kind, code string) {
	t.Helper()
	if e := apperr.As(err); err == nil || e.Kind != kind || e.Code != code {
		t.Fatalf("error %v, want %s %s", err, kind, code)
	}
}

// Meta's GET handshake is answered with the challenge only when it carries the connection's
// verify token.
func TestHandshake(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		query    url.Values
		wantKind apperr.Kind
		wantCode string
	}{
		{name: "the verify token", query: whatsapptest.VerifyQuery(whatsapptest.VerifyToken, "1158201444")},
		{name: "another token", query: whatsapptest.VerifyQuery("guessed", "1158201444"), wantKind: apperr.Unauthorized, wantCode: "whatsapp_verify_token_mismatch"},
		{name: "no token", query: url.Values{"hub.mode": {"subscribe"}, "hub.challenge": {"1158201444"}}, wantKind: apperr.Unauthorized, wantCode: "whatsapp_verify_token_mismatch"},
		{name: "not a subscription", query: url.Values{"hub.verify_token": {whatsapptest.VerifyToken}, "hub.challenge": {"1158201444"}}, wantKind: apperr.Invalid, wantCode: "invalid_field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := whatsapp.New(http.DefaultClient).Receive(context.Background(), link(), channels.Request{Method: http.MethodGet, Query: tt.query})
			if tt.wantCode != "" {
				wantErr(t, err, tt.wantKind, tt.wantCode)
				return
			}
			want := channels.Answer{Status: http.StatusOK, ContentType: "text/plain; charset=utf-8", Body: []byte("1158201444")}
			if err != nil || !reflect.DeepEqual(got.Answer, want) || len(got.Messages) != 0 {
				t.Fatalf("got %+v, %v; want the answer %+v", got, err, want)
			}
		})
	}
}

// A notification is taken only with the X-Hub-Signature-256 of its very body keyed with the app
// secret; WhatsApp signs no timestamp, so there is no staleness to check.
func TestReceiveSignature(t *testing.T) {
	t.Parallel()
	body := whatsapptest.Notification(whatsapptest.Message{ID: "wamid.1", From: "16315551181", Name: "Kerry", Text: "hi"})
	tests := []struct {
		name      string
		signature string
		body      []byte
		wantCode  string
	}{
		{name: "signed with the app secret", signature: whatsapptest.Sign(whatsapptest.AppSecret, body), body: body},
		{name: "signed with another secret", signature: whatsapptest.Sign("another-secret", body), body: body, wantCode: "whatsapp_signature_invalid"},
		{name: "body changed after signing", signature: whatsapptest.Sign(whatsapptest.AppSecret, body), body: append([]byte(" "), body...), wantCode: "whatsapp_signature_invalid"},
		{name: "not hex", signature: "sha256=zz", body: body, wantCode: "whatsapp_signature_invalid"},
		{name: "without the sha256= prefix", signature: whatsapptest.Sign(whatsapptest.AppSecret, body)[len("sha256="):], body: body, wantCode: "whatsapp_signature_invalid"},
		{name: "no signature", body: body, wantCode: "whatsapp_signature_missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := channels.Request{Method: http.MethodPost, Header: http.Header{}, Body: tt.body}
			if tt.signature != "" {
				r.Header.Set("X-Hub-Signature-256", tt.signature)
			}
			got, err := whatsapp.New(http.DefaultClient).Receive(context.Background(), link(), r)
			if tt.wantCode != "" {
				wantErr(t, err, apperr.Unauthorized, tt.wantCode)
				if len(got.Messages) != 0 {
					t.Fatalf("messages taken from a refused call: %+v", got.Messages)
				}
				return
			}
			if err != nil || got.Answer.Status != http.StatusOK || len(got.Messages) != 1 || got.Messages[0].Text != "hi" {
				t.Fatalf("got %+v, %v", got, err)
			}
		})
	}
}

// What a signed notification brings: texts and clicks on the approval buttons to the
// connection's number, the business's own messages marked FromBot, nothing for status updates
// and other numbers; all answered 200 at once.
func TestReceiveMessages(t *testing.T) {
	t.Parallel()
	kerry := func(id, text string) whatsapptest.Message {
		return whatsapptest.Message{ID: id, From: "16315551181", Name: "Kerry Fisher", Text: text}
	}
	click := func(id, buttonID, title string) whatsapptest.Message {
		return whatsapptest.Message{ID: id, From: "16315551181", Name: "Kerry Fisher", ButtonID: buttonID, ButtonTitle: title}
	}
	reply := channels.Target{"to": "16315551181"}
	tests := []struct {
		name string
		body []byte
		want []channels.Inbound
	}{
		{
			name: "a text",
			body: whatsapptest.Notification(kerry("wamid.HBgLMTYzMTU1NTExODEVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", "What are your opening hours?")),
			want: []channels.Inbound{{ID: "wamid.HBgLMTYzMTU1NTExODEVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=", Conversation: "16315551181", User: "16315551181", UserName: "Kerry Fisher", Text: "What are your opening hours?", Reply: reply}},
		},
		{
			name: "two texts of two users",
			body: whatsapptest.Notification(kerry("wamid.1", "one"), whatsapptest.Message{ID: "wamid.2", From: "447700900123", Name: "Sam", Text: "two"}),
			want: []channels.Inbound{
				{ID: "wamid.1", Conversation: "16315551181", User: "16315551181", UserName: "Kerry Fisher", Text: "one", Reply: reply},
				{ID: "wamid.2", Conversation: "447700900123", User: "447700900123", UserName: "Sam", Text: "two", Reply: channels.Target{"to": "447700900123"}},
			},
		},
		{
			name: "a click on Approve",
			body: whatsapptest.Notification(click("wamid.click1", "a:exec-42", "Approve")),
			want: []channels.Inbound{{ID: "wamid.click1", Conversation: "16315551181", User: "16315551181", UserName: "Kerry Fisher", Decision: &channels.Decision{ExecutionID: "exec-42", Approve: true}, Reply: reply}},
		},
		{
			name: "a click on Reject",
			body: whatsapptest.Notification(click("wamid.click2", "r:exec-42", "Reject")),
			want: []channels.Inbound{{ID: "wamid.click2", Conversation: "16315551181", User: "16315551181", UserName: "Kerry Fisher", Decision: &channels.Decision{ExecutionID: "exec-42"}, Reply: reply}},
		},
		{
			name: "a click on a button that is not an approval's",
			body: whatsapptest.Notification(click("wamid.click3", "menu-2", "Prices")),
		},
		{
			name: "a message from the business number itself",
			body: whatsapptest.Notification(whatsapptest.Message{ID: "wamid.own", From: whatsapptest.DisplayPhoneNumber, Text: "Hello from us"}),
			want: []channels.Inbound{{ID: "wamid.own", Conversation: whatsapptest.DisplayPhoneNumber, User: whatsapptest.DisplayPhoneNumber, Text: "Hello from us", FromBot: true, Reply: channels.Target{"to": whatsapptest.DisplayPhoneNumber}}},
		},
		{
			name: "the business app's echo of what it wrote",
			body: whatsapptest.EchoNotification("wamid.echo", "16315551181", "We open at 9."),
			want: []channels.Inbound{{ID: "wamid.echo", Conversation: "16315551181", User: whatsapptest.DisplayPhoneNumber, Text: "We open at 9.", FromBot: true, Reply: reply}},
		},
		{
			name: "a status update",
			body: whatsapptest.StatusNotification("wamid.sent-1", "16315551181", "read"),
		},
		{
			name: "a message to another phone number",
			body: whatsapptest.NotificationTo("999999999999999", "15550000000", kerry("wamid.other", "hi")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := whatsapp.New(http.DefaultClient).Receive(context.Background(), link(), whatsapptest.Request(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if got.Answer.Status != http.StatusOK {
				t.Fatalf("answer %+v, want 200", got.Answer)
			}
			if !reflect.DeepEqual(got.Messages, tt.want) {
				t.Fatalf("messages\n got %+v\nwant %+v", got.Messages, tt.want)
			}
		})
	}
}

// WhatsApp delivers a notification again until it is answered 200: the retry's message has the
// first one's id, so the core can take it once.
func TestReceiveRetrySameID(t *testing.T) {
	t.Parallel()
	body := whatsapptest.Notification(whatsapptest.Message{ID: "wamid.retried", From: "16315551181", Text: "hi"})
	p := whatsapp.New(http.DefaultClient)
	var ids []string
	for range 2 {
		got, err := p.Receive(context.Background(), link(), whatsapptest.Request(body))
		if err != nil || len(got.Messages) != 1 {
			t.Fatalf("got %+v, %v", got, err)
		}
		ids = append(ids, got.Messages[0].ID)
	}
	if ids[0] != "wamid.retried" || ids[1] != ids[0] {
		t.Fatalf("ids %q, want wamid.retried twice", ids)
	}
}

// A correctly signed body that is not JSON is invalid; a method WhatsApp does not use is refused.
func TestReceiveMalformed(t *testing.T) {
	t.Parallel()
	p := whatsapp.New(http.DefaultClient)
	_, err := p.Receive(context.Background(), link(), whatsapptest.Request([]byte("{not json")))
	wantErr(t, err, apperr.Invalid, "invalid_field")
	_, err = p.Receive(context.Background(), link(), channels.Request{Method: http.MethodPut})
	wantErr(t, err, apperr.MethodNotAllowed, "method_not_allowed")
}

// Over HTTP, as the webhook route hands calls to Receive: Meta's verification GET is answered
// with its challenge, a signed notification's message is read, and a call signed otherwise is
// refused.
func TestReceiveOverHTTP(t *testing.T) {
	t.Parallel()
	p := whatsapp.New(http.DefaultClient)
	var (
		mu  sync.Mutex
		got []channels.Inbound
	)
	route := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec, err := p.Receive(r.Context(), link(), channels.Request{Method: r.Method, Header: r.Header, Query: r.URL.Query(), Body: body, Now: time.Now()})
		if err != nil {
			http.Error(w, apperr.As(err).Code, http.StatusForbidden)
			return
		}
		mu.Lock()
		got = append(got, rec.Messages...)
		mu.Unlock()
		w.Header().Set("Content-Type", rec.Answer.ContentType)
		w.WriteHeader(rec.Answer.Status)
		_, _ = w.Write(rec.Answer.Body)
	}))
	defer route.Close()
	do := func(req *http.Request, err error) (int, string) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := route.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	ctx := context.Background()
	hook := route.URL + "/hooks/whatsapp/conn-1"

	if status, body := do(whatsapptest.VerifyRequest(ctx, hook, "1158201444")); status != http.StatusOK || body != "1158201444" {
		t.Fatalf("verification answered %d %q", status, body)
	}
	notification := whatsapptest.Notification(whatsapptest.Message{ID: "wamid.http", From: "16315551181", Name: "Kerry", Text: "hi"})
	if status, body := do(whatsapptest.HTTPRequest(ctx, hook, notification)); status != http.StatusOK {
		t.Fatalf("notification answered %d %q", status, body)
	}
	forged, err := whatsapptest.HTTPRequest(ctx, hook, notification)
	if err == nil {
		forged.Header.Set("X-Hub-Signature-256", whatsapptest.Sign("forger", notification))
	}
	if status, body := do(forged, err); status != http.StatusForbidden || !strings.Contains(body, "whatsapp_signature_invalid") {
		t.Fatalf("forged notification answered %d %q", status, body)
	}
	want := []channels.Inbound{{ID: "wamid.http", Conversation: "16315551181", User: "16315551181", UserName: "Kerry", Text: "hi", Reply: channels.Target{"to": "16315551181"}}}
	mu.Lock()
	defer mu.Unlock()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read %+v, want %+v", got, want)
	}
}
