package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// logsOf lists the logs of a workflow (its runs and skipped logs), with status when not empty.
func (a workflowAPI) logsOf(t *testing.T, workflowID, status string) []map[string]any {
	t.Helper()
	q := "&per_page=100&workflow_id=" + workflowID
	if status != "" {
		q += "&status=" + status
	}
	res := a.b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/logs?" + a.query(q), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return objects(res.JSON(t)["logs"])
}

// A condition on a field its event does not have is refused, naming the fields there are; the
// catalog lists each event's fields, as its events carry them.
func TestWorkflowConditionFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	webhook := []map[string]any{{"type": "webhook", "params": map[string]any{"url": "https://hooks.example.com/deals"}}}

	for _, tt := range []struct {
		name, event, field string
		says               []string
	}{
		{"NotInData", "deal.won", "data.deal.value", []string{"deal.won", "data has no field deal", "value", "title", "stage", "/v1/bot/workflow/catalog"}},
		{"NotInEnvelope", "deal.won", "deal.value", []string{"deal.won", "bot_id", "occurred_at", "data.*"}},
		{"BelowAValue", "deal.won", "data.title.first", []string{"data.title is a value"}},
		{"ArrayByName", "chat.message.created", "data.message.sources.first", []string{"data.message.sources is an array", "data.message.sources.0"}},
		{"Nested", "deal.won", "data.contact.mail", []string{"data.contact has no field mail", "email"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(map[string]any{
				"name": "x", "trigger_type": "event", "trigger_event": tt.event, "actions": webhook,
				"conditions": []map[string]any{{"field": "bot_id", "operator": "exists"}, {"field": tt.field, "operator": "exists"}}})})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			var body struct {
				Error struct {
					Details []struct{ Field, Problem string }
				}
			}
			res.Decode(t, &body)
			if len(body.Error.Details) != 1 || body.Error.Details[0].Field != "conditions[1].field" {
				t.Fatalf("details %+v, want conditions[1].field alone", body.Error.Details)
			}
			for _, s := range tt.says {
				if !strings.Contains(body.Error.Details[0].Problem, s) {
					t.Errorf("%q does not say %q", body.Error.Details[0].Problem, s)
				}
			}
		})
	}
	t.Run("Accepted", func(t *testing.T) {
		for _, c := range []struct{ event, field string }{{"deal.won", "data.contact.email"}, {"deal.won", "bot_id"},
			{"chat.message.created", "data.message.sources.0.title"}, {"bot.updated", "data.integrations.0.a"}, {"deal.created", "cause.0"}} {
			res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(map[string]any{
				"name": "x", "trigger_type": "event", "trigger_event": c.event, "actions": webhook,
				"conditions": []map[string]any{{"field": c.field, "operator": "exists"}}})})
			expect(t, res, http.StatusOK, "")
		}
	})

	// A workflow stored before conditions' fields were checked, with a condition on a field its
	// event lacks, can still be paused and renamed; an update that changes its conditions or its
	// event has them checked.
	t.Run("StoredBeforeTheCheck", func(t *testing.T) {
		id := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.won", "actions": webhook,
			"conditions": []map[string]any{{"field": "data.status", "operator": "eq", "value": "won"}, {"field": "data.value", "operator": "gte", "value": 1000}}})
		if _, err := b.db.Collection("workflows").UpdateOne(context.Background(), bson.M{"_id": id},
			bson.M{"$set": bson.M{"conditions.1.field": "data.deal.value"}, "$inc": bson.M{"rev": 1}}); err != nil {
			t.Fatal(err)
		}
		update := func(body map[string]any) *apitest.Response {
			body["workflow_id"] = id
			return b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/workflow/update", Key: b.key, Body: a.body(body)})
		}
		res := update(map[string]any{"is_active": false, "name": "Paused"})
		expect(t, res, http.StatusOK, "")
		w := res.JSON(t)["workflow"].(map[string]any)
		if w["is_active"] != false || w["name"] != "Paused" || w["conditions"].([]any)[1].(map[string]any)["field"] != "data.deal.value" {
			t.Fatalf("update %s", res.Body)
		}
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"conditions": []map[string]any{{"field": "data.deal.value", "operator": "gte", "value": 5000}}}, "conditions[0].field"},
			{map[string]any{"trigger_event": "deal.lost"}, "conditions[1].field"},
		} {
			res = update(c.body)
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, c.field)
		}
		res = update(map[string]any{"conditions": []map[string]any{{"field": "data.value", "operator": "gte", "value": 5000}}})
		expect(t, res, http.StatusOK, "")
	})

	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/catalog?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	var cat struct {
		Catalog struct {
			TriggerEvents  []string            `json:"trigger_events"`
			EnvelopeFields []string            `json:"envelope_fields"`
			EventFields    map[string][]string `json:"event_fields"`
		}
	}
	res.Decode(t, &cat)
	for _, ev := range cat.Catalog.TriggerEvents {
		if len(cat.Catalog.EventFields[ev]) == 0 {
			t.Errorf("the catalog lists no fields of %s", ev)
		}
	}
	won := cat.Catalog.EventFields["deal.won"]
	if !slices.Contains(won, "data.value") || !slices.Contains(won, "data.stage.name") || slices.Contains(won, "data.deal.value") ||
		!slices.Contains(cat.Catalog.EnvelopeFields, "bot_id") {
		t.Fatalf("deal.won's fields %v, envelope %v", won, cat.Catalog.EnvelopeFields)
	}

	// Every field the events carry (the deal's, the workflows') is among the catalog's fields of
	// their type, or below a free-form one.
	listed := func(typ, path string) bool {
		for p := path; p != ""; p = p[:max(strings.LastIndexByte(p, '.'), 0)] {
			if p == path && slices.Contains(cat.Catalog.EventFields[typ], p) || slices.Contains(cat.Catalog.EventFields[typ], p+".*") {
				return true
			}
		}
		return false
	}
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Acme", "value": 5000, "contact": map[string]any{"name": "Ann", "email": "ann@example.com"}}))
	b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, a.body(map[string]any{"status": "won"}))
	evs := streamEvents(t, "", b.project.ID, 2)
	for _, ev := range evs {
		var data any
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatal(err)
		}
		for _, path := range leafPaths("data", data) {
			if !listed(ev.Type, path) {
				t.Errorf("a %s event carries %s, which the catalog does not list: %v", ev.Type, path, cat.Catalog.EventFields[ev.Type])
			}
		}
	}
}

