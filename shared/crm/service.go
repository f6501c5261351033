package crm

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/kit/ids"
	"github.com/agentplane/agentplane/shared/kit/keylock"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// dealEvents are the events of deals, about the deal (EventData).
var dealEvents = outbox.Declare[EventData](outbox.DealCreated, outbox.DealUpdated, outbox.DealStageChanged, outbox.DealWon, outbox.DealLost, outbox.DealDeleted)

// Resource names deals in outbox references; ContactResource contacts, PipelineResource
// pipelines and StageResource stages.
const (
	Resource         = "deal"
	ContactResource  = "contact"
	PipelineResource = "pipeline"
	StageResource    = "stage"
)

// Service holds the CRM rules.
type Service struct {
	repo     Repo
	events   *outbox.Dispatcher
	currency string
	now      func() time.Time
	writes   keylock.Locks // deal updates of this process, one at a time per deal
}

// NewService returns the CRM service; currency is the default of new deals.
func NewService(repo Repo, events *outbox.Dispatcher, currency string) *Service {
	return &Service{repo: repo, events: events, currency: currency,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Stages returns the project's pipeline, creating the default one on first use.
func (s *Service) Stages(ctx context.Context, projectID string) ([]Stage, error) {
	stages, err := s.repo.EnsureStages(ctx, defaultStages(projectID))
	for i := range stages {
		if stages[i].PipelineID == "" {
			stages[i].PipelineID = DefaultPipelineID(projectID)
		}
	}
	return stages, err
}

// CreateDeal creates a deal of the agent botID.
func (s *Service) CreateDeal(ctx context.Context, projectID, botID string, in DealInput) (View, error) {
	return s.createDeal(ctx, projectID, botID, in, ids.New())
}

// opNamespace derives the id of a deal created under an idempotency key.
var opNamespace = uuid.MustParse("3c9d7e1a-2b4f-4a6c-8d0e-5f7a9b1c3d2e")

// CreateDealOnce creates a deal once per idempotency key: called again with the same key (a
// step redone after a crash) it returns the deal the first call created.
func (s *Service) CreateDealOnce(ctx context.Context, projectID, botID string, in DealInput, key string) (View, error) {
	id := uuid.NewSHA1(opNamespace, []byte(projectID+"/"+key)).String()
	v, err := s.createDeal(ctx, projectID, botID, in, id)
	if apperr.As(err).Kind == apperr.Conflict {
		return s.Deal(ctx, projectID, botID, id)
	}
	return v, err
}

func (s *Service) createDeal(ctx context.Context, projectID, botID string, in DealInput, id string) (View, error) {
	if err := in.check(true); err != nil {
		return View{}, err
	}
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return View{}, err
	}
	now := s.now()
	d := Deal{UUID: id, ProjectID: projectID, BotID: botID, Title: *in.Title,
		Currency: s.currency, Status: StatusOpen, CreatedAt: now, UpdatedAt: now}
	if in.Currency != nil {
		d.Currency = *in.Currency
	}
	d.Value = int64(in.Value.Value)
	pid := DefaultPipelineID(projectID)
	if in.PipelineID != nil {
		pid = *in.PipelineID
	}
	if err := place(&d, pipelineFor(stages, pid, in.Stage), in, true); err != nil {
		return View{}, err
	}
	d.Visits = visited(nil, d.StageID, now)
	if d.Fields, err = s.withFields(ctx, projectID, EntityDeal, nil, in.Fields, true, ""); err != nil {
		return View{}, err
	}
	contact, err := s.contactFor(ctx, projectID, botID, Contact{}, in.Contact, "contact.")
	if err != nil {
		return View{}, err
	}
	d.ContactID = contact.UUID
	view := View{UUID: d.UUID, Title: d.Title, Currency: d.Currency, Value: d.Value, Contact: contact, Stage: pipeline(stages).byID(d.StageID), Fields: d.Fields}
	ev := dealEvents.New(ctx, outbox.DealCreated, projectID, botID, EventData{View: view, Status: d.Status})
	if err := s.repo.InsertDeal(ctx, d, ev); err != nil {
		return View{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: d.UUID}, ev)
	return view, nil
}

// place sets the deal's status and stage in the pipeline p from the input, keeping them
// consistent: a won or lost status moves the deal to the closed stage of that outcome, a closed
// stage sets the status, and reopening a closed deal puts it in the first open stage. A new
// deal, or one moved to p (anew), goes to the first stage of its status.
func place(d *Deal, p pipeline, in DealInput, anew bool) error {
	status := d.Status
	if in.Status != nil {
		status = *in.Status
	}
	switch {
	case in.Stage != nil:
		st, ok := p.find(*in.Stage)
		if !ok {
			return apperr.Invalidf("stage", "must be the name or uuid of a stage of the pipeline (%s)", p.names())
		}
		if in.Status != nil && st.Outcome != status {
			return apperr.Invalidf("status", "%s contradicts stage %s (a deal in %s is %s)", status, st.Name, st.Name, st.Outcome)
		}
		d.StageID, d.Status = st.UUID, st.Outcome
	case anew || status != d.Status:
		st := p.first(status)
		if st.UUID == "" {
			return apperr.Invalidf("pipeline_id", "must be a pipeline of the project with a stage for %s deals", status)
		}
		d.StageID, d.Status = st.UUID, status
	}
	return nil
}

// contactFor returns the deal's contact after applying in: the stored contact of the same email
// in the project when there is one, else cur updated, else a new contact. Contact changes emit
// contact.created or contact.updated for the agent botID. Problems are named after prefix.
func (s *Service) contactFor(ctx context.Context, projectID, botID string, cur Contact, in *ContactInput, prefix string) (Contact, error) {
	if in.empty() {
		if cur.UUID == "" {
			return Contact{Fields: map[string]any{}}, nil
		}
		return cur, nil
	}
	now := s.now().Format(time.RFC3339Nano)
	email := trimmed(in.Email)
	fresh := func(id string) (Contact, error) {
		c := Contact{UUID: id, ProjectID: projectID, Email: email, CreatedAt: now, UpdatedAt: now, Fields: map[string]any{}}
		applyContact(&c, in)
		_, err := s.applyExtras(ctx, &c, in, true, prefix)
		return c, err
	}
	switch {
	case email != "" && email != cur.Email:
		c, err := fresh(uuid.NewSHA1(stageNamespace, []byte(projectID+"/contact/"+email)).String())
		if err != nil {
			return Contact{}, err
		}
		stored, created, err := s.insertContact(ctx, botID, c)
		if err != nil || created {
			return stored, err
		}
		cur = stored
	case cur.UUID == "":
		c, err := fresh(ids.New())
		if err != nil {
			return Contact{}, err
		}
		stored, _, err := s.insertContact(ctx, botID, c)
		return stored, err
	}
	changed := applyContact(&cur, in)
	more, err := s.applyExtras(ctx, &cur, in, false, prefix)
	if err != nil {
		return Contact{}, err
	}
	if changed || more {
		cur.UpdatedAt = now
		if err := s.saveContact(ctx, botID, cur); err != nil {
			return Contact{}, err
		}
	}
	return cur, nil
}

// applyContact sets the name, phone and company in carries on c, reporting a change.
func applyContact(c *Contact, in *ContactInput) bool {
	changed := false
	for dst, src := range map[*string]*string{&c.Name: in.Name, &c.Phone: in.Phone, &c.Company: in.Company} {
		if v := trimmed(src); v != "" && v != *dst {
			*dst, changed = v, true
		}
	}
	return changed
}

// insertContact stores a new contact with contact.created; created is false (and the stored
// contact returned) when its id exists already.
func (s *Service) insertContact(ctx context.Context, botID string, c Contact) (Contact, bool, error) {
	ev := contactEvents.New(ctx, outbox.ContactCreated, c.ProjectID, botID, c)
	stored, created, err := s.repo.InsertContact(ctx, c, ev)
	if created {
		s.events.Dispatch(ctx, outbox.Ref{Resource: ContactResource, ID: c.UUID}, ev)
	}
	return stored, created, err
}

// saveContact writes c over the stored contact with contact.updated.
func (s *Service) saveContact(ctx context.Context, botID string, c Contact) error {
	ev := contactEvents.New(ctx, outbox.ContactUpdated, c.ProjectID, botID, c)
	if err := s.repo.UpdateContact(ctx, c, ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: ContactResource, ID: c.UUID}, ev)
	return nil
}

