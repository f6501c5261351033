package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// taskTitles lists the titles of a task list, as a client reads them.
func taskTitles(t *testing.T, list map[string]any) []string {
	t.Helper()
	titles := []string{}
	for _, task := range list["tasks"].([]any) {
		titles = append(titles, task.(map[string]any)["title"].(string))
	}
	return titles
}

func TestCRMTasks(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	task := func(c crmAPI, body map[string]any) map[string]any {
		t.Helper()
		return c.ok(t, "POST", "/v1/bot/crm/tasks", body)["task"].(map[string]any)
	}
	now := time.Now().UTC()
	midnight := now.Truncate(24 * time.Hour)
	stamp := func(at time.Time) string { return at.Format(time.RFC3339) }

	deal := c.ok(t, "POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "contact": map[string]any{"email": "ada@example.com"}})["deal"].(map[string]any)
	contactID := deal["contact"].(map[string]any)["uuid"].(string)
	op := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/operator/create", Key: b.key, Body: map[string]any{
		"project_id": b.project.ID, "name": "Sam", "email": "sam@example.com"}})
	expect(t, op, http.StatusOK, "")
	opID := op.JSON(t)["operator"].(map[string]any)["id"].(string)

	late := task(c, map[string]any{"title": "Late", "due_at": stamp(now.Add(-48 * time.Hour)), "priority": "HIGH",
		"deal_id": deal["uuid"], "contact_id": contactID, "assignee": opID, "description": "Send the proposal."})
	if late["status"] != "open" || late["priority"] != "high" || late["deal_id"] != deal["uuid"] || late["contact_id"] != contactID ||
		late["assignee"] != opID || late["assignee_operator_id"] != opID || late["snoozed_until"] != nil || late["completed_at"] != nil {
		t.Fatalf("task %v", late)
	}
	task(c, map[string]any{"title": "Today", "due_at": midnight.Format(time.DateOnly), "assignee": "Sam from sales"})
	task(c, map[string]any{"title": "Later", "due_at": stamp(now.Add(72 * time.Hour))})
	snoozed := task(c, map[string]any{"title": "Snoozed", "due_at": stamp(now.Add(-time.Hour))})
	done := task(c, map[string]any{"title": "Done", "due_at": stamp(midnight), "status": "done"})
	undated := task(c, map[string]any{"title": "Undated", "priority": "low"})
	if done["completed_at"] == nil || undated["due_at"] != nil || undated["priority"] != "low" {
		t.Fatalf("tasks %v %v", done, undated)
	}
	// Another agent's task is on no list of this agent's.
	other := b.crmAPI(t)
	task(other, map[string]any{"title": "Other agent's", "due_at": stamp(midnight)})

	until := now.Add(24 * time.Hour).Truncate(time.Second)
	snoozed = c.ok(t, "POST", "/v1/bot/crm/tasks/"+snoozed["uuid"].(string)+"/snooze", map[string]any{"until": stamp(until)})["task"].(map[string]any)
	if snoozed["snoozed_until"] != until.Format("2006-01-02T15:04:05Z") {
		t.Fatalf("snoozed %v", snoozed)
	}

	for _, tc := range []struct {
		name, query string
		want        []string
	}{
		{"all, in creation order", "", []string{"Late", "Today", "Later", "Snoozed", "Done", "Undated"}},
		{"done", "&status=done", []string{"Done"}},
		{"open", "&status=open", []string{"Late", "Today", "Later", "Snoozed", "Undated"}},
		{"today, in UTC", "&view=today", []string{"Today"}},
		{"overdue, by due time", "&view=overdue", []string{"Late", "Today"}},
		{"upcoming", "&view=upcoming", []string{"Later"}},
		{"snoozed", "&view=snoozed", []string{"Snoozed"}},
		{"paged", "&per_page=2&page=2", []string{"Later", "Snoozed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/tasks" + c.q() + tc.query, Key: b.key})
			expect(t, res, http.StatusOK, "")
			if got := taskTitles(t, res.JSON(t)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("tasks %v, want %v", got, tc.want)
			}
		})
	}

	// today in a time zone: the start of the day there.
	tz := b.crmAPI(t)
	loc, err := time.LoadLocation("Pacific/Kiritimati")
	if err != nil {
		t.Fatal(err)
	}
	local := now.In(loc)
	task(tz, map[string]any{"title": "Kiritimati morning", "due_at": stamp(time.Date(local.Year(), local.Month(), local.Day(), 0, 1, 0, 0, loc))})
	if got := taskTitles(t, tz.ok(t, "GET", "/v1/bot/crm/tasks", nil)); len(got) != 1 {
		t.Fatalf("tasks %v", got)
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/tasks" + tz.q() + "&view=today&timezone=Pacific/Kiritimati", Key: b.key})
	expect(t, res, http.StatusOK, "")
	if got := taskTitles(t, res.JSON(t)); !reflect.DeepEqual(got, []string{"Kiritimati morning"}) {
		t.Fatalf("today in Kiritimati %v", got)
	}

	// A task due in a minute is not overdue yet.
	soon := b.crmAPI(t)
	task(soon, map[string]any{"title": "Soon", "due_at": stamp(now.Add(time.Minute))})
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/tasks" + soon.q() + "&view=overdue", Key: b.key})
	expect(t, res, http.StatusOK, "")
	if got := taskTitles(t, res.JSON(t)); len(got) != 0 {
		t.Fatalf("overdue %v", got)
	}

	// Done clears the snooze; open again clears the completion.
	id := snoozed["uuid"].(string)
	closed := c.ok(t, "PUT", "/v1/bot/crm/tasks/"+id, map[string]any{"status": "done"})["task"].(map[string]any)
	if closed["status"] != "done" || closed["snoozed_until"] != nil || closed["completed_at"] == nil || closed["title"] != "Snoozed" {
		t.Fatalf("closed %v", closed)
	}
	reopened := c.ok(t, "PUT", "/v1/bot/crm/tasks/"+id, map[string]any{"status": "open", "due_at": "", "deal_id": deal["uuid"]})["task"].(map[string]any)
	if reopened["completed_at"] != nil || reopened["due_at"] != nil || reopened["deal_id"] != deal["uuid"] {
		t.Fatalf("reopened %v", reopened)
	}
	// Snoozed without an end: a day.
	again := c.ok(t, "POST", "/v1/bot/crm/tasks/"+id+"/snooze", map[string]any{})["task"].(map[string]any)
	if end, err := time.Parse(time.RFC3339, again["snoozed_until"].(string)); err != nil || end.Before(now.Add(23*time.Hour)) || end.After(time.Now().Add(25*time.Hour)) {
		t.Fatalf("snoozed a day: %v", again["snoozed_until"])
	}

	otherDeal := other.ok(t, "POST", "/v1/bot/crm/deals", map[string]any{"title": "Theirs"})["deal"].(map[string]any)["uuid"]
	for _, tc := range []struct {
		name, method, path string
		body               map[string]any
		status             int
		code, field        string
	}{
		{"no title", "POST", "/v1/bot/crm/tasks", map[string]any{"title": " "}, 422, "invalid_field", "title"},
		{"bad status", "POST", "/v1/bot/crm/tasks", map[string]any{"title": "x", "status": "customer"}, 422, "invalid_field", "status"},
		{"bad priority", "POST", "/v1/bot/crm/tasks", map[string]any{"title": "x", "priority": "urgent"}, 422, "invalid_field", "priority"},
		{"bad due_at", "POST", "/v1/bot/crm/tasks", map[string]any{"title": "x", "due_at": "tomorrow"}, 422, "invalid_field", "due_at"},
		{"another agent's deal", "POST", "/v1/bot/crm/tasks", map[string]any{"title": "x", "deal_id": otherDeal}, 422, "invalid_field", "deal_id"},
		{"no such contact", "POST", "/v1/bot/crm/tasks", map[string]any{"title": "x", "contact_id": "nope"}, 422, "invalid_field", "contact_id"},
		{"unknown task", "PUT", "/v1/bot/crm/tasks/nope", map[string]any{"status": "done"}, 404, "task_not_found", ""},
		{"snooze into the past", "POST", "/v1/bot/crm/tasks/" + id + "/snooze", map[string]any{"until": stamp(now.Add(-time.Hour))}, 422, "invalid_field", "until"},
		{"snooze a done task", "POST", "/v1/bot/crm/tasks/" + done["uuid"].(string) + "/snooze", map[string]any{}, 409, "task_done", ""},
		{"bad view", "GET", "/v1/bot/crm/tasks", nil, 422, "invalid_field", "view"},
		{"bad time zone", "GET", "/v1/bot/crm/tasks", nil, 422, "invalid_field", "timezone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := apitest.Request{Method: tc.method, Path: tc.path, Key: b.key}
			switch {
			case tc.body != nil:
				req.Body = c.scoped(tc.body)
			case tc.field == "view":
				req.Path += c.q() + "&view=someday"
			default:
				req.Path += c.q() + "&view=today&timezone=Mars/Olympus"
			}
			res := b.client.Do(req)
			expect(t, res, tc.status, tc.code)
			if tc.field != "" {
				if details := res.JSON(t)["error"].(map[string]any)["details"].([]any); details[0].(map[string]any)["field"] != tc.field {
					t.Fatalf("details %v", details)
				}
			}
		})
	}

	c.ok(t, "DELETE", "/v1/bot/crm/tasks/"+late["uuid"].(string), nil)
	expect(t, c.do("DELETE", "/v1/bot/crm/tasks/"+late["uuid"].(string), nil), http.StatusNotFound, "task_not_found")
	if got := taskTitles(t, c.ok(t, "GET", "/v1/bot/crm/tasks", nil)); len(got) != 5 {
		t.Fatalf("after the deletion %v", got)
	}
}

