// Package telegramtest is a local Telegram Bot API for tests: a real HTTP server (package
// httptest) answering the methods the telegram adapter calls (getMe, setWebhook, sendMessage,
// answerCallbackQuery) at /bot<token>/<method> with the Bot API's {"ok": ...} envelopes. It
// reads parameters the ways Telegram does (query, form, multipart, JSON), checks what Telegram
// checks (the token, a message's HTML and length, the webhook's secret token), records every
// call, and can be told to fail the next calls. Like Telegram it delivers updates to the
// webhook that setWebhook registered, with its secret token, and runs the method a webhook's
// answer carries.
//
//	tg := telegramtest.New(t, "123:token")
//	link := channels.Link{APIBaseURL: tg.URL, Credentials: channels.Credentials{"bot_token": tg.Token, ...}}
//	status, body, err := tg.Deliver(ctx, telegramtest.TextUpdate(1, 42, telegramtest.Alice, "hi"))
package telegramtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"
	"golang.org/x/net/html"
)

// SecretHeader is the header in which Telegram sends a webhook's secret token.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// Bot is the bot the server answers getMe with.
var Bot = tgbotapi.User{ID: 777000111, IsBot: true, FirstName: "Agent", UserName: "agent_test_bot"}

// Alice is a user to write updates from.
var Alice = tgbotapi.User{ID: 5001, FirstName: "Alice", LastName: "Liddell", UserName: "alice"}

// Call is one Bot API call the server received.
type Call struct {
	// Method is the Bot API method: sendMessage, setWebhook.
	Method string
	// Params are the call's parameters as Telegram reads them: strings, the JSON-serialized
	// ones (reply_markup, allowed_updates) as their JSON (see [Call.Decode]).
	Params map[string]string
	// Status is the HTTP status the server answered.
	Status int
	// ViaWebhookReply marks a method that a webhook's answer carried.
	ViaWebhookReply bool
}

// Decode reads the JSON-serialized parameter key (reply_markup, allowed_updates) into v.
func (c Call) Decode(key string, v any) error {
	p, ok := c.Params[key]
	if !ok {
		return fmt.Errorf("%s has no parameter %s", c.Method, key)
	}
	return json.Unmarshal([]byte(p), v)
}

// Webhook is what setWebhook registered.
type Webhook struct {
	URL            string
	SecretToken    string
	AllowedUpdates []string
}

// Server is a local Telegram Bot API serving one bot.
type Server struct {
	// URL is the server's base URL: a connection's Link.APIBaseURL.
	URL string
	// Token is the bot's token; calls with another are answered 401 Unauthorized.
	Token string

	srv *httptest.Server

	mu        sync.Mutex
	calls     []Call
	failures  []failure
	webhook   Webhook
	messageID int
	onSent    func(Call)
}

type failure struct {
	status     int
	retryAfter time.Duration
}

// New starts a server for the bot token, closed when t ends.
func New(t testing.TB, token string) *Server {
	s := &Server{Token: token}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Calls are the calls received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Sent are the sendMessage calls the server answered ok, in order.
func (s *Server) Sent() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Method == "sendMessage" && c.Status == http.StatusOK {
			out = append(out, c)
		}
	}
	return out
}

// OnSent calls f with each sendMessage the server answers ok, as it answers it.
func (s *Server) OnSent(f func(Call)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onSent = f
}

// Fail makes the next n calls fail with status: 429 carries retryAfter in the Retry-After
// header and in the body's parameters.retry_after (whole seconds), as Telegram does; 5xx is an
// HTML page, as the proxy in front of the Bot API answers (with Retry-After when retryAfter is
// set); any other status is the Bot API's {"ok": false} with that error_code.
func (s *Server) Fail(n, status int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.failures = append(s.failures, failure{status: status, retryAfter: retryAfter})
	}
}

// Webhook is what setWebhook last registered (zero before).
func (s *Server) Webhook() Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhook
}

