// Package subscribers is the end users of agents: the people who talk to an agent on its hosted
// chat page or its widget, without an API key. Each gets a session, a short-lived token scoped to
// one agent, and is a subscriber of that agent: anonymous (a random id the browser keeps, kept
// here from their first message) until a sign-in says who it is.
package subscribers

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Resource names subscribers in errors.
const Resource = "subscriber"

// Subscriber is an end user of one agent.
type Subscriber struct {
	ID         string    `json:"id" bson:"_id"`
	ProjectID  string    `json:"-" bson:"project_id"`
	BotID      string    `json:"bot_id" bson:"bot_id"`
	Name       string    `json:"name" bson:"name"`
	Email      string    `json:"email" bson:"email"`
	ExternalID string    `json:"external_id" bson:"external_id"`
	Anonymous  bool      `json:"anonymous" bson:"anonymous"`
	FirstSeen  time.Time `json:"first_seen" bson:"first_seen"`
	LastSeen   time.Time `json:"last_seen" bson:"last_seen"`
	// Chats counts the chats they started.
	Chats int `json:"chats_count" bson:"chats"`
}

// Repo persists subscribers.
type Repo interface {
	Insert(ctx context.Context, s Subscriber) error
	// Get returns the agent's subscriber id: NotFound otherwise.
	Get(ctx context.Context, botID, id string) (Subscriber, error)
	// Seen moves the subscriber's last_seen to at.
	Seen(ctx context.Context, botID, id string, at time.Time) error
	// CountChat adds a chat to the count of s (by its bot and id) and moves its last_seen to
	// s.LastSeen, keeping s first when the agent has no such subscriber.
	CountChat(ctx context.Context, s Subscriber) error
	// ByExternalID returns the agent's subscriber known to the customer as externalID.
	ByExternalID(ctx context.Context, botID, externalID string) (Subscriber, error)
	// SignedIn sets who a signed-in subscriber is (name, email) and when they were last seen.
	SignedIn(ctx context.Context, botID, id, name, email string, at time.Time) error
	// SetSSOSecret keeps the agent's SSO secret, sealed; SSOSecret returns it (NotFound when
	// the agent has none).
	SetSSOSecret(ctx context.Context, botID, sealed string) error
	SSOSecret(ctx context.Context, botID string) (string, error)
	// List returns a page of the project's subscribers (of one agent when botID is not empty),
	// the most recently seen first, and how many there are.
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Subscriber, int, error)
}
