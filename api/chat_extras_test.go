package api_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// Votes (one per voter, replaced or withdrawn), rename, a chat's default mode, and the deletion of
// a message, as BoostGPT's clients call them.
func TestChatVotesRenameModeAndMessageDelete(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	a := b.chatBot(t, map[string]any{"provider_key": "k"})
	_, chat := a.chat(t, map[string]any{"message": "hello"})
	chatID := chat["chat_id"].(string)
	msg := chat["agent"].(map[string]any)["uuid"].(string)
	vote := func(voter, typ string) map[string]any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/message/vote", Key: b.key,
			Body: a.body(map[string]any{"message_id": msg, "voter_id": voter, "vote_type": typ})})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["vote"].(map[string]any)
	}
	for _, tt := range []struct {
		voter, vote string
		mine        any
		up, down    float64
	}{
		{"ana", "up", "up", 1, 0},
		{"bo", "up", "up", 2, 0},
		{"ana", "down", "down", 1, 1}, // changed
		{"ana", "down", nil, 1, 0},    // the same again withdraws
		{"bo", "none", nil, 0, 0},     // withdrawn
		{"bo", "down", "down", 0, 1},
	} {
		got := vote(tt.voter, tt.vote)
		if got["vote_type"] != tt.mine || got["upvotes"] != tt.up || got["downvotes"] != tt.down {
			t.Fatalf("%s votes %s: %v", tt.voter, tt.vote, got)
		}
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/chat/message/vote-status?" + a.query("&message_id="+msg+"&voter_id=bo"), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if st := res.JSON(t)["vote"].(map[string]any); st["vote_type"] != "down" || st["downvotes"] != float64(1) {
		t.Fatalf("status %v", st)
	}
	// BoostGPT's client asks without project_id: the agent's own project is meant.
	res = b.client.Do(apitest.Request{Method: "GET", Key: b.key,
		Path: "/v1/bot/chat/message/vote-status?bot_id=" + a.botID + "&message_id=" + msg + "&voter_id=bo"})
	expect(t, res, http.StatusOK, "")
	if st := res.JSON(t)["vote"].(map[string]any); st["vote_type"] != "down" {
		t.Fatalf("status without project_id %v", st)
	}
	conv := a.history(t, chatID, "")["conversation"].([]any)
	if m := conv[1].(map[string]any); m["downvotes"] != float64(1) || m["upvotes"] != float64(0) {
		t.Fatalf("the message record %v", m)
	}
	for _, body := range []map[string]any{
		{"message_id": msg, "voter_id": "ana", "vote_type": "sideways"},
		{"message_id": msg, "vote_type": "up"},
		{"voter_id": "ana", "vote_type": "up"},
	} {
		res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/message/vote", Key: b.key, Body: a.body(body)})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	}
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/message/vote", Key: b.key,
		Body: a.body(map[string]any{"message_id": "nope", "voter_id": "ana", "vote_type": "up"})})
	expect(t, res, http.StatusNotFound, "")

	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/rename", Key: b.key, Body: a.body(map[string]any{"chat_id": chatID, "name": "Greetings"})})
	expect(t, res, http.StatusOK, "")
	if c := res.JSON(t)["chat"].(map[string]any); c["title"] != "Greetings" {
		t.Fatalf("renamed %v", c)
	}
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/mode", Key: b.key, Body: a.body(map[string]any{"chat_id": chatID, "mode": "edit"})})
	expect(t, res, http.StatusOK, "")
	fake.Set(providertest.Behavior{Reply: "fn b()"})
	_, edited := a.chat(t, map[string]any{"chat_id": chatID, "message": "rename it to b:\n```\nfn a()\n```"})
	if edited["type"] != "edit" || edited["reply"] != "fn b()" {
		t.Fatalf("the chat's mode did not apply: %v", edited)
	}
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/mode", Key: b.key, Body: a.body(map[string]any{"chat_id": chatID, "mode": "loud"})})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")

	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/chat/message/delete?" + a.query("&message_id="+msg), Key: b.key})
	expect(t, res, http.StatusOK, "")
	for _, m := range a.history(t, chatID, "")["conversation"].([]any) {
		if m.(map[string]any)["uuid"] == msg {
			t.Fatal("the deleted message is still in the history")
		}
	}
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/chat/message/delete?" + a.query("&message_id="+msg), Key: b.key})
	expect(t, res, http.StatusNotFound, "")
	other, _ := b.newTenant(t)
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/chat/rename", Key: other, Body: a.body(map[string]any{"chat_id": chatID, "name": "x"})})
	if res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
		t.Fatalf("another account renamed the chat: %d", res.Status)
	}
	expectEvents(t, b, 15, "chat.updated", "chat.message.updated", "chat.message.deleted")
}

