// Package inbox is human takeover: chats flagged for a person of the team (a handoff request:
// the agent's handoff tool, the end user asking for a person, a workflow), and what the team's
// operators do with them: assign, take over (the agent answers none of the chat's messages),
// reply as themselves, leave internal notes, hand back to the agent with a note for its next
// prompt, close. Each step is a domain event.
package inbox

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// Resource names handoffs in errors and outbox references.
const Resource = "handoff"

// Statuses of a handoff: waiting for a person, assigned to one, taken over by one (the agent
// paused on the chat), handed back to the agent, closed.
const (
	StatusWaiting  = "waiting"
	StatusAssigned = "assigned"
	StatusTaken    = "taken"
	StatusReleased = "released"
	StatusClosed   = "closed"
)

// Statuses lists the statuses, in the order of a handoff's life.
var Statuses = []string{StatusWaiting, StatusAssigned, StatusTaken, StatusReleased, StatusClosed}

// Sources of a handoff request.
const (
	SourceTool     = "tool"
	SourceUser     = "user"
	SourceWorkflow = "workflow"
	SourceOperator = "operator"
	// SourceConfidence is a standard answer of low confidence.
	SourceConfidence = "confidence"
)

// Urgencies of a handoff request.
var Urgencies = []string{"low", "normal", "high"}

// Handoff is a chat flagged for a person, and where the team is with it; one per chat, opened
// again by a request once it is released or closed.
type Handoff struct {
	ChatID    string `json:"chat_id" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	Status    string `json:"status" bson:"status"`
	// Source is what asked for a person (tool, user, workflow, operator); Reason why.
	Source  string `json:"source" bson:"source"`
	Reason  string `json:"reason" bson:"reason"`
	Urgency string `json:"urgency" bson:"urgency"`
	// Channel is where the end user writes: api, or a channel's type.
	Channel     string     `json:"channel" bson:"channel"`
	OperatorID  string     `json:"operator_id" bson:"operator_id"`
	Notes       []Note     `json:"notes" bson:"notes"`
	RequestedAt time.Time  `json:"requested_at" bson:"requested_at"`
	AssignedAt  *time.Time `json:"assigned_at,omitempty" bson:"assigned_at,omitempty"`
	TakenAt     *time.Time `json:"taken_at,omitempty" bson:"taken_at,omitempty"`
	// FirstReplyAt is when a person first answered the end user.
	FirstReplyAt *time.Time `json:"first_reply_at,omitempty" bson:"first_reply_at,omitempty"`
	ClosedAt     *time.Time `json:"closed_at,omitempty" bson:"closed_at,omitempty"`
	UpdatedAt    time.Time  `json:"updated_at" bson:"updated_at"`
	Rev          int64      `json:"-" bson:"rev"`
}

// Open reports whether the handoff waits for, or is with, a person.
func (h Handoff) Open() bool {
	return h.Status == StatusWaiting || h.Status == StatusAssigned || h.Status == StatusTaken
}

// Note is an internal note of the team on a handoff: the end user never sees it.
type Note struct {
	By   string    `json:"by" bson:"by"`
	Text string    `json:"text" bson:"text"`
	At   time.Time `json:"at" bson:"at"`
}

// Filter narrows a list of handoffs: by agent, status, channel, operator and source ("" any).
type Filter struct {
	BotID, Status, Channel, OperatorID, Source string
}

// Repo persists handoffs.
type Repo interface {
	Get(ctx context.Context, projectID, chatID string) (Handoff, error)
	// Put writes h over the handoff of its chat if that is still at revision rev (0: none yet),
	// at revision rev+1, with ev in its outbox: Conflict when another change came first.
	Put(ctx context.Context, h Handoff, rev int64, ev outbox.Event) error
	// OpenOf counts the project's handoffs assigned to or taken by the operator.
	OpenOf(ctx context.Context, projectID, operatorID string) (int, error)
	// List returns a page of the project's handoffs that f selects, the open ones first (oldest
	// request first), then the others (most recent first), and how many f selects.
	List(ctx context.Context, projectID string, f Filter, page paging.Page) ([]Handoff, int, error)
}
