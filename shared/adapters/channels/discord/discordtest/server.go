// Package discordtest is a local Discord for tests: an HTTP server that answers the API calls
// the discord adapter makes (the bot's application, global commands, interaction webhooks) in
// the shapes Discord documents, records every call, fails on demand, and builds interactions
// signed with its application's Ed25519 key the way Discord delivers them.
package discordtest

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/channels"
)

// BasePath is where the server's API lives, as /api/v10 on discord.com.
const BasePath = "/api/v10"

// Call is one request the server received.
type Call struct {
	Method string
	// Path is the request's path under BasePath (/webhooks/{application_id}/{token}).
	Path  string
	Query url.Values
	// Authorization is the request's Authorization header ("Bot <token>").
	Authorization string
	// Body is the request's JSON body, decoded; nil when it had none.
	Body map[string]any
	// Status is what the server answered.
	Status int
}

// Message is a message an interaction's webhook created: what the user sees in the channel.
type Message struct {
	ApplicationID string
	// Token is the interaction's token the message answered.
	Token   string
	Content string
	Buttons []Button
	// AllowedMentions is the message's allowed_mentions, as sent.
	AllowedMentions map[string]any
}

// Button is a button of a message.
type Button struct {
	Label    string
	Style    int
	CustomID string
}

// Server is a local Discord API with one application and its bot.
type Server struct {
	// URL is the API's base, to set as Link.APIBaseURL.
	URL string
	// ApplicationID, BotToken and PublicKey (hex) are the application's credentials.
	ApplicationID string
	BotToken      string
	PublicKey     string

	private ed25519.PrivateKey
	mu      sync.Mutex
	calls   []Call
	sent    []Message
	fails   []failure
	tokens  map[string]bool
	command map[string]string
	serial  int
}

// failure is an answer the server gives instead of the next call's; status 0 lets the call
// through.
type failure struct {
	status int
	after  time.Duration
}

// NewServer starts a Discord API with a fresh application and key pair; it stops when tb ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	public, private, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{
		ApplicationID: "1100000000000000001",
		BotToken:      "MTEwMDAwMDAwMDAwMDAwMDAwMQ.bot-token-" + hex.EncodeToString(public[:6]),
		PublicKey:     hex.EncodeToString(public),
		private:       private,
		tokens:        map[string]bool{},
		command:       map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+BasePath+"/applications/@me", s.application)
	mux.HandleFunc("POST "+BasePath+"/applications/{application}/commands", s.createCommand)
	mux.HandleFunc("POST "+BasePath+"/webhooks/{application}/{token}", s.executeWebhook)
	srv := httptest.NewServer(s.record(mux))
	tb.Cleanup(srv.Close)
	s.URL = srv.URL + BasePath
	return s
}

// Credentials are the connection's credentials for this application.
func (s *Server) Credentials() channels.Credentials {
	return channels.Credentials{"bot_token": s.BotToken, "public_key": s.PublicKey, "application_id": s.ApplicationID}
}

// Calls are the requests received so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Sent are the messages the interactions' webhooks created so far, in order.
func (s *Server) Sent() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.sent...)
}

// Fail answers the next n calls with status instead; a 429 says to retry after retryAfter, in
// its body's retry_after (seconds, fractional) and its Retry-After header (whole seconds), as
// Discord does.
func (s *Server) Fail(n, status int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails = append(s.fails, failure{status: status, after: retryAfter})
	}
}

// FailAt answers the k-th next call (1 for the next) with status instead, the calls before it as
// usual; a 429 says to retry after retryAfter, as Fail does.
func (s *Server) FailAt(k, status int, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range k - 1 {
		s.fails = append(s.fails, failure{})
	}
	s.fails = append(s.fails, failure{status: status, after: retryAfter})
}

// recorder keeps the status a handler answered, and the message it created.
type recorder struct {
	http.ResponseWriter
	status int
	// sent is the message the call created: recorded with the call, so that a message in Sent
	// has its call in Calls.
	sent *Message
}

func (r *recorder) WriteHeader(status int) {
	r.status = status
	r.ResponseWriter.WriteHeader(status)
}

// record records each call, and answers it with the next failure when one is due.
func (s *Server) record(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		call := Call{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, BasePath),
			Query: r.URL.Query(), Authorization: r.Header.Get("Authorization")}
		if len(raw) > 0 && json.Unmarshal(raw, &call.Body) != nil {
			call.Body = map[string]any{"<not json>": string(raw)}
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		s.mu.Lock()
		var fail *failure
		if len(s.fails) > 0 {
			fail = &s.fails[0]
			s.fails = s.fails[1:]
		}
		s.mu.Unlock()
		rec := &recorder{ResponseWriter: w, status: http.StatusOK}
		if fail != nil && fail.status != 0 {
			failWith(rec, *fail)
		} else {
			next.ServeHTTP(rec, r)
		}
		call.Status = rec.status
		s.mu.Lock()
		s.calls = append(s.calls, call)
		if rec.sent != nil {
			s.sent = append(s.sent, *rec.sent)
		}
		s.mu.Unlock()
	})
}

