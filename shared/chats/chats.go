// Package chats is the conversation resource: chats of an agent, their messages (the
// interface's message records) and history.
package chats

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/memory"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Resource names chats in errors and outbox references; MessageResource names messages.
const (
	Resource        = "chat"
	MessageResource = "message"
	// RecordResource names a chat's own document in outbox references (Resource is its pages).
	RecordResource = "chat_record"
)

// Message roles.
const (
	RoleUser  = "user"
	RoleAgent = "agent"
)

// User is who wrote a message (2.4). API callers are not people the platform knows: the user
// of a message is the account behind the key.
type User struct {
	UUID       string `json:"uuid" bson:"uuid"`
	Email      string `json:"email" bson:"email"`
	Name       string `json:"name" bson:"name"`
	Avatar     string `json:"avatar" bson:"avatar"`
	AvatarLink string `json:"avatar_link" bson:"avatar_link"`
}

// Preference is how a reply was made (2.2), also returned as `config_used`.
type Preference struct {
	ReasoningType string `json:"reasoningType" bson:"reasoning_type"`
	Model         string `json:"model" bson:"model"`
	MaxTokens     int    `json:"maxTokens" bson:"max_tokens"`
	Complexity    string `json:"complexity" bson:"complexity"`
}

// Message is a message record (2.1). Numeric-named fields are strings, as the interface types
// them.
type Message struct {
	UUID            string          `json:"uuid" bson:"uuid"`
	ChatID          string          `json:"chat_id" bson:"chat_id"`
	Seq             int             `json:"-" bson:"seq"`
	Role            string          `json:"role" bson:"role"`
	Content         string          `json:"content" bson:"content"`
	Model           string          `json:"model" bson:"model"`
	Complexity      string          `json:"complexity" bson:"complexity"`
	ReasoningType   string          `json:"reasoning_type" bson:"reasoning_type"`
	EstimatedTimeMS string          `json:"estimated_time_ms" bson:"estimated_time_ms"`
	EstimatedCost   string          `json:"estimated_cost" bson:"estimated_cost"`
	Confidence      string          `json:"confidence" bson:"confidence"`
	ConfidenceScore string          `json:"confidence_score" bson:"confidence_score"`
	Channel         string          `json:"channel" bson:"channel"`
	CreditUsed      string          `json:"credit_used" bson:"credit_used"`
	Tokens          int             `json:"tokens" bson:"tokens"`
	Upvotes         int             `json:"upvotes" bson:"upvotes"`
	Downvotes       int             `json:"downvotes" bson:"downvotes"`
	Reasoning       freeform.Object `json:"reasoning" bson:"reasoning"`
	Preference      Preference      `json:"preference" bson:"preference"`
	Sources         []memory.Ref    `json:"sources" bson:"sources"`
	Interrupted     bool            `json:"interrupted" bson:"interrupted"`
	IsToolExecuting bool            `json:"isToolExecuting" bson:"is_tool_executing"`
	User            User            `json:"user" bson:"user"`
	CreatedAt       time.Time       `json:"created_at" bson:"created_at"`
	UpdatedAt       time.Time       `json:"updated_at" bson:"updated_at"`
	// FirstTokenMS is how long a streamed answer took to its first token, from the user's
	// message (0: not streamed); the statistics read it, the message record does not show it.
	FirstTokenMS int64 `json:"-" bson:"first_token_ms,omitempty"`
	// Version is the number of the agent's version that wrote the message (an agent's message;
	// 0 for others, and for those written before versions were).
	Version int `json:"version,omitempty" bson:"version,omitempty"`
}

// Tool is a tool call waiting for approval, as a reply shows it (2.7).
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	ServerLabel string         `json:"server_label"`
	Reasoning   string         `json:"reasoning"`
	Parameters  map[string]any `json:"parameters"`
}

