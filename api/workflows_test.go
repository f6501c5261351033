package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

func TestWorkflows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	botID := b.createBot(t, nil)["uuid"].(string)
	scope := func(m map[string]any) map[string]any {
		m["project_id"], m["bot_id"] = b.project.ID, botID
		return m
	}
	webhook := []map[string]any{{"type": "webhook", "params": map[string]any{"url": "https://hooks.example.com/deals"}}}
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: scope(map[string]any{
		"name": "Tell sales", "trigger_type": "event", "trigger_event": "deal.won", "workflow_id": "stale-id-from-another-call",
		"conditions": []map[string]any{{"field": "data.value", "operator": "gte", "value": 1000}}, "actions": webhook})})
	expect(t, res, http.StatusOK, "")
	var created struct{ Workflow map[string]any }
	res.Decode(t, &created)
	wf := created.Workflow
	if wf["is_active"] != true || wf["status"] != "active" || wf["trigger_event"] != "deal.won" || wf["uuid"] == "stale-id-from-another-call" {
		t.Fatalf("created %v", wf)
	}
	id := wf["uuid"].(string)

	res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: scope(map[string]any{
		"name": "Morning digest", "trigger_type": "schedule", "trigger_config": map[string]any{"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin"},
		"actions": []map[string]any{{"type": "send_message", "params": map[string]any{"message": "Good morning"}}}})})
	expect(t, res, http.StatusOK, "")

	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"NameRequired", map[string]any{"actions": webhook}, "name"},
		{"UnknownEvent", map[string]any{"name": "x", "trigger_type": "event", "trigger_event": "deal.exploded", "actions": webhook}, "trigger_event"},
		{"BadCron", map[string]any{"name": "x", "trigger_type": "schedule", "trigger_config": map[string]any{"cron": "61 * * * *"}, "actions": webhook}, "trigger_config.cron"},
		{"UnknownAction", map[string]any{"name": "x", "actions": []map[string]any{{"type": "teleport", "params": map[string]any{}}}}, "actions[0].type"},
		{"WebhookURL", map[string]any{"name": "x", "actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": "ftp://x"}}}}, "actions[0].params.url"},
		{"Operator", map[string]any{"name": "x", "actions": webhook, "conditions": []map[string]any{{"field": "data.x", "operator": "like", "value": 1}}}, "conditions[0].operator"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: scope(tt.body)})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}

	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/workflow/update", Key: b.key, Body: scope(map[string]any{"name": "x"})})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	expectField(t, res, "workflow_id")
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/workflow/update", Key: b.key, Body: scope(map[string]any{"workflow_id": id, "name": "Tell sales", "is_active": false})})
	expect(t, res, http.StatusOK, "")
	if res.JSON(t)["workflow"].(map[string]any)["is_active"] != false {
		t.Fatalf("update %s", res.Body)
	}

	q := "?project_id=" + b.project.ID + "&bot_id=" + botID
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/read" + q + "&workflow_id=" + id, Key: b.key}), http.StatusOK, "")
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/readall" + q, Key: b.key})
	expect(t, res, http.StatusOK, "")
	if res.JSON(t)["total"] != float64(2) {
		t.Fatalf("readall %s", res.Body)
	}
	otherBot := b.createBot(t, nil)["id"].(string)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/read?project_id=" + b.project.ID + "&bot_id=" + otherBot + "&workflow_id=" + id, Key: b.key}), http.StatusNotFound, "workflow_not_found")
	expect(t, b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/workflow/delete" + q + "&workflow_id=" + id, Key: b.key}), http.StatusOK, "")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/read" + q + "&workflow_id=" + id, Key: b.key}), http.StatusNotFound, "workflow_not_found")

	var types []string
	for _, ty := range eventTypes(streamEvents(t, "", b.project.ID, 6)) {
		if ty[:8] == "workflow" {
			types = append(types, ty)
		}
	}
	if !slices.Equal(types, []string{"workflow.created", "workflow.created", "workflow.updated", "workflow.deleted"}) {
		t.Fatalf("workflow events %v", types)
	}
}
