package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// valuesOf lists the name (or key) of each object of a list.
func valuesOf(list any, key string) []string {
	out := []string{}
	for _, o := range list.([]any) {
		out = append(out, o.(map[string]any)[key].(string))
	}
	return out
}

// The templates make their pipeline and fields once: applied again they change nothing, with
// replace they bring back what differs (stored values kept), with create_new they make a
// pipeline per name; the setup shows what the CRM has.
func TestCRMTemplatesAndSetup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	templates := c.ok(t, "GET", "/v1/bot/crm/templates", nil)
	if !reflect.DeepEqual(valuesOf(templates["templates"], "key"), []string{"sales", "support", "recruiting", "real_estate"}) {
		t.Fatalf("templates %v", templates)
	}
	before := c.ok(t, "GET", "/v1/bot/crm/setup", nil)["setup"].(map[string]any)
	if len(before["pipelines"].([]any)) != 1 || len(before["fields"].([]any)) != 0 || len(before["templates_applied"].([]any)) != 0 {
		t.Fatalf("setup before %v", before)
	}
	// A field of one of the template's keys, of another type, holding a value.
	c.ok(t, "POST", "/v1/bot/crm/fields", map[string]any{"label": "Company size", "field_type": "text"})
	contact := c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Ada", "fields": map[string]any{"company_size": "big"}})["contact"].(map[string]any)

	apply := func(body map[string]any) map[string]any {
		t.Helper()
		return c.ok(t, "POST", "/v1/bot/crm/templates/apply", body)["applied"].(map[string]any)
	}
	counts := func(a map[string]any) string {
		return fmt.Sprint(a["created"], a["updated"], a["kept_fields"])
	}
	first := apply(map[string]any{"template_key": "sales"})
	pl := first["pipeline"].(map[string]any)
	if counts(first) != "map[fields:4 pipelines:1 stages:6 statuses:1] map[fields:0 pipelines:0 stages:0 statuses:0] [company_size]" || pl["name"] != "Sales pipeline" ||
		!reflect.DeepEqual(valuesOf(pl["stages"], "name"), []string{"Lead", "Qualified", "Proposal", "Negotiation", "Won", "Lost"}) || len(first["fields"].([]any)) != 5 {
		t.Fatalf("applied %v", first)
	}
	nothing := "map[fields:0 pipelines:0 stages:0 statuses:0] map[fields:0 pipelines:0 stages:0 statuses:0] [company_size]"
	again := apply(map[string]any{"template_key": "SALES", "replace": false})
	if counts(again) != nothing || !reflect.DeepEqual(again["pipeline"], pl) || !reflect.DeepEqual(again["fields"], first["fields"]) {
		t.Fatalf("applied again %v", again)
	}
	setup := c.ok(t, "GET", "/v1/bot/crm/setup", nil)["setup"].(map[string]any)
	if len(setup["pipelines"].([]any)) != 2 || len(setup["fields"].([]any)) != 5 || fmt.Sprint(setup["templates_applied"]) != "[sales]" ||
		setup["counts"].(map[string]any)["stages"] != float64(12) {
		t.Fatalf("setup %v", setup)
	}

	// With replace: the name, and the field of another type, brought to the template's; the
	// value stays, unfit.
	replaced := apply(map[string]any{"template_key": "sales", "replace": true, "name": "Q3 Pipeline"})
	if fmt.Sprint(replaced["created"], replaced["updated"], replaced["kept_fields"]) != "map[fields:0 pipelines:0 stages:0 statuses:0] map[fields:1 pipelines:1 stages:0 statuses:0] []" ||
		replaced["pipeline"].(map[string]any)["uuid"] != pl["uuid"] || replaced["pipeline"].(map[string]any)["name"] != "Q3 Pipeline" {
		t.Fatalf("replaced %v", replaced)
	}
	if again := apply(map[string]any{"template_key": "sales", "replace": "1", "name": "Q3 Pipeline"}); fmt.Sprint(again["created"], again["updated"]) !=
		"map[fields:0 pipelines:0 stages:0 statuses:0] map[fields:0 pipelines:0 stages:0 statuses:0]" {
		t.Fatalf("replaced again %v", again)
	}
	if kept := c.ok(t, "GET", "/v1/bot/crm/contacts/"+contact["uuid"].(string), nil)["contact"].(map[string]any); kept["fields"].(map[string]any)["company_size"] != "big" {
		t.Fatalf("contact after the replace %v", kept)
	}

	// create_new: a pipeline per name, once.
	fresh := apply(map[string]any{"template_key": "sales", "create_new": true, "name": "Enterprise"})
	if fresh["pipeline"].(map[string]any)["uuid"] == pl["uuid"] || fmt.Sprint(fresh["created"]) != "map[fields:0 pipelines:1 stages:6 statuses:0]" {
		t.Fatalf("created new %v", fresh)
	}
	if again := apply(map[string]any{"template_key": "sales", "create_new": true, "name": "Enterprise"}); fmt.Sprint(again["created"]) != "map[fields:0 pipelines:0 stages:0 statuses:0]" ||
		again["pipeline"].(map[string]any)["uuid"] != fresh["pipeline"].(map[string]any)["uuid"] {
		t.Fatalf("created new again %v", again)
	}

	// Two applications at once make one pipeline.
	var wg sync.WaitGroup
	made := make([]float64, 2)
	for i := range made {
		wg.Go(func() {
			res := c.do("POST", "/v1/bot/crm/templates/apply", map[string]any{"template_key": "real_estate"})
			if res.Status == http.StatusOK {
				made[i] = res.JSON(t)["applied"].(map[string]any)["created"].(map[string]any)["pipelines"].(float64)
			} else {
				t.Errorf("apply: %d %s", res.Status, res.Body)
			}
		})
	}
	wg.Wait()
	if made[0]+made[1] != 1 {
		t.Fatalf("two applications made %v pipelines", made)
	}
	if got := strings.Join(valuesOf(c.ok(t, "GET", "/v1/bot/crm/contacts/statuses", nil)["statuses"], "key"), " "); got != "lead contacted qualified customer churned opportunity viewing offer under_contract closed" {
		t.Fatalf("statuses after two applications at once: %s", got)
	}

	// A deal in the template's pipeline, a task: the counts.
	c.ok(t, "POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "pipeline_id": pl["uuid"]})
	c.ok(t, "POST", "/v1/bot/crm/tasks", map[string]any{"title": "Call"})
	setup = c.ok(t, "GET", "/v1/bot/crm/setup", nil)["setup"].(map[string]any)
	want := "map[contacts:1 deals:1 fields:10 lost_deals:0 open_deals:1 open_tasks:1 pipelines:4 stages:24 tasks:1 won_deals:0]"
	if got := fmt.Sprint(setup["counts"]); got != want || fmt.Sprint(setup["templates_applied"]) != "[sales real_estate]" {
		t.Fatalf("setup counts %s, want %s: %v", got, want, setup)
	}

	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"unknown", map[string]any{"template_key": "bakery"}},
		{"missing", map[string]any{"template_key": ""}},
		{"long name", map[string]any{"template_key": "sales", "name": strings.Repeat("n", 201)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, c.do("POST", "/v1/bot/crm/templates/apply", tc.body), http.StatusUnprocessableEntity, "invalid_field")
		})
	}
}