// An agent creates a task linked to a deal and its contact, finds it among the overdue ones, then
// completes it (twice: the second changes nothing).
func TestCRMTaskTools(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Pilot", "contact": map[string]any{"email": "ada@example.com"}}))
	due := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("create_task", fmt.Sprintf(`{"title":"Call Ada","due_at":%q,"priority":"high","deal_id":%q,"contact_id":%q}`,
			due.Format(time.RFC3339), deal.UUID, deal.Contact.UUID)),
		call("list_tasks", `{"view":"overdue"}`),
		{Reply: "I will call Ada."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "Remind me to call Ada about the pilot", "reasoning_mode": "agent"})
	cs := cycles(t, chat)
	if len(cs) != 2 || cs[0]["action"] != "create_task" || cs[0]["actionSuccess"] != true || cs[1]["action"] != "list_tasks" ||
		cs[1]["actionSuccess"] != true || !strings.Contains(cs[1]["observation"].(string), "Call Ada") {
		t.Fatalf("cycles %v", cs)
	}
	list := func(status string) []any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/tasks?" + a.query("&status="+status), Key: b.key})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["tasks"].([]any)
	}
	open := list("open")
	if len(open) != 1 {
		t.Fatalf("open tasks %v", open)
	}
	task := open[0].(map[string]any)
	if task["title"] != "Call Ada" || task["priority"] != "high" || task["deal_id"] != deal.UUID || task["contact_id"] != deal.Contact.UUID ||
		task["due_at"] != due.Format(time.RFC3339) {
		t.Fatalf("task %v", task)
	}
	id := task["uuid"].(string)
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("complete_task", fmt.Sprintf(`{"task_id":%q}`, id)),
		call("complete_task", fmt.Sprintf(`{"task_id":%q}`, id)),
		{Reply: "Done."},
	}})
	_, chat = a.chat(t, map[string]any{"message": "I called Ada", "reasoning_mode": "agent"})
	cs = cycles(t, chat)
	if len(cs) != 2 || cs[0]["actionSuccess"] != true || cs[1]["actionSuccess"] != true || !strings.Contains(cs[1]["observation"].(string), `"status":"done"`) {
		t.Fatalf("cycles %v", cs)
	}
	done := list("done")
	if len(done) != 1 || len(list("open")) != 0 {
		t.Fatalf("done tasks %v", done)
	}
	if task = done[0].(map[string]any); task["uuid"] != id || task["completed_at"] == nil || task["updated_at"] != task["completed_at"] {
		t.Fatalf("completed task %v", task)
	}
}