// leafPaths are the dot paths of v's values, under prefix: an array's elements under index 0.
func leafPaths(prefix string, v any) []string {
	switch v := v.(type) {
	case map[string]any:
		var out []string
		for k, e := range v {
			out = append(out, leafPaths(prefix+"."+k, e)...)
		}
		return out
	case []any:
		if len(v) > 0 {
			if _, scalar := v[0].(map[string]any); scalar {
				return leafPaths(prefix+".0", v[0])
			}
		}
	}
	return []string{prefix}
}

// An event whose type triggers a workflow but whose data fails its conditions leaves a skipped
// log naming the condition that did not hold, in the logs (not among the runs); one whose data
// passes runs as before.
func TestWorkflowSkippedLogs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	big := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.won",
		"conditions": []map[string]any{{"field": "data.status", "operator": "eq", "value": "won"}, {"field": "data.value", "operator": "gte", "value": 1000}},
		"actions":    []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL, "body": map[string]any{"won": "{{data.title}}"}}}}})
	huge := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.won",
		"conditions": []map[string]any{{"field": "data.status", "operator": "eq", "value": "won"}, {"field": "data.value", "operator": "gte", "value": 1000000}},
		"actions":    []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL}}}})

	deal := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Acme", "value": 5000}))
	b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, a.body(map[string]any{"status": "won"}))

	deadline := time.Now().Add(30 * time.Second)
	var skipped []map[string]any
	for skipped = a.logsOf(t, huge, ""); len(skipped) == 0; skipped = a.logsOf(t, huge, "") {
		if time.Now().After(deadline) {
			t.Fatal("no log of the event the conditions filtered out")
		}
		waitABit()
	}
	l := skipped[0]
	trigger := l["trigger"].(map[string]any)
	if len(skipped) != 1 || l["status"] != "skipped" || trigger["type"] != "event" || trigger["event_type"] != "deal.won" || trigger["event_id"] == "" ||
		len(l["actions"].([]any)) != 0 || l["ended_at"] == nil {
		t.Fatalf("logs of the filtered workflow %v", skipped)
	}
	if msg := l["error"].(string); !strings.Contains(msg, "conditions[1]") || !strings.Contains(msg, "data.value gte 1000000") || !strings.Contains(msg, "5000") {
		t.Fatalf("the skipped log says %q, want the condition that did not hold (conditions[1], data.value gte 1000000) and the event's value", msg)
	}
	if got := a.logsOf(t, huge, "skipped"); len(got) != 1 || got[0]["uuid"] != l["uuid"] {
		t.Fatalf("logs with status skipped %v", got)
	}
	if runs := a.runsOf(t, huge); len(runs) != 0 {
		t.Fatalf("the runs list the skipped log: %v", runs)
	}

	runs := a.runsOf(t, big)
	if len(runs) != 1 {
		t.Fatalf("runs of the workflow whose conditions hold: %v", runs)
	}
	if done := a.wait(t, runs[0]["uuid"].(string)); done["status"] != "succeeded" {
		t.Fatalf("run %v", done)
	}
	if got := hook.got(); len(got) != 1 || !strings.Contains(string(got[0].body), `"won":"Acme"`) {
		t.Fatalf("deliveries %v", got)
	}
	if logs := a.logsOf(t, big, ""); len(logs) != 1 || logs[0]["status"] != "succeeded" {
		t.Fatalf("logs of the workflow that ran %v", logs)
	}
	if logs := a.logsOf(t, big, "skipped"); len(logs) != 0 {
		t.Fatalf("skipped logs of the workflow that ran %v", logs)
	}

	// A workflow that filters out every event keeps at most workflows.MaxSkippedLogs logs.
	t.Run("Bounded", func(t *testing.T) {
		var won outbox.Event
		for _, ev := range streamEvents(t, "", b.project.ID, 2) {
			if ev.Type == "deal.won" {
				won = ev
			}
		}
		won.Data = json.RawMessage(`{"status":"lost","value":1}`)
		const events = 3 * workflows.MaxSkippedLogs
		for i := range events + 1 {
			ev := won
			ev.ID = fmt.Sprintf("%s-%d", won.ID, i)
			if _, err := b.flows.OnEvent(context.Background(), ev, nil); err != nil {
				t.Fatal(err)
			}
		}
		last := fmt.Sprintf("%s-%d", won.ID, events)
		var logs []map[string]any
		for deadline := time.Now().Add(30 * time.Second); !slices.ContainsFunc(logs, func(l map[string]any) bool {
			return l["trigger"].(map[string]any)["event_id"] == last
		}); logs = a.logsOf(t, big, "skipped") {
			if time.Now().After(deadline) {
				t.Fatal("no log of the last event")
			}
			waitABit()
		}
		if n := len(logs); n > workflows.MaxSkippedLogs || n < workflows.MaxSkippedLogs/2 {
			t.Fatalf("%d skipped logs kept of %d events, want at most %d and most of them", n, events+1, workflows.MaxSkippedLogs)
		}
		if !strings.Contains(logs[0]["error"].(string), `conditions[0] does not hold: data.status eq "won"; the event's data.status is "lost"`) {
			t.Fatalf("the newest log says %q", logs[0]["error"])
		}
	})
}
