package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// createBot creates an agent in the bundle's project and returns its body.
func (b *bundle) createBot(t testing.TB, body map[string]any) map[string]any {
	t.Helper()
	req := map[string]any{"project_id": b.project.ID, "name": "Support", "model": "gpt-4o-mini"}
	for k, v := range body {
		req[k] = v
	}
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: b.key, Body: req})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["bot"].(map[string]any)
}

func TestCreateBot(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t.Run("Defaults", func(t *testing.T) {
		bot := b.createBot(t, map[string]any{"instruction": "Be kind.", "max_reply_tokens": nil, "top": nil, "status": nil})
		for field, want := range map[string]any{"name": "Support", "model": "gpt-4o-mini", "instruction": "Be kind.", "status": float64(1),
			"top": float64(5), "max_reply_tokens": "1024", "reasoning_type": "auto", "memory": float64(1), "provider_key": ""} {
			if bot[field] != want {
				t.Errorf("%s = %v, want %v", field, bot[field], want)
			}
		}
		if bot["id"] == bot["uuid"] || bot["id"] == "" {
			t.Errorf("id %v uuid %v", bot["id"], bot["uuid"])
		}
		if seo := bot["branding"].(map[string]any)["seo"].(map[string]any); seo["title"] != "Support" {
			t.Errorf("branding.seo %v", seo)
		}
	})
	t.Run("StatusAsNumericString", func(t *testing.T) {
		if bot := b.createBot(t, map[string]any{"status": "0"}); bot["status"] != float64(0) {
			t.Fatalf("status %v", bot["status"])
		}
	})
	tests := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"NameRequired", map[string]any{"project_id": b.project.ID, "model": "m"}, "name"},
		{"ModelRequired", map[string]any{"project_id": b.project.ID, "name": "n"}, "model"},
		{"StatusOutOfRange", map[string]any{"project_id": b.project.ID, "name": "n", "model": "m", "status": 2}, "status"},
		{"StatusNotANumber", map[string]any{"project_id": b.project.ID, "name": "n", "model": "m", "status": "on"}, "status"},
		{"ProjectRequired", map[string]any{"name": "n", "model": "m"}, "project_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: b.key, Body: tt.body})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}
	t.Run("AnotherAccountsProject", func(t *testing.T) {
		_, other := b.newTenant(t)
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: b.key,
			Body: map[string]any{"project_id": other.ID, "name": "n", "model": "m"}})
		expect(t, res, http.StatusNotFound, "project_not_found")
	})
}

// expectField fails unless the error's details name field.
func expectField(t *testing.T, res *apitest.Response, field string) {
	t.Helper()
	var body struct {
		Error struct{ Details []struct{ Field string } }
	}
	res.Decode(t, &body)
	for _, d := range body.Error.Details {
		if d.Field == field {
			return
		}
	}
	t.Fatalf("error does not name %s: %s", field, res.Body)
}

func TestBotReadUpdateDelete(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bot := b.createBot(t, nil)
	id, uuid := bot["id"].(string), bot["uuid"].(string)
	q := "?project_id=" + b.project.ID + "&bot_id="

	for _, ref := range []string{id, uuid} {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read" + q + ref, Key: b.key})
		expect(t, res, http.StatusOK, "")
	}
	res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key, Body: map[string]any{
		"project_id": b.project.ID, "bot_id": uuid, "top": "7", "max_reply_tokens": 2048, "reasoning_type": "agent",
		"provider_key": "sk-secret-value-1234", "branding": map[string]any{"theme": "dark", "logo": map[string]any{"enabled": true}},
		"title": "a field of another call", "type": "text"}})
	expect(t, res, http.StatusOK, "")
	got := res.JSON(t)["bot"].(map[string]any)
	if got["top"] != float64(7) || got["max_reply_tokens"] != "2048" || got["reasoning_type"] != "agent" || got["provider_key"] != "****1234" {
		t.Fatalf("updated bot %v", got)
	}
	branding := got["branding"].(map[string]any)
	if branding["theme"] != "dark" || branding["placeholder"] != "Ask me anything..." || branding["logo"].(map[string]any)["enabled"] != true {
		t.Fatalf("branding did not merge: %v", branding)
	}
	for _, tt := range []struct {
		field string
		value any
	}{{"top", 0}, {"top", 51}, {"reasoning_type", "deep"}, {"max_reply_tokens", 0}, {"name", ""}, {"avatar", "ftp://x"}, {"subdomain", "Not Valid"}, {"memory", 3}} {
		res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key, Body: map[string]any{"project_id": b.project.ID, "bot_id": id, tt.field: tt.value}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		expectField(t, res, tt.field)
	}
	many := make([]string, 21)
	for i := range many {
		many[i] = fmt.Sprintf("https://shop%d.example.com", i)
	}
	for _, tt := range []struct {
		origins []string
		field   string
	}{
		{[]string{"shop.example.com"}, "allowed_origins[0]"}, {[]string{"https://shop.example.com", "https://shop.example.com/path"}, "allowed_origins[1]"},
		{[]string{"javascript:alert(1)"}, "allowed_origins[0]"}, {many, "allowed_origins"},
	} {
		res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key, Body: map[string]any{"project_id": b.project.ID, "bot_id": id, "allowed_origins": tt.origins}})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		expectField(t, res, tt.field)
	}

	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/readall?project_id=" + b.project.ID + "&per_page=1", Key: b.key})
	expect(t, res, http.StatusOK, "")
	if m := res.JSON(t); m["total"] != float64(1) || len(m["bots"].([]any)) != 1 {
		t.Fatalf("readall %s", res.Body)
	}

	otherKey, _ := b.newTenant(t)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read" + q + id, Key: otherKey}), http.StatusNotFound, "project_not_found")

	expect(t, b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/delete" + q + id, Key: b.key, ContentType: "application/json"}), http.StatusOK, "")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read" + q + id, Key: b.key}), http.StatusNotFound, "bot_not_found")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals" + q + id, Key: b.key}), http.StatusNotFound, "bot_not_found")

	evs := streamEvents(t, "", b.project.ID, 3)
	if types := eventTypes(evs); !slices.Equal(types, []string{"bot.created", "bot.updated", "bot.deleted"}) {
		t.Fatalf("events %v", types)
	}
	if evs[0].BotID != id || evs[0].ProjectID != b.project.ID {
		t.Fatalf("envelope %+v", evs[0])
	}
}