// UpdateDeal applies in to the deal dealID of the agent botID.
func (s *Service) UpdateDeal(ctx context.Context, projectID, botID, dealID string, in DealInput) (View, error) {
	return s.UpdateDealOnce(ctx, projectID, botID, dealID, in, "")
}

// maxOps is how many idempotency keys of recent updates a deal remembers.
const maxOps = 16

// UpdateDealOnce applies in once per idempotency key (none when key is empty): when the deal
// already took an update of that key, it is returned as it is, with no new event. When another
// request changed the deal first, the update is applied again to what it left.
func (s *Service) UpdateDealOnce(ctx context.Context, projectID, botID, dealID string, in DealInput, key string) (View, error) {
	if err := in.check(false); err != nil {
		return View{}, err
	}
	return apperr.Reapply(ctx, &s.writes, Resource, dealID, func() (View, error) { return s.updateDeal(ctx, projectID, botID, dealID, in, key) })
}

func (s *Service) updateDeal(ctx context.Context, projectID, botID, dealID string, in DealInput, key string) (View, error) {
	cur, err := s.repo.Deal(ctx, projectID, botID, dealID)
	if err != nil {
		return View{}, err
	}
	if key != "" && slices.Contains(cur.Ops, key) {
		return s.Deal(ctx, projectID, botID, dealID)
	}
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return View{}, err
	}
	next := cur
	if in.Title != nil {
		next.Title = *in.Title
	}
	if in.Currency != nil {
		next.Currency = *in.Currency
	}
	if in.Value.Set {
		next.Value = int64(in.Value.Value)
	}
	pid := pipeline(stages).byID(cur.StageID).PipelineID
	moved := in.PipelineID != nil && *in.PipelineID != pid
	if moved {
		pid = *in.PipelineID
	}
	if err := place(&next, pipelineFor(stages, pid, in.Stage), in, moved); err != nil {
		return View{}, err
	}
	if next.Fields, err = s.withFields(ctx, projectID, EntityDeal, cur.Fields, in.Fields, false, ""); err != nil {
		return View{}, err
	}
	contact, err := s.storedContact(ctx, projectID, cur.ContactID)
	if err != nil {
		return View{}, err
	}
	if contact, err = s.contactFor(ctx, projectID, botID, contact, in.Contact, "contact."); err != nil {
		return View{}, err
	}
	next.ContactID = contact.UUID
	next.UpdatedAt = s.now()
	if next.StageID != cur.StageID {
		next.Visits = visited(cur.Visits, next.StageID, next.UpdatedAt)
	}
	next.Rev = cur.Rev + 1
	if key != "" {
		next.Ops = append(slices.Clone(cur.Ops[max(len(cur.Ops)-maxOps+1, 0):]), key)
	}
	view := View{UUID: next.UUID, Title: next.Title, Currency: next.Currency, Value: next.Value, Contact: contact, Stage: pipeline(stages).byID(next.StageID), Fields: fieldsOf(next)}
	data := EventData{View: view, Status: next.Status}
	typ := outbox.DealUpdated
	switch {
	case next.Status != cur.Status && next.Status == StatusWon:
		typ = outbox.DealWon
	case next.Status != cur.Status && next.Status == StatusLost:
		typ = outbox.DealLost
	case next.StageID != cur.StageID:
		typ = outbox.DealStageChanged
	}
	if next.StageID != cur.StageID {
		prev := pipeline(stages).byID(cur.StageID)
		data.PreviousStage = &prev
	}
	ev := dealEvents.New(ctx, typ, projectID, botID, data)
	if err := s.repo.ReplaceDeal(ctx, next, ev); err != nil {
		return View{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: next.UUID}, ev)
	return view, nil
}

