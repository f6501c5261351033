package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// changedFields are the fields a version's changes name, in order.
func changedFields(v map[string]any) []string {
	var out []string
	for _, c := range v["changes"].([]any) {
		out = append(out, c.(map[string]any)["field"].(string))
	}
	return out
}

// versionTools are the names of the tools a version's config holds.
func versionTools(v map[string]any) []string {
	out := []string{}
	for _, t := range v["config"].(map[string]any)["tools"].([]any) {
		out = append(out, t.(map[string]any)["name"].(string))
	}
	return out
}

// Each change of an agent's tool (create, update, configure, toggle, delete) makes a version
// whose config holds the agent's tool set, credentials named but never given, and whose changes
// name the tool; a rollback makes the tools exactly what the earlier version had: a deleted
// tool made again as it was (its id, settings, operations and credentials, which its calls
// still carry), a tool added since removed.
func TestToolChangesMakeVersions(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	svc := startOrdersService(t)
	tl, v := toolsAPI{c}, versionsAPI{c}
	lookup := tl.create(t, map[string]any{"name": "Lookup", "type": "http", "config": map[string]any{
		"url": svc.URL + "/v2/orders/o-5", "method": "GET", "auth": map[string]any{"type": "header", "name": "X-Api-Key", "token": mcpSecret}}})
	id := lookup["id"].(string)
	second := v.version(t, "2")
	if got := changedFields(second); !slices.Equal(got, []string{"tools.Lookup"}) {
		t.Fatalf("version 2 changes %v", second["changes"])
	}
	if ch := second["changes"].([]any)[0].(map[string]any); ch["old"] != nil || ch["new"].(map[string]any)["id"] != id {
		t.Fatalf("version 2 change %v", ch)
	}
	state := second["config"].(map[string]any)["tools"].([]any)[0].(map[string]any)
	if state["type"] != "http" || state["config"].(map[string]any)["auth"].(map[string]any)["set"] != true {
		t.Fatalf("the tool in version 2 %v", state)
	}
	if raw, _ := json.Marshal(second); strings.Contains(string(raw), mcpSecret) {
		t.Fatalf("version 2 shows the tool's secret: %s", raw)
	}

	tl.do(t, http.MethodPut, "/"+id+"/configure", map[string]any{"settings": map[string]any{"timeout_seconds": 9}}, http.StatusOK, "")
	third := v.version(t, "3")
	ch := third["changes"].([]any)[0].(map[string]any)
	if changedFields(third)[0] != "tools.Lookup" || ch["old"].(map[string]any)["settings"].(map[string]any)["timeout_seconds"] != float64(30) ||
		ch["new"].(map[string]any)["settings"].(map[string]any)["timeout_seconds"] != float64(9) {
		t.Fatalf("version 3 changes %v", third["changes"])
	}
	asAtThree := tl.do(t, http.MethodGet, "/"+id, nil, http.StatusOK, "")["tool"]

	tl.do(t, http.MethodPost, "/"+id+"/toggle", map[string]any{"tool_name": "call", "active": false}, http.StatusOK, "")
	tl.create(t, map[string]any{"name": "Hook", "type": "http", "config": map[string]any{"url": svc.URL + "/v2/orders"}})
	tl.do(t, http.MethodDelete, "/"+id, nil, http.StatusOK, "")
	list := v.versions(t, "")
	if list["total"] != float64(6) {
		t.Fatalf("versions %v", list)
	}
	newest := list["versions"].([]any)[0].(map[string]any)
	if ch := newest["changes"].([]any); len(ch) != 1 || ch[0].(map[string]any)["field"] != "tools.Lookup" || ch[0].(map[string]any)["new"] != nil ||
		!slices.Equal(versionTools(newest), []string{"Hook"}) {
		t.Fatalf("version 6 %v", newest)
	}

	bot := v.do(t, http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 3}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["version"] != float64(7) || bot["published_version"] != float64(7) {
		t.Fatalf("after rollback %v", bot)
	}
	tools := tl.do(t, http.MethodGet, "", nil, http.StatusOK, "")["tools"].([]any)
	if len(tools) != 1 || !reflect.DeepEqual(tools[0], asAtThree) {
		t.Fatalf("the tools after the rollback %v, want only %v", tools, asAtThree)
	}
	if d := v.do(t, http.MethodGet, "/v1/bot/version/diff?from=3&to=7", nil, http.StatusOK, "")["diff"].(map[string]any); len(d["changes"].([]any)) != 0 {
		t.Fatalf("versions 3 and 7 differ: %v", d)
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("lookup__call", `{}`), {Reply: "Shipped."}}})
	if _, done := c.chat(t, map[string]any{"message": "Where is o-5?", "reasoning_mode": "agent"}); done == nil || done["reply"] != "Shipped." {
		t.Fatalf("the run after the rollback %v", done)
	}
	if got := svc.requests(); len(got) != 1 || got[0] != "GET /v2/orders/o-5 "+mcpSecret+" " {
		t.Fatalf("the service got %q", got)
	}
}

