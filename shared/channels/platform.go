package channels

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// The channel types: the messaging platforms an agent answers on.
const (
	TypeSlack    = "slack"
	TypeTelegram = "telegram"
	TypeWhatsApp = "whatsapp"
	TypeDiscord  = "discord"
)

// Credentials are a connection's secrets by name (bot_token, signing_secret, ...), open.
type Credentials map[string]string

// Link is what a platform needs of a connection to act for it.
type Link struct {
	// ID is the connection's id.
	ID string
	// APIBaseURL is the platform's API to call; "" is the platform's own (api.telegram.org, ...).
	APIBaseURL  string
	Credentials Credentials
	// WebhookURL is where the platform delivers the connection's messages (/hooks/{type}/{id}).
	WebhookURL string
}

// Request is a webhook call as the platform made it.
type Request struct {
	Method string
	Header http.Header
	Query  url.Values
	Body   []byte
	// Now is when it arrived (signatures' time windows are checked against it).
	Now time.Time
}

// Answer is what a webhook call is answered at once.
type Answer struct {
	Status      int
	ContentType string
	Body        []byte
}

// Received is what a webhook call brought: the answer to give the platform at once, and the
// messages (or button clicks) to answer from a worker.
type Received struct {
	Answer   Answer
	Messages []Inbound
}

// Target is where an answer goes, in the platform's own terms (Slack's channel and thread_ts,
// Telegram's chat_id, WhatsApp's number, Discord's application id and interaction token).
type Target map[string]string

// Inbound is a message, or a click on an approval button, that a platform delivered.
type Inbound struct {
	// ID is the platform's event or message id: a retry of the same message carries the same.
	ID string
	// Conversation is the thread the message belongs to (a Slack thread, a Telegram chat, a
	// WhatsApp number, a Discord channel): one chat of the agent each.
	Conversation string
	// User is the platform's id of who wrote it, UserName their name when the platform says.
	User     string
	UserName string
	Text     string
	// FromBot marks a message a bot wrote (the connection's own among them): it is not answered.
	FromBot bool
	// Decision is set for a click on an approval button instead of a message.
	Decision *Decision
	// Reply is where the answer goes.
	Reply Target
}

// Decision is a click on an approval button: run (Approve) or reject the tool call the run
// ExecutionID waits for.
type Decision struct {
	ExecutionID string
	Approve     bool
}

// Outgoing is an answer to send.
type Outgoing struct {
	To Target
	// Text is the answer as the agent wrote it (Markdown, its citations as links); the platform
	// converts it to its own format and splits it to its size limit.
	Text string
	// Approval, when set, asks for a decision on a tool call with the platform's buttons (the
	// last piece of the answer).
	Approval *Approval
	// Sent counts the pieces of this answer (its split text, then the approval) that the
	// platform took on earlier attempts: they are not sent again.
	Sent int
}

// Approval asks whether the run ExecutionID may call Tool.
type Approval struct {
	ExecutionID string
	Tool        string
}

// Platform is one messaging platform: how its webhook calls are verified and read, and how
// messages are sent through its API.
type Platform interface {
	// Required are the credentials the platform needs.
	Required() []string
	// Receive verifies r's signature as the platform documents it and reads it. A call that is
	// not the platform's (no or a wrong signature, a stale timestamp) is an Unauthorized error
	// (apperr) and nothing of it is taken; one the platform sends but that carries nothing to
	// answer is a Received with no messages.
	Receive(ctx context.Context, l Link, r Request) (Received, error)
	// Send delivers out, in the platform's format, split to its size limit, from its piece
	// out.Sent on. A *RetryLater error says the platform could not take it now (429 with
	// Retry-After, 5xx, the platform unreachable) and how many pieces it took before; any other
	// error is permanent.
	Send(ctx context.Context, l Link, out Outgoing) error
	// Connect sets the platform up for l once a connection is made or its credentials change
	// (Telegram: its webhook; Discord: the /ask command); it checks the credentials on the way.
	Connect(ctx context.Context, l Link) error
}

// RetryLater is a platform's answer that asks to be called again, After from now (0: the
// queue's own back-off).
type RetryLater struct {
	After time.Duration
	Err   error
	// Sent counts the pieces of the answer the platform took, this attempt's included.
	Sent int
}

func (e *RetryLater) Error() string { return fmt.Sprintf("retry after %s: %v", e.After, e.Err) }
func (e *RetryLater) Unwrap() error { return e.Err }

// RetryAfter is how long to wait (the queue's tasks.RetryIn reads it).
func (e *RetryLater) RetryAfter() time.Duration { return e.After }

// RetryAfter reads an HTTP answer's Retry-After (seconds or a date) as a RetryLater of err, for
// answers 429 and 5xx; nil for others.
func RetryAfter(resp *http.Response, err error) error {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return nil
	}
	var after time.Duration
	if v := strings.TrimSpace(resp.Header.Get("Retry-After")); v != "" {
		if d, perr := time.ParseDuration(v + "s"); perr == nil {
			after = d
		} else if t, perr := http.ParseTime(v); perr == nil {
			after = time.Until(t)
		}
	}
	return &RetryLater{After: max(after, 0), Err: err}
}

// IsRetryLater reports whether err asks to be tried again, and after how long.
func IsRetryLater(err error) (time.Duration, bool) {
	var r *RetryLater
	if errors.As(err, &r) {
		return r.After, true
	}
	return 0, false
}

// Split cuts text into pieces of at most limit characters (runes), at a paragraph break, else
// a line break, else a space, else anywhere, so that each piece fits a platform's message.
func Split(text string, limit int) []string {
	var out []string
	for utf8.RuneCountInString(text) > limit {
		cut := len(string([]rune(text)[:limit]))
		head := text[:cut]
		at := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(head, sep); i > 0 {
				at = i
				break
			}
		}
		if at <= 0 {
			at = cut
		}
		if piece := strings.TrimSpace(text[:at]); piece != "" {
			out = append(out, piece)
		}
		text = strings.TrimLeft(text[at:], " \n")
	}
	if strings.TrimSpace(text) != "" || len(out) == 0 {
		out = append(out, strings.TrimSpace(text))
	}
	return out
}
