// Package slacktest is Slack for tests: a local Web API server (auth.test, chat.postMessage)
// that records every call and can be told to fail, and the calls Slack makes to an app's
// request URL (Events API events, Block Kit button clicks), signed with a signing secret as
// Slack signs them.
package slacktest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The workspace the server plays: its bot token, a user's token (UserToken, for apps set up
// with the wrong one), and the bot's user and bot ids (auth.test answers them; events name the
// bot user among their authorizations).
const (
	Token     = "xoxb-1111-2222-slacktest"
	UserToken = "xoxp-1111-3333-slacktest"
	UserID    = "U0ADA"
	BotUserID = "U0BOT"
	BotID     = "B0BOT"
	TeamID    = "T0TEAM"
)

// Call is one Web API call the server received.
type Call struct {
	// Method is the HTTP method, Path the URL path (/api/chat.postMessage).
	Method string
	Path   string
	// Token is the token the call carried (form field token or Authorization: Bearer).
	Token string
	// Params are the call's arguments but the token and the blocks (form fields, or a JSON
	// body's top-level fields as strings); Blocks is the blocks argument decoded.
	Params map[string]string
	Blocks []map[string]any
	// Status is the HTTP status the server answered (200 for Slack's refusals too, as Slack does).
	Status int
}

// Server is Slack's Web API on a loopback port.
type Server struct {
	// URL is the Web API's base, .../api/, for channels.Link.APIBaseURL.
	URL   string
	mu    sync.Mutex
	calls []Call
	// fails are how the next calls are answered, in order; nil lets a call through.
	fails []*failure
	n     int
}

// failure is how a call the server was told to fail is answered.
type failure struct {
	status     int
	retryAfter string
	code       string
}

// Start starts a server, closed when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/api/"
	return s
}

// Calls are the calls received so far, in order (failed ones too).
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

// Sent are the chat.postMessage calls received so far, in order.
func (s *Server) Sent() []Call {
	var out []Call
	for _, c := range s.Calls() {
		if c.Path == "/api/chat.postMessage" {
			out = append(out, c)
		}
	}
	return out
}

// Fail answers the next n calls (after those told before) with HTTP status (503, 429, ...),
// with Retry-After: after (in whole seconds) when after > 0.
func (s *Server) Fail(n, status int, after time.Duration) {
	f := failure{status: status}
	if after > 0 {
		f.retryAfter = strconv.Itoa(int(after.Seconds()))
	}
	s.failNext(n, &f)
}

// Refuse answers the next n calls (after those told before) 200 {"ok":false,"error":code}, as Slack refuses a call
// (invalid_auth, channel_not_found, not_in_channel).
func (s *Server) Refuse(n int, code string) {
	s.failNext(n, &failure{status: http.StatusOK, code: code})
}

// Pass lets the next n calls through before the failures told after it (Pass(1) then
// Fail(1, ...) fails the second call from now).
func (s *Server) Pass(n int) {
	s.failNext(n, nil)
}

func (s *Server) failNext(n int, f *failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range n {
		s.fails = append(s.fails, f)
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	c := Call{Method: r.Method, Path: r.URL.Path, Params: map[string]string{}}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		for k, v := range body {
			if str, ok := v.(string); ok {
				c.Params[k] = str
			} else if raw, err := json.Marshal(v); err == nil {
				c.Params[k] = string(raw)
			}
		}
	} else if err := r.ParseForm(); err == nil {
		for k := range r.Form {
			c.Params[k] = r.Form.Get(k)
		}
	}
	c.Token = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if tok, ok := c.Params["token"]; ok {
		c.Token = tok
		delete(c.Params, "token")
	}
	if b, ok := c.Params["blocks"]; ok {
		_ = json.Unmarshal([]byte(b), &c.Blocks)
		delete(c.Params, "blocks")
	}

	s.mu.Lock()
	var f *failure
	if len(s.fails) > 0 {
		f = s.fails[0]
		s.fails = s.fails[1:]
	}
	c.Status = http.StatusOK
	if f != nil {
		c.Status = f.status
	}
	s.calls = append(s.calls, c)
	s.n++
	ts := "1700000000." + strconv.Itoa(100000+s.n)
	s.mu.Unlock()

	switch {
	case f != nil && f.code == "":
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		http.Error(w, http.StatusText(f.status), f.status)
	case f != nil:
		answer(w, map[string]any{"ok": false, "error": f.code})
	case c.Token == UserToken && c.Path == "/api/auth.test":
		answer(w, map[string]any{"ok": true, "url": "https://slacktest.slack.com/", "team": "Slack Test",
			"user": "ada", "team_id": TeamID, "user_id": UserID, "is_enterprise_install": false})
	case c.Token != Token:
		answer(w, map[string]any{"ok": false, "error": "invalid_auth"})
	default:
		answer(w, s.method(c, ts))
	}
}

// method is the answer of the Web API method c called, as Slack documents it.
func (s *Server) method(c Call, ts string) map[string]any {
	switch strings.TrimPrefix(c.Path, "/api/") {
	case "auth.test":
		return map[string]any{"ok": true, "url": "https://slacktest.slack.com/", "team": "Slack Test",
			"user": "agent", "team_id": TeamID, "user_id": BotUserID, "bot_id": BotID, "is_enterprise_install": false}
	case "chat.postMessage":
		switch {
		case c.Params["channel"] == "":
			return map[string]any{"ok": false, "error": "channel_not_found"}
		case c.Params["text"] == "" && len(c.Blocks) == 0:
			return map[string]any{"ok": false, "error": "no_text"}
		}
		return map[string]any{"ok": true, "channel": c.Params["channel"], "ts": ts, "message": map[string]any{
			"type": "message", "subtype": "bot_message", "text": c.Params["text"], "ts": ts, "bot_id": BotID,
			"user": BotUserID, "thread_ts": c.Params["thread_ts"]}}
	default:
		return map[string]any{"ok": false, "error": "unknown_method"}
	}
}

func answer(w http.ResponseWriter, body map[string]any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(body)
}
