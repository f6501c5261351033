// Package operators is the people of an account who answer conversations in the inbox (human
// takeover): their records and their tokens. An operator's token reaches the inbox of the
// operator's projects and nothing else; like an API key it is shown once and stored only as its
// SHA-256 hash.
package operators

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
	"github.com/agentplane/agentplane/shared/kit/paging"
)

// Resource names operators in errors.
const Resource = "operator"

// Availabilities of an operator: online (taking conversations) or away.
const (
	AvailabilityOnline = "online"
	AvailabilityAway   = "away"
)

// Bounds and defaults of an operator.
const (
	DefaultMaxOpen = 5
	MaxMaxOpen     = 100
	MaxNameLength  = 200
	MaxEmailLength = 254
	MaxProjects    = 50
)

// TokenPrefix starts every operator token, so that it is told from an API key (tenancy.KeyPrefix)
// at a glance.
const TokenPrefix = "op_"

// Operator is a person of an account who answers conversations of its projects in the inbox.
type Operator struct {
	ID        string `json:"id" bson:"_id"`
	AccountID string `json:"-" bson:"account_id"`
	// ProjectIDs are the projects whose inbox the operator works in.
	ProjectIDs   []string `json:"project_ids" bson:"project_ids"`
	Name         string   `json:"name" bson:"name"`
	Email        string   `json:"email" bson:"email"`
	Availability string   `json:"availability" bson:"availability"`
	// MaxOpen bounds the conversations the operator has open at once.
	MaxOpen int `json:"max_open" bson:"max_open"`
	// TokenHash is the hex SHA-256 of the operator's token; the token itself is never stored.
	TokenHash string    `json:"-" bson:"token_hash"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
	UpdatedAt time.Time `json:"updated_at" bson:"updated_at"`
	Rev       int64     `json:"-" bson:"rev"`
}

// Input is the body of an operator's creation or update: fields absent or null keep their value
// (or default on creation).
type Input struct {
	ProjectIDs   []string    `json:"project_ids"`
	Name         *string     `json:"name"`
	Email        *string     `json:"email"`
	Availability *string     `json:"availability"`
	MaxOpen      flex.OptInt `json:"max_open"`
}

func (in Input) apply(o *Operator) {
	for dst, src := range map[*string]*string{&o.Name: in.Name, &o.Email: in.Email, &o.Availability: in.Availability} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	o.Availability = strings.ToLower(o.Availability)
	if in.ProjectIDs != nil {
		ids := []string{}
		for _, id := range in.ProjectIDs {
			if id = strings.TrimSpace(id); !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		o.ProjectIDs = ids
	}
	if in.MaxOpen.Set {
		o.MaxOpen = int(in.MaxOpen.Value)
	}
}

// validate checks o's own fields (its projects are checked against the account by the service).
func (o Operator) validate() apperr.Problems {
	var p apperr.Problems
	switch {
	case o.Name == "":
		p.Add("name", "is required")
	case utf8.RuneCountInString(o.Name) > MaxNameLength:
		p.Add("name", "must be at most %d characters", MaxNameLength)
	}
	switch {
	case o.Email == "":
		p.Add("email", "is required")
	case len(o.Email) > MaxEmailLength:
		p.Add("email", "must be at most %d characters", MaxEmailLength)
	case !validEmail(o.Email):
		p.Add("email", "must be an email address such as ada@example.com")
	}
	if o.Availability != AvailabilityOnline && o.Availability != AvailabilityAway {
		p.Add("availability", "must be %s or %s", AvailabilityOnline, AvailabilityAway)
	}
	if o.MaxOpen < 1 || o.MaxOpen > MaxMaxOpen {
		p.Add("max_open", "must be between 1 and %d", MaxMaxOpen)
	}
	switch {
	case len(o.ProjectIDs) == 0:
		p.Add("project_ids", "must name at least one project of the account")
	case len(o.ProjectIDs) > MaxProjects:
		p.Add("project_ids", "must name at most %d projects", MaxProjects)
	case slices.Contains(o.ProjectIDs, ""):
		p.Add("project_ids", "must not contain an empty id")
	}
	return p
}

// validEmail reports whether s is a bare address (no display name, no angle brackets).
func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && a.Name == ""
}

// newToken returns a fresh operator token: TokenPrefix and 256 random bits.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashToken is how a token is stored and looked up: hex SHA-256. A slow hash is not needed for
// 256-bit random secrets.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// IsToken reports whether a bearer token is meant as an operator's (by its prefix), not whether
// it is valid.
func IsToken(token string) bool { return strings.HasPrefix(token, TokenPrefix) }

// wellFormed rejects values that cannot be tokens before touching the database.
func wellFormed(token string) bool {
	return IsToken(token) && len(token) == len(TokenPrefix)+43
}

// Repo persists operators. Methods return apperr NotFound errors for missing records.
type Repo interface {
	Insert(ctx context.Context, o Operator) error
	// Get returns an operator of the account: NotFound for another account's, like a missing one.
	Get(ctx context.Context, accountID, id string) (Operator, error)
	// ByTokenHash returns the operator whose token has the hash.
	ByTokenHash(ctx context.Context, hash string) (Operator, error)
	// List is one page of the account's operators, oldest first: those of projectID only when
	// it is not empty.
	List(ctx context.Context, accountID, projectID string, page paging.Page) ([]Operator, int, error)
	// Replace writes o over the stored operator of revision o.Rev-1: a Conflict operator_changed
	// otherwise.
	Replace(ctx context.Context, o Operator) error
	// Delete removes an operator of the account.
	Delete(ctx context.Context, accountID, id string) error
}
