package email

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Resources, in errors and outbox references.
const (
	Resource         = "email"
	SettingsResource = "email_settings"
)

// Origin marks the agent runs that answer emails (agentruns.Execution.Origin) and the chats'
// channel of their turns.
const Origin = "email"

// Reply modes: the agent answers each message (auto), drafts an answer a person approves
// (draft), or only files the mail (off).
const (
	ReplyAuto  = "auto"
	ReplyDraft = "draft"
	ReplyOff   = "off"
)

// Directions of an email: one the agent received, one it (or a person for it) sent.
const (
	DirectionIn  = "inbound"
	DirectionOut = "outbound"
)

// Statuses. An inbound email is received until it is handled: filed (kept, not answered; Note
// says why), draft (an answer waits for a person's approval), pending (its answer is being
// sent), answered, failed (its answer could not be sent; Error says why) or unsent (no relay is
// configured). An outbound email is draft, pending, sent, failed or unsent.
const (
	StatusReceived = "received"
	StatusFiled    = "filed"
	StatusDraft    = "draft"
	StatusPending  = "pending"
	StatusAnswered = "answered"
	StatusSent     = "sent"
	StatusFailed   = "failed"
	StatusUnsent   = "unsent"
)

// Who wrote an outbound email.
const (
	ByAgent  = "agent"
	ByPerson = "person"
)

// Settings are an agent's inbox settings.
type Settings struct {
	BotID     string `json:"-" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	// Address is the local part of the agent's address at the deployment's mail domain,
	// lowercased; unique in the deployment.
	Address string `json:"address" bson:"address"`
	// EmailAddress is the whole address: set on reads.
	EmailAddress string `json:"email_address" bson:"-"`
	ReplyMode    string `json:"reply_mode" bson:"reply_mode"`
	// AutoReply says the agent answers each message itself (reply_mode auto): set on reads.
	AutoReply bool `json:"auto_reply" bson:"-"`
	// Signature ends every answer sent.
	Signature string `json:"signature" bson:"signature"`
	// FilterSpam files, unanswered, mail whose relay's Authentication-Results say SPF, DKIM or
	// DMARC failed.
	FilterSpam bool `json:"filter_spam" bson:"filter_spam"`
	// MaxAnswersPerHour bounds the agent's automatic answers to one sender in an hour.
	MaxAnswersPerHour int       `json:"max_answers_per_hour" bson:"max_answers_per_hour"`
	UpdatedAt         time.Time `json:"updated_at" bson:"updated_at"`
}

// SettingsInput is settings as a request writes them: fields not given are left as they are.
type SettingsInput struct {
	Address           *string `json:"address"`
	ReplyMode         *string `json:"reply_mode"`
	AutoReply         *bool   `json:"auto_reply"`
	Signature         *string `json:"signature"`
	FilterSpam        *bool   `json:"filter_spam"`
	MaxAnswersPerHour *int    `json:"max_answers_per_hour"`
}

// Email is a message an agent received or sent.
type Email struct {
	ID        string `json:"uuid" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	Direction string `json:"direction" bson:"direction"`
	// MessageID, InReplyTo and References are the message's ids (without angle brackets).
	MessageID  string    `json:"message_id" bson:"message_id"`
	InReplyTo  string    `json:"in_reply_to,omitempty" bson:"in_reply_to,omitempty"`
	References []string  `json:"references,omitempty" bson:"references,omitempty"`
	From       Address   `json:"from" bson:"from"`
	To         []Address `json:"to" bson:"to"`
	Cc         []Address `json:"cc,omitempty" bson:"cc,omitempty"`
	// ReplyTo is where the sender asked answers to go (From when empty).
	ReplyTo []Address `json:"reply_to,omitempty" bson:"reply_to,omitempty"`
	// FromAddress and ToAddress are the sender's and the first recipient's address, lowercased.
	FromAddress string       `json:"from_address" bson:"from_address"`
	ToAddress   string       `json:"to_address" bson:"to_address"`
	Subject     string       `json:"subject" bson:"subject"`
	TextBody    string       `json:"text_body" bson:"text"`
	HTMLBody    string       `json:"html_body" bson:"html"`
	Attachments []Attachment `json:"attachments" bson:"attachments"`
	// AuthenticationResults are the relay's verdicts, as it gave them.
	AuthenticationResults string `json:"authentication_results,omitempty" bson:"authentication_results,omitempty"`
	Automatic             bool   `json:"automatic" bson:"automatic"`
	Size                  int    `json:"size" bson:"size"`
	Status                string `json:"status" bson:"status"`
	// Note says why an inbound email was filed; Error what failed last in sending an answer.
	Note     string `json:"note,omitempty" bson:"note,omitempty"`
	Error    string `json:"error,omitempty" bson:"error,omitempty"`
	Attempts int    `json:"attempts" bson:"attempts"`
	// ChatID is the chat of the agent the thread is.
	ChatID string `json:"chat_id" bson:"chat_id"`
	// ThreadKey is the sender and subject without Re: and Fwd:, the thread of a message that
	// names none it answers.
	ThreadKey string `json:"-" bson:"thread_key"`
	// ReplyID is an inbound email's answer; AnswerTo the inbound email an outbound one answers.
	ReplyID  string `json:"reply_id,omitempty" bson:"reply_id,omitempty"`
	AnswerTo string `json:"answer_to,omitempty" bson:"answer_to,omitempty"`
	// By says who wrote an outbound email (agent, person).
	By string `json:"by,omitempty" bson:"by,omitempty"`
	// AnswerSeconds is how long after the inbound email an outbound answer was sent.
	AnswerSeconds float64    `json:"-" bson:"answer_seconds,omitempty"`
	SentAt        *time.Time `json:"sent_at,omitempty" bson:"sent_at,omitempty"`
	CreatedAt     time.Time  `json:"created_at" bson:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at" bson:"updated_at"`
}

