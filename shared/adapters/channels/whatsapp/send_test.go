package whatsapp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/adapters/channels/whatsapp"
	"github.com/agentplane/agentplane/shared/adapters/channels/whatsapp/whatsapptest"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// decode is a JSON document as the server decodes a body.
func decode(t *testing.T, doc string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// textMessage is the body of a text message to to.
func textMessage(to, body string) map[string]any {
	return map[string]any{
		"messaging_product": "whatsapp",
		"recipient_type":    "individual",
		"to":                to,
		"type":              "text",
		"text":              map[string]any{"preview_url": false, "body": body},
	}
}

// wantSent checks the bodies of the messages the server received.
func wantSent(t *testing.T, srv *whatsapptest.Server, want ...map[string]any) {
	t.Helper()
	if got := srv.Sent(); !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("sent\n%s\nwant\n%s", g, w)
	}
}

// The agent's Markdown reaches the user in WhatsApp's own formatting.
func TestSendFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, markdown, want string
	}{
		{"bold", "This is **important**.", "This is *important*."},
		{"bold with underscores", "This is __important__.", "This is *important*."},
		{"italic with a star", "This is *subtle*.", "This is _subtle_."},
		{"italic with an underscore", "This is _subtle_.", "This is _subtle_."},
		{"bold and italic", "***both***", "_*both*_"},
		{"strikethrough", "It costs ~~10~~ 8 euros.", "It costs ~10~ 8 euros."},
		{"inline code", "Run `make test`.", "Run `make test`."},
		{"code block", "Try:\n\n```go\nfmt.Println(\"hi\")\n```", "Try:\n\n```\nfmt.Println(\"hi\")\n```"},
		{"a citation", "See [the docs](https://example.com/docs).", "See the docs (https://example.com/docs)."},
		{"a link titled with its url", "[https://example.com](https://example.com)", "https://example.com"},
		{"a bare link", "Go to https://example.com now.", "Go to https://example.com now."},
		{"heading", "# Opening **hours**\nEvery day.", "*Opening hours*\n\nEvery day."},
		{"bullet list", "Items:\n\n* one\n* **two**", "Items:\n\n- one\n- *two*"},
		{"numbered list", "3. three\n4. four", "3. three\n4. four"},
		{"nested list", "- a\n  - b", "- a\n  - b"},
		{"quote", "> said\n> twice", "> said\n> twice"},
		{"line breaks kept", "line one\nline two", "line one\nline two"},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", "a | b\n1 | 2"},
		{"escapes", `2 \* 3 &amp; 4`, "2 * 3 & 4"},
	}
	srv := whatsapptest.Start(t)
	p := whatsapp.New(srv.Client())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const to = "16315551181"
			before := len(srv.Sent())
			if err := p.Send(context.Background(), srv.Link("conn-1"), channels.Outgoing{To: channels.Target{"to": to}, Text: tt.markdown}); err != nil {
				t.Fatal(err)
			}
			sent := srv.Sent()[before:]
			if want := textMessage(to, tt.want); len(sent) != 1 || !reflect.DeepEqual(sent[0], want) {
				t.Fatalf("sent %v, want %v", sent, want)
			}
		})
	}
}

// A text past 4,096 characters goes in several messages, each within the limit, cut between
// paragraphs, nothing lost.
func TestSendSplits(t *testing.T) {
	t.Parallel()
	srv := whatsapptest.Start(t)
	paragraph := strings.Repeat("é", 1500)
	text := strings.Join([]string{paragraph, paragraph, paragraph, paragraph}, "\n\n")
	if err := whatsapp.New(srv.Client()).Send(context.Background(), srv.Link("conn-1"), channels.Outgoing{To: channels.Target{"to": "16315551181"}, Text: text}); err != nil {
		t.Fatal(err)
	}
	wantSent(t, srv,
		textMessage("16315551181", paragraph+"\n\n"+paragraph),
		textMessage("16315551181", paragraph+"\n\n"+paragraph),
	)
	for _, m := range srv.Sent() {
		if n := utf8.RuneCountInString(m["text"].(map[string]any)["body"].(string)); n > whatsapp.TextLimit {
			t.Fatalf("a message of %d characters", n)
		}
	}
}