// expectEvents fails unless the project's first want events include every type of types.
func expectEvents(t *testing.T, b *bundle, want int, types ...string) {
	t.Helper()
	got := eventTypes(streamEvents(t, "", b.project.ID, want))
	for _, typ := range types {
		if !slices.Contains(got, typ) {
			t.Fatalf("no %s among %v", typ, got)
		}
	}
}

// Contacts: created (the same email is the same contact), searched, changed, and deleted with
// their notes.
func TestContacts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	create := func(body map[string]any) map[string]any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts", Key: b.key, Body: a.body(body)})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["contact"].(map[string]any)
	}
	ada := create(map[string]any{"name": "Ada Lovelace", "email": "Ada@Example.com", "company": "Engines Ltd"})
	again := create(map[string]any{"email": "ada@example.com", "phone": "+44 1"})
	if again["uuid"] != ada["uuid"] || again["phone"] != "+44 1" || again["name"] != "Ada Lovelace" || ada["email"] != "ada@example.com" {
		t.Fatalf("the same email made %v then %v", ada, again)
	}
	create(map[string]any{"name": "Grace Hopper", "company": "Navy"})
	for _, tt := range []struct {
		query string
		want  int
	}{{"ada", 1}, {"ENGINES", 1}, {"o", 2}, {"nobody", 0}, {"(", 0}} {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/search?" + a.query("&query="+url.QueryEscape(tt.query)), Key: b.key})
		expect(t, res, http.StatusOK, "")
		if got := res.JSON(t)["total"]; got != float64(tt.want) {
			t.Errorf("search %q: %v contacts, want %d", tt.query, got, tt.want)
		}
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/search?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts", Key: b.key, Body: a.body(map[string]any{"email": "not an email"})})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts", Key: b.key, Body: a.body(map[string]any{"name": nil})})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")

	id := ada["uuid"].(string)
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/crm/contacts/" + id, Key: b.key, Body: a.body(map[string]any{"company": "Analytical", "name": nil})})
	expect(t, res, http.StatusOK, "")
	if c := res.JSON(t)["contact"].(map[string]any); c["company"] != "Analytical" || c["name"] != "Ada Lovelace" {
		t.Fatalf("updated %v", c)
	}
	t.Run("Notes", func(t *testing.T) {
		note := func(body map[string]any, status int, code string) map[string]any {
			t.Helper()
			res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts/" + id + "/notes", Key: b.key, Body: body})
			expect(t, res, status, code)
			if status != http.StatusOK {
				return nil
			}
			return res.JSON(t)["note"].(map[string]any)
		}
		first := note(a.body(map[string]any{"content": "Asked about the engine."}), http.StatusOK, "")
		// As BoostGPT's client sends it: no project_id.
		second := note(map[string]any{"bot_id": a.botID, "content": " Called back. ", "type": "call"}, http.StatusOK, "")
		if first["type"] != "note" || first["contact_id"] != id || second["type"] != "call" || second["content"] != "Called back." {
			t.Fatalf("notes %v, %v", first, second)
		}
		for name, body := range map[string]map[string]any{
			"NoContent":   {"type": "call"},
			"Blank":       {"content": "   "},
			"TooLong":     {"content": strings.Repeat("n", 10001)},
			"TypeTooLong": {"content": "x", "type": strings.Repeat("t", 41)},
			"NotAString":  {"content": 5},
		} {
			t.Run(name, func(t *testing.T) { note(a.body(body), http.StatusUnprocessableEntity, "invalid_field") })
		}
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts/no-such-contact/notes", Key: b.key, Body: a.body(map[string]any{"content": "x"})})
		expect(t, res, http.StatusNotFound, "contact_not_found")

		res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/" + id + "?" + a.query(""), Key: b.key})
		expect(t, res, http.StatusOK, "")
		c := res.JSON(t)["contact"].(map[string]any)
		notes, _ := c["notes"].([]any)
		if c["notes_total"] != float64(2) || len(notes) != 2 || notes[0].(map[string]any)["uuid"] != second["uuid"] || notes[1].(map[string]any)["uuid"] != first["uuid"] {
			t.Fatalf("the contact lists its notes newest first: %v", c)
		}
		res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/" + id + "/notes?" + a.query("&per_page=1&page=2"), Key: b.key})
		expect(t, res, http.StatusOK, "")
		if m := res.JSON(t); m["total"] != float64(2) || len(m["notes"].([]any)) != 1 || m["notes"].([]any)[0].(map[string]any)["uuid"] != first["uuid"] {
			t.Fatalf("second page of notes %v", m)
		}
	})
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/crm/contacts/" + id + "?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/" + id + "?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusNotFound, "")
	if n, err := b.db.Collection("contact_notes").CountDocuments(context.Background(), map[string]any{"contact_id": id}); err != nil || n != 0 {
		t.Fatalf("%d notes outlived their contact (%v)", n, err)
	}
	other, _ := b.newTenant(t)
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/search?" + a.query("&query=grace"), Key: other})
	if res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
		t.Fatalf("another account searched the contacts: %d", res.Status)
	}
	expectEvents(t, b, 6, "contact.created", "contact.updated", "contact.deleted")
}

