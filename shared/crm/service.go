package crm

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/apperr"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/paging"
)

// Resource names deals in outbox references.
const Resource = "deal"

// Service holds the CRM rules.
type Service struct {
	repo     Repo
	events   *outbox.Dispatcher
	currency string
	now      func() time.Time
}

// NewService returns the CRM service; currency is the default of new deals.
func NewService(repo Repo, events *outbox.Dispatcher, currency string) *Service {
	return &Service{repo: repo, events: events, currency: currency,
		now: func() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }}
}

// Stages returns the project's pipeline, creating the default one on first use.
func (s *Service) Stages(ctx context.Context, projectID string) ([]Stage, error) {
	return s.repo.EnsureStages(ctx, defaultStages(projectID))
}

// CreateDeal creates a deal of the agent botID.
func (s *Service) CreateDeal(ctx context.Context, projectID, botID string, in DealInput) (View, error) {
	if err := in.check(true); err != nil {
		return View{}, err
	}
	stages, err := s.Stages(ctx, projectID)
	if err != nil {
		return View{}, err
	}
	now := s.now()
	d := Deal{UUID: uuid.Must(uuid.NewV7()).String(), ProjectID: projectID, BotID: botID, Title: *in.Title,
		Currency: s.currency, Status: StatusOpen, CreatedAt: now, UpdatedAt: now}
	if in.Currency != nil {
		d.Currency = *in.Currency
	}
	d.Value = int64(in.Value.Value)
	if err := place(&d, pipeline(stages), in, true); err != nil {
		return View{}, err
	}
	contact, err := s.contactFor(ctx, projectID, Contact{}, in.Contact)
	if err != nil {
		return View{}, err
	}
	d.ContactID = contact.UUID
	view := View{UUID: d.UUID, Title: d.Title, Currency: d.Currency, Value: d.Value, Contact: contact, Stage: pipeline(stages).byID(d.StageID)}
	ev := outbox.New(outbox.DealCreated, projectID, botID, EventData{View: view, Status: d.Status})
	if err := s.repo.InsertDeal(ctx, d, ev); err != nil {
		return View{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: d.UUID}, ev)
	return view, nil
}

// place sets the deal's status and stage from the input, keeping them consistent: a won or lost
// status moves the deal to the closed stage of that outcome, a closed stage sets the status, and
// reopening a closed deal puts it in the first open stage.
func place(d *Deal, p pipeline, in DealInput, creating bool) error {
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
	case creating || status != d.Status:
		d.StageID, d.Status = p.first(status).UUID, status
	}
	return nil
}

// contactFor returns the deal's contact after applying in: the stored contact of the same email
// in the project when there is one, else cur updated, else a new contact.
func (s *Service) contactFor(ctx context.Context, projectID string, cur Contact, in *ContactInput) (Contact, error) {
	if in.empty() {
		if cur.UUID == "" {
			return Contact{Fields: map[string]any{}}, nil
		}
		return cur, nil
	}
	now := s.now().Format(time.RFC3339Nano)
	email := trimmed(in.Email)
	switch {
	case email != "" && email != cur.Email:
		c := Contact{UUID: uuid.NewSHA1(stageNamespace, []byte(projectID+"/contact/"+email)).String(), ProjectID: projectID,
			Email: email, Status: "lead", StatusLabel: "Lead", CreatedAt: now, UpdatedAt: now, Fields: map[string]any{}}
		stored, err := s.repo.InsertContact(ctx, c)
		if err != nil {
			return Contact{}, err
		}
		cur = stored
	case cur.UUID == "":
		cur = Contact{UUID: uuid.Must(uuid.NewV7()).String(), ProjectID: projectID, Status: "lead", StatusLabel: "Lead",
			CreatedAt: now, UpdatedAt: now, Fields: map[string]any{}}
		stored, err := s.repo.InsertContact(ctx, cur)
		if err != nil {
			return Contact{}, err
		}
		cur = stored
	}
	changed := false
	for dst, src := range map[*string]*string{&cur.Name: in.Name, &cur.Phone: in.Phone, &cur.Company: in.Company} {
		if v := trimmed(src); v != "" && v != *dst {
			*dst, changed = v, true
		}
	}
	if changed {
		cur.UpdatedAt = now
		if err := s.repo.UpdateContact(ctx, cur); err != nil {
			return Contact{}, err
		}
	}
	return cur, nil
}

// UpdateDeal applies in to the deal dealID of the agent botID.
func (s *Service) UpdateDeal(ctx context.Context, projectID, botID, dealID string, in DealInput) (View, error) {
	if err := in.check(false); err != nil {
		return View{}, err
	}
	cur, err := s.repo.Deal(ctx, projectID, botID, dealID)
	if err != nil {
		return View{}, err
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
	if err := place(&next, pipeline(stages), in, false); err != nil {
		return View{}, err
	}
	contact, err := s.storedContact(ctx, projectID, cur.ContactID)
	if err != nil {
		return View{}, err
	}
	if contact, err = s.contactFor(ctx, projectID, contact, in.Contact); err != nil {
		return View{}, err
	}
	next.ContactID = contact.UUID
	next.UpdatedAt = s.now()
	next.Rev = cur.Rev + 1
	view := View{UUID: next.UUID, Title: next.Title, Currency: next.Currency, Value: next.Value, Contact: contact, Stage: pipeline(stages).byID(next.StageID)}
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
	ev := outbox.New(typ, projectID, botID, data)
	if err := s.repo.ReplaceDeal(ctx, next, ev); err != nil {
		return View{}, err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: next.UUID}, ev)
	return view, nil
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
func (s *Service) Deals(ctx context.Context, projectID, botID, status, stage string, page paging.Page) ([]View, int, error) {
	f := DealFilter{ProjectID: projectID, BotID: botID, Status: strings.ToLower(strings.TrimSpace(status))}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, 0, apperr.Invalidf("status", "must be one of open, won, lost")
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
		f.StageID = st.UUID
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
		views = append(views, View{UUID: d.UUID, Title: d.Title, Currency: d.Currency, Value: d.Value, Contact: c, Stage: pipeline(stages).byID(d.StageID)})
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
	ev := outbox.New(outbox.DealDeleted, projectID, botID, EventData{View: views[0], Status: d.Status})
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
