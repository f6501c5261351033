package crm

import (
	"strings"

	"github.com/google/uuid"

	"github.com/agentplane/agentplane/shared/kit/apperr"
)

// ContactStatus is a step of a contact's relation with the project: a new contact is a lead.
type ContactStatus struct {
	UUID      string `json:"uuid"`
	Key       string `json:"key"`
	Label     string `json:"label"`
	Colour    string `json:"colour"`
	Order     int    `json:"order"`
	IsDefault bool   `json:"is_default"`
}

// defaultStatuses are the contact statuses every project has, in order.
var defaultStatuses = []ContactStatus{
	{Key: "lead", Label: "Lead", Colour: "#3B82F6", IsDefault: true},
	{Key: "contacted", Label: "Contacted", Colour: "#F59E0B"},
	{Key: "qualified", Label: "Qualified", Colour: "#8B5CF6"},
	{Key: "customer", Label: "Customer", Colour: "#10B981"},
	{Key: "churned", Label: "Churned", Colour: "#6B7280"},
}

// ContactStatuses lists the project's contact statuses in order; their ids are the project's.
func ContactStatuses(projectID string) []ContactStatus {
	out := make([]ContactStatus, len(defaultStatuses))
	for i, st := range defaultStatuses {
		st.UUID = uuid.NewSHA1(stageNamespace, []byte(projectID+"/contact-status/"+st.Key)).String()
		st.Order = i + 1
		out[i] = st
	}
	return out
}

// statusOf returns the status a contact input names, by status_id, else status_key, else status
// (a key, a label or an id); found is false when it names none.
func statusOf(projectID string, in *ContactInput, prefix string) (st ContactStatus, found bool, err error) {
	field, ref := "", ""
	for _, c := range []struct {
		name string
		v    *string
	}{{"status_id", in.StatusID}, {"status_key", in.StatusKey}, {"status", in.Status}} {
		if v := trimmed(c.v); v != "" {
			field, ref = c.name, v
			break
		}
	}
	if ref == "" {
		return ContactStatus{}, false, nil
	}
	all := ContactStatuses(projectID)
	keys := make([]string, len(all))
	for i, st := range all {
		keys[i] = st.Key
		if (field != "status_key" && st.UUID == ref) || (field != "status_id" && (strings.EqualFold(st.Key, ref) || strings.EqualFold(st.Label, ref))) {
			return st, true, nil
		}
	}
	if field == "status_id" {
		return ContactStatus{}, false, apperr.Invalidf(prefix+field, "must be the uuid of a contact status (GET /v1/bot/crm/contacts/statuses)")
	}
	return ContactStatus{}, false, apperr.Invalidf(prefix+field, "must be one of %s", strings.Join(keys, ", "))
}
