// Package whatsapptest is WhatsApp's Cloud API (Meta's Graph API) on loopback for tests: a
// server that answers the calls the adapter makes (a phone number read, messages sent) the way
// Graph documents them, records every call, and can be told to fail the next ones; and the
// webhook notifications WhatsApp would deliver (messages, button clicks, status updates, the
// business app's echoes), signed with the app secret as Meta signs them.
package whatsapptest

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/channels"
)

// The credentials the server accepts, and the phone number it is.
const (
	AccessToken        = "EAAtest-access-token"
	AppSecret          = "test-app-secret"
	VerifyToken        = "test-verify-token"
	PhoneNumberID      = "106540352242922"
	DisplayPhoneNumber = "15550783881"
	// BusinessAccountID is the WhatsApp Business Account's id, the notifications' entry id.
	BusinessAccountID = "102290129340398"
)

// The Cloud API's limits the server enforces.
const (
	textLimit        = 4096
	buttonBodyLimit  = 1024
	buttonTitleLimit = 20
	buttonIDLimit    = 256
	maxButtons       = 3
)

// Server is the Graph API on a loopback port.
type Server struct {
	// URL is the API's base, what https://graph.facebook.com/v21.0 is in production: a link's
	// APIBaseURL.
	URL   string
	srv   *httptest.Server
	mu    sync.Mutex
	calls []Call
	// fails are the answers of the next calls: a failure, or nil to serve the call.
	fails []*Failure
	sent  atomic.Int64
}

// Call is a call the server received, and the status it answered.
type Call struct {
	Method        string
	Path          string
	Query         url.Values
	Authorization string
	// Body is the JSON body decoded (nil when there was none).
	Body   map[string]any
	Status int
}

// Failure is an error answer the server gives instead of serving a call: Status, a Retry-After
// header of RetryAfter (whole seconds) when it is not 0, and Graph's error body with Code and
// Message (the status's text when "").
type Failure struct {
	Status     int
	RetryAfter time.Duration
	Code       int
	Message    string
}

// Start starts a server, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	return s
}

// Client is an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Credentials are a connection's credentials the server accepts (and that sign Request's calls).
func Credentials() channels.Credentials {
	return channels.Credentials{
		"access_token":    AccessToken,
		"app_secret":      AppSecret,
		"verify_token":    VerifyToken,
		"phone_number_id": PhoneNumberID,
	}
}

// Link is the connection id's link to the server, with the credentials it accepts.
func (s *Server) Link(id string) channels.Link {
	return channels.Link{ID: id, APIBaseURL: s.URL, Credentials: Credentials()}
}

// Fail makes the server answer the next n calls with f.
func (s *Server) Fail(n int, f Failure) { s.FailAfter(0, n, f) }

// FailAfter makes the server serve the next ok calls, then answer the n after them with f.
func (s *Server) FailAfter(ok, n int, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range ok {
		s.fails = append(s.fails, nil)
	}
	for range n {
		s.fails = append(s.fails, &f)
	}
}

// Close stops the server: calls to it are refused from then on.
func (s *Server) Close() { s.srv.Close() }

// Calls are the calls received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Sent are the bodies of the messages sent (the POSTs to /messages answered 200), in order.
func (s *Server) Sent() []map[string]any {
	var out []map[string]any
	for _, c := range s.Calls() {
		if c.Method == http.MethodPost && strings.HasSuffix(c.Path, "/messages") && c.Status == http.StatusOK {
			out = append(out, c.Body)
		}
	}
	return out
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	call := Call{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Authorization: r.Header.Get("Authorization")}
	var bodyErr error
	if len(raw) > 0 {
		bodyErr = json.Unmarshal(raw, &call.Body)
	}
	status, answer := s.answer(w, r, raw, bodyErr)
	call.Status = status
	s.mu.Lock()
	s.calls = append(s.calls, call)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(answer)
}

