// Package usermemory is what agents remember about their end users: durable facts a user states
// about themselves (their name, preferences, past issues, how they want to be helped), kept per
// agent and user. A worker extracts them after a turn (rule-based with the offline model,
// with one structured call of the model otherwise), merges them with what is known, and later
// turns of the same user get the relevant ones in their prompt. A user's memories never reach
// another user's prompt: every read is by (project, agent, user).
package usermemory

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Resource names memories in errors.
const Resource = "memory"

// The types of memories.
const (
	// Semantic is a fact or preference: "The user's name is Ana", "The user prefers email".
	Semantic = "semantic"
	// Episodic is something that happened to the user: "The user's order 1042 arrived damaged".
	Episodic = "episodic"
	// Procedural is how the user wants to be helped: "Always answer the user in Spanish".
	Procedural = "procedural"
)

// Types are the types of memories, in the order the API lists them.
var Types = []string{Semantic, Episodic, Procedural}

// Bounds of what is kept.
const (
	// MaxPerUser bounds the memories of one user of one agent: a new one beyond it replaces the
	// least recently confirmed.
	MaxPerUser = 100
	// MaxContent bounds a memory's text, in characters; MaxSubject its subject's.
	MaxContent = 300
	MaxSubject = 40
)

// Memory is one thing an agent knows about one of its users.
type Memory struct {
	ID        string `json:"id" bson:"_id"`
	ProjectID string `json:"-" bson:"project_id"`
	BotID     string `json:"bot_id" bson:"bot_id"`
	// UserUUID is the end user: the subscriber on the agent's page or widget, or the user a
	// message made with an API key records (the key's account).
	UserUUID string `json:"user_uuid" bson:"user"`
	Type     string `json:"type" bson:"type"`
	// Subject names a fact that has one value at a time ("name", "email", "language"): a newer
	// fact of the same subject replaces the older. Empty for the others.
	Subject string `json:"subject" bson:"subject"`
	Content string `json:"content" bson:"content"`
	// MessageID is the user's message the memory was last stated in.
	MessageID string    `json:"message_id" bson:"message_id"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
	UpdatedAt time.Time `json:"updated_at" bson:"updated_at"`
}

// Query selects memories of an agent: of one user when UserUUID is set, of one type when Type is.
type Query struct {
	ProjectID, BotID string
	UserUUID         string
	Type             string
}

// Repo persists memories. Every read is a range read of (project, agent, user) or a point read
// by id.
type Repo interface {
	// ForUser returns the user's memories of the agent, the most recently updated first, at
	// most MaxPerUser.
	ForUser(ctx context.Context, projectID, botID, userUUID string) ([]Memory, error)
	// List returns a page of the memories q selects, the most recently updated first, and how
	// many there are.
	List(ctx context.Context, q Query, page paging.Page) ([]Memory, int, error)
	// Count returns how many memories q selects.
	Count(ctx context.Context, q Query) (int, error)
	// Put writes m by its id: inserted, or replacing the one of that id (whose CreatedAt stays).
	Put(ctx context.Context, m Memory) error
	// Delete removes the agent's memory id and returns it: NotFound when the agent has none of
	// that id.
	Delete(ctx context.Context, projectID, botID, id string) (Memory, error)
}

// Normalize is text as memories are compared: lower case, letters and digits only, words
// separated by one space.
func Normalize(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteRune(r)
			space = false
		case r == '\'' || r == '’':
			// "user's" and "users" are one word.
		default:
			space = true
		}
	}
	return b.String()
}

// namespace makes memories' ids.
var namespace = uuid.MustParse("5b0f7c1e-9d4a-4c55-8f0e-2b7d7f3a6c91")

// idOf is the id of m: the same for every statement of the same thing to the same agent by the
// same user (the same subject, else the same normalized text), so that stating it again, or
// two workers extracting it at once, keeps one memory.
func idOf(m Memory) string {
	key := "text:" + Normalize(m.Content)
	if m.Subject != "" {
		key = "subject:" + Normalize(m.Subject)
	}
	return uuid.NewSHA1(namespace, []byte(m.ProjectID+"/"+m.BotID+"/"+m.UserUUID+"/"+key)).String()
}
