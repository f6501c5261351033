package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// evalsAPI calls the eval dataset routes of one agent.
type evalsAPI struct {
	b   *bundle
	bot string
}

func (b *bundle) evalsAPI(t *testing.T) evalsAPI {
	t.Helper()
	return evalsAPI{b: b, bot: b.createBot(t, nil)["uuid"].(string)}
}

func (e evalsAPI) query(kv ...string) string {
	v := url.Values{"project_id": {e.b.project.ID}, "bot_id": {e.bot}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v.Encode()
}

func (e evalsAPI) create(t *testing.T, name string, cases []any) *apitest.Response {
	t.Helper()
	return e.b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/eval/dataset/create", Key: e.b.key,
		Body: map[string]any{"project_id": e.b.project.ID, "bot_id": e.bot, "name": name, "cases": cases}})
}

func (e evalsAPI) importJSONL(t *testing.T, name, jsonl string) *apitest.Response {
	t.Helper()
	return e.b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/eval/dataset/import?" + e.query("name", name), Key: e.b.key,
		Raw: []byte(jsonl), ContentType: "application/x-ndjson"})
}

func (e evalsAPI) get(t *testing.T, path string, status int, kv ...string) map[string]any {
	t.Helper()
	res := e.b.client.Do(apitest.Request{Method: "GET", Path: path + "?" + e.query(kv...), Key: e.b.key})
	expect(t, res, status, "")
	return res.JSON(t)
}

// problem is the first problem an error body names, as "field: problem".
func problem(t *testing.T, res *apitest.Response) string {
	t.Helper()
	var body struct {
		Error struct {
			Details []struct{ Field, Problem string }
		}
	}
	res.Decode(t, &body)
	if len(body.Error.Details) == 0 {
		t.Fatalf("no problem named: %s", res.Body)
	}
	return body.Error.Details[0].Field + ": " + body.Error.Details[0].Problem
}

func TestEvalDatasets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.evalsAPI(t)
	cases := []any{
		map[string]any{"input": "How long do returns take?", "expected_facts": []any{"30 days"}, "expected_source": "Returns policy"},
		map[string]any{"conversation": []any{map[string]any{"role": "user", "content": "Hi"}, map[string]any{"role": "assistant", "content": "Hello!"},
			map[string]any{"role": "user", "content": "Refund order A17"}},
			"expected_tool": map[string]any{"name": "refund", "arguments": map[string]any{"order": "A17", "$meta.x": 1}}, "graders": []any{"tool_call"}},
		map[string]any{"input": "Order id as JSON", "pattern": `^\{.*\}$`, "schema": map[string]any{"$schema": "https://json-schema.org/draft/2020-12/schema",
			"type": "object", "required": []any{"order_id"}}},
	}
	res := e.create(t, " Support basics ", cases)
	expect(t, res, http.StatusOK, "")
	created := res.JSON(t)["dataset"].(map[string]any)
	id := created["uuid"].(string)
	if created["name"] != "Support basics" || created["case_count"] != float64(3) {
		t.Fatalf("created = %v", created)
	}

	read := e.get(t, "/v1/bot/eval/dataset/read", http.StatusOK, "dataset_id", id)["dataset"].(map[string]any)
	got := read["cases"].([]any)
	if len(got) != 3 {
		t.Fatalf("cases = %v", got)
	}
	for i, want := range []string{"contains,cites_source", "tool_call", "regex,json_schema"} {
		var names []string
		for _, g := range got[i].(map[string]any)["graders"].([]any) {
			names = append(names, g.(string))
		}
		if strings.Join(names, ",") != want {
			t.Errorf("case %d graders = %v, want %s", i, names, want)
		}
	}
	args := got[1].(map[string]any)["expected_tool"].(map[string]any)["arguments"].(map[string]any)
	schema := got[2].(map[string]any)["schema"].(map[string]any)
	if args["order"] != "A17" || args["$meta.x"] != float64(1) || schema["$schema"] == nil {
		t.Fatalf("free-form JSON not kept: arguments %v, schema %v", args, schema)
	}

	expect(t, e.importJSONL(t, "Imported", `{"input":"Hi?","expected_answer":"Hello"}`+"\n\n"+`{"input":"Bye?","max_latency_ms":2000}`+"\n"), http.StatusOK, "")
	list := e.get(t, "/v1/bot/eval/dataset/readall", http.StatusOK)
	datasets := list["datasets"].([]any)
	if list["total"] != float64(2) || len(datasets) != 2 || datasets[0].(map[string]any)["uuid"] != id ||
		datasets[1].(map[string]any)["case_count"] != float64(2) || datasets[0].(map[string]any)["cases"] != nil {
		t.Fatalf("list = %v, want both datasets, oldest first, without their cases", list)
	}

	other := b.evalsAPI(t)
	other.get(t, "/v1/bot/eval/dataset/read", http.StatusNotFound, "dataset_id", id)
	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/eval/dataset/delete?" + other.query("dataset_id", id), Key: b.key})
	expect(t, res, http.StatusNotFound, "")

	res = b.client.Do(apitest.Request{Method: "DELETE", Path: "/v1/bot/eval/dataset/delete?" + e.query("dataset_id", id), Key: b.key})
	expect(t, res, http.StatusOK, "")
	e.get(t, "/v1/bot/eval/dataset/read", http.StatusNotFound, "dataset_id", id)
	if n := e.get(t, "/v1/bot/eval/dataset/readall", http.StatusOK)["total"]; n != float64(1) {
		t.Fatalf("total after delete = %v, want 1", n)
	}
}

func TestEvalDatasetRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.evalsAPI(t)
	ok := map[string]any{"input": "Hi?", "expected_answer": "Hello"}
	tests := []struct {
		name    string
		cases   []any
		status  int
		problem string
	}{
		{"invalid regex", []any{ok, map[string]any{"input": "q", "pattern": "(unclosed"}}, http.StatusUnprocessableEntity, "cases[1].pattern: is not a valid regular expression"},
		{"invalid schema", []any{map[string]any{"input": "q", "schema": map[string]any{"type": "nothing"}}}, http.StatusUnprocessableEntity, "cases[0].schema: is not a valid JSON schema"},
		{"unknown grader", []any{map[string]any{"input": "q", "expected_answer": "a", "graders": []any{"vibes"}}}, http.StatusUnprocessableEntity, "cases[0].graders[0]: must be one of"},
		{"grader without expectation", []any{map[string]any{"input": "q", "graders": []any{"exact"}}}, http.StatusUnprocessableEntity, "cases[0].expected_answer: is required by the exact grader"},
		{"no cases", []any{}, http.StatusUnprocessableEntity, "cases: at least one case is required"},
		{"case too large", []any{map[string]any{"input": strings.Repeat("x", 17<<10), "expected_answer": "a"}}, http.StatusUnprocessableEntity, "cases[0]: is"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.create(t, "Refused", tt.cases)
			expect(t, res, tt.status, "invalid_field")
			if got := problem(t, res); !strings.HasPrefix(got, tt.problem) {
				t.Fatalf("problem = %q, want %q...", got, tt.problem)
			}
		})
	}
	t.Run("too many cases", func(t *testing.T) {
		many := make([]any, 1001)
		for i := range many {
			many[i] = ok
		}
		expect(t, e.create(t, "Many", many), http.StatusRequestEntityTooLarge, "eval_dataset_too_large")
	})
	t.Run("no name", func(t *testing.T) {
		res := e.create(t, "  ", []any{ok})
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		if got := problem(t, res); got != "name: is required" {
			t.Fatalf("problem = %q", got)
		}
	})
	if n := e.get(t, "/v1/bot/eval/dataset/readall", http.StatusOK)["total"]; n != float64(0) {
		t.Fatalf("%v datasets stored from refused requests", n)
	}
}

func TestEvalDatasetImportRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.evalsAPI(t)
	good := `{"input":"Hi?","expected_answer":"Hello"}`
	tests := []struct {
		name, jsonl, problem string
	}{
		{"not JSON", good + "\n" + good + "\n{input: oops}\n", "line 3: is not a JSON object"},
		{"wrong type", good + "\n\n" + `{"input":"q","expected_facts":"one"}`, "line 3.expected_facts: must be"},
		{"invalid case", good + "\n" + `{"input":"q","pattern":"a(b"}`, "line 2.pattern: is not a valid regular expression"},
		{"no grader", `{"input":"q"}`, "line 1.graders: none applies"},
		{"line too large", `{"input":"` + strings.Repeat("x", 17<<10) + `","expected_answer":"a"}`, "line 1: is"},
		{"empty", "\n\n", "cases: at least one case is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.importJSONL(t, "Import", tt.jsonl)
			expect(t, res, http.StatusUnprocessableEntity, "")
			if got := problem(t, res); !strings.HasPrefix(got, tt.problem) {
				t.Fatalf("problem = %q, want %q...", got, tt.problem)
			}
		})
	}
	t.Run("too many lines", func(t *testing.T) {
		var sb strings.Builder
		for range 1001 {
			fmt.Fprintln(&sb, `{"input":"q","max_tokens":5}`)
		}
		expect(t, e.importJSONL(t, "Many", sb.String()), http.StatusRequestEntityTooLarge, "eval_dataset_too_large")
	})
	t.Run("no name", func(t *testing.T) {
		expect(t, e.importJSONL(t, "", good), http.StatusUnprocessableEntity, "invalid_field")
	})
	if n := e.get(t, "/v1/bot/eval/dataset/readall", http.StatusOK)["total"]; n != float64(0) {
		t.Fatalf("%v datasets stored from refused imports", n)
	}
}

// A dataset from chats: each answered end user's message a case, with the conversation before
// it and the last answer (an operator's correction after the agent's) expected; a chat of
// another agent is not found and nothing is stored.
func TestEvalDatasetFromChats(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"reasoning_type": "standard"})
	fake.Set(providertest.Behavior{Reply: "Returns take 30 days."})
	_, first := a.chat(t, map[string]any{"message": "How long do returns take?", "reasoning_mode": "standard"})
	chatID := first["chat_id"].(string)
	a.chat(t, map[string]any{"message": "And exchanges?", "chat_id": chatID, "reasoning_mode": "standard"})
	_, token := a.operator(t, "Maria")
	expect(t, a.inbox(t, token, "take", chatID, nil), http.StatusOK, "")
	expect(t, a.inbox(t, token, "reply", chatID, map[string]any{"content": "Exchanges take 14 days."}), http.StatusOK, "")

	e := evalsAPI{b: b, bot: a.botID}
	from := func(chatIDs ...string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/eval/dataset/from-chats", Key: b.key,
			Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "name": "From support", "chat_ids": chatIDs}})
	}
	other := b.chatBot(t, nil)
	_, elsewhere := other.chat(t, map[string]any{"message": "Hello?", "reasoning_mode": "standard"})
	expect(t, from(chatID, elsewhere["chat_id"].(string)), http.StatusNotFound, "chat_not_found")
	expect(t, from("no-such-chat"), http.StatusNotFound, "")
	if n := e.get(t, "/v1/bot/eval/dataset/readall", http.StatusOK)["total"]; n != float64(0) {
		t.Fatalf("%v datasets stored from refused chats", n)
	}

	res := from(chatID)
	expect(t, res, http.StatusOK, "")
	got := res.JSON(t)["dataset"].(map[string]any)["cases"].([]any)
	if len(got) != 2 {
		t.Fatalf("cases = %v, want one per answered message", got)
	}
	one, two := got[0].(map[string]any), got[1].(map[string]any)
	if one["input"] != "How long do returns take?" || one["expected_answer"] != "Returns take 30 days." || one["conversation"] != nil {
		t.Fatalf("first case = %v", one)
	}
	var turns []string
	for _, m := range two["conversation"].([]any) {
		turns = append(turns, m.(map[string]any)["role"].(string)+": "+m.(map[string]any)["content"].(string))
	}
	want := "user: How long do returns take? | assistant: Returns take 30 days. | user: And exchanges?"
	if strings.Join(turns, " | ") != want || two["expected_answer"] != "Exchanges take 14 days." || fmt.Sprint(two["graders"]) != "[exact]" {
		t.Fatalf("second case = %v, want the conversation %q and the operator's answer expected", two, want)
	}
}