// An approval is the text, then a message with an Approve and a Reject reply button whose ids
// carry the execution, which a click brings back as a Decision.
func TestSendApproval(t *testing.T) {
	t.Parallel()
	srv := whatsapptest.Start(t)
	p := whatsapp.New(srv.Client())
	out := channels.Outgoing{
		To:       channels.Target{"to": "16315551181"},
		Text:     "I need to look this up.",
		Approval: &channels.Approval{ExecutionID: "exec-42", Tool: "web_search"},
	}
	if err := p.Send(context.Background(), srv.Link("conn-1"), out); err != nil {
		t.Fatal(err)
	}
	wantSent(t, srv,
		textMessage("16315551181", "I need to look this up."),
		decode(t, `{
			"messaging_product": "whatsapp",
			"recipient_type": "individual",
			"to": "16315551181",
			"type": "interactive",
			"interactive": {
				"type": "button",
				"body": {"text": "The agent asks to call the tool *web_search*. Allow it?"},
				"action": {"buttons": [
					{"type": "reply", "reply": {"id": "a:exec-42", "title": "Approve"}},
					{"type": "reply", "reply": {"id": "r:exec-42", "title": "Reject"}}
				]}
			}
		}`),
	)

	click := whatsapptest.Notification(whatsapptest.Message{ID: "wamid.click", From: "16315551181", ButtonID: "r:exec-42", ButtonTitle: "Reject"})
	got, err := p.Receive(context.Background(), srv.Link("conn-1"), whatsapptest.Request(click))
	if err != nil || len(got.Messages) != 1 || !reflect.DeepEqual(got.Messages[0].Decision, &channels.Decision{ExecutionID: "exec-42"}) {
		t.Fatalf("the click read as %+v, %v", got.Messages, err)
	}

	tooLong := out
	tooLong.Approval = &channels.Approval{ExecutionID: strings.Repeat("x", 255), Tool: "web_search"}
	before := len(srv.Calls())
	wantErr(t, p.Send(context.Background(), srv.Link("conn-1"), tooLong), apperr.Invalid, "invalid_field")
	if len(srv.Calls()) != before {
		t.Fatal("an approval whose id WhatsApp cannot carry was sent in part")
	}
}

