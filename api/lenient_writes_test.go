package api_test

import (
	"net/http"
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
	wf := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{{"type": "send_message", "params": map[string]any{"message": "x"}}}})
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
		{"Reset", "POST", "/v1/bot/reset", map[string]any{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: tt.method, Path: tt.path, Key: b.key, Body: with(tt.body)})
			expect(t, res, http.StatusOK, "")
		})
	}
}