// Pipelines and stages: a second pipeline with its own stages, deals placed and moved in it,
// deals filtered by pipeline, stages changed and deleted with their deals moved.
func TestPipelines(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	do := func(method, path string, body map[string]any, status int) map[string]any {
		t.Helper()
		req := apitest.Request{Method: method, Path: path, Key: b.key}
		if body != nil {
			req.Body = a.body(body)
		} else {
			req.Path += "?" + a.query("")
		}
		res := b.client.Do(req)
		expect(t, res, status, "")
		return res.JSON(t)
	}
	list := do("GET", "/v1/bot/crm/pipelines", nil, 200)
	if list["total"] != float64(1) {
		t.Fatalf("pipelines %v", list)
	}
	def := list["pipelines"].([]any)[0].(map[string]any)
	if def["is_default"] != true || len(def["stages"].([]any)) != 6 {
		t.Fatalf("default pipeline %v", def)
	}
	p := do("POST", "/v1/bot/crm/pipelines", map[string]any{"name": "Partners", "stages": []any{
		map[string]any{"name": "Intro", "probability": "20"}, map[string]any{"name": "Signed", "probability": 80}}}, 200)["pipeline"].(map[string]any)
	pid := p["uuid"].(string)
	stages := p["stages"].([]any)
	if len(stages) != 4 || stages[0].(map[string]any)["name"] != "Intro" || stages[3].(map[string]any)["name"] != "Lost" {
		t.Fatalf("stages %v", stages)
	}
	intro := stages[0].(map[string]any)["uuid"].(string)

	inP := do("POST", "/v1/bot/crm/deals", map[string]any{"title": "Reseller", "pipeline_id": pid}, 200)["deal"].(map[string]any)
	if inP["stage"].(map[string]any)["uuid"] != intro {
		t.Fatalf("the new deal is in %v, want Intro", inP["stage"])
	}
	won := do("PUT", "/v1/bot/crm/deals/"+inP["uuid"].(string), map[string]any{"status": "won"}, 200)["deal"].(map[string]any)
	if st := won["stage"].(map[string]any); st["name"] != "Won" || st["pipeline_id"] != pid {
		t.Fatalf("won in %v, want the Partners Won stage", st)
	}
	do("POST", "/v1/bot/crm/deals", map[string]any{"title": "Direct"}, 200)
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?" + a.query("&pipeline_id="+pid), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if n := res.JSON(t)["total"]; n != float64(1) {
		t.Fatalf("%v deals in the pipeline, want 1", n)
	}

	st := do("POST", "/v1/bot/crm/pipelines/stages", map[string]any{"pipeline_id": pid, "name": "Pilot", "probability": "50"}, 200)["stage"].(map[string]any)
	sid := st["uuid"].(string)
	do("PUT", "/v1/bot/crm/pipelines/stages/"+sid, map[string]any{"name": "Trial", "probability": 60}, 200)
	moved := do("PUT", "/v1/bot/crm/deals/"+inP["uuid"].(string), map[string]any{"stage": "Trial"}, 200)["deal"].(map[string]any)
	if moved["stage"].(map[string]any)["uuid"] != sid {
		t.Fatalf("moved to %v", moved["stage"])
	}
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/crm/pipelines/stages/" + sid + "?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusConflict, "stage_in_use")
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/crm/pipelines/" + pid + "?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusConflict, "pipeline_in_use")
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/crm/pipelines/stages/" + sid + "?" + a.query("&move_deals_to_stage_id="+intro), Key: b.key})
	expect(t, res, http.StatusOK, "")
	deal := do("GET", "/v1/bot/crm/deals/"+inP["uuid"].(string), nil, 200)["deal"].(map[string]any)
	if deal["stage"].(map[string]any)["uuid"] != intro {
		t.Fatalf("after the stage's deletion the deal is in %v", deal["stage"])
	}
	lost := stages[3].(map[string]any)["uuid"].(string)
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/crm/pipelines/stages/" + lost + "?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusConflict, "stage_required")

	do("PUT", "/v1/bot/crm/deals/"+inP["uuid"].(string), map[string]any{"pipeline_id": def["uuid"]}, 200)
	do("PUT", "/v1/bot/crm/pipelines/"+pid, map[string]any{"name": "Resellers"}, 200)
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/crm/pipelines/" + def["uuid"].(string), Key: b.key, Body: a.body(map[string]any{"name": "x"})})
	expect(t, res, http.StatusConflict, "default_pipeline")
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/crm/pipelines/" + pid + "?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if n := do("GET", "/v1/bot/crm/pipelines", nil, 200)["total"]; n != float64(1) {
		t.Fatalf("%v pipelines after the deletion", n)
	}
	for _, body := range []map[string]any{{"name": ""}, {"name": "x", "stages": []any{map[string]any{"name": "a", "probability": 101}}}} {
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/pipelines", Key: b.key, Body: a.body(body)})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	}
	expectEvents(t, b, 13, "pipeline.created", "stage.created", "stage.updated", "stage.deleted", "pipeline.updated", "pipeline.deleted")
}