// Stats are an agent's inbox figures.
type Stats struct {
	Received int `json:"total_received"`
	// Replied counts answers sent, Automatic those the agent wrote, ByPeople those of people.
	Replied   int `json:"total_replied"`
	Automatic int `json:"answered_automatically"`
	ByPeople  int `json:"answered_by_people"`
	// Unread counts inbound emails no one answered or filed yet (received, draft).
	Unread int `json:"total_unread"`
	Failed int `json:"failed"`
	// MedianAnswerSeconds is the median time to an answer over the last MedianOver answers sent;
	// nil with none.
	MedianAnswerSeconds *float64   `json:"median_answer_seconds"`
	LastReceivedAt      *time.Time `json:"last_received_at"`
}

// MedianOver is how many of the latest answers the median time to answer is taken over.
const MedianOver = 1000

// Repo persists agents' inbox settings and emails.
type Repo interface {
	// Settings returns the agent's settings: NotFound when it has none kept.
	Settings(ctx context.Context, botID string) (Settings, error)
	// ByAddress returns the settings of the address local: NotFound when no agent has it.
	ByAddress(ctx context.Context, local string) (Settings, error)
	// InsertSettings keeps s unless the agent has settings: Conflict when it has, or another
	// agent has the address.
	InsertSettings(ctx context.Context, s Settings) error
	// ReplaceSettings writes s over the agent's settings: Conflict when another agent has the
	// address.
	ReplaceSettings(ctx context.Context, s Settings) error
	// DeleteSettings removes the agent's settings, freeing its address.
	DeleteSettings(ctx context.Context, botID string) error

	// Take keeps e with ev in its outbox unless an email of its id was kept; it returns the email
	// stored (e, or the one kept before) and whether it is new.
	Take(ctx context.Context, e Email, ev outbox.Event) (Email, bool, error)
	// Find returns the email id, whoever's it is.
	Find(ctx context.Context, id string) (Email, error)
	// Get returns the project's agent's email id: NotFound otherwise.
	Get(ctx context.Context, projectID, botID, id string) (Email, error)
	// List returns a page of the agent's emails, newest first.
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Email, int, error)
	Delete(ctx context.Context, projectID, botID, id string) error
	// Set writes e's changing fields (status, note, error, attempts, chat, reply, text, when it
	// was sent), with ev (when it has a type) in its outbox.
	Set(ctx context.Context, e Email, ev outbox.Event) error
	// ChatOf returns the chat of the agent's thread: that of an email of messageIDs, else that
	// of the latest email of threadKey; "" when none has one.
	ChatOf(ctx context.Context, botID string, messageIDs []string, threadKey string) (string, error)
	// LatestOfChat returns the latest inbound email of the agent in the chat: NotFound when none.
	LatestOfChat(ctx context.Context, botID, chatID string) (Email, error)
	// AnswersTo counts the agent's automatic answers to the address since.
	AnswersTo(ctx context.Context, botID, address string, since time.Time) (int, error)
	// Stats returns the agent's figures.
	Stats(ctx context.Context, projectID, botID string) (Stats, error)
}
