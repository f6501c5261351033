package slack_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/adapters/channels/slack"
	"github.com/agentplane/agentplane/shared/adapters/channels/slack/slacktest"
	"github.com/agentplane/agentplane/shared/adapters/safehttp"
	"github.com/agentplane/agentplane/shared/channels"
	"github.com/agentplane/agentplane/shared/kit/apperr"
)

var thread = channels.Target{slack.TargetChannel: "C1", slack.TargetThreadTS: "1700000000.000100"}

// post is the chat.postMessage call Slack receives for text in thread.
func post(text string) slacktest.Call {
	return slacktest.Call{Method: http.MethodPost, Path: "/api/chat.postMessage", Token: slacktest.Token,
		Params: map[string]string{"channel": "C1", "thread_ts": "1700000000.000100", "text": text}, Status: http.StatusOK}
}

// The answer is posted in the thread in Slack's mrkdwn: the agent's Markdown converted, its
// citations as Slack links, &, < and > escaped.
func TestSendText(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, markdown, mrkdwn string
	}{
		{"plain", "Hello there.", "Hello there."},
		{"bold, italic, strike", "**Refunds** take *five* days, ~~not ten~~.", "*Refunds* take _five_ days, ~not ten~."},
		{"underscored emphasis", "__bold__ and _it_", "*bold* and _it_"},
		{"citation links", "See [the policy](https://help.example.com/refunds?a=1&b=2) and <https://example.com>.",
			"See <https://help.example.com/refunds?a=1&b=2|the policy> and <https://example.com>."},
		{"a link whose text is its URL", "[https://example.com](https://example.com)", "<https://example.com>"},
		{"headings", "# Refunds\n\nText.\n\n### Gift cards", "*Refunds*\n\nText.\n\n*Gift cards*"},
		{"bullet lists", "- one\n- **two**\n* three", "• one\n• *two*\n\n• three"},
		{"nested list", "- fruit\n  - apple\n  - pear\n- tea", "• fruit\n    • apple\n    • pear\n• tea"},
		{"ordered list", "3. third\n4. fourth", "3. third\n4. fourth"},
		{"code kept", "Run `make <target>` then:\n\n```sh\necho \"**not bold**\" > out\n```",
			"Run `make &lt;target&gt;` then:\n\n```\necho \"**not bold**\" &gt; out\n```"},
		{"escapes", "a < b && c > d", "a &lt; b &amp;&amp; c &gt; d"},
		{"quote", "> said\n> twice", "> said\n> twice"},
		{"table", "| a | b |\n|---|---|\n| 1 | 2 |", "*a | b*\n1 | 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := slacktest.Start(t)
			if err := slack.New(http.DefaultClient).Send(t.Context(), link(srv.URL), channels.Outgoing{To: thread, Text: c.markdown}); err != nil {
				t.Fatal(err)
			}
			if got, want := srv.Calls(), []slacktest.Call{post(c.mrkdwn)}; !reflect.DeepEqual(got, want) {
				t.Fatalf("calls\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// An answer longer than a message holds is posted in several, each within MessageLimit, in
// order, a code block cut in two closed and opened again.
func TestSendSplit(t *testing.T) {
	t.Parallel()
	para := strings.Repeat("word ", 199) + "end."
	code := "```\n" + strings.Repeat("x := 1\n", 600) + "```"
	cases := []struct {
		name     string
		markdown string
		pieces   int
	}{
		{"paragraphs", strings.Join([]string{para, para, para}, "\n\n"), 2},
		{"a long code block", code, 2},
		{"within the limit", para, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := slacktest.Start(t)
			if err := slack.New(http.DefaultClient).Send(t.Context(), link(srv.URL), channels.Outgoing{To: thread, Text: c.markdown}); err != nil {
				t.Fatal(err)
			}
			sent := srv.Sent()
			if len(sent) != c.pieces {
				t.Fatalf("%d messages, want %d", len(sent), c.pieces)
			}
			var joined []string
			for _, s := range sent {
				text := s.Params["text"]
				if n := utf8.RuneCountInString(text); n > slack.MessageLimit {
					t.Fatalf("a message of %d characters", n)
				}
				if strings.Count(text, "```")%2 != 0 {
					t.Fatalf("a message with a code block left open:\n%s", text)
				}
				if s.Params["thread_ts"] != "1700000000.000100" || s.Params["channel"] != "C1" {
					t.Fatalf("posted to %+v", s.Params)
				}
				joined = append(joined, text)
			}
			all := strings.ReplaceAll(strings.Join(joined, "\n"), "```\n```\n", "")
			if strings.Join(strings.Fields(all), " ") != strings.Join(strings.Fields(c.markdown), " ") {
				t.Fatalf("the pieces do not make the answer:\n%s", all)
			}
		})
	}
}

// An approval is a message with Approve (primary) and Reject (danger) buttons whose value is
// the execution id, after the answer's text.
func TestSendApproval(t *testing.T) {
	t.Parallel()
	srv := slacktest.Start(t)
	err := slack.New(http.DefaultClient).Send(t.Context(), link(srv.URL), channels.Outgoing{To: thread,
		Text: "I need to look this up.", Approval: &channels.Approval{ExecutionID: "exec-42", Tool: "search_orders"}})
	if err != nil {
		t.Fatal(err)
	}
	ask := "The agent wants to run *search_orders*. Allow it?"
	button := func(actionID, label, style string) map[string]any {
		return map[string]any{"type": "button", "action_id": actionID, "value": "exec-42", "style": style,
			"text": map[string]any{"type": "plain_text", "text": label, "emoji": false}}
	}
	approval := post(ask)
	approval.Blocks = []map[string]any{
		{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": ask}},
		{"type": "actions", "block_id": "approval", "elements": []any{
			button(slack.ActionApprove, "Approve", "primary"), button(slack.ActionReject, "Reject", "danger")}},
	}
	if got, want := srv.Calls(), []slacktest.Call{post("I need to look this up."), approval}; !reflect.DeepEqual(got, want) {
		t.Fatalf("calls\n%+v\nwant\n%+v", got, want)
	}
}

// Slack's 429 and 5xx ask to be called again (after Retry-After); its refusals and other
// statuses are permanent errors that say what Slack said and never hold the token.
func TestSendFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		fail  func(*slacktest.Server)
		retry bool
		after time.Duration
		says  string
	}{
		{"429 with Retry-After", func(s *slacktest.Server) { s.Fail(1, http.StatusTooManyRequests, 7*time.Second) }, true, 7 * time.Second, "429"},
		{"429 without Retry-After", func(s *slacktest.Server) { s.Fail(1, http.StatusTooManyRequests, 0) }, true, 0, "429"},
		{"503", func(s *slacktest.Server) { s.Fail(1, http.StatusServiceUnavailable, 0) }, true, 0, "503"},
		{"500 with Retry-After", func(s *slacktest.Server) { s.Fail(1, http.StatusInternalServerError, 3*time.Second) }, true, 3 * time.Second, "500"},
		{"401", func(s *slacktest.Server) { s.Fail(1, http.StatusUnauthorized, 0) }, false, 0, "401"},
		{"400", func(s *slacktest.Server) { s.Fail(1, http.StatusBadRequest, 0) }, false, 0, "400"},
		{"channel_not_found", func(s *slacktest.Server) { s.Refuse(1, "channel_not_found") }, false, 0, "channel_not_found"},
		{"a revoked token", func(s *slacktest.Server) { s.Refuse(1, "token_revoked") }, false, 0, "token_revoked"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := slacktest.Start(t)
			c.fail(srv)
			err := slack.New(http.DefaultClient).Send(t.Context(), link(srv.URL), channels.Outgoing{To: thread, Text: "hi"})
			if err == nil {
				t.Fatal("no error")
			}
			after, retry := channels.IsRetryLater(err)
			if retry != c.retry || after != c.after {
				t.Fatalf("%v: retry %v after %s, want %v after %s", err, retry, after, c.retry, c.after)
			}
			if !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), slacktest.Token) {
				t.Fatalf("error %q should say %q and not hold the token", err, c.says)
			}
			if len(srv.Sent()) != 1 {
				t.Fatalf("%d posts, want the one that failed", len(srv.Sent()))
			}
		})
	}
}