// answer is the status and body of the answer to r, a failure's when one is pending.
func (s *Server) answer(w http.ResponseWriter, r *http.Request, raw []byte, bodyErr error) (int, any) {
	s.mu.Lock()
	var fail *Failure
	if len(s.fails) > 0 {
		fail, s.fails = s.fails[0], s.fails[1:]
	}
	s.mu.Unlock()
	if fail != nil {
		if fail.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(fail.RetryAfter/time.Second)))
		}
		msg := fail.Message
		if msg == "" {
			msg = http.StatusText(fail.Status)
		}
		return fail.Status, graphError(fail.Code, msg)
	}
	if r.Header.Get("Authorization") != "Bearer "+AccessToken {
		return http.StatusUnauthorized, graphError(190, "Invalid OAuth access token - Cannot parse access token")
	}
	id, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	switch {
	case id != PhoneNumberID:
		return http.StatusBadRequest, graphError(100, fmt.Sprintf("Unsupported %s request. Object with ID '%s' does not exist, cannot be loaded due to missing permissions, or does not support this operation.", strings.ToLower(r.Method), id))
	case rest == "" && r.Method == http.MethodGet:
		return http.StatusOK, map[string]any{"display_phone_number": DisplayPhoneNumber, "id": PhoneNumberID}
	case rest == "messages" && r.Method == http.MethodPost:
		if bodyErr != nil {
			return http.StatusBadRequest, graphError(100, "(#100) The parameter messaging_product is required.")
		}
		return s.sendMessage(raw)
	default:
		return http.StatusBadRequest, graphError(100, "Unknown path components: /"+rest)
	}
}

// outMessage is a message sent to /messages, as far as the server checks it.
type outMessage struct {
	MessagingProduct string `json:"messaging_product"`
	To               string `json:"to"`
	Type             string `json:"type"`
	Text             struct {
		Body string `json:"body"`
	} `json:"text"`
	Interactive struct {
		Type string `json:"type"`
		Body struct {
			Text string `json:"text"`
		} `json:"body"`
		Action struct {
			Buttons []struct {
				Type  string `json:"type"`
				Reply struct {
					ID    string `json:"id"`
					Title string `json:"title"`
				} `json:"reply"`
			} `json:"buttons"`
		} `json:"action"`
	} `json:"interactive"`
}

// sendMessage checks a message against the Cloud API's rules and answers as it does.
func (s *Server) sendMessage(raw []byte) (int, any) {
	var m outMessage
	_ = json.Unmarshal(raw, &m)
	if problem := check(m); problem != "" {
		return http.StatusBadRequest, graphError(100, "(#100) "+problem)
	}
	return http.StatusOK, map[string]any{
		"messaging_product": "whatsapp",
		"contacts":          []any{map[string]any{"input": m.To, "wa_id": m.To}},
		"messages":          []any{map[string]any{"id": "wamid.sent-" + strconv.FormatInt(s.sent.Add(1), 10)}},
	}
}

// check is what is wrong with m, "" when nothing.
func check(m outMessage) string {
	switch {
	case m.MessagingProduct != "whatsapp":
		return "The parameter messaging_product is required."
	case m.To == "":
		return "The parameter to is required."
	}
	switch m.Type {
	case "text":
		if n := utf8.RuneCountInString(m.Text.Body); n == 0 || n > textLimit {
			return fmt.Sprintf("Param text['body'] must be 1 to %d characters long.", textLimit)
		}
	case "interactive":
		in := m.Interactive
		if in.Type != "button" {
			return "Param interactive['type'] must be one of {button, list, cta_url, ...}."
		}
		if n := utf8.RuneCountInString(in.Body.Text); n == 0 || n > buttonBodyLimit {
			return fmt.Sprintf("Param interactive['body']['text'] must be 1 to %d characters long.", buttonBodyLimit)
		}
		if n := len(in.Action.Buttons); n == 0 || n > maxButtons {
			return fmt.Sprintf("Param interactive['action']['buttons'] must have 1 to %d buttons.", maxButtons)
		}
		ids := map[string]bool{}
		for _, b := range in.Action.Buttons {
			switch {
			case b.Type != "reply":
				return "Param interactive['action']['buttons'][]['type'] must be reply."
			case b.Reply.Title == "" || utf8.RuneCountInString(b.Reply.Title) > buttonTitleLimit:
				return fmt.Sprintf("Param interactive['action']['buttons'][]['reply']['title'] must be 1 to %d characters long.", buttonTitleLimit)
			case b.Reply.ID == "" || utf8.RuneCountInString(b.Reply.ID) > buttonIDLimit:
				return fmt.Sprintf("Param interactive['action']['buttons'][]['reply']['id'] must be 1 to %d characters long.", buttonIDLimit)
			case ids[b.Reply.ID]:
				return "Buttons must have unique ids."
			}
			ids[b.Reply.ID] = true
		}
	default:
		return "Param type must be one of {text, interactive, ...}."
	}
	return ""
}

// graphError is Graph's error body.
func graphError(code int, message string) map[string]any {
	return map[string]any{"error": map[string]any{
		"message":    message,
		"type":       "OAuthException",
		"code":       code,
		"fbtrace_id": "Atest",
	}}
}

