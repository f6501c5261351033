package crm

import (
	"context"
	"strings"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// ContactStatus is a step of a contact's relation with the project: a new contact gets the
// default one.
type ContactStatus struct {
	UUID      string `json:"uuid" bson:"uuid"`
	Key       string `json:"key" bson:"key"`
	Label     string `json:"label" bson:"label"`
	Colour    string `json:"colour" bson:"colour"`
	Order     int    `json:"order" bson:"order"`
	IsDefault bool   `json:"is_default" bson:"is_default"`
}

// StatusSet is a project's contact statuses, in order. A project whose statuses were never
// written has the defaults (Rev 0); each write of them is the next revision.
type StatusSet struct {
	ProjectID string          `bson:"_id"`
	Statuses  []ContactStatus `bson:"statuses"`
	Rev       int             `bson:"rev"`
}

// defaultStatuses are the contact statuses every project starts with, in order.
var defaultStatuses = []TemplateStatus{
	{Key: "lead", Label: "Lead", Colour: "#3B82F6"},
	{Key: "contacted", Label: "Contacted", Colour: "#F59E0B"},
	{Key: "qualified", Label: "Qualified", Colour: "#8B5CF6"},
	{Key: "customer", Label: "Customer", Colour: "#10B981"},
	{Key: "churned", Label: "Churned", Colour: "#6B7280"},
}

// statusID is the id of the project's status of key, the same whoever makes it.
func statusID(projectID, key string) string {
	return uuid.NewSHA1(stageNamespace, []byte(projectID+"/contact-status/"+key)).String()
}

// DefaultStatuses lists the statuses of a project whose statuses were never written.
func DefaultStatuses(projectID string) []ContactStatus {
	out := make([]ContactStatus, len(defaultStatuses))
	for i, ts := range defaultStatuses {
		out[i] = ContactStatus{UUID: statusID(projectID, ts.Key), Key: ts.Key, Label: ts.Label, Colour: ts.Colour, Order: i + 1, IsDefault: i == 0}
	}
	return out
}

// ContactStatuses lists the project's contact statuses in order.
func (s *Service) ContactStatuses(ctx context.Context, projectID string) ([]ContactStatus, error) {
	set, err := s.repo.ContactStatuses(ctx, projectID)
	return set.Statuses, err
}

// statusOf returns the status a contact input names among all, by status_id, else status_key,
// else status (a key, a label or an id); found is false when it names none.
func statusOf(all []ContactStatus, in *ContactInput, prefix string) (st ContactStatus, found bool, err error) {
	field, ref := statusRef(in)
	if ref == "" {
		return ContactStatus{}, false, nil
	}
	keys := make([]string, len(all))
	for i, st := range all {
		keys[i] = st.Key
		if (field != "status_key" && st.UUID == ref) || (field != "status_id" && (strings.EqualFold(st.Key, ref) || strings.EqualFold(st.Label, ref))) {
			return st, true, nil
		}
	}
	if field == "status_id" {
		return ContactStatus{}, false, apperr.Invalidf(prefix+field, "must be the uuid of one of the project's contact statuses (GET /v1/bot/crm/contacts/statuses)")
	}
	return ContactStatus{}, false, apperr.Invalidf(prefix+field, "must be one of the project's contact statuses: %s", strings.Join(keys, ", "))
}

// statusRef returns the field that names the input's status, and what it holds ("" for none).
func statusRef(in *ContactInput) (field, ref string) {
	for _, c := range []struct {
		name string
		v    *string
	}{{"status_id", in.StatusID}, {"status_key", in.StatusKey}, {"status", in.Status}} {
		if v := trimmed(c.v); v != "" {
			return c.name, v
		}
	}
	return "", ""
}

// defaultStatus is the status of new contacts among all.
func defaultStatus(all []ContactStatus) ContactStatus {
	for _, st := range all {
		if st.IsDefault {
			return st
		}
	}
	return all[0]
}