// failWith answers f: Discord's rate-limit body and headers for 429, a plain error otherwise.
func failWith(w http.ResponseWriter, f failure) {
	if f.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(f.after.Seconds()))))
		w.Header().Set("X-RateLimit-Scope", "user")
		writeJSON(w, f.status, map[string]any{
			"message": "You are being rate limited.", "retry_after": f.after.Seconds(), "global": false,
		})
		return
	}
	http.Error(w, http.StatusText(f.status), f.status)
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError answers Discord's error object.
func apiError(w http.ResponseWriter, status, code int, message string) {
	writeJSON(w, status, map[string]any{"message": message, "code": code})
}

// bot reports whether r is authorized as the application's bot, answering 401 when not.
func (s *Server) bot(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Authorization") != "Bot "+s.BotToken {
		apiError(w, http.StatusUnauthorized, 0, "401: Unauthorized")
		return false
	}
	return true
}

// application answers GET /applications/@me: the bot's application.
func (s *Server) application(w http.ResponseWriter, r *http.Request) {
	if !s.bot(w, r) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": s.ApplicationID, "name": "Agent", "description": "", "bot_public": true,
		"bot_require_code_grant": false, "verify_key": s.PublicKey, "flags": 0,
		"bot": map[string]any{"id": s.ApplicationID, "username": "Agent", "bot": true},
	})
}

// createCommand answers POST /applications/{application}/commands: it creates the global
// command, or replaces the one of the same name (201 when new, 200 when replaced).
func (s *Server) createCommand(w http.ResponseWriter, r *http.Request) {
	if !s.bot(w, r) {
		return
	}
	if r.PathValue("application") != s.ApplicationID {
		apiError(w, http.StatusForbidden, 50001, "Missing Access")
		return
	}
	var cmd map[string]any
	if json.NewDecoder(r.Body).Decode(&cmd) != nil {
		apiError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	name, _ := cmd["name"].(string)
	description, _ := cmd["description"].(string)
	if name == "" || utf8.RuneCountInString(name) > 32 || description == "" || utf8.RuneCountInString(description) > 100 {
		apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	s.mu.Lock()
	id, replaced := s.command[name]
	if !replaced {
		id = s.snowflake()
		s.command[name] = id
	}
	s.mu.Unlock()
	cmd["id"], cmd["application_id"], cmd["version"] = id, s.ApplicationID, s.ApplicationID
	status := http.StatusCreated
	if replaced {
		status = http.StatusOK
	}
	writeJSON(w, status, cmd)
}

// executeWebhook answers POST /webhooks/{application}/{token}, a follow-up message of an
// interaction: the token must be one of an interaction this server built, the content at most
// 2,000 characters, the buttons' custom_id at most 100.
func (s *Server) executeWebhook(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("application") != s.ApplicationID {
		apiError(w, http.StatusNotFound, 10015, "Unknown Webhook")
		return
	}
	token := r.PathValue("token")
	s.mu.Lock()
	known := s.tokens[token]
	s.mu.Unlock()
	if !known {
		apiError(w, http.StatusUnauthorized, 50027, "Invalid Webhook Token")
		return
	}
	var body struct {
		Content         string           `json:"content"`
		Components      []map[string]any `json:"components"`
		AllowedMentions map[string]any   `json:"allowed_mentions"`
	}
	if json.NewDecoder(r.Body).Decode(&body) != nil {
		apiError(w, http.StatusBadRequest, 50109, "The request body contains invalid JSON.")
		return
	}
	buttons, ok := buttonsOf(body.Components)
	if !ok || utf8.RuneCountInString(body.Content) > 2000 || (body.Content == "" && len(buttons) == 0) {
		apiError(w, http.StatusBadRequest, 50035, "Invalid Form Body")
		return
	}
	s.mu.Lock()
	id := s.snowflake()
	s.mu.Unlock()
	w.(*recorder).sent = &Message{ApplicationID: s.ApplicationID, Token: token, Content: body.Content,
		Buttons: buttons, AllowedMentions: body.AllowedMentions}
	if r.URL.Query().Get("wait") != "true" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "type": 0, "content": body.Content, "components": body.Components,
		"webhook_id": s.ApplicationID, "application_id": s.ApplicationID,
		"author":    map[string]any{"id": s.ApplicationID, "username": "Agent", "bot": true},
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano),
	})
}

// buttonsOf reads the buttons of action rows; not ok when a component is not a row of at most
// five buttons with a custom_id of 1 to 100 characters.
func buttonsOf(rows []map[string]any) ([]Button, bool) {
	var out []Button
	for _, row := range rows {
		items, _ := row["components"].([]any)
		if row["type"] != float64(1) || len(items) == 0 || len(items) > 5 {
			return nil, false
		}
		for _, item := range items {
			b, _ := item.(map[string]any)
			label, _ := b["label"].(string)
			style, _ := b["style"].(float64)
			id, _ := b["custom_id"].(string)
			if b["type"] != float64(2) || style < 1 || style > 4 || id == "" || utf8.RuneCountInString(id) > 100 {
				return nil, false
			}
			out = append(out, Button{Label: label, Style: int(style), CustomID: id})
		}
	}
	return out, true
}

// snowflake is a fresh id; s.mu is held.
func (s *Server) snowflake() string {
	s.serial++
	return fmt.Sprintf("12%017d", s.serial)
}
