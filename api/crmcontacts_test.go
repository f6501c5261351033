package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/agentplane/agentplane/shared/outbox"
)

// A contact with deals is deleted: its deals stay, without a contact, and each one's
// deal.updated names the contact removed.
func TestDeleteContactKeepsItsDeals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	var deals []string
	for _, title := range []string{"Pilot", "Renewal"} {
		d := c.ok(t, "POST", "/v1/bot/crm/deals", map[string]any{"title": title, "contact": map[string]any{"name": "Grace", "email": "grace@example.com"}})["deal"].(map[string]any)
		deals = append(deals, d["uuid"].(string))
	}
	other := c.ok(t, "POST", "/v1/bot/crm/deals", map[string]any{"title": "Other", "contact": map[string]any{"email": "ada@example.com"}})["deal"].(map[string]any)
	contactID := c.ok(t, "GET", "/v1/bot/crm/deals/"+deals[0], nil)["deal"].(map[string]any)["contact"].(map[string]any)["uuid"].(string)

	expect(t, c.do("DELETE", "/v1/bot/crm/contacts/"+contactID, nil), http.StatusOK, "")
	expect(t, c.do("GET", "/v1/bot/crm/contacts/"+contactID, nil), http.StatusNotFound, "contact_not_found")
	for _, tt := range []struct {
		name, id, contact string
	}{
		{"FirstDeal", deals[0], ""},
		{"SecondDeal", deals[1], ""},
		{"AnotherContactsDeal", other["uuid"].(string), other["contact"].(map[string]any)["uuid"].(string)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := c.ok(t, "GET", "/v1/bot/crm/deals/"+tt.id, nil)["deal"].(map[string]any)
			if d["contact"].(map[string]any)["uuid"] != tt.contact {
				t.Fatalf("deal %v, want contact %q", d, tt.contact)
			}
		})
	}
	if list := c.ok(t, "GET", "/v1/bot/crm/deals", nil); list["total"] != float64(3) {
		t.Fatalf("deals %v", list)
	}

	removed := map[string]string{}
	eventsUntil(t, b.project.ID, func(ev outbox.Event) bool {
		if ev.Type == outbox.DealUpdated {
			var data struct {
				UUID           string
				Contact        struct{ UUID string }
				ContactRemoved *struct{ UUID, Email string } `json:"contact_removed"`
			}
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.ContactRemoved != nil && data.Contact.UUID == "" {
				removed[data.UUID] = data.ContactRemoved.Email
			}
		}
		return ev.Type == outbox.ContactDeleted
	})
	if len(removed) != 2 || removed[deals[0]] != "grace@example.com" || removed[deals[1]] != "grace@example.com" {
		t.Fatalf("deal.updated before contact.deleted named the contact removed for %v", removed)
	}
}
