package crm

import (
	"context"
	"reflect"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/paging"
	"github.com/agentplane/agentplane/shared/outbox"
)

// contactEvents are the events of contacts, about the contact.
var contactEvents = outbox.Declare[Contact](outbox.ContactCreated, outbox.ContactUpdated, outbox.ContactDeleted)

// MaxQueryLength bounds a contact search.
const MaxQueryLength = 200

// CreateContact adds a contact to the project. A contact with the same email is the same
// contact: it is updated with what in carries and returned.
func (s *Service) CreateContact(ctx context.Context, projectID, botID string, in ContactInput) (Contact, error) {
	var p apperr.Problems
	in.check(&p, "")
	if in.empty() {
		p.Add("name", "or email, phone or company is required")
	}
	if err := p.Err(); err != nil {
		return Contact{}, err
	}
	return s.contactFor(ctx, projectID, botID, Contact{}, &in, "")
}

// UpdateContact applies in to a contact of the project.
func (s *Service) UpdateContact(ctx context.Context, projectID, botID, id string, in ContactInput) (Contact, error) {
	var p apperr.Problems
	in.check(&p, "")
	if err := p.Err(); err != nil {
		return Contact{}, err
	}
	c, err := s.repo.Contact(ctx, projectID, strings.TrimSpace(id))
	if err != nil {
		return Contact{}, err
	}
	changed := false
	for dst, src := range map[*string]*string{&c.Name: in.Name, &c.Phone: in.Phone, &c.Company: in.Company, &c.Email: in.Email} {
		if src != nil && *src != *dst {
			*dst, changed = *src, true
		}
	}
	more, err := s.applyExtras(ctx, &c, &in, false, "")
	if err != nil {
		return Contact{}, err
	}
	if changed || more {
		c.UpdatedAt = s.now().Format(time.RFC3339Nano)
		if err := s.saveContact(ctx, botID, c); err != nil {
			return Contact{}, err
		}
	}
	return c, nil
}

// DeleteContact removes a contact of the project, with contact.deleted. The deals made with it
// stay, without a contact: each first gets deal.updated with the contact in contact_removed.
func (s *Service) DeleteContact(ctx context.Context, projectID, botID, id string) error {
	c, err := s.repo.Contact(ctx, projectID, strings.TrimSpace(id))
	if err != nil {
		return err
	}
	first, err := paging.New(1, 100)
	if err != nil {
		return err
	}
	for {
		deals, _, err := s.repo.Deals(ctx, DealFilter{ProjectID: projectID, ContactID: c.UUID}, first)
		if err != nil {
			return err
		}
		if len(deals) == 0 {
			break
		}
		for _, d := range deals {
			if _, err := apperr.Reapply(ctx, &s.writes, Resource, d.UUID, func() (struct{}, error) { return struct{}{}, s.detach(ctx, d, c) }); err != nil {
				return err
			}
		}
	}
	ev := contactEvents.New(ctx, outbox.ContactDeleted, projectID, botID, c)
	return s.deleted(ctx, ev, func() (outbox.Ref, error) { return s.repo.DeleteContact(ctx, c, ev) })
}

// detach removes the contact c from the deal d (read again: it may have changed since), with
// deal.updated for the deal's agent.
func (s *Service) detach(ctx context.Context, d Deal, c Contact) error {
	cur, err := s.repo.Deal(ctx, d.ProjectID, d.BotID, d.UUID)
	if apperr.IsNotFound(err) {
		return nil
	}
	if err != nil || cur.ContactID != c.UUID {
		return err
	}
	stages, err := s.Stages(ctx, d.ProjectID)
	if err != nil {
		return err
	}
	next := cur
	next.ContactID, next.UpdatedAt, next.Rev = "", s.now(), cur.Rev+1
	view := View{UUID: next.UUID, Title: next.Title, Currency: next.Currency, Value: next.Value, Contact: Contact{Fields: map[string]any{}},
		Stage: pipeline(stages).byID(next.StageID), Fields: fieldsOf(next)}
	ev := dealEvents.New(ctx, outbox.DealUpdated, d.ProjectID, d.BotID, EventData{View: view, Status: next.Status, ContactRemoved: &c})
	if err := s.repo.ReplaceDeal(ctx, next, ev); err != nil {
		return err
	}
	s.events.Dispatch(ctx, outbox.Ref{Resource: Resource, ID: next.UUID}, ev)
	return nil
}

// applyExtras sets the status and the custom fields' values in carries on c (a new contact when
// creating: without a status it gets the project's default one), reporting a change. The
// project's statuses are read only when a status is named or a contact made.
func (s *Service) applyExtras(ctx context.Context, c *Contact, in *ContactInput, creating bool, prefix string) (bool, error) {
	changed := false
	if _, ref := statusRef(in); ref != "" || creating {
		all, err := s.ContactStatuses(ctx, c.ProjectID)
		if err != nil {
			return false, err
		}
		st, found, err := statusOf(all, in, prefix)
		if err != nil {
			return false, err
		}
		if !found && creating {
			st, found = defaultStatus(all), true
		}
		if found && (st.Key != c.Status || st.Label != c.StatusLabel) {
			c.Status, c.StatusLabel, changed = st.Key, st.Label, true
		}
	}
	fields, err := s.withFields(ctx, c.ProjectID, EntityContact, c.Fields, in.Fields, creating, prefix)
	if err != nil {
		return false, err
	}
	if !reflect.DeepEqual(fields, c.Fields) {
		c.Fields, changed = fields, true
	}
	return changed, nil
}

// SearchContacts lists the project's contacts whose name, email, phone or company contains
// query (ignoring case).
func (s *Service) SearchContacts(ctx context.Context, projectID, query string, page paging.Page) ([]Contact, int, error) {
	query = strings.TrimSpace(query)
	if query == "" || utf8.RuneCountInString(query) > MaxQueryLength {
		return nil, 0, apperr.Invalidf("query", "is required, at most %d characters", MaxQueryLength)
	}
	return s.repo.SearchContacts(ctx, projectID, query, page)
}