// Send calls the phone number's /messages with the access token.
func TestSendRequest(t *testing.T) {
	t.Parallel()
	srv := whatsapptest.Start(t)
	if err := whatsapp.New(srv.Client()).Send(context.Background(), srv.Link("conn-1"), channels.Outgoing{To: channels.Target{"to": "16315551181"}, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if len(calls) != 1 || calls[0].Method != http.MethodPost || calls[0].Path != "/"+whatsapptest.PhoneNumberID+"/messages" || calls[0].Authorization != "Bearer "+whatsapptest.AccessToken {
		t.Fatalf("calls %+v", calls)
	}
	wantErr(t, whatsapp.New(srv.Client()).Send(context.Background(), srv.Link("conn-1"), channels.Outgoing{Text: "hi"}), apperr.Invalid, "invalid_field")
}

// Graph's refusals: rate limits (429, or a 400 with a rate-limit code) and 5xx are RetryLater,
// with the Retry-After when there is one; others are permanent errors with Graph's message, no
// credential in it.
func TestSendErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		fail        whatsapptest.Failure
		badToken    bool
		wantRetry   bool
		wantAfter   time.Duration
		wantMessage string
	}{
		{name: "429 with Retry-After", fail: whatsapptest.Failure{Status: http.StatusTooManyRequests, RetryAfter: 7 * time.Second, Code: 130429, Message: "(#130429) Rate limit hit"}, wantRetry: true, wantAfter: 7 * time.Second},
		{name: "503", fail: whatsapptest.Failure{Status: http.StatusServiceUnavailable}, wantRetry: true},
		{name: "500 with Retry-After", fail: whatsapptest.Failure{Status: http.StatusInternalServerError, RetryAfter: 3 * time.Second, Code: 1}, wantRetry: true, wantAfter: 3 * time.Second},
		{name: "400 pair rate limit", fail: whatsapptest.Failure{Status: http.StatusBadRequest, Code: 131056, Message: "(#131056) (Business Account, Consumer Account) pair rate limit hit"}, wantRetry: true},
		{name: "400 spam rate limit with Retry-After", fail: whatsapptest.Failure{Status: http.StatusBadRequest, RetryAfter: 60 * time.Second, Code: 131048, Message: "(#131048) Spam rate limit hit"}, wantRetry: true, wantAfter: 60 * time.Second},
		{name: "400 application rate limit", fail: whatsapptest.Failure{Status: http.StatusBadRequest, Code: 4, Message: "(#4) Application request limit reached"}, wantRetry: true},
		{name: "401 wrong token", badToken: true, wantMessage: "Invalid OAuth access token - Cannot parse access token"},
		{name: "400 outside the 24 hours window", fail: whatsapptest.Failure{Status: http.StatusBadRequest, Code: 131047, Message: "(#131047) Re-engagement message"}, wantMessage: "(#131047) Re-engagement message"},
		{name: "400 naming the token", fail: whatsapptest.Failure{Status: http.StatusBadRequest, Code: 190, Message: "Malformed access token " + whatsapptest.AccessToken}, wantMessage: "Malformed access token [redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := whatsapptest.Start(t)
			l := srv.Link("conn-1")
			if tt.badToken {
				l.Credentials["access_token"] = "EAA-revoked-token"
			} else {
				srv.Fail(1, tt.fail)
			}
			err := whatsapp.New(srv.Client()).Send(context.Background(), l, channels.Outgoing{To: channels.Target{"to": "16315551181"}, Text: "hi"})
			after, retry := channels.IsRetryLater(err)
			if err == nil || retry != tt.wantRetry || after != tt.wantAfter {
				t.Fatalf("error %v: retry %v after %s, want retry %v after %s", err, retry, after, tt.wantRetry, tt.wantAfter)
			}
			if !strings.Contains(err.Error(), tt.wantMessage) {
				t.Fatalf("error %q does not say %q", err, tt.wantMessage)
			}
			for _, secret := range []string{whatsapptest.AccessToken, "EAA-revoked-token", whatsapptest.AppSecret} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q holds a credential", err)
				}
			}
		})
	}
}

// Connect reads the phone number with the access token; a token or number Graph refuses is an
// invalid connection with Graph's reason, an unavailable Graph a RetryLater.
func TestConnect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		change    func(l *channels.Link)
		fail      *whatsapptest.Failure
		wantCode  string
		wantRetry bool
	}{
		{name: "the credentials work"},
		{name: "a wrong access token", change: func(l *channels.Link) { l.Credentials["access_token"] = "EAA-wrong" }, wantCode: "whatsapp_credentials_rejected"},
		{name: "a wrong phone number id", change: func(l *channels.Link) { l.Credentials["phone_number_id"] = "123" }, wantCode: "whatsapp_credentials_rejected"},
		{name: "Graph unavailable", fail: &whatsapptest.Failure{Status: http.StatusServiceUnavailable}, wantRetry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := whatsapptest.Start(t)
			l := srv.Link("conn-1")
			if tt.change != nil {
				tt.change(&l)
			}
			if tt.fail != nil {
				srv.Fail(1, *tt.fail)
			}
			err := whatsapp.New(srv.Client()).Connect(context.Background(), l)
			switch {
			case tt.wantCode != "":
				wantErr(t, err, apperr.Invalid, tt.wantCode)
				if strings.Contains(err.Error(), "EAA-wrong") {
					t.Fatalf("error %q holds the token", err)
				}
			case tt.wantRetry:
				if _, retry := channels.IsRetryLater(err); !retry {
					t.Fatalf("error %v, want RetryLater", err)
				}
			case err != nil:
				t.Fatal(err)
			}
			calls := srv.Calls()
			wantPath := "/" + l.Credentials["phone_number_id"]
			if len(calls) != 1 || calls[0].Method != http.MethodGet || calls[0].Path != wantPath ||
				!reflect.DeepEqual(calls[0].Query, url.Values{"fields": {"display_phone_number"}}) ||
				calls[0].Authorization != "Bearer "+l.Credentials["access_token"] {
				t.Fatalf("calls %+v", calls)
			}
		})
	}
}