// A template adds its contact statuses after the project's, once; with replace it brings those of
// its keys back to its label and colour. Contacts take them by key, label or id, and nothing
// else; a project without templates, another account's, keeps the defaults and cannot use them.
func TestCRMTemplateStatuses(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	keys := func(list any) string { return strings.Join(valuesOf(list, "key"), " ") }
	apply := func(body map[string]any) map[string]any {
		t.Helper()
		return c.ok(t, "POST", "/v1/bot/crm/templates/apply", body)["applied"].(map[string]any)
	}
	changes := func(a map[string]any) string {
		return fmt.Sprint(a["created"].(map[string]any)["statuses"], a["updated"].(map[string]any)["statuses"], a["kept_statuses"])
	}
	const defaults = "lead contacted qualified customer churned"

	first := apply(map[string]any{"template_key": "recruiting"})
	want := defaults + " applied screening interview offer hired rejected"
	if changes(first) != "6 0 []" || keys(first["statuses"]) != want {
		t.Fatalf("applied: %s, statuses %s", changes(first), keys(first["statuses"]))
	}
	byKey := map[string]map[string]any{}
	for i, s := range first["statuses"].([]any) {
		s := s.(map[string]any)
		byKey[s["key"].(string)] = s
		if s["order"] != float64(i+1) || s["uuid"] == "" || s["label"] == "" || s["colour"] == "" || s["is_default"] != (i == 0) {
			t.Fatalf("status %d: %v", i+1, s)
		}
	}
	if byKey["under_review"] != nil || byKey["interview"]["label"] != "Interview" {
		t.Fatalf("statuses %v", byKey)
	}
	again := apply(map[string]any{"template_key": "recruiting"})
	if changes(again) != "0 0 []" || !reflect.DeepEqual(again["statuses"], first["statuses"]) {
		t.Fatalf("applied again: %s, statuses %v", changes(again), again["statuses"])
	}
	listed := c.ok(t, "GET", "/v1/bot/crm/contacts/statuses", nil)
	setup := c.ok(t, "GET", "/v1/bot/crm/setup", nil)["setup"].(map[string]any)
	if listed["total"] != float64(11) || !reflect.DeepEqual(listed["statuses"], first["statuses"]) || !reflect.DeepEqual(setup["statuses"], first["statuses"]) {
		t.Fatalf("listed %v, setup %v", listed, setup["statuses"])
	}

	// Real estate's offer differs from recruiting's: kept, then replaced.
	estate := apply(map[string]any{"template_key": "real_estate"})
	if changes(estate) != "3 0 [offer]" || keys(estate["statuses"]) != want+" viewing under_contract closed" {
		t.Fatalf("real estate: %s, statuses %s", changes(estate), keys(estate["statuses"]))
	}
	replaced := apply(map[string]any{"template_key": "real_estate", "replace": true})
	offer := replaced["statuses"].([]any)[8].(map[string]any)
	if changes(replaced) != "0 1 []" || offer["key"] != "offer" || offer["label"] != "Offer made" || offer["colour"] != "#F97316" || offer["uuid"] != byKey["offer"]["uuid"] {
		t.Fatalf("replaced: %s, offer %v", changes(replaced), offer)
	}
	if again := apply(map[string]any{"template_key": "real_estate", "replace": true}); changes(again) != "0 0 []" {
		t.Fatalf("replaced again: %s", changes(again))
	}

	// Contacts take the template's statuses as the client sends them.
	contact := c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Ada", "status_key": "interview"})["contact"].(map[string]any)
	if contact["status"] != "interview" || contact["status_label"] != "Interview" {
		t.Fatalf("a new candidate %v", contact)
	}
	id := contact["uuid"].(string)
	for _, tt := range []struct {
		name        string
		body        map[string]any
		want, label string
	}{
		{"ByID", map[string]any{"status_id": byKey["hired"]["uuid"]}, "hired", "Hired"},
		{"ByLabel", map[string]any{"status": "under contract"}, "under_contract", "Under contract"},
		{"ByKey", map[string]any{"status": "screening"}, "screening", "Screening"},
		{"ReplacedLabel", map[string]any{"status_key": "offer"}, "offer", "Offer made"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := c.ok(t, "PUT", "/v1/bot/crm/contacts/"+id, tt.body)["contact"].(map[string]any)
			if got["status"] != tt.want || got["status_label"] != tt.label {
				t.Fatalf("contact %v, want %s", got, tt.want)
			}
		})
	}
	if plain := c.ok(t, "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Bo"})["contact"].(map[string]any); plain["status"] != "lead" {
		t.Fatalf("a contact without a status %v", plain)
	}

	// Another account: its project has the defaults, and this project's statuses are nothing to it.
	other := b.newTenantBot(t, "Other")
	otherDo := func(method, path string, body map[string]any) *apitest.Response {
		if body == nil {
			return b.client.Do(apitest.Request{Method: method, Path: path + "?project_id=" + other.project + "&bot_id=" + other.bot, Key: other.key})
		}
		body["project_id"], body["bot_id"] = other.project, other.bot
		return b.client.Do(apitest.Request{Method: method, Path: path, Key: other.key, Body: body})
	}
	res := otherDo("GET", "/v1/bot/crm/contacts/statuses", nil)
	expect(t, res, http.StatusOK, "")
	if got := keys(res.JSON(t)["statuses"]); got != defaults {
		t.Fatalf("another project's statuses: %s", got)
	}
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/statuses" + c.q(), Key: other.key}), http.StatusNotFound, "")

	for _, tt := range []struct {
		name        string
		do          func(body map[string]any) *apitest.Response
		body        map[string]any
		field, says string
	}{
		{"UnknownStatus", func(body map[string]any) *apitest.Response { return c.do("PUT", "/v1/bot/crm/contacts/"+id, body) },
			map[string]any{"status": "sold"}, "status", "must be one of the project's contact statuses: " + strings.ReplaceAll(want+" viewing under_contract closed", " ", ", ")},
		{"UnknownStatusOnCreate", func(body map[string]any) *apitest.Response { return c.do("POST", "/v1/bot/crm/contacts", body) },
			map[string]any{"name": "Cy", "status_key": "sold"}, "status_key", "must be one of the project's contact statuses"},
		{"OtherAccountKey", func(body map[string]any) *apitest.Response { return otherDo("POST", "/v1/bot/crm/contacts", body) },
			map[string]any{"name": "Di", "status_key": "interview"}, "status_key", "must be one of the project's contact statuses: lead, contacted, qualified, customer, churned"},
		{"OtherAccountID", func(body map[string]any) *apitest.Response { return otherDo("POST", "/v1/bot/crm/contacts", body) },
			map[string]any{"name": "Di", "status_id": byKey["hired"]["uuid"]}, "status_id", "must be the uuid of one of the project's contact statuses"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := tt.do(tt.body)
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
			if !strings.Contains(string(res.Body), tt.says) {
				t.Fatalf("error %s, want %q", res.Body, tt.says)
			}
		})
	}
}

