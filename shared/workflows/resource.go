package workflows

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/limits"
	"github.com/agentplane/agentplane/shared/outbox"
)

// workflowEvents are the events of workflows, about the workflow.
var workflowEvents = outbox.Declare[Workflow](outbox.WorkflowCreated, outbox.WorkflowUpdated, outbox.WorkflowDeleted)

// Resource names workflows in outbox references.
const Resource = "workflow"

// Bounds of a workflow's own fields.
const (
	MaxNameLength        = 200
	MaxDescriptionLength = 2000
	MaxStatusLength      = 50
	// MaxWorkflowBytes bounds the whole workflow as JSON, after an update's merge.
	MaxWorkflowBytes = 256 << 10
)

// Workflow is a stored workflow definition of an agent.
type Workflow struct {
	UUID        string `json:"uuid" bson:"_id"`
	ProjectID   string `json:"-" bson:"project_id"`
	BotID       string `json:"-" bson:"bot_id"`
	Name        string `json:"name" bson:"name"`
	Description string `json:"description" bson:"description"`
	Status      string `json:"status" bson:"status"`
	IsActive    bool   `json:"is_active" bson:"is_active"`
	Definition  `bson:",inline"`
	CreatedAt   time.Time `json:"-" bson:"created_at"`
	UpdatedAt   time.Time `json:"-" bson:"updated_at"`
	Rev         int64     `json:"-" bson:"rev"`
	// Revision names the workflow's form as it is: each write of it gives a new one, and the
	// form is kept under it for its agent's versions (see Set).
	Revision string `json:"-" bson:"revision"`
}

// Input is the body of a workflow's creation or update: fields absent or null keep their value
// (or default on creation).
type Input struct {
	Name          *string         `json:"name"`
	Description   *string         `json:"description"`
	Status        *string         `json:"status"`
	IsActive      *bool           `json:"is_active"`
	TriggerType   *string         `json:"trigger_type"`
	TriggerEvent  *string         `json:"trigger_event"`
	TriggerConfig *map[string]any `json:"trigger_config"`
	Conditions    *[]Condition    `json:"conditions"`
	Actions       *[]Action       `json:"actions"`
}

func (in Input) apply(w *Workflow) {
	for dst, src := range map[*string]*string{&w.Name: in.Name, &w.Description: in.Description, &w.Status: in.Status,
		&w.TriggerType: in.TriggerType, &w.TriggerEvent: in.TriggerEvent} {
		if src != nil {
			*dst = strings.TrimSpace(*src)
		}
	}
	if in.IsActive != nil {
		w.IsActive = *in.IsActive
	}
	if in.TriggerConfig != nil {
		w.TriggerConfig = *in.TriggerConfig
	}
	if in.Conditions != nil {
		w.Conditions = *in.Conditions
	}
	if in.Actions != nil {
		w.Actions = *in.Actions
	}
}

// validate checks w; prev, when w is an update, is the stored workflow w replaces.
func (w *Workflow) validate(prev *Workflow) error {
	var p apperr.Problems
	switch {
	case w.Name == "":
		p.Add("name", "is required")
	case utf8.RuneCountInString(w.Name) > MaxNameLength:
		p.Add("name", "must be at most %d characters", MaxNameLength)
	}
	if utf8.RuneCountInString(w.Description) > MaxDescriptionLength {
		p.Add("description", "must be at most %d characters", MaxDescriptionLength)
	}
	if utf8.RuneCountInString(w.Status) > MaxStatusLength {
		p.Add("status", "must be at most %d characters", MaxStatusLength)
	}
	var err error
	if prev == nil {
		err = w.Definition.Validate(outbox.Types)
	} else {
		err = w.Definition.ValidateUpdate(prev.Definition, outbox.Types)
	}
	if err != nil {
		p = append(p, apperr.As(err).Details...)
	}
	if err := p.Err(); err != nil {
		return err
	}
	return limits.Document(Resource, w, MaxWorkflowBytes)
}