// Chat is a conversation of an agent.
type Chat struct {
	UUID      string     `json:"uuid" bson:"_id"`
	ProjectID string     `json:"-" bson:"project_id"`
	BotID     string     `json:"-" bson:"bot_id"`
	Title     string     `json:"title" bson:"title"`
	Messages  int        `json:"messages" bson:"messages"`
	CreatedAt time.Time  `json:"created_at" bson:"created_at"`
	UpdatedAt time.Time  `json:"updated_at" bson:"updated_at"`
	DeletedAt *time.Time `json:"-" bson:"deleted_at,omitempty"`
	// Plan is the plan the agent proposed in plan mode, until the user answers it.
	Plan *Plan `json:"-" bson:"plan,omitempty"`
	// Mode is the chat's default chat_mode (ask when empty).
	Mode string `json:"mode" bson:"mode,omitempty"`
	// Workspace is the uuid of the agent's workspace its turns of chat_mode edit edit ("" for
	// none: they edit the text of the message).
	Workspace string `json:"workspace_uuid,omitempty" bson:"workspace,omitempty"`
	// Version is the agent's version the chat began with: its messages that name none get it
	// while it is the published version or the canary's (agents.Bot.ForChat).
	Version int `json:"version,omitempty" bson:"version,omitempty"`
	// Subscriber is the end user whose chat it is, when one started it (on the agent's page or
	// widget): only they go on with it, besides the account's keys.
	Subscriber string `json:"-" bson:"subscriber,omitempty"`
	// Recent are the chat's latest messages, from sequence number RecentFrom on, as the store
	// keeps them with the chat (Range serves them without another read); Rev counts the writes
	// of the chat's messages.
	// Held says a person of the team took the chat over: the agent answers none of its
	// messages until they hand it back, with HandBack, their note for the agent's next prompt.
	Held       bool      `json:"-" bson:"held,omitempty"`
	HandBack   string    `json:"-" bson:"hand_back,omitempty"`
	Recent     []Message `json:"-" bson:"recent,omitempty"`
	RecentFrom int       `json:"-" bson:"recent_from,omitempty"`
	Rev        int64     `json:"-" bson:"rev,omitempty"`
}

// Plan is a numbered plan the agent proposed (chat_mode plan).
type Plan struct {
	// Request is the user's message the plan carries out.
	Request string   `bson:"request"`
	Steps   []string `bson:"steps"`
}

// Repo persists chats and their messages. Lookups exclude deleted chats.
type Repo interface {
	// Start stores c, a new chat, with m as its first message (setting its Seq) and ev in the
	// outbox of the document it returns, and updates c to what it stored.
	Start(ctx context.Context, c *Chat, m *Message, ev outbox.Event) (outbox.Ref, error)
	// StartWith stores c, a new chat, with ms as its first messages (setting their Seq) and
	// evs[i], the event of ms[i], in the outbox of the document that holds ms[i], in a bounded
	// number of writes; it returns where each event is, and updates c to what it stored.
	StartWith(ctx context.Context, c *Chat, ms []Message, evs []outbox.Event) ([]outbox.Ref, error)
	Get(ctx context.Context, projectID, botID, id string) (Chat, error)
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Chat, int, error)
	// Delete marks c deleted and deletes its messages and its handoff to people, if any.
	Delete(ctx context.Context, c Chat, at time.Time) error
	// Append stores m as the chat's next message (setting its Seq) with ev in the outbox of the
	// document it returns, removes from the chat's document the events published (their ids)
	// in the same write, and updates c to what it stored (reading it again when c was not).
	Append(ctx context.Context, c *Chat, m *Message, ev outbox.Event, published []string) (outbox.Ref, error)
	// Range returns the messages of c, as read, of sequence numbers from..to (1-based,
	// inclusive), in order.
	Range(ctx context.Context, c Chat, from, to int) ([]Message, error)
	// SetPlan keeps p as the chat's proposed plan; nil removes it.
	SetPlan(ctx context.Context, chatID string, p *Plan) error
	// SetChat sets fields of the chat (title, mode), with ev in its outbox.
	SetChat(ctx context.Context, chatID string, set map[string]any, ev outbox.Event) error
	// Message returns a message of the project's agent by its uuid: NotFound otherwise.
	Message(ctx context.Context, projectID, botID, id string) (Message, error)
	// Tally records the voter's vote on m (VoteUp or VoteDown; "" withdraws it) and returns the
	// message's counts.
	Tally(ctx context.Context, m Message, voter, vote string) (up, down int, err error)
	// UpdateMessage writes m over the stored message of its uuid, with ev in its page's outbox.
	UpdateMessage(ctx context.Context, m Message, ev outbox.Event) (outbox.Ref, error)
	// VoteOf returns the voter's vote on the message, "" when none.
	VoteOf(ctx context.Context, messageID, voter string) (string, error)
	// DeleteMessage removes m from its chat, with ev in its page's outbox.
	DeleteMessage(ctx context.Context, m Message, ev outbox.Event) (outbox.Ref, error)
}