// The report over a window: deals made, won and lost; the stages' holdings, entries, leavings
// and time; the conversion from stage to stage; the tasks.
func TestCRMReport(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.crmAPI(t)
	report := func(query string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/report" + c.q() + query, Key: b.key})
	}
	began := time.Now()
	deal := func(body map[string]any) string {
		t.Helper()
		return c.ok(t, "POST", "/v1/bot/crm/deals", body)["deal"].(map[string]any)["uuid"].(string)
	}
	acme := deal(map[string]any{"title": "Acme", "value": 300})
	beta := deal(map[string]any{"title": "Beta", "value": 50, "currency": "EUR"})
	deal(map[string]any{"title": "Gamma", "value": 100})
	c.ok(t, "PUT", "/v1/bot/crm/deals/"+acme, map[string]any{"stage": "Qualified"})
	c.ok(t, "PUT", "/v1/bot/crm/deals/"+acme, map[string]any{"status": "won"})
	c.ok(t, "PUT", "/v1/bot/crm/deals/"+beta, map[string]any{"status": "lost"})
	c.ok(t, "POST", "/v1/bot/crm/tasks", map[string]any{"title": "Late", "due_at": time.Now().UTC().Add(-time.Hour).Format(time.RFC3339)})
	c.ok(t, "POST", "/v1/bot/crm/tasks", map[string]any{"title": "Done", "status": "done"})
	c.ok(t, "POST", "/v1/bot/crm/tasks", map[string]any{"title": "Someday"})

	res := report("")
	expect(t, res, http.StatusOK, "")
	r := res.JSON(t)["report"].(map[string]any)
	elapsed := time.Since(began).Seconds()
	if got := fmt.Sprint(r["deals"]); got != "map[created:3 lost:1 lost_value_by_currency:map[EUR:50] win_rate:0.5 won:1 won_value_by_currency:map[USD:300]]" {
		t.Fatalf("deals %s", got)
	}
	stages := map[string]map[string]any{}
	for _, st := range r["stages"].([]any) {
		stages[st.(map[string]any)["name"].(string)] = st.(map[string]any)
	}
	for name, want := range map[string]string{
		"Lead":      "1 map[USD:100] 3 2",
		"Qualified": "0 map[] 1 1",
		"Proposal":  "0 map[] 0 0",
		"Won":       "1 map[USD:300] 1 0",
		"Lost":      "1 map[EUR:50] 1 0",
	} {
		st := stages[name]
		if got := fmt.Sprint(st["deal_count"], st["value_by_currency"], st["entered"], st["left"]); got != want {
			t.Errorf("stage %s: %s, want %s", name, got, want)
		}
		avg, _ := st["average_seconds_in_stage"].(float64)
		if (st["left"] == float64(0)) != (st["average_seconds_in_stage"] == nil) || avg < 0 || avg > elapsed+1 {
			t.Errorf("stage %s: average time %v", name, st["average_seconds_in_stage"])
		}
	}
	conv := map[string]string{}
	for _, step := range r["conversion"].([]any) {
		s := step.(map[string]any)
		conv[s["from_stage"].(string)+">"+s["to_stage"].(string)] = fmt.Sprint(s["entered"], s["converted"], s["rate"])
	}
	if want := map[string]string{"Lead>Qualified": "3 1 0.3333", "Qualified>Proposal": "1 1 1", "Proposal>Negotiation": "0 0 <nil>",
		"Negotiation>Won": "0 0 <nil>"}; !reflect.DeepEqual(conv, want) {
		t.Errorf("conversion %v, want %v", conv, want)
	}
	if got := fmt.Sprint(r["tasks"]); got != "map[done:1 open:2 overdue:1]" {
		t.Errorf("tasks %s", got)
	}

	// A window before all this: nothing happened in it; the stages still hold their deals.
	res = report("&from=2020-01-01&to=2020-02-01")
	expect(t, res, http.StatusOK, "")
	r = res.JSON(t)["report"].(map[string]any)
	if got := fmt.Sprint(r["deals"], r["tasks"]); got != "map[created:0 lost:0 lost_value_by_currency:map[] win_rate:<nil> won:0 won_value_by_currency:map[]] map[done:0 open:2 overdue:1]" ||
		r["from"] != "2020-01-01T00:00:00Z" || r["to"] != "2020-02-01T00:00:00Z" {
		t.Errorf("past window %s %v %v", got, r["from"], r["to"])
	}
	if lead := r["stages"].([]any)[0].(map[string]any); lead["deal_count"] != float64(1) || lead["entered"] != float64(0) {
		t.Errorf("past window's Lead %v", lead)
	}

	for _, q := range []string{"&from=2026-02-01&to=2026-01-01", "&from=yesterday", "&from=2024-01-01&to=2025-06-01"} {
		expect(t, report(q), http.StatusUnprocessableEntity, "invalid_field")
	}
}