// An answer WhatsApp refuses part-way is retried from the piece it refused: the RetryLater
// counts the messages taken, and the retry given that count sends the others only.
func TestSendResumes(t *testing.T) {
	t.Parallel()
	paragraph := strings.Repeat("é", 4000)
	out := channels.Outgoing{
		To:       channels.Target{"to": "16315551181"},
		Text:     paragraph + "\n\n" + strings.Repeat("b", 4000),
		Approval: &channels.Approval{ExecutionID: "exec-42", Tool: "create_deal"},
	}
	tests := []struct {
		name     string
		okBefore int
		wantSent int
	}{
		{name: "429 on piece 2 of 3", okBefore: 1, wantSent: 1},
		{name: "429 on piece 1 of 3", okBefore: 0, wantSent: 0},
		{name: "429 on the approval", okBefore: 2, wantSent: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			whole := whatsapptest.Start(t)
			p := whatsapp.New(whole.Client())
			if err := p.Send(context.Background(), whole.Link("conn-1"), out); err != nil {
				t.Fatal(err)
			}
			pieces := whole.Sent()
			if len(pieces) != 3 {
				t.Fatalf("%d pieces, want 3", len(pieces))
			}

			srv := whatsapptest.Start(t)
			p = whatsapp.New(srv.Client())
			srv.FailAfter(tt.okBefore, 1, whatsapptest.Failure{Status: http.StatusTooManyRequests, RetryAfter: time.Second, Code: 130429, Message: "(#130429) Rate limit hit"})
			err := p.Send(context.Background(), srv.Link("conn-1"), out)
			var later *channels.RetryLater
			if !errors.As(err, &later) || later.After != time.Second || later.Sent != tt.wantSent {
				t.Fatalf("error %#v, want a RetryLater after 1s with Sent %d", err, tt.wantSent)
			}
			retry := out
			retry.Sent = later.Sent
			if err := p.Send(context.Background(), srv.Link("conn-1"), retry); err != nil {
				t.Fatal(err)
			}
			wantSent(t, srv, pieces...)
		})
	}
}

// A Graph API that cannot be reached (nothing listens, the connection is cut) is a RetryLater
// with no wait of its own, its message naming neither the URL nor a credential.
func TestSendUnreachable(t *testing.T) {
	t.Parallel()
	srv := whatsapptest.Start(t)
	l := srv.Link("conn-1")
	srv.Close()
	err := whatsapp.New(srv.Client()).Send(context.Background(), l, channels.Outgoing{To: channels.Target{"to": "16315551181"}, Text: "hi"})
	var later *channels.RetryLater
	if !errors.As(err, &later) || later.After != 0 || later.Sent != 0 {
		t.Fatalf("error %#v, want a RetryLater", err)
	}
	for _, secret := range []string{whatsapptest.AccessToken, whatsapptest.AppSecret, whatsapptest.PhoneNumberID, "http://"} {
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("error %q holds %q", err, secret)
		}
	}
}