// Message is a message a WhatsApp user sends the business: a text, or, with ButtonID, a click
// on a reply button.
type Message struct {
	// ID is the message's id (wamid...).
	ID string
	// From is the sender's number, Name their profile name.
	From, Name  string
	Text        string
	ButtonID    string
	ButtonTitle string
}

// Notification is the body of the webhook call WhatsApp makes when msgs reach the server's phone
// number.
func Notification(msgs ...Message) []byte {
	return NotificationTo(PhoneNumberID, DisplayPhoneNumber, msgs...)
}

// NotificationTo is the body of the webhook call WhatsApp makes when msgs reach the phone number
// phoneNumberID (displayed as displayPhoneNumber).
func NotificationTo(phoneNumberID, displayPhoneNumber string, msgs ...Message) []byte {
	var contacts, messages []any
	for _, m := range msgs {
		contacts = append(contacts, map[string]any{"profile": map[string]any{"name": m.Name}, "wa_id": m.From})
		msg := map[string]any{"from": m.From, "id": m.ID, "timestamp": timestamp()}
		if m.ButtonID != "" {
			msg["type"] = "interactive"
			msg["interactive"] = map[string]any{"type": "button_reply", "button_reply": map[string]any{"id": m.ButtonID, "title": m.ButtonTitle}}
		} else {
			msg["type"] = "text"
			msg["text"] = map[string]any{"body": m.Text}
		}
		messages = append(messages, msg)
	}
	return notification("messages", phoneNumberID, displayPhoneNumber, map[string]any{"contacts": contacts, "messages": messages})
}

// StatusNotification is the body of the webhook call WhatsApp makes when a message the business
// sent to recipient changes status (sent, delivered, read).
func StatusNotification(messageID, recipient, status string) []byte {
	return notification("messages", PhoneNumberID, DisplayPhoneNumber, map[string]any{"statuses": []any{map[string]any{
		"id": messageID, "status": status, "timestamp": timestamp(), "recipient_id": recipient,
	}}})
}

// EchoNotification is the body of the webhook call WhatsApp makes when the business writes to
// the number to from the WhatsApp Business app (a number on both the app and the Cloud API).
func EchoNotification(id, to, text string) []byte {
	return notification("smb_message_echoes", PhoneNumberID, DisplayPhoneNumber, map[string]any{"message_echoes": []any{map[string]any{
		"from": DisplayPhoneNumber, "to": to, "id": id, "timestamp": timestamp(), "type": "text", "text": map[string]any{"body": text},
	}}})
}

func notification(field, phoneNumberID, displayPhoneNumber string, value map[string]any) []byte {
	value["messaging_product"] = "whatsapp"
	value["metadata"] = map[string]any{"display_phone_number": displayPhoneNumber, "phone_number_id": phoneNumberID}
	b, err := json.Marshal(map[string]any{
		"object": "whatsapp_business_account",
		"entry": []any{map[string]any{
			"id":      BusinessAccountID,
			"changes": []any{map[string]any{"field": field, "value": value}},
		}},
	})
	if err != nil {
		panic(err)
	}
	return b
}

func timestamp() string { return strconv.FormatInt(time.Now().Unix(), 10) }

// Sign is the X-Hub-Signature-256 Meta sends with body: "sha256=" and the hex HMAC-SHA256 of
// body keyed with the app secret.
func Sign(appSecret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(appSecret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Request is the webhook call carrying body, signed with AppSecret, as the adapter is given it.
func Request(body []byte) channels.Request {
	return channels.Request{
		Method: http.MethodPost,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Hub-Signature-256": {Sign(AppSecret, body)}},
		Body:   body,
		Now:    time.Now(),
	}
}

// HTTPRequest is the webhook call carrying body to webhookURL, signed with AppSecret, as Meta
// makes it.
func HTTPRequest(ctx context.Context, webhookURL string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, webhookURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Hub-Signature-256", Sign(AppSecret, body))
	req.Header.Set("User-Agent", "facebookexternalua")
	return req, nil
}

// VerifyQuery is the query of Meta's verification request with token and challenge.
func VerifyQuery(token, challenge string) url.Values {
	return url.Values{"hub.mode": {"subscribe"}, "hub.verify_token": {token}, "hub.challenge": {challenge}}
}

// VerifyRequest is Meta's verification request (with VerifyToken) to webhookURL, which it
// expects answered with challenge.
func VerifyRequest(ctx context.Context, webhookURL, challenge string) (*http.Request, error) {
	u, err := url.Parse(webhookURL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	for k, v := range VerifyQuery(VerifyToken, challenge) {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	return http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
}
