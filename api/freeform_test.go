package api_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// oddKeys is free-form JSON whose keys MongoDB and FerretDB refuse or misread as document
// keys: dots, "$" first and in the middle, the empty string, unicode, at every depth.
func oddKeys() map[string]any {
	return map[string]any{
		"a.b": 1, "$where": "x", "a$b": true, "": "empty", "ключ.ü": "ünïcødé", "日本.語": 2.5,
		"x.y.z": map[string]any{"$gt": []any{1, "a.b", map[string]any{"": nil, "$": "$"}}, ".": "."},
	}
}

// asJSON is v as the JSON of a response decodes it.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if g, w := asJSON(t, got), asJSON(t, want); !reflect.DeepEqual(g, w) {
		t.Fatalf("%s:\n got %v\nwant %v", what, g, w)
	}
}

// Any JSON key round-trips through an agent's integrations and navigation links.
func TestAgentFreeformKeysRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	integrations := []any{oddKeys(), map[string]any{"a.b": 1}, map[string]any{}}
	links := []any{map[string]any{"label": "Docs", "url": "https://example.com", "data.track": map[string]any{"$id": "1"}}}
	res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{
		"integrations": integrations, "branding": map[string]any{"navigation": map[string]any{"links": links, "enabled": true}},
	})})
	expect(t, res, http.StatusOK, "")
	sameJSON(t, "integrations answered", res.JSON(t)["bot"].(map[string]any)["integrations"], integrations)

	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?project_id=" + b.project.ID + "&bot_id=" + a.botID, Key: b.key})
	expect(t, res, http.StatusOK, "")
	bot := res.JSON(t)["bot"].(map[string]any)
	sameJSON(t, "integrations read back", bot["integrations"], integrations)
	sameJSON(t, "links read back", bot["branding"].(map[string]any)["navigation"].(map[string]any)["links"], links)

	// An update of another field keeps them as they are.
	res = b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: a.body(map[string]any{"name": "Renamed"})})
	expect(t, res, http.StatusOK, "")
	sameJSON(t, "integrations after another update", res.JSON(t)["bot"].(map[string]any)["integrations"], integrations)
}

// Any JSON key round-trips through a workflow's condition values and webhook headers and body,
// and runs use them: an agent updated with such keys in its integrations starts the workflow
// whose condition compares them with its value (and not the one whose value differs), and the
// webhook reaches a real receiver with the headers and the rendered body, keys as written.
func TestWorkflowFreeformKeysRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	headers := map[string]any{"X.Y": "1", "$X": "{{data.name}}", "A$B": "3"}
	body := map[string]any{"user.id": "{{data.uuid}}", "$ref": "#/x", "": "empty", "ключ.ü": "ü",
		"nested.k": map[string]any{"a.b": "{{data.name}}", "$": []any{"{{data.uuid}}"}}}
	conditions := []any{
		map[string]any{"field": "data.integrations.0", "operator": "eq", "value": oddKeys()},
		map[string]any{"field": "data.name", "operator": "in", "value": []any{"Odd", map[string]any{"a.b": 1}}},
	}
	actions := []any{map[string]any{"type": "webhook", "params": map[string]any{"url": hook.URL + "/in", "headers": headers, "body": body}}}
	id := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "bot.updated", "conditions": conditions, "actions": actions})
	other := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "bot.updated", "actions": actions,
		"conditions": []any{map[string]any{"field": "data.integrations.0", "operator": "eq", "value": map[string]any{"a.b": 1}}}})

	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/workflow/read?" + a.query("&workflow_id="+id), Key: b.key})
	expect(t, res, http.StatusOK, "")
	w := res.JSON(t)["workflow"].(map[string]any)
	sameJSON(t, "conditions read back", w["conditions"], conditions)
	sameJSON(t, "params read back", w["actions"].([]any)[0].(map[string]any)["params"], actions[0].(map[string]any)["params"])

	res = b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key,
		Body: a.body(map[string]any{"name": "Odd", "integrations": []any{oddKeys()}})})
	expect(t, res, http.StatusOK, "")
	deadline := time.Now().Add(20 * time.Second)
	for len(hook.got()) == 0 && time.Now().Before(deadline) {
		waitABit()
	}
	got := hook.got()
	if len(got) != 1 {
		t.Fatalf("%d deliveries, want 1", len(got))
	}
	d := got[0]
	for name, want := range map[string]string{"X.Y": "1", "$X": "Odd", "A$B": "3"} {
		if v := d.header.Values(name); len(v) != 1 || v[0] != want {
			t.Errorf("header %s: %q, want %q", name, v, want)
		}
	}
	var delivered any
	if err := json.Unmarshal(d.body, &delivered); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "delivered body", delivered, map[string]any{"user.id": a.botID, "$ref": "#/x", "": "empty", "ключ.ü": "ü",
		"nested.k": map[string]any{"a.b": "Odd", "$": []any{a.botID}}})
	// Both workflows saw the one event; the one whose value differs did not run.
	if runs := a.runsOf(t, other); len(runs) != 0 {
		t.Fatalf("the workflow whose condition value differs ran: %v", runs)
	}
}
