// Package crm is the small CRM agents act on: deals, the contacts they are with, and the
// pipeline stages they move through.
package crm

import (
	"context"
	"time"

	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/paging"
)

// Deal statuses.
const (
	StatusOpen = "open"
	StatusWon  = "won"
	StatusLost = "lost"
)

// Statuses lists the deal statuses.
var Statuses = []string{StatusOpen, StatusWon, StatusLost}

// Deal is a stored deal; users see it as a View.
type Deal struct {
	UUID      string    `bson:"_id"`
	ProjectID string    `bson:"project_id"`
	BotID     string    `bson:"bot_id"`
	Title     string    `bson:"title"`
	Currency  string    `bson:"currency"`
	Value     int64     `bson:"value"`
	Status    string    `bson:"status"`
	StageID   string    `bson:"stage_id"`
	ContactID string    `bson:"contact_id"`
	CreatedAt time.Time `bson:"created_at"`
	UpdatedAt time.Time `bson:"updated_at"`
	Rev       int64     `bson:"rev"`
}

// View is a deal as the interface shows it.
type View struct {
	UUID     string  `json:"uuid"`
	Title    string  `json:"title"`
	Currency string  `json:"currency"`
	Value    int64   `json:"value"`
	Contact  Contact `json:"contact"`
	Stage    Stage   `json:"stage"`
}

// EventData is the data of deal events: the deal, its status and, when the stage changed, the
// stage it left.
type EventData struct {
	View
	Status        string `json:"status"`
	PreviousStage *Stage `json:"previous_stage,omitempty"`
}

// Contact is a person deals are made with. Its timestamps are strings, as the interface has them.
type Contact struct {
	UUID        string         `json:"uuid" bson:"_id"`
	ProjectID   string         `json:"-" bson:"project_id"`
	Name        string         `json:"name" bson:"name"`
	Email       string         `json:"email" bson:"email"`
	Phone       string         `json:"phone" bson:"phone"`
	Company     string         `json:"company" bson:"company"`
	Status      string         `json:"status" bson:"status"`
	StatusLabel string         `json:"status_label" bson:"status_label"`
	Summary     string         `json:"summary" bson:"summary"`
	CreatedAt   string         `json:"created_at" bson:"created_at"`
	UpdatedAt   string         `json:"updated_at" bson:"updated_at"`
	Fields      map[string]any `json:"fields" bson:"fields"`
}

// Stage is a step of a project's pipeline.
type Stage struct {
	UUID        string `json:"uuid" bson:"_id"`
	ProjectID   string `json:"-" bson:"project_id"`
	Name        string `json:"name" bson:"name"`
	Probability int    `json:"probability" bson:"probability"`
	SortOrder   int    `json:"sort_order" bson:"sort_order"`
	// Outcome is the status a deal in this stage has: open, won or lost.
	Outcome string `json:"-" bson:"outcome"`
}

// DealFilter narrows a deal list.
type DealFilter struct {
	ProjectID, BotID string
	Status           string
	StageID          string
}

// Repo persists the CRM. Methods return apperr NotFound, Conflict and Unavailable errors.
type Repo interface {
	// EnsureStages creates the stages that do not exist yet (ids are deterministic) and returns
	// the project's pipeline in order.
	EnsureStages(ctx context.Context, stages []Stage) ([]Stage, error)
	// InsertContact inserts c, or returns the stored contact with c's id when there is one.
	InsertContact(ctx context.Context, c Contact) (Contact, error)
	UpdateContact(ctx context.Context, c Contact) error
	Contact(ctx context.Context, projectID, id string) (Contact, error)
	Contacts(ctx context.Context, projectID string, page paging.Page) ([]Contact, int, error)
	InsertDeal(ctx context.Context, d Deal, ev outbox.Event) error
	Deal(ctx context.Context, projectID, botID, id string) (Deal, error)
	Deals(ctx context.Context, f DealFilter, page paging.Page) ([]Deal, int, error)
	// ReplaceDeal writes d over the stored deal of revision d.Rev-1 (Conflict otherwise).
	ReplaceDeal(ctx context.Context, d Deal, ev outbox.Event) error
	DeleteDeal(ctx context.Context, d Deal, at time.Time, ev outbox.Event) error
}