// Deliver posts u to the registered webhook with its secret token, as Telegram does, and
// returns the answer's status and body. When the answer carries a method (a webhook reply), the
// server runs it, recorded with ViaWebhookReply.
func (s *Server) Deliver(ctx context.Context, u tgbotapi.Update) (int, []byte, error) {
	hook := s.Webhook()
	if hook.URL == "" {
		return 0, nil, errors.New("telegramtest: no webhook is set")
	}
	req, err := WebhookRequest(ctx, hook.URL, hook.SecretToken, u)
	if err != nil {
		return 0, nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode == http.StatusOK && len(bytes.TrimSpace(body)) > 0 {
		params, err := decodeParams(resp.Header.Get("Content-Type"), body)
		if err != nil {
			return resp.StatusCode, body, fmt.Errorf("telegramtest: the webhook's answer is not a method call: %w", err)
		}
		if method := params["method"]; method != "" {
			delete(params, "method")
			s.mu.Lock()
			status, _ := s.run(method, params)
			s.calls = append(s.calls, Call{Method: method, Params: params, Status: status, ViaWebhookReply: true})
			s.mu.Unlock()
		}
	}
	return resp.StatusCode, body, nil
}

// Signed is an update's webhook call as Telegram makes it: its headers (the secret token,
// JSON) and body.
func Signed(secret string, u tgbotapi.Update) (http.Header, []byte) {
	body, err := json.Marshal(u)
	if err != nil {
		panic(err) // an Update always marshals
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if secret != "" {
		h.Set(SecretHeader, secret)
	}
	return h, body
}

// WebhookRequest is an update's webhook call to url, signed with secret ("" for none).
func WebhookRequest(ctx context.Context, url, secret string, u tgbotapi.Update) (*http.Request, error) {
	h, body := Signed(secret, u)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = h
	return req, nil
}

// TextUpdate is an update id carrying a text message from a user in the chat chatID (their
// private chat with the bot when chatID is from.ID).
func TextUpdate(id int, chatID int64, from tgbotapi.User, text string) tgbotapi.Update {
	return tgbotapi.Update{UpdateID: id, Message: &tgbotapi.Message{
		MessageID: id, From: &from, Date: int(time.Now().Unix()), Chat: chat(chatID, from), Text: text,
	}}
}

// ClickUpdate is an update id carrying a click of from on an inline button with callback data
// under a message the bot sent to the chat chatID.
func ClickUpdate(id int, chatID int64, from tgbotapi.User, data string) tgbotapi.Update {
	return tgbotapi.Update{UpdateID: id, CallbackQuery: &tgbotapi.CallbackQuery{
		ID: "cb" + strconv.Itoa(id), From: &from, ChatInstance: "-4242", Data: data,
		Message: &tgbotapi.Message{MessageID: 1, From: &Bot, Date: int(time.Now().Unix()), Chat: chat(chatID, from), Text: "Allow?"},
	}}
}

func chat(id int64, from tgbotapi.User) *tgbotapi.Chat {
	if id == from.ID {
		return &tgbotapi.Chat{ID: id, Type: "private", FirstName: from.FirstName, LastName: from.LastName, UserName: from.UserName}
	}
	return &tgbotapi.Chat{ID: id, Type: "group", Title: "Test group"}
}

var (
	// path is /bot<token>/<method>.
	path = regexp.MustCompile(`^/bot([^/]+)/([A-Za-z]+)$`)
	// secretToken is what Telegram takes as a webhook's secret token.
	secretToken = regexp.MustCompile(`^[A-Za-z0-9_-]{0,256}$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	m := path.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeJSON(w, http.StatusNotFound, errorBody(http.StatusNotFound, "Not Found"))
		return
	}
	token, method := m[1], m[2]
	params, err := readParams(r)
	s.mu.Lock()
	defer s.mu.Unlock()
	status, body := s.answer(token, method, params, err)
	call := Call{Method: method, Params: params, Status: status}
	s.calls = append(s.calls, call)
	if s.onSent != nil && method == "sendMessage" && status == http.StatusOK {
		s.onSent(call)
	}
	if f, ok := body.(failure); ok {
		if f.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(int(f.retryAfter.Seconds())))
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<html><body><h1>%d %s</h1></body></html>", status, http.StatusText(status))
		return
	}
	if env, ok := body.(envelope); ok && env.Parameters != nil && env.Parameters.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(env.Parameters.RetryAfter))
	}
	writeJSON(w, status, body)
}

// answer is a call's status and body: a queued failure, else the method's answer. A 5xx
// failure's body is the failure itself, which serve writes as an HTML page.
func (s *Server) answer(token, method string, params map[string]string, readErr error) (int, any) {
	if len(s.failures) > 0 {
		f := s.failures[0]
		s.failures = s.failures[1:]
		switch {
		case f.status == http.StatusTooManyRequests:
			secs := int(f.retryAfter.Seconds())
			env := errorBody(f.status, "Too Many Requests: retry after "+strconv.Itoa(secs))
			env.Parameters = &tgbotapi.ResponseParameters{RetryAfter: secs}
			return f.status, env
		case f.status >= 500:
			return f.status, f
		default:
			return f.status, errorBody(f.status, describe(f.status))
		}
	}
	if token != s.Token {
		return http.StatusUnauthorized, errorBody(http.StatusUnauthorized, "Unauthorized")
	}
	if readErr != nil {
		return http.StatusBadRequest, errorBody(http.StatusBadRequest, "Bad Request: "+readErr.Error())
	}
	return s.run(method, params)
}

// run is a method's answer to params.
func (s *Server) run(method string, params map[string]string) (int, any) {
	bad := func(msg string) (int, any) {
		return http.StatusBadRequest, errorBody(http.StatusBadRequest, "Bad Request: "+msg)
	}
	switch method {
	case "getMe":
		return ok(Bot)
	case "setWebhook":
		secret := params["secret_token"]
		if !secretToken.MatchString(secret) {
			return bad("secret token contains unallowed characters")
		}
		var allowed []string
		if a, has := params["allowed_updates"]; has {
			if err := json.Unmarshal([]byte(a), &allowed); err != nil {
				return bad("can't parse allowed_updates JSON array")
			}
		}
		s.webhook = Webhook{URL: params["url"], SecretToken: secret, AllowedUpdates: allowed}
		if params["url"] == "" {
			return http.StatusOK, envelope{Ok: true, Result: true, Description: "Webhook was deleted"}
		}
		return http.StatusOK, envelope{Ok: true, Result: true, Description: "Webhook was set"}
	case "sendMessage":
		chatID, err := strconv.ParseInt(params["chat_id"], 10, 64)
		if err != nil {
			return bad("chat not found")
		}
		text := params["text"]
		if strings.TrimSpace(text) == "" {
			return bad("message text is empty")
		}
		if params["parse_mode"] == tgbotapi.ModeHTML {
			if text, err = visible(text); err != nil {
				return bad("can't parse entities: " + err.Error())
			}
		}
		if len(utf16.Encode([]rune(text))) > 4096 {
			return bad("message is too long")
		}
		if rm, has := params["reply_markup"]; has {
			var markup tgbotapi.InlineKeyboardMarkup
			if err := json.Unmarshal([]byte(rm), &markup); err != nil {
				return bad("can't parse reply keyboard markup JSON object")
			}
			for _, row := range markup.InlineKeyboard {
				for _, b := range row {
					if b.CallbackData != nil && len(*b.CallbackData) > 64 {
						return bad("BUTTON_DATA_INVALID")
					}
				}
			}
		}
		s.messageID++
		return ok(tgbotapi.Message{MessageID: s.messageID, From: &Bot, Date: int(time.Now().Unix()),
			Chat: &tgbotapi.Chat{ID: chatID}, Text: text})
	case "answerCallbackQuery":
		if params["callback_query_id"] == "" {
			return bad("query is too old and response timeout expired or query ID is invalid")
		}
		return ok(true)
	default:
		return http.StatusNotFound, errorBody(http.StatusNotFound, "Not Found")
	}
}

// allowedTags are the tags of Telegram's HTML parse mode.
var allowedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
	"strike": true, "del": true, "span": true, "tg-spoiler": true, "a": true, "tg-emoji": true,
	"code": true, "pre": true, "blockquote": true,
}

// visible is the text a message in Telegram's HTML shows, or why Telegram refuses it: a tag
// it does not know, tags that do not nest, markup inside code, a quote in a quote.
func visible(s string) (string, error) {
	z := html.NewTokenizer(strings.NewReader(s))
	var open []string
	var out strings.Builder
	inside := func(tag string) bool {
		for _, t := range open {
			if t == tag {
				return true
			}
		}
		return false
	}
	for {
		switch z.Next() {
		case html.ErrorToken:
			if !errors.Is(z.Err(), io.EOF) {
				return "", z.Err()
			}
			if len(open) > 0 {
				return "", fmt.Errorf("can't find end tag corresponding to start tag %q", open[len(open)-1])
			}
			return out.String(), nil
		case html.TextToken:
			out.Write(z.Text())
		case html.StartTagToken:
			name, _ := z.TagName()
			tag := string(name)
			switch {
			case !allowedTags[tag]:
				return "", fmt.Errorf("unsupported start tag %q", tag)
			case inside("code") || (inside("pre") && tag != "code"):
				return "", fmt.Errorf("tag %q can't be inside pre or code", tag)
			case tag == "blockquote" && inside("blockquote"):
				return "", errors.New("blockquote can't be nested")
			}
			open = append(open, tag)
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(open) == 0 || open[len(open)-1] != string(name) {
				return "", fmt.Errorf("unexpected end tag %q", name)
			}
			open = open[:len(open)-1]
		case html.SelfClosingTagToken, html.CommentToken, html.DoctypeToken:
			return "", errors.New("unsupported markup")
		}
	}
}

// envelope is the Bot API's answer.
type envelope struct {
	Ok          bool                         `json:"ok"`
	Result      any                          `json:"result,omitempty"`
	ErrorCode   int                          `json:"error_code,omitempty"`
	Description string                       `json:"description,omitempty"`
	Parameters  *tgbotapi.ResponseParameters `json:"parameters,omitempty"`
}

func ok(result any) (int, any) { return http.StatusOK, envelope{Ok: true, Result: result} }

func errorBody(code int, description string) envelope {
	return envelope{ErrorCode: code, Description: description}
}

// describe is the Bot API's description of a failure with status.
func describe(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Bad Request: chat not found"
	case http.StatusForbidden:
		return "Forbidden: bot was blocked by the user"
	default:
		return http.StatusText(status)
	}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// readParams reads a call's parameters from its query and its body (form, multipart or JSON).
func readParams(r *http.Request) (map[string]string, error) {
	params := map[string]string{}
	for k, v := range r.URL.Query() {
		params[k] = v[0]
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return params, err
	}
	if len(body) == 0 {
		return params, nil
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := mime.ParseMediaType(ct); mt == "multipart/form-data" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			return params, err
		}
		for k, v := range r.MultipartForm.Value {
			params[k] = v[0]
		}
		return params, nil
	}
	fromBody, err := decodeParams(ct, body)
	for k, v := range fromBody {
		params[k] = v
	}
	return params, err
}

// decodeParams reads a form or JSON body as parameters, non-string JSON values as their JSON.
func decodeParams(contentType string, body []byte) (map[string]string, error) {
	params := map[string]string{}
	mt, _, _ := mime.ParseMediaType(contentType)
	if mt == "application/x-www-form-urlencoded" {
		r := &http.Request{Method: http.MethodPost, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(bytes.NewReader(body))}
		if err := r.ParseForm(); err != nil {
			return params, err
		}
		for k, v := range r.PostForm {
			params[k] = v[0]
		}
		return params, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return params, err
	}
	for k, raw := range fields {
		var str string
		if json.Unmarshal(raw, &str) == nil {
			params[k] = str
		} else {
			params[k] = string(raw)
		}
	}
	return params, nil
}