// Connect checks the bot token with auth.test; a token Slack refuses is an invalid credential.
func TestConnect(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		token string
		fail  func(*slacktest.Server)
		calls int
		check func(error) bool
	}{
		{"a good token", slacktest.Token, nil, 1, func(err error) bool { return err == nil }},
		{"a token Slack does not know", "xoxb-wrong-token", nil, 1, func(err error) bool {
			e := apperr.As(err)
			return e.Kind == apperr.Invalid && strings.Contains(e.Message, "invalid_auth") &&
				!strings.Contains(err.Error(), "xoxb-wrong-token")
		}},
		{"a user's token", slacktest.UserToken, nil, 1, func(err error) bool {
			e := apperr.As(err)
			return e.Kind == apperr.Invalid && strings.Contains(e.Message, "xoxb-") &&
				!strings.Contains(err.Error(), slacktest.UserToken)
		}},
		{"no token", "", nil, 0, func(err error) bool { return apperr.As(err).Kind == apperr.Invalid }},
		{"Slack busy", slacktest.Token, func(s *slacktest.Server) { s.Fail(1, http.StatusServiceUnavailable, 0) }, 1,
			func(err error) bool { _, retry := channels.IsRetryLater(err); return retry }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := slacktest.Start(t)
			if c.fail != nil {
				c.fail(srv)
			}
			l := link(srv.URL)
			l.Credentials[slack.CredBotToken] = c.token
			err := slack.New(http.DefaultClient).Connect(t.Context(), l)
			if !c.check(err) {
				t.Fatalf("error %v", err)
			}
			calls := srv.Calls()
			if len(calls) != c.calls {
				t.Fatalf("calls %+v", calls)
			}
			for _, call := range calls {
				if call.Path != "/api/auth.test" || call.Token != c.token {
					t.Fatalf("call %+v, want auth.test with the bot token", call)
				}
			}
		})
	}
}

