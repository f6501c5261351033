// Package tenancy is accounts, their projects and their API keys: who may call and on what.
package tenancy

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Account is a tenant: it owns projects and API keys.
type Account struct {
	ID        string    `json:"id" bson:"_id"`
	Name      string    `json:"name" bson:"name"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
}

// Project groups an account's agents and everything they own.
type Project struct {
	ID        string    `json:"id" bson:"_id"`
	AccountID string    `json:"account_id" bson:"account_id"`
	Name      string    `json:"name" bson:"name"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
}

// Key is an API key's record. The secret itself is never stored: only its SHA-256 hash.
type Key struct {
	ID        string     `json:"id" bson:"_id"`
	AccountID string     `json:"account_id" bson:"account_id"`
	Name      string     `json:"name" bson:"name"`
	Prefix    string     `json:"prefix" bson:"prefix"`
	Hash      string     `json:"-" bson:"hash"`
	CreatedAt time.Time  `json:"created_at" bson:"created_at"`
	RevokedAt *time.Time `json:"revoked_at" bson:"revoked_at,omitempty"`
	// ProjectID and BotID make the key an agent's A2A key: it reaches that agent's A2A endpoint
	// (its card and methods) and nothing else. Both are empty for an account's API key.
	ProjectID string `json:"project_id,omitempty" bson:"project_id,omitempty"`
	BotID     string `json:"bot_id,omitempty" bson:"bot_id,omitempty"`
}

// Principal is who a request acts as: the account of the key it presented, or of the operator
// whose token it presented.
type Principal struct {
	AccountID string
	KeyID     string
	// OperatorID is the operator of an operator token (KeyID is then empty).
	OperatorID string
	// Projects are the projects the principal may address: nil for every project of the account
	// (an API key), else only these (an operator's, or an agent's A2A key's).
	Projects []string
	// BotID is the one agent an agent's A2A key reaches, through its A2A endpoint only; empty
	// for any other principal.
	BotID string
}

// Repo persists tenancy records. Methods return apperr NotFound errors for missing records and
// apperr Unavailable errors when the database cannot be reached.
type Repo interface {
	InsertAccount(ctx context.Context, a Account) error
	Account(ctx context.Context, id string) (Account, error)
	InsertKey(ctx context.Context, k Key) error
	KeyByHash(ctx context.Context, hash string) (Key, error)
	Keys(ctx context.Context, accountID string) ([]Key, error)
	RevokeKey(ctx context.Context, accountID, keyID string, at time.Time) error
	InsertProject(ctx context.Context, p Project) error
	Project(ctx context.Context, accountID, id string) (Project, error)
	Projects(ctx context.Context, accountID string, page paging.Page) ([]Project, int, error)
}
