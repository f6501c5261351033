// Package crm is the small CRM agents act on: deals, the contacts they are with, and the
// pipeline stages they move through.
package crm

import (
	"context"
	"slices"
	"time"

	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
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
	UUID      string `bson:"_id"`
	ProjectID string `bson:"project_id"`
	BotID     string `bson:"bot_id"`
	Title     string `bson:"title"`
	Currency  string `bson:"currency"`
	Value     int64  `bson:"value"`
	Status    string `bson:"status"`
	StageID   string `bson:"stage_id"`
	ContactID string `bson:"contact_id"`
	// Fields are the values of its custom fields.
	Fields    freeform.Object `bson:"fields,omitempty"`
	CreatedAt time.Time       `bson:"created_at"`
	UpdatedAt time.Time       `bson:"updated_at"`
	Rev       int64           `bson:"rev"`
	// Ops are the idempotency keys of the latest updates made with one.
	Ops []string `bson:"ops,omitempty"`
	// Visits are the stages the deal was in, oldest first (at most MaxVisits), the last its
	// current one; deals stored before visits were kept have none.
	Visits []Visit `bson:"visits,omitempty"`
}

// MaxVisits bounds the stage visits a deal keeps: older ones are dropped.
const MaxVisits = 50

// Visit is a deal's time in a stage: from EnteredAt until LeftAt (zero while it is there).
type Visit struct {
	StageID   string    `bson:"stage_id"`
	EnteredAt time.Time `bson:"entered_at"`
	LeftAt    time.Time `bson:"left_at"`
}

// visited is visits after the deal moved to stageID at at.
func visited(visits []Visit, stageID string, at time.Time) []Visit {
	out := slices.Clone(visits[max(len(visits)-MaxVisits+1, 0):])
	if n := len(out); n > 0 && out[n-1].LeftAt.IsZero() {
		out[n-1].LeftAt = at
	}
	return append(out, Visit{StageID: stageID, EnteredAt: at})
}

// View is a deal as the interface shows it.
type View struct {
	UUID     string  `json:"uuid"`
	Title    string  `json:"title"`
	Currency string  `json:"currency"`
	Value    int64   `json:"value"`
	Contact  Contact `json:"contact"`
	Stage    Stage   `json:"stage"`
	// Fields are the values of the deal's custom fields.
	Fields freeform.Object `json:"fields"`
}

// EventData is the data of deal events: the deal, its status and, when the stage changed, the
// stage it left.
type EventData struct {
	View
	Status        string `json:"status"`
	PreviousStage *Stage `json:"previous_stage,omitempty"`
	// ContactRemoved is the contact the deal was made with, when that contact was deleted (the
	// deal stays, without a contact).
	ContactRemoved *Contact `json:"contact_removed,omitempty"`
}

// Contact is a person deals are made with. Its timestamps are strings, as the interface has them.
type Contact struct {
	UUID        string          `json:"uuid" bson:"_id"`
	ProjectID   string          `json:"-" bson:"project_id"`
	Name        string          `json:"name" bson:"name"`
	Email       string          `json:"email" bson:"email"`
	Phone       string          `json:"phone" bson:"phone"`
	Company     string          `json:"company" bson:"company"`
	Status      string          `json:"status" bson:"status"`
	StatusLabel string          `json:"status_label" bson:"status_label"`
	Summary     string          `json:"summary" bson:"summary"`
	CreatedAt   string          `json:"created_at" bson:"created_at"`
	UpdatedAt   string          `json:"updated_at" bson:"updated_at"`
	Fields      freeform.Object `json:"fields" bson:"fields"`
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
	// PipelineID is the stage's pipeline; stored empty for the project's default pipeline.
	PipelineID string `json:"pipeline_id" bson:"pipeline_id,omitempty"`
}

// Pipeline is a sequence of stages deals move through. Every project has a default pipeline
// (its stages are the default stages); others are made with CreatePipeline.
type Pipeline struct {
	UUID      string    `json:"uuid" bson:"_id"`
	ProjectID string    `json:"-" bson:"project_id"`
	Name      string    `json:"name" bson:"name"`
	IsDefault bool      `json:"is_default" bson:"-"`
	Stages    []Stage   `json:"stages" bson:"-"`
	CreatedAt time.Time `json:"created_at" bson:"created_at"`
	// TemplateKey is the template the pipeline was made from, if any.
	TemplateKey string `json:"template_key,omitempty" bson:"template_key,omitempty"`
}

// DealFilter narrows a deal list.
type DealFilter struct {
	// BotID is empty for the deals of every agent of the project.
	ProjectID, BotID string
	Status           string
	StageIDs         []string
	// ContactID narrows the list to the deals made with that contact.
	ContactID string
}