// Eight tools created at once make versions 2..9, no number missing or taken twice, each
// naming the tool its change added; the newest holds all eight.
func TestVersionsOfConcurrentToolChangesAreGapFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.versionedBot(t, map[string]any{"instruction": "Tools."})
	tl := toolsAPI{a.chatAPI}
	const n = 8
	list := a.changedAtOnce(t, n, func(i int) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/tool", Key: b.key, Body: tl.body(map[string]any{
			"name": fmt.Sprintf("Tool %d", i), "type": "http", "config": map[string]any{"url": "https://api.example.com/t"}})})
	}, func(i int) string { return fmt.Sprintf("tools.Tool %d", i) })
	if got := versionTools(list[0].(map[string]any)); len(got) != n {
		t.Fatalf("the newest version's tools %v", got)
	}
}

// A versioned agent's runs keep the published version's tools while the draft's change: the
// provider is offered the published set (a tool the draft deleted included, which is called
// with its credentials as they were) and the draft's test calls the draft's set. Publishing
// the draft makes its tools what everyone gets.
func TestVersionedAgentRunsWithThePublishedTools(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, map[string]any{"versioning": true})
	svc := startOrdersService(t)
	tl, v := toolsAPI{c}, versionsAPI{c}
	lookup := tl.create(t, map[string]any{"name": "Lookup", "type": "http", "config": map[string]any{
		"url": svc.URL + "/v2/orders/o-5", "method": "GET", "auth": map[string]any{"type": "header", "name": "X-Api-Key", "token": mcpSecret}}})
	published := v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")["bot"].(map[string]any)["published_version"]
	tl.do(t, http.MethodDelete, "/"+lookup["id"].(string), nil, http.StatusOK, "")
	tl.create(t, map[string]any{"name": "Hook", "type": "http", "config": map[string]any{"url": svc.URL + "/v2/orders"}})
	bot := v.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)
	if bot["published_version"] != published || bot["version"] != published.(float64)+2 {
		t.Fatalf("the agent %v", bot)
	}

	offered := func(t *testing.T, body map[string]any, script []providertest.Turn, reply string) []string {
		t.Helper()
		return offeredTools(t, c, fake, body, script, reply)
	}
	got := offered(t, map[string]any{"message": "Where is o-5?"}, []providertest.Turn{call("lookup__call", `{}`), {Reply: "Shipped."}}, "Shipped.")
	if !slices.Equal(got, []string{"lookup__call"}) {
		t.Fatalf("the published version's run was offered %v", got)
	}
	if calls := svc.requests(); len(calls) != 1 || calls[0] != "GET /v2/orders/o-5 "+mcpSecret+" " {
		t.Fatalf("the service got %q", calls)
	}
	if got := offered(t, map[string]any{"message": "Test", "version": "draft"}, []providertest.Turn{{Reply: "Draft."}}, "Draft."); !slices.Equal(got, []string{"hook__call"}) {
		t.Fatalf("the draft's run was offered %v", got)
	}
	v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	if got := offered(t, map[string]any{"message": "Now?"}, []providertest.Turn{{Reply: "Now."}}, "Now."); !slices.Equal(got, []string{"hook__call"}) {
		t.Fatalf("after publishing, the run was offered %v", got)
	}
}

// TestUnversionedAgentRunsWithTheVersionsTools: an agent without versioning publishes each change
// of its tools at once, but a run of an earlier version (a request's version, or a canary's) is
// offered that version's tools, not the agent's tools as they are.
func TestUnversionedAgentRunsWithTheVersionsTools(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, nil)
	svc := startOrdersService(t)
	tl, v := toolsAPI{c}, versionsAPI{c}
	tl.create(t, map[string]any{"name": "Lookup", "type": "http", "config": map[string]any{"url": svc.URL + "/v2/orders/o-5"}})
	first := v.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)["version"].(float64)
	tl.create(t, map[string]any{"name": "Hook", "type": "http", "config": map[string]any{"url": svc.URL + "/v2/orders"}})

	offered := func(t *testing.T, body map[string]any) []string {
		t.Helper()
		return offeredTools(t, c, fake, body, []providertest.Turn{{Reply: "Done."}}, "Done.")
	}
	if got := offered(t, map[string]any{"message": "Now?"}); !slices.Equal(got, []string{"hook__call", "lookup__call"}) {
		t.Fatalf("the agent's run was offered %v", got)
	}
	if got := offered(t, map[string]any{"message": "Then?", "version": first}); !slices.Equal(got, []string{"lookup__call"}) {
		t.Fatalf("a run of version %v was offered %v, want that version's tools", first, got)
	}
}

// offeredTools makes an agent run of the chat body, the provider answering by script until the
// reply, and returns the agent's own tools the provider was offered, sorted.
func offeredTools(t *testing.T, c chatAPI, fake *providertest.Server, body map[string]any, script []providertest.Turn, reply string) []string {
	t.Helper()
	before := len(fake.Requests())
	fake.Set(providertest.Behavior{Script: script})
	body["reasoning_mode"] = "agent"
	if _, done := c.chat(t, body); done == nil || done["reply"] != reply {
		t.Fatalf("run %v", done)
	}
	var names []string
	for _, r := range fake.Requests()[before:] {
		for _, n := range r.Tools {
			if strings.Contains(n, "__") && !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}
