package channels

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Resources, in errors and outbox references.
const (
	Resource        = "channel"
	MessageResource = "channel_message"
	SendResource    = "channel_send"
)

// Connection statuses: an active connection answers; a paused one refuses its webhook calls;
// one in error answers still, and says what failed last.
const (
	StatusActive = "active"
	StatusPaused = "paused"
	StatusError  = "error"
)

// Types are the channel types, in the order the documentation lists them.
var Types = []string{TypeSlack, TypeTelegram, TypeWhatsApp, TypeDiscord}

// Origin marks the agent runs that answer a channel's messages (agentruns.Execution.Origin).
const Origin = "channel"

// Connection is an agent's connection to one account of a messaging platform.
type Connection struct {
	ID        string `json:"id" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	Type      string `json:"type" bson:"type"`
	Name      string `json:"name" bson:"name"`
	// APIBaseURL is the platform's API the connection calls; "" is the platform's own.
	APIBaseURL string `json:"api_base_url" bson:"api_base_url"`
	Status     string `json:"status" bson:"status"`
	// LastError is what failed last (status error), and when.
	LastError   string     `json:"last_error,omitempty" bson:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty" bson:"last_error_at,omitempty"`
	// Credentials names the credentials the connection keeps (sealed; their values are never
	// shown).
	Credentials []string `json:"credentials" bson:"credential_names"`
	Sealed      string   `json:"-" bson:"sealed"`
	// WebhookURL is where the platform is to deliver the connection's messages: set on reads.
	WebhookURL string    `json:"webhook_url" bson:"-"`
	CreatedAt  time.Time `json:"created_at" bson:"created_at"`
	UpdatedAt  time.Time `json:"updated_at" bson:"updated_at"`
}

// HookPath is the path of the webhook route of connection id of type typ.
func HookPath(typ, id string) string { return "/hooks/" + typ + "/" + id }

// Input is a connection as a request writes it: fields not given are left as they are.
type Input struct {
	Type        *string           `json:"type"`
	Name        *string           `json:"name"`
	APIBaseURL  *string           `json:"api_base_url"`
	Status      *string           `json:"status"`
	Credentials map[string]string `json:"credentials"`
}

// Message is an inbound message (or button click) as taken: kept before the platform is
// answered, so that nothing acknowledged is lost, under an id of the connection and the
// platform's message id, so that a retry of it is taken once.
type Message struct {
	ID           string `bson:"_id"`
	ProjectID    string `bson:"project_id"`
	BotID        string `bson:"bot_id"`
	ConnectionID string `bson:"connection_id"`
	Type         string `bson:"type"`
	// PlatformID is the platform's id of the message.
	PlatformID   string    `bson:"platform_id"`
	Conversation string    `bson:"conversation"`
	User         string    `bson:"user"`
	UserName     string    `bson:"user_name"`
	Text         string    `bson:"text"`
	Decision     *Decision `bson:"decision,omitempty"`
	Reply        Target    `bson:"reply"`
	// Status is received until the message is answered (answered), or left (dropped).
	Status     string    `bson:"status"`
	ChatID     string    `bson:"chat_id,omitempty"`
	ReceivedAt time.Time `bson:"received_at"`
}

// Message statuses.
const (
	MessageReceived = "received"
	MessageAnswered = "answered"
	MessageDropped  = "dropped"
)

// Thread is a conversation of a connection and the chat of the agent it is: where the latest
// answer of the conversation goes (Reply).
type Thread struct {
	ID           string    `bson:"_id"`
	ConnectionID string    `bson:"connection_id"`
	Conversation string    `bson:"conversation"`
	ChatID       string    `bson:"chat_id"`
	Reply        Target    `bson:"reply"`
	UpdatedAt    time.Time `bson:"updated_at"`
}

// Send is an answer to deliver through a connection, kept until the platform took it.
type Send struct {
	ID           string    `bson:"_id"`
	ProjectID    string    `bson:"project_id"`
	BotID        string    `bson:"bot_id"`
	ConnectionID string    `bson:"connection_id"`
	ChatID       string    `bson:"chat_id"`
	To           Target    `bson:"to"`
	Text         string    `bson:"text"`
	Approval     *Approval `bson:"approval,omitempty"`
	// Status is pending until the platform took it (sent) or refused it for good (failed).
	Status   string `bson:"status"`
	Error    string `bson:"error,omitempty"`
	Attempts int    `bson:"attempts"`
	// Pieces counts the pieces of the answer the platform took so far.
	Pieces    int       `bson:"pieces"`
	CreatedAt time.Time `bson:"created_at"`
	UpdatedAt time.Time `bson:"updated_at"`
}

// Send statuses.
const (
	SendPending = "pending"
	SendSent    = "sent"
	SendFailed  = "failed"
)

// Repo persists connections, the messages taken, the conversations' chats and the answers to
// send.
type Repo interface {
	Insert(ctx context.Context, c Connection) error
	// Get returns the project's agent's connection id: NotFound otherwise.
	Get(ctx context.Context, projectID, botID, id string) (Connection, error)
	// Find returns the connection id, whoever's it is (a webhook call names it): NotFound
	// otherwise.
	Find(ctx context.Context, id string) (Connection, error)
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Connection, int, error)
	// Replace writes c over the stored connection of its id and project.
	Replace(ctx context.Context, c Connection) error
	Delete(ctx context.Context, projectID, botID, id string) error
	// SetStatus sets the connection's status and last error.
	SetStatus(ctx context.Context, id, status, lastError string, at time.Time) error

	// Take keeps m with ev in its outbox unless a message of its id was taken before; it
	// returns the message stored (m, or the one taken before) and whether it is new.
	Take(ctx context.Context, m Message, ev outbox.Event) (Message, bool, error)
	Message(ctx context.Context, id string) (Message, error)
	// SetMessage sets the message's status and chat.
	SetMessage(ctx context.Context, id, status, chatID string) error

	// Thread returns the thread id: NotFound when the conversation has none yet.
	Thread(ctx context.Context, id string) (Thread, error)
	// ThreadByChat returns the thread whose chat is chatID, of any connection: NotFound when
	// none is.
	ThreadByChat(ctx context.Context, chatID string) (Thread, error)
	// PutThread keeps t (its chat and where its answers go).
	PutThread(ctx context.Context, t Thread) error

	// QueueSend keeps s unless an answer of its id is kept; it reports whether s is new.
	QueueSend(ctx context.Context, s Send) (bool, error)
	Send(ctx context.Context, id string) (Send, error)
	// SetSend sets the answer's status, error and attempts, with ev (when it has a type) in its
	// outbox.
	SetSend(ctx context.Context, s Send, ev outbox.Event) error
}