// Repo persists the CRM. Methods return apperr NotFound, Conflict and Unavailable errors.
type Repo interface {
	// EnsureStages creates the stages that do not exist yet (ids are deterministic) and returns
	// the project's pipeline in order.
	EnsureStages(ctx context.Context, stages []Stage) ([]Stage, error)
	// InsertContact inserts c with ev in its outbox, or returns the stored contact with c's id
	// when there is one (created false).
	InsertContact(ctx context.Context, c Contact, ev outbox.Event) (Contact, bool, error)
	// UpdateContact writes c over the stored contact, with ev in its outbox.
	UpdateContact(ctx context.Context, c Contact, ev outbox.Event) error
	Contact(ctx context.Context, projectID, id string) (Contact, error)
	Contacts(ctx context.Context, projectID string, page paging.Page) ([]Contact, int, error)
	CountContacts(ctx context.Context, projectID string) (int, error)
	// SearchContacts lists the contacts whose name, email, phone or company contains query,
	// ignoring case.
	SearchContacts(ctx context.Context, projectID, query string, page paging.Page) ([]Contact, int, error)
	// DeleteContact removes c, leaving ev in the outbox of deleted things; the reference is
	// where the event is kept.
	DeleteContact(ctx context.Context, c Contact, ev outbox.Event) (outbox.Ref, error)
	// InsertNote keeps a note on a contact.
	InsertNote(ctx context.Context, n Note) error
	// Notes lists one page of a contact's notes, newest first.
	Notes(ctx context.Context, projectID, contactID string, page paging.Page) ([]Note, int, error)
	InsertDeal(ctx context.Context, d Deal, ev outbox.Event) error
	Deal(ctx context.Context, projectID, botID, id string) (Deal, error)
	Deals(ctx context.Context, f DealFilter, page paging.Page) ([]Deal, int, error)
	// EachDeal calls fn with each live deal of the agent updated at or after since, read from a
	// cursor into one Deal that fn must not keep.
	EachDeal(ctx context.Context, projectID, botID string, since time.Time, fn func(*Deal) error) error
	// DealTotals counts the live deals f selects, and sums their values, by stage and currency.
	DealTotals(ctx context.Context, f DealFilter) ([]DealTotal, error)
	// ReplaceDeal writes d over the stored deal of revision d.Rev-1 (Conflict otherwise).
	ReplaceDeal(ctx context.Context, d Deal, ev outbox.Event) error
	DeleteDeal(ctx context.Context, d Deal, at time.Time, ev outbox.Event) error
	// The pipeline and stage writes keep their event as other writes do; deletions return
	// where it is kept.
	InsertPipeline(ctx context.Context, p Pipeline, ev outbox.Event) error
	// Pipelines lists the project's pipelines made with InsertPipeline, oldest first.
	Pipelines(ctx context.Context, projectID string) ([]Pipeline, error)
	RenamePipeline(ctx context.Context, projectID, id, name string, ev outbox.Event) error
	// DeletePipeline removes the pipeline and its stages.
	DeletePipeline(ctx context.Context, projectID, id string, ev outbox.Event) (outbox.Ref, error)
	// InsertStage stores s, with ev in its outbox when ev is not nil.
	InsertStage(ctx context.Context, s Stage, ev *outbox.Event) error
	ReplaceStage(ctx context.Context, s Stage, ev outbox.Event) error
	DeleteStage(ctx context.Context, projectID, id string, ev outbox.Event) (outbox.Ref, error)
	// InsertTask stores a new task with ev in its outbox.
	InsertTask(ctx context.Context, t Task, ev outbox.Event) error
	// Task returns a live task of the agent.
	Task(ctx context.Context, projectID, botID, id string) (Task, error)
	// Tasks lists one page of the live tasks f selects.
	Tasks(ctx context.Context, f TaskFilter, page paging.Page) ([]Task, int, error)
	// CountTasks counts the live tasks f selects.
	CountTasks(ctx context.Context, f TaskFilter) (int, error)
	// DueTasks lists at most limit live tasks whose task.due is to be sent at or before now,
	// soonest first.
	DueTasks(ctx context.Context, now time.Time, limit int) ([]Task, error)
	// ReplaceTask writes t over the stored task of revision t.Rev-1 (Conflict otherwise).
	ReplaceTask(ctx context.Context, t Task, ev outbox.Event) error
	// DeleteTask tombstones t, with ev.
	DeleteTask(ctx context.Context, t Task, at time.Time, ev outbox.Event) error
	// Fields lists the project's custom fields, oldest first.
	Fields(ctx context.Context, projectID string) ([]Field, error)
	Field(ctx context.Context, projectID, id string) (Field, error)
	InsertField(ctx context.Context, f Field) error
	ReplaceField(ctx context.Context, f Field) error
	DeleteField(ctx context.Context, projectID, id string) error
	// EachFields calls fn with the fields of each of the project's contacts (entity contact) or
	// live deals (entity deal), read from a cursor.
	EachFields(ctx context.Context, projectID, entity string, fn func(freeform.Object) error) error
	// ContactStatuses returns the project's contact statuses: the defaults, at revision 0, when
	// they were never written.
	ContactStatuses(ctx context.Context, projectID string) (StatusSet, error)
	// WriteContactStatuses stores set over the project's statuses of revision set.Rev-1
	// (Conflict otherwise).
	WriteContactStatuses(ctx context.Context, set StatusSet) error
	// EachContact calls fn with each of the project's contacts in id order, read from a cursor
	// into one Contact that fn must not keep.
	EachContact(ctx context.Context, projectID string, fn func(*Contact) error) error
}