// A pipeline's stage names are unique, case-insensitively, and Won and Lost are its closing
// stages: creating a pipeline, adding a stage or renaming one to a name it has is 409
// stage_exists naming the field, and nothing is created.
func TestStageNamesAreUnique(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	send := func(method, path string, body map[string]any) *apitest.Response {
		t.Helper()
		return b.client.Do(apitest.Request{Method: method, Path: path, Key: b.key, Body: a.body(body)})
	}
	stages := func(names ...string) []any {
		var out []any
		for _, n := range names {
			out = append(out, map[string]any{"name": n})
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		stages []any
		field  string
	}{
		{"reserved Won", stages("Intro", "Won"), "stages[1].name"},
		{"reserved lost in lower case", stages("lost"), "stages[0].name"},
		{"duplicate", stages("Intro", "Demo", "intro "), "stages[2].name"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := send("POST", "/v1/bot/crm/pipelines", map[string]any{"name": tt.name, "stages": tt.stages})
			expect(t, res, http.StatusConflict, "stage_exists")
			details := res.JSON(t)["error"].(map[string]any)["details"].([]any)
			if details[0].(map[string]any)["field"] != tt.field {
				t.Fatalf("details %v, want the field %s", details, tt.field)
			}
		})
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/pipelines?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if n := res.JSON(t)["total"]; n != float64(1) {
		t.Fatalf("%v pipelines after refused creations, want the default alone", n)
	}

	res = send("POST", "/v1/bot/crm/pipelines", map[string]any{"name": "Partners", "stages": stages("Intro", "Demo")})
	expect(t, res, http.StatusOK, "")
	p := res.JSON(t)["pipeline"].(map[string]any)
	demo := p["stages"].([]any)[1].(map[string]any)["uuid"].(string)
	expect(t, send("POST", "/v1/bot/crm/pipelines/stages", map[string]any{"pipeline_id": p["uuid"], "name": "WON"}), http.StatusConflict, "stage_exists")
	expect(t, send("PUT", "/v1/bot/crm/pipelines/stages/"+demo, map[string]any{"name": "intro"}), http.StatusConflict, "stage_exists")
	expect(t, send("PUT", "/v1/bot/crm/pipelines/stages/"+demo, map[string]any{"name": "Lost"}), http.StatusConflict, "stage_exists")
	expect(t, send("PUT", "/v1/bot/crm/pipelines/stages/"+demo, map[string]any{"name": "demo"}), http.StatusOK, "")
	res = send("POST", "/v1/bot/crm/deals", map[string]any{"title": "Closed", "pipeline_id": p["uuid"], "stage": "Won"})
	expect(t, res, http.StatusOK, "")
	if st := res.JSON(t)["deal"].(map[string]any)["stage"].(map[string]any); st["name"] != "Won" || st["pipeline_id"] != p["uuid"] {
		t.Fatalf("a deal created in stage Won is in %v", st)
	}
}