// fieldsOf is d's custom fields, an empty object when it has none.
func fieldsOf(d Deal) freeform.Object {
	if d.Fields == nil {
		return freeform.Object{}
	}
	return d.Fields
}

func (s *Service) storedContact(ctx context.Context, projectID, id string) (Contact, error) {
	if id == "" {
		return Contact{Fields: map[string]any{}}, nil
	}
	return s.repo.Contact(ctx, projectID, id)
}

// Deal returns one deal of the agent.
func (s *Service) Deal(ctx context.Context, projectID, botID, dealID string) (View, error) {
	d, err := s.repo.Deal(ctx, projectID, botID, strings.TrimSpace(dealID))
	if err != nil {
		return View{}, err
	}
	views, err := s.views(ctx, projectID, []Deal{d})
	if err != nil {
		return View{}, err
	}
	return views[0], nil
}

// Deals lists the agent's deals, filtered by status and stage (name or uuid).
func (s *Service) Deals(ctx context.Context, projectID, botID string, q DealQuery, page paging.Page) ([]View, int, error) {
	f := DealFilter{ProjectID: projectID, BotID: botID, Status: strings.ToLower(strings.TrimSpace(q.Status))}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, 0, apperr.Invalidf("status", "must be one of open, won, lost")
	}
	stage := q.Stage
	if pid := strings.TrimSpace(q.PipelineID); pid != "" {
		stages, err := s.Stages(ctx, projectID)
		if err != nil {
			return nil, 0, err
		}
		for _, st := range stages {
			if st.PipelineID == pid {
				f.StageIDs = append(f.StageIDs, st.UUID)
			}
		}
		if len(f.StageIDs) == 0 {
			return nil, 0, apperr.NotFoundf("pipeline")
		}
	}
	if stage = strings.TrimSpace(stage); stage != "" {
		stages, err := s.Stages(ctx, projectID)
		if err != nil {
			return nil, 0, err
		}
		st, ok := pipeline(stages).find(stage)
		if !ok {
			return nil, 0, apperr.Invalidf("stage", "must be the name or uuid of a stage of the pipeline (%s)", pipeline(stages).names())
		}
		if len(f.StageIDs) > 0 && !slices.Contains(f.StageIDs, st.UUID) {
			return []View{}, 0, nil
		}
		f.StageIDs = []string{st.UUID}
	}
	deals, total, err := s.repo.Deals(ctx, f, page)
	if err != nil {
		return nil, 0, err
	}
	views, err := s.views(ctx, projectID, deals)
	return views, total, err
}

