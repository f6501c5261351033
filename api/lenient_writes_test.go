package api_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// Every write endpoint takes a body the way BoostGPT's client sends it: optional fields null,
// empty enums, integer flags as numeric strings, and fields of other calls along.
func TestLenientWrites(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := workflowAPI{b.chatBot(t, nil)}
	// leftovers are what the client's shared body still carries from earlier calls.
	leftovers := map[string]any{"type": "text", "title": "Leftover", "source": "x", "forget_after": "never", "message": "old",
		"keywords": "old", "reasoning_mode": "", "chat_mode": "", "stream": false, "top": nil, "max_reply_tokens": nil}
	with := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range leftovers {
			out[k] = v
		}
		for k, v := range m {
			out[k] = v
		}
		return a.body(out)
	}
	_, chat := a.chat(t, map[string]any{"message": "hello"})
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Seed"}))
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/pipelines?" + a.query(""), Key: b.key})
	pipelineID := res.JSON(t)["pipelines"].([]any)[0].(map[string]any)["uuid"]
	deal = b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, a.body(map[string]any{"contact": map[string]any{"name": "Ana"}}))
	wf := a.create(t, map[string]any{"trigger_type": "manual", "description": "Kept", "actions": []map[string]any{{"type": "send_message", "params": map[string]any{"message": "x"}}}})
	src := a.ingest(t, map[string]any{"type": "text", "title": "Kept", "source": "Opening hours are nine to five."})
	do := func(method, path string, body map[string]any) map[string]any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: method, Path: path, Key: b.key, Body: body})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)
	}
	pipeline := do("POST", "/v1/bot/crm/pipelines", a.body(map[string]any{"name": "Resellers"}))["pipeline"].(map[string]any)
	stage := do("POST", "/v1/bot/crm/pipelines/stages", a.body(map[string]any{"pipeline_id": pipeline["uuid"], "name": "Intro", "probability": 10}))["stage"].(map[string]any)
	for _, tt := range []struct {
		name, method, path string
		body               map[string]any
	}{
		{"CreateBot", "POST", "/v1/bot/create", map[string]any{"name": "B2", "model": "gpt-4o-mini", "status": "1", "memory": "1", "top": "5",
			"max_reply_tokens": nil, "ratelimit_requests": nil, "reasoning_type": "", "branding": nil, "integrations": nil, "bot_id": nil}},
		{"UpdateBot", "PUT", "/v1/bot/update", map[string]any{"status": "1", "hide_branding": "0", "top": "3", "instruction": nil, "auto_approve_tools": "0"}},
		{"CreateSource", "POST", "/v1/bot/source/create", map[string]any{"title": "Note", "source": "Some text.", "tags": nil, "sync_frequency": nil, "description": nil}},
		{"Search", "POST", "/v1/bot/search", map[string]any{"keywords": "text", "top": "3", "source_ids": nil, "tags": nil}},
		{"Chat", "POST", "/v1/bot/chat", map[string]any{"message": "hi again", "chat_id": nil, "memory": nil, "top": "2", "model": nil, "provider_key": nil}},
		{"RenameChat", "PUT", "/v1/bot/chat/rename", map[string]any{"chat_id": chat["chat_id"], "name": "Renamed"}},
		{"ChatMode", "PUT", "/v1/bot/chat/mode", map[string]any{"chat_id": chat["chat_id"], "mode": "ask"}},
		{"Vote", "PUT", "/v1/bot/chat/message/vote", map[string]any{"message_id": chat["agent"].(map[string]any)["uuid"], "voter_id": "u", "voter_type": nil, "vote_type": "up"}},
		{"CreateDeal", "POST", "/v1/bot/crm/deals", map[string]any{"title": "Pilot", "value": "1200", "status": "", "stage": "", "currency": nil, "contact": nil}},
		{"UpdateDeal", "PUT", "/v1/bot/crm/deals/" + deal.UUID, map[string]any{"value": "99", "status": nil, "stage": "", "title": nil}},
		{"CreateContact", "POST", "/v1/bot/crm/contacts", map[string]any{"name": "Ana", "email": nil, "phone": nil}},
		{"CreateWorkflow", "POST", "/v1/bot/workflow/create", map[string]any{"name": "W2", "trigger_type": "manual", "conditions": nil, "trigger_config": nil,
			"is_active": nil, "actions": []any{map[string]any{"type": "send_message", "params": map[string]any{"message": "x"}}}}},
		{"UpdateWorkflow", "PUT", "/v1/bot/workflow/update", map[string]any{"workflow_id": wf, "description": nil, "is_active": nil, "conditions": nil}},
		{"RunWorkflow", "POST", "/v1/bot/workflow/run", map[string]any{"workflow_id": wf, "input": nil, "idempotency_key": nil}},
		{"Calendar", "PUT", "/v1/bot/calendar/settings", map[string]any{"slot_duration_minutes": "30", "timezone": nil, "is_enabled": nil}},
		{"UpdateContact", "PUT", "/v1/bot/crm/contacts/" + deal.Contact.UUID, map[string]any{"company": "Acme", "name": nil, "email": nil}},
		{"CreatePipeline", "POST", "/v1/bot/crm/pipelines", map[string]any{"name": "P2", "stages": nil}},
		{"CreateStage", "POST", "/v1/bot/crm/pipelines/stages", map[string]any{"pipeline_id": pipelineID, "name": "Extra", "probability": "30", "sort_order": nil}},
		{"UpdateSource", "PUT", "/v1/bot/source/update", map[string]any{"source_id": src["uuid"], "type": "text", "source": "Opening hours are nine to five.",
			"title": nil, "tags": nil, "sync_frequency": "", "description": nil}},
		{"SyncSource", "POST", "/v1/bot/source/sync", map[string]any{"source_id": src["id"], "tags": nil}},
		{"UpdatePipeline", "PUT", "/v1/bot/crm/pipelines/" + pipeline["uuid"].(string), map[string]any{"name": nil, "is_default": nil, "stages": nil}},
		{"UpdateStage", "PUT", "/v1/bot/crm/pipelines/stages/" + stage["uuid"].(string), map[string]any{"name": nil, "probability": "20", "sort_order": nil}},
		{"Reset", "POST", "/v1/bot/reset", map[string]any{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: tt.method, Path: tt.path, Key: b.key, Body: with(tt.body)})
			expect(t, res, http.StatusOK, "")
		})
	}

	// A null left what it stands for as it was.
	read := func(path string) map[string]any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: "GET", Path: path, Key: b.key})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)
	}
	if bot := read("/v1/bot/read?" + a.query(""))["bot"].(map[string]any); bot["status"] != float64(1) || bot["top"] != float64(3) {
		t.Errorf("bot after the update: status %v top %v", bot["status"], bot["top"])
	}
	if d := read("/v1/bot/crm/deals/" + deal.UUID + "?" + a.query(""))["deal"].(map[string]any); d["title"] != "Seed" {
		t.Errorf("deal after the update: title %v", d["title"])
	}
	if w := read("/v1/bot/workflow/read?" + a.query("&workflow_id="+wf))["workflow"].(map[string]any); w["description"] != "Kept" || w["is_active"] != true {
		t.Errorf("workflow after the update: description %v is_active %v", w["description"], w["is_active"])
	}
	if p := read("/v1/bot/crm/pipelines?" + a.query(""))["pipelines"].([]any); !slices.ContainsFunc(p, func(p any) bool {
		return p.(map[string]any)["name"] == "Resellers"
	}) {
		t.Errorf("pipelines after the update: %v", p)
	}

	// DELETE carries its parameters in the query, with a JSON content type and no body (the reset
	// above removed the first source).
	src = a.ingest(t, map[string]any{"type": "text", "title": "Gone", "source": "To be deleted."})
	contact := deal.Contact.UUID
	msg := chat["user"].(map[string]any)["uuid"].(string)
	for _, tt := range []struct{ name, path, query string }{
		{"Message", "/v1/bot/chat/message/delete", "&message_id=" + msg},
		{"Chat", "/v1/bot/chat/delete", "&chat_id=" + chat["chat_id"].(string)},
		{"Source", "/v1/bot/source/delete", "&source_id=" + src["uuid"].(string)},
		{"Deal", "/v1/bot/crm/deals/" + deal.UUID, ""},
		{"Contact", "/v1/bot/crm/contacts/" + contact, ""},
		{"Stage", "/v1/bot/crm/pipelines/stages/" + stage["uuid"].(string), ""},
		{"Pipeline", "/v1/bot/crm/pipelines/" + pipeline["uuid"].(string), ""},
		{"Workflow", "/v1/bot/workflow/delete", "&workflow_id=" + wf},
		{"Bot", "/v1/bot/delete", ""},
	} {
		t.Run("Delete"+tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "DELETE", Path: tt.path + "?" + a.query(tt.query), Key: b.key, ContentType: "application/json"})
			expect(t, res, http.StatusOK, "")
		})
	}
}

// Approving a paused run the way BoostGPT's client does, with the shared body's leftovers and
// nulls in the tool calls.
func TestLenientExecuteTool(t *testing.T) {
	t.Parallel()
	_, a, _, paused := pausedOnCreateDeal(t, "Created.")
	_, done := a.executeTool(t, map[string]any{"chat_id": paused["chat_id"], "executionId": nil, "approve": nil, "parameters": nil,
		"type": "text", "title": "Leftover", "message": "old", "reasoning_mode": "", "top": nil,
		"tool_calls": []map[string]any{{"tool_name": "create_deal", "parameters": nil, "id": nil, "approve": nil}}})
	if done == nil || done["isComplete"] != true {
		t.Fatalf("after approval %v", done)
	}
}