// A Slack that cannot be reached (the connection refused, no answer in time) is asked again
// later, but not one the outbound policy forbids; the error holds neither the URL called nor
// the token.
func TestSendUnreachable(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	t.Cleanup(silent.Close)
	t.Cleanup(func() { close(release) })
	cases := []struct {
		name   string
		client *http.Client
		base   string
		retry  bool
	}{
		{"a closed server", http.DefaultClient, closed.URL + "/api/", true},
		{"a server that does not answer in time", &http.Client{Timeout: 50 * time.Millisecond}, silent.URL + "/api/", true},
		{"an address the outbound policy refuses", safehttp.New(safehttp.Options{}).HTTPClient(), closed.URL + "/api/", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := slack.New(c.client).Send(t.Context(), link(c.base), channels.Outgoing{To: thread, Text: "hi"})
			after, retry := channels.IsRetryLater(err)
			if err == nil || retry != c.retry || after != 0 {
				t.Fatalf("error %v: retry %v after %s, want retry %v after 0s", err, retry, after, c.retry)
			}
			if msg := err.Error(); strings.Contains(msg, "/api/") || strings.Contains(msg, slacktest.Token) {
				t.Fatalf("error %q holds the URL or the token", msg)
			}
		})
	}
}

// An answer Slack refused part of is sent again from the piece it refused: the RetryLater
// counts the pieces it took, and the next attempt, given that count, posts only the rest.
func TestSendResumes(t *testing.T) {
	t.Parallel()
	para := func(word string) string { return strings.TrimSpace(strings.Repeat(word+" ", 400)) }
	three := strings.Join([]string{para("one"), para("two"), para("three")}, "\n\n")
	ask := &channels.Approval{ExecutionID: "exec-42", Tool: "create_deal"}
	cases := []struct {
		name    string
		out     channels.Outgoing
		pass    int
		fail    func(*slacktest.Server)
		sent    int
		first   []string
		retried []string
	}{
		{"a 429 on piece 2 of 3", channels.Outgoing{Text: three}, 1,
			func(s *slacktest.Server) { s.Fail(1, http.StatusTooManyRequests, 2*time.Second) }, 1,
			[]string{para("one"), para("two")}, []string{para("two"), para("three")}},
		{"a 503 on the approval", channels.Outgoing{Text: "Let me check.", Approval: ask}, 1,
			func(s *slacktest.Server) { s.Fail(1, http.StatusServiceUnavailable, 0) }, 1,
			[]string{"Let me check.", "The agent wants to run *create_deal*. Allow it?"},
			[]string{"The agent wants to run *create_deal*. Allow it?"}},
		{"a 503 on the first piece", channels.Outgoing{Text: three}, 0,
			func(s *slacktest.Server) { s.Fail(1, http.StatusServiceUnavailable, 0) }, 0,
			[]string{para("one")}, []string{para("one"), para("two"), para("three")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := slacktest.Start(t)
			srv.Pass(c.pass)
			c.fail(srv)
			p := slack.New(http.DefaultClient)
			out := c.out
			out.To = thread
			err := p.Send(t.Context(), link(srv.URL), out)
			var later *channels.RetryLater
			if !errors.As(err, &later) || later.Sent != c.sent {
				t.Fatalf("error %v, want a RetryLater with %d pieces sent", err, c.sent)
			}
			if got := texts(srv.Sent()); !reflect.DeepEqual(got, c.first) {
				t.Fatalf("first attempt posted %q, want %q", got, c.first)
			}
			out.Sent = later.Sent
			if err := p.Send(t.Context(), link(srv.URL), out); err != nil {
				t.Fatal(err)
			}
			if got := texts(srv.Sent()[len(c.first):]); !reflect.DeepEqual(got, c.retried) {
				t.Fatalf("the retry posted %q, want %q", got, c.retried)
			}
		})
	}
}

// texts are the texts of posts.
func texts(posts []slacktest.Call) []string {
	var out []string
	for _, p := range posts {
		out = append(out, p.Params["text"])
	}
	return out
}