// views joins deals with their contacts and stages.
func (s *Service) views(ctx context.Context, projectID string, deals []Deal) ([]View, error) {
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return nil, err
	}
	contacts := map[string]Contact{}
	views := make([]View, 0, len(deals))
	for _, d := range deals {
		c, ok := contacts[d.ContactID]
		if !ok {
			if c, err = s.storedContact(ctx, projectID, d.ContactID); err != nil {
				return nil, err
			}
			contacts[d.ContactID] = c
		}
		views = append(views, View{UUID: d.UUID, Title: d.Title, Currency: d.Currency, Value: d.Value, Contact: c, Stage: pipeline(stages).byID(d.StageID), Fields: fieldsOf(d)})
	}
	return views, nil
}

// DeleteDeal tombstones a deal.
func (s *Service) DeleteDeal(ctx context.Context, projectID, botID, dealID string) error {
	d, err := s.repo.Deal(ctx, projectID, botID, strings.TrimSpace(dealID))
	if err != nil {
		return err
	}
	views, err := s.views(ctx, projectID, []Deal{d})
	if err != nil {
		return err
	}
	ev := dealEvents.New(ctx, outbox.DealDeleted, projectID, botID, EventData{View: views[0], Status: d.Status})
	if err := s.repo.DeleteDeal(ctx, d, s.now(), ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: d.UUID}, ev)
	return nil
}

// Contact returns one contact of the project.
func (s *Service) Contact(ctx context.Context, projectID, id string) (Contact, error) {
	return s.repo.Contact(ctx, projectID, strings.TrimSpace(id))
}

// Contacts lists the project's contacts.
func (s *Service) Contacts(ctx context.Context, projectID string, page paging.Page) ([]Contact, int, error) {
	return s.repo.Contacts(ctx, projectID, page)
}
