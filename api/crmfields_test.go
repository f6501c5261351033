package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// crmAPI calls the CRM's routes for one agent of b's project.
type crmAPI struct {
	b   *bundle
	bot string
}

func (b *bundle) crmAPI(t *testing.T) crmAPI {
	return crmAPI{b: b, bot: b.createBot(t, nil)["id"].(string)}
}

func (c crmAPI) q() string { return "?project_id=" + c.b.project.ID + "&bot_id=" + c.bot }

func (c crmAPI) scoped(body map[string]any) map[string]any {
	body["project_id"], body["bot_id"] = c.b.project.ID, c.bot
	return body
}

// do sends a request (a body to POST and PUT, the scope in the query otherwise) and returns the
// answer.
func (c crmAPI) do(method, path string, body map[string]any) *apitest.Response {
	r := apitest.Request{Method: method, Path: path, Key: c.b.key}
	if body != nil {
		r.Body = c.scoped(body)
	} else {
		r.Path += c.q()
	}
	return c.b.client.Do(r)
}

// ok sends a request that must succeed and returns its JSON.
func (c crmAPI) ok(t *testing.T, method, path string, body map[string]any) map[string]any {
	t.Helper()
	res := c.do(method, path, body)
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)
}

func TestCRMFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	field := func(body map[string]any) map[string]any {
		return c.ok(t, "POST", "/v1/bot/crm/fields", body)["field"].(map[string]any)
	}
	size := field(map[string]any{"label": "Company Size", "field_type": "select", "options": []any{"1-10", "11-50"}, "is_required": true})
	if size["key"] != "company_size" || size["entity"] != "contact" || size["is_required"] != true || len(size["options"].([]any)) != 2 {
		t.Fatalf("field %v", size)
	}
	for _, f := range []map[string]any{
		{"label": "Seats", "field_type": "number"},
		{"label": "Renewal date", "field_type": "date"},
		{"label": "Interests", "field_type": "multiselect", "options": []any{"news", "offers"}},
		{"label": "Opted in", "field_type": "boolean", "is_required": "0"},
		{"label": "Billing email", "field_type": "email"},
		{"label": "Mobile", "field_type": "phone"},
		{"label": "Website", "field_type": "url"},
		{"label": "Note", "field_type": ""},
		{"label": "Source", "field_type": "select", "options": []any{"web", "event"}, "entity": "deal", "is_required": true},
	} {
		field(f)
	}
	list := c.ok(t, "GET", "/v1/bot/crm/fields", nil)
	if list["total"] != float64(10) || list["fields"].([]any)[0].(map[string]any)["key"] != "company_size" {
		t.Fatalf("fields %v", list)
	}

	t.Run("InvalidField", func(t *testing.T) {
		for _, tt := range []struct {
			name, field string
			body        map[string]any
		}{
			{"NoLabel", "label", map[string]any{"field_type": "text"}},
			{"BlankLabel", "label", map[string]any{"label": "  "}},
			{"LabelWithoutLetters", "label", map[string]any{"label": "!!"}},
			{"UnknownType", "field_type", map[string]any{"label": "x", "field_type": "colour"}},
			{"SelectWithoutOptions", "options", map[string]any{"label": "x", "field_type": "select"}},
			{"OptionTwice", "options", map[string]any{"label": "x", "field_type": "select", "options": []any{"a", "a"}}},
			{"UnknownEntity", "entity", map[string]any{"label": "x", "entity": "company"}},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res := c.do("POST", "/v1/bot/crm/fields", tt.body)
				expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
				expectField(t, res, tt.field)
			})
		}
		expect(t, c.do("POST", "/v1/bot/crm/fields", map[string]any{"label": "company size!"}), http.StatusConflict, "field_exists")
		expect(t, c.do("PUT", "/v1/bot/crm/fields/no-such-field", map[string]any{"label": "x"}), http.StatusNotFound, "field_not_found")
	})

	valid := map[string]any{"company_size": "11-50", "seats": "12", "renewal_date": "2026-04-12", "interests": []any{"news"},
		"opted_in": "true", "billing_email": "Billing@Example.com", "mobile": "+44 20 7946 0958", "website": "https://example.com", "anything": map[string]any{"a.b": 1}}
	contact := c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Ada", "fields": valid})["contact"].(map[string]any)
	want := map[string]any{"company_size": "11-50", "seats": float64(12), "renewal_date": "2026-04-12", "interests": []any{"news"},
		"opted_in": true, "billing_email": "billing@example.com", "mobile": "+44 20 7946 0958", "website": "https://example.com", "anything": map[string]any{"a.b": float64(1)}}
	if got := contact["fields"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("fields stored %v, want %v", got, want)
	}
	contactID := contact["uuid"].(string)
	if got := c.ok(t, "GET", "/v1/bot/crm/contacts/"+contactID, nil)["contact"].(map[string]any)["fields"]; !reflect.DeepEqual(got, want) {
		t.Fatalf("fields read %v", got)
	}

	t.Run("InvalidValues", func(t *testing.T) {
		for _, tt := range []struct {
			name, key string
			value     any
		}{
			{"SelectOption", "company_size", "500+"},
			{"Number", "seats", "twelve"},
			{"Date", "renewal_date", "12/04/2026"},
			{"MultiselectOption", "interests", []any{"news", "spam"}},
			{"MultiselectNotAList", "interests", "news"},
			{"Boolean", "opted_in", "maybe"},
			{"Email", "billing_email", "not an address"},
			{"Phone", "mobile", "call me"},
			{"URL", "website", "javascript:alert(1)"},
			{"TextNotAString", "note", 12},
			{"RequiredRemoved", "company_size", nil},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res := c.do("PUT", "/v1/bot/crm/contacts/"+contactID, map[string]any{"fields": map[string]any{tt.key: tt.value}})
				expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
				expectField(t, res, "fields."+tt.key)
			})
		}
		t.Run("RequiredOnCreate", func(t *testing.T) {
			res := c.do("POST", "/v1/bot/crm/contacts", map[string]any{"name": "Bob", "fields": map[string]any{"seats": 1}})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, "fields.company_size")
		})
		t.Run("DealField", func(t *testing.T) {
			res := c.do("POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "fields": map[string]any{"source": "radio"}})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, "fields.source")
		})
		t.Run("DealRequiredOnCreate", func(t *testing.T) {
			res := c.do("POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot"})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, "fields.source")
		})
		t.Run("DealsContactField", func(t *testing.T) {
			res := c.do("POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "fields": map[string]any{"source": "web"},
				"contact": map[string]any{"name": "Cy", "fields": map[string]any{"company_size": "huge"}}})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, "contact.fields.company_size")
		})
	})

	// A deal's fields are its own: the contact's keys are free-form there.
	deal := c.ok(t, "POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "fields": map[string]any{"source": "web", "seats": "x"}})["deal"].(map[string]any)
	if got := deal["fields"]; !reflect.DeepEqual(got, map[string]any{"source": "web", "seats": "x"}) {
		t.Fatalf("deal fields %v", got)
	}
	deal = c.ok(t, "PUT", "/v1/bot/crm/deals/"+deal["uuid"].(string), map[string]any{"fields": map[string]any{"seats": nil}})["deal"].(map[string]any)
	if got := deal["fields"]; !reflect.DeepEqual(got, map[string]any{"source": "web"}) {
		t.Fatalf("deal fields after removing seats %v", got)
	}

	// A second contact holds a value of Note that a number cannot take.
	c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Eve", "fields": map[string]any{"company_size": "1-10", "note": "call back"}})
	c.ok(t, "PUT", "/v1/bot/crm/contacts/"+contactID, map[string]any{"fields": map[string]any{"note": "42"}})
	noteID := ""
	for _, f := range list["fields"].([]any) {
		if f := f.(map[string]any); f["key"] == "note" {
			noteID = f["uuid"].(string)
		}
	}
	for _, tt := range []struct {
		name          string
		method        string
		body          map[string]any
		stored, unfit float64
	}{
		{"Renamed", "PUT", map[string]any{"label": "Notes"}, 2, 0},
		{"NowANumber", "PUT", map[string]any{"field_type": "number"}, 2, 1},
		{"Deleted", "DELETE", nil, 2, 0},
	} {
		t.Run("FieldChange"+tt.name, func(t *testing.T) {
			got := c.ok(t, tt.method, "/v1/bot/crm/fields/"+noteID, tt.body)
			if got["stored_values"] != tt.stored || got["unfit_values"] != tt.unfit || got["field"].(map[string]any)["key"] != "note" {
				t.Fatalf("change %v: want %v stored, %v unfit", got, tt.stored, tt.unfit)
			}
		})
	}
	// The values are kept, once free-form.
	if got := c.ok(t, "GET", "/v1/bot/crm/contacts/"+contactID, nil)["contact"].(map[string]any)["fields"].(map[string]any); got["note"] != "42" {
		t.Fatalf("the deleted field's value is gone: %v", got)
	}
	expect(t, c.do("DELETE", "/v1/bot/crm/fields/"+noteID, nil), http.StatusNotFound, "field_not_found")
}

func TestContactStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	statuses := c.ok(t, "GET", "/v1/bot/crm/contacts/statuses", nil)["statuses"].([]any)
	keys, byKey := "", map[string]map[string]any{}
	for i, s := range statuses {
		s := s.(map[string]any)
		keys += fmt.Sprint(s["key"], " ")
		byKey[s["key"].(string)] = s
		if s["order"] != float64(i+1) || s["colour"] == "" || s["label"] == "" || s["uuid"] == "" {
			t.Fatalf("status %v", s)
		}
	}
	if keys != "lead contacted qualified customer churned " || byKey["lead"]["is_default"] != true {
		t.Fatalf("statuses %v", statuses)
	}
	contact := c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Ada"})["contact"].(map[string]any)
	if contact["status"] != "lead" || contact["status_label"] != "Lead" {
		t.Fatalf("a new contact %v", contact)
	}
	id := contact["uuid"].(string)
	for _, tt := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"StatusKey", map[string]any{"status": "", "status_key": "qualified"}, "qualified"},
		{"StatusLabel", map[string]any{"status": "Customer"}, "customer"},
		{"StatusUUID", map[string]any{"status": byKey["contacted"]["uuid"]}, "contacted"},
		{"StatusID", map[string]any{"status_id": byKey["churned"]["uuid"]}, "churned"},
		{"StatusIDFirst", map[string]any{"status_id": byKey["lead"]["uuid"], "status_key": "customer", "status": "qualified"}, "lead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := c.ok(t, "PUT", "/v1/bot/crm/contacts/"+id, tt.body)["contact"].(map[string]any)
			if got["status"] != tt.want || got["status_label"] != byKey[tt.want]["label"] {
				t.Fatalf("contact %v, want %s", got, tt.want)
			}
		})
	}
	created := c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"email": "bo@example.com", "status_key": "customer"})["contact"].(map[string]any)
	if created["status"] != "customer" {
		t.Fatalf("created %v", created)
	}
	for _, tt := range []struct{ name, field, value string }{
		{"UnknownStatus", "status", "won"},
		{"UnknownKey", "status_key", "Qualified lead"},
		{"UnknownID", "status_id", "lead"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := c.do("PUT", "/v1/bot/crm/contacts/"+id, map[string]any{tt.field: tt.value})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}
}