// Repo persists workflows; lookups exclude deleted ones.
type Repo interface {
	Insert(ctx context.Context, w Workflow, ev outbox.Event) error
	Get(ctx context.Context, projectID, botID, id string) (Workflow, error)
	List(ctx context.Context, projectID, botID string, page paging.Page) ([]Workflow, int, error)
	// Replace writes w over the stored workflow of revision w.Rev-1 (Conflict otherwise).
	Replace(ctx context.Context, w Workflow, ev outbox.Event) error
	Delete(ctx context.Context, w Workflow, at time.Time, ev outbox.Event) error
	// Triggered lists the active workflows of the agent triggered by events of type eventType.
	Triggered(ctx context.Context, projectID, botID, eventType string) ([]Workflow, error)
	// Scheduled lists every active schedule workflow.
	Scheduled(ctx context.Context) ([]Workflow, error)
	// All lists every workflow of the agent, oldest first.
	All(ctx context.Context, projectID, botID string) ([]Workflow, error)
	// Restore writes w whole as the workflow of its id (made again when it was deleted), with ev
	// in its outbox, its Rev past the one it replaces.
	Restore(ctx context.Context, w Workflow, ev outbox.Event) error
	// KeepRevisions keeps each workflow's form under its revision; one kept already is left.
	KeepRevisions(ctx context.Context, ws ...Workflow) error
	// Revision returns the form of the agent's workflow the revision names: NotFound when none.
	Revision(ctx context.Context, projectID, botID, revision string) (Workflow, error)
}

// Service holds the workflow definition rules.
type Service struct {
	repo   Repo
	events *outbox.Dispatcher
	now    func() time.Time
	writes keylock.Locks // workflow updates of this process, one at a time per workflow
}

// NewService returns the workflow service.
func NewService(repo Repo, events *outbox.Dispatcher) *Service {
	return &Service{repo: repo, events: events, now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Create stores a new workflow of the agent. It is active unless is_active says otherwise; its
// status defaults to "active" or "inactive" accordingly.
func (s *Service) Create(ctx context.Context, projectID, botID string, in Input) (Workflow, error) {
	now := s.now()
	w := Workflow{UUID: ids.New(), ProjectID: projectID, BotID: botID, IsActive: true, CreatedAt: now, UpdatedAt: now, Revision: ids.New()}
	in.apply(&w)
	if w.Status == "" {
		w.Status = map[bool]string{true: "active", false: "inactive"}[w.IsActive]
	}
	if err := w.validate(nil); err != nil {
		return Workflow{}, err
	}
	ev := workflowEvents.New(ctx, outbox.WorkflowCreated, projectID, botID, w)
	if err := s.repo.Insert(ctx, w, ev); err != nil {
		return Workflow{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: w.UUID}, ev)
	return w, nil
}

// Get returns one workflow of the agent.
func (s *Service) Get(ctx context.Context, projectID, botID, id string) (Workflow, error) {
	if id = strings.TrimSpace(id); id == "" {
		return Workflow{}, apperr.Invalidf("workflow_id", "is required")
	}
	return s.repo.Get(ctx, projectID, botID, id)
}

// List returns one page of the agent's workflows.
func (s *Service) List(ctx context.Context, projectID, botID string, page paging.Page) ([]Workflow, int, error) {
	return s.repo.List(ctx, projectID, botID, page)
}

// Update applies in to the workflow id; the next event sees the change. When another request
// changed the workflow first, in is applied again to what it left.
func (s *Service) Update(ctx context.Context, projectID, botID, id string, in Input) (Workflow, error) {
	return apperr.Reapply(ctx, &s.writes, Resource, id, func() (Workflow, error) { return s.update(ctx, projectID, botID, id, in) })
}

func (s *Service) update(ctx context.Context, projectID, botID, id string, in Input) (Workflow, error) {
	cur, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return Workflow{}, err
	}
	next := cur
	in.apply(&next)
	if err := next.validate(&cur); err != nil {
		return Workflow{}, err
	}
	next.UpdatedAt, next.Rev, next.Revision = s.now(), cur.Rev+1, ids.New()
	ev := workflowEvents.New(ctx, outbox.WorkflowUpdated, projectID, botID, next)
	if err := s.repo.Replace(ctx, next, ev); err != nil {
		return Workflow{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: next.UUID}, ev)
	return next, nil
}

// Delete tombstones a workflow: it never triggers again.
func (s *Service) Delete(ctx context.Context, projectID, botID, id string) error {
	w, err := s.Get(ctx, projectID, botID, id)
	if err != nil {
		return err
	}
	return s.remove(ctx, w)
}

// remove tombstones w with its event.
func (s *Service) remove(ctx context.Context, w Workflow) error {
	ev := workflowEvents.New(ctx, outbox.WorkflowDeleted, w.ProjectID, w.BotID, w)
	if err := s.repo.Delete(ctx, w, s.now(), ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: w.UUID}, ev)
	return nil
}
