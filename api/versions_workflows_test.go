package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/workflows"
)

// versionWorkflows are the names of the workflows a version's config holds.
func versionWorkflows(v map[string]any) []string {
	out := []string{}
	for _, w := range v["config"].(map[string]any)["workflows"].([]any) {
		out = append(out, w.(map[string]any)["name"].(string))
	}
	return out
}

// hookActions are the actions of a workflow that delivers {"v": mark} to hook.
func hookActions(hook *receiver, mark string) []map[string]any {
	return []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL, "body": map[string]any{"v": mark}}}}
}

// deliveredMarks are the marks of hook's deliveries from the from-th on, sorted.
func deliveredMarks(t *testing.T, hook *receiver, from int) []string {
	t.Helper()
	var out []string
	for _, d := range hook.got()[from:] {
		var body struct{ V string }
		if err := json.Unmarshal(d.body, &body); err != nil {
			t.Fatalf("delivery %s: %v", d.body, err)
		}
		out = append(out, body.V)
	}
	slices.Sort(out)
	return out
}

// fire creates a deal of the agent (deal.created), waits until the triggers have handled its
// event and every run it started has ended, and returns the marks delivered meanwhile.
func (a workflowAPI) fire(t *testing.T, hook *receiver, sentinel string, workflows ...string) []string {
	t.Helper()
	from := len(hook.got())
	ran := map[string]int{}
	for _, id := range workflows {
		ran[id] = len(a.runsOf(t, id))
	}
	a.b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Acme"}))
	a.settled(t, sentinel)
	for _, id := range workflows {
		runs := a.runsOf(t, id) // newest first
		for _, r := range runs[:len(runs)-ran[id]] {
			a.wait(t, r["uuid"].(string))
		}
	}
	return deliveredMarks(t, hook, from)
}

func (a workflowAPI) update(t *testing.T, id string, fields map[string]any) {
	t.Helper()
	fields["workflow_id"] = id
	expect(t, a.b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/workflow/update", Key: a.b.key, Body: a.body(fields)}), http.StatusOK, "")
}

func (a workflowAPI) read(t *testing.T, id string) any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/workflow/read?" + a.query("&workflow_id="+id), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["workflow"]
}

func (a workflowAPI) remove(t *testing.T, id string) {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/workflow/delete?" + a.query("&workflow_id="+id), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
}

// Each change of an agent's workflow (create, update, toggle, delete) makes a version whose
// config holds the agent's workflows and whose changes name the workflow; an agent without
// versioning fires each change at once, as before; a rollback makes the workflows exactly what
// the earlier version had: a deleted workflow made again as it was, one added since removed.
func TestWorkflowChangesMakeVersions(t *testing.T) {
	t.Parallel()
	b, a, v, hook := workflowsOf(t, nil)
	sentinel := a.create(t, map[string]any{"name": "Sentinel", "trigger_type": "event", "trigger_event": "contact.created",
		"actions": hookActions(newReceiver(t), "sentinel")})
	id := a.create(t, map[string]any{"name": "Notify", "trigger_type": "event", "trigger_event": "deal.created", "actions": hookActions(hook, "one")})
	third := v.version(t, "3")
	if got := changedFields(third); !slices.Equal(got, []string{"workflows.Notify"}) {
		t.Fatalf("version 3 changes %v", third["changes"])
	}
	added := third["changes"].([]any)[0].(map[string]any)
	state := added["new"].(map[string]any)
	if added["old"] != nil || state["id"] != id || state["trigger_event"] != "deal.created" || state["is_active"] != true ||
		state["revision"] == "" || state["digest"] == "" || !slices.Equal(versionWorkflows(third), []string{"Sentinel", "Notify"}) {
		t.Fatalf("version 3 %v", third)
	}

	a.update(t, id, map[string]any{"actions": hookActions(hook, "two")})
	changed := v.version(t, "4")["changes"].([]any)
	if len(changed) != 1 {
		t.Fatalf("version 4 changes %v", changed)
	}
	old, now := changed[0].(map[string]any)["old"].(map[string]any), changed[0].(map[string]any)["new"].(map[string]any)
	if changed[0].(map[string]any)["field"] != "workflows.Notify" || old["digest"] == now["digest"] || old["revision"] == now["revision"] {
		t.Fatalf("version 4 changes %v", changed)
	}
	if d := v.do(t, http.MethodGet, "/v1/bot/version/diff?from=3&to=4", nil, http.StatusOK, "")["diff"].(map[string]any); !reflect.DeepEqual(d["changes"], v.version(t, "4")["changes"]) {
		t.Fatalf("the diff of versions 3 and 4 %v", d)
	}
	if bot := v.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any); bot["version"] != float64(4) || bot["published_version"] != float64(4) {
		t.Fatalf("an agent without versioning after a workflow's update: version %v, published %v; want 4 published", bot["version"], bot["published_version"])
	}
	asAtFour := a.read(t, id)
	if got := a.fire(t, hook, sentinel, id); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("an agent without versioning fired %v after its update, want [two]", got)
	}

	a.update(t, id, map[string]any{"is_active": false})
	other := a.create(t, map[string]any{"name": "Other", "trigger_type": "event", "trigger_event": "deal.created", "actions": hookActions(hook, "other")})
	a.remove(t, id)
	list := v.versions(t, "")
	newest := list["versions"].([]any)[0].(map[string]any)
	if list["total"] != float64(7) || !slices.Equal(changedFields(newest), []string{"workflows.Notify"}) || newest["changes"].([]any)[0].(map[string]any)["new"] != nil ||
		!slices.Equal(versionWorkflows(newest), []string{"Sentinel", "Other"}) {
		t.Fatalf("versions %v", list)
	}
	if got := changedFields(list["versions"].([]any)[2].(map[string]any)); !slices.Equal(got, []string{"workflows.Notify"}) {
		t.Fatalf("the toggle's version changes %v", got)
	}

	bot := v.do(t, http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 4}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["version"] != float64(8) || bot["published_version"] != float64(8) {
		t.Fatalf("after rollback %v", bot)
	}
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/workflow/readall?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	all := objects(res.JSON(t)["workflows"])
	if len(all) != 2 || all[0]["uuid"] != sentinel || !reflect.DeepEqual(any(all[1]), asAtFour) {
		t.Fatalf("the workflows after the rollback %v, want the sentinel and %v", all, asAtFour)
	}
	if d := v.do(t, http.MethodGet, "/v1/bot/version/diff?from=4&to=8", nil, http.StatusOK, "")["diff"].(map[string]any); len(d["changes"].([]any)) != 0 {
		t.Fatalf("versions 4 and 8 differ: %v", d)
	}
	if got := a.fire(t, hook, sentinel, id, other); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("after the rollback the workflows fired %v, want [two]", got)
	}
	if runs := a.runsOf(t, other); len(runs) != 0 {
		t.Fatalf("the workflow the rollback removed ran: %v", runs)
	}
}

// A versioned agent's events fire the workflows of its published version while its draft
// changes them: a workflow the draft changed fires as published, one it added does not fire,
// one it deleted still fires; a manual run may name the version it runs. Publishing the draft
// makes its workflows what fires.
func TestVersionedAgentFiresThePublishedWorkflows(t *testing.T) {
	t.Parallel()
	_, a, v, hook := workflowsOf(t, map[string]any{"versioning": true})
	sentinel := a.create(t, map[string]any{"name": "Sentinel", "trigger_type": "event", "trigger_event": "contact.created",
		"actions": hookActions(newReceiver(t), "sentinel")})
	keep := a.create(t, map[string]any{"name": "Keep", "trigger_type": "event", "trigger_event": "deal.created", "actions": hookActions(hook, "one")})
	gone := a.create(t, map[string]any{"name": "Gone", "trigger_type": "event", "trigger_event": "deal.created", "actions": hookActions(hook, "gone")})
	published := v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")["bot"].(map[string]any)["published_version"].(float64)

	a.update(t, keep, map[string]any{"actions": hookActions(hook, "two")})
	added := a.create(t, map[string]any{"name": "New", "trigger_type": "event", "trigger_event": "deal.created", "actions": hookActions(hook, "new")})
	a.remove(t, gone)
	bot := v.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)
	if bot["published_version"] != published || bot["version"] != published+3 {
		t.Fatalf("the agent %v", bot)
	}
	if got := a.fire(t, hook, sentinel, keep, gone, added); !slices.Equal(got, []string{"gone", "one"}) {
		t.Fatalf("the published version fired %v, want [gone one]", got)
	}
	if runs := a.runsOf(t, added); len(runs) != 0 {
		t.Fatalf("the draft's new workflow ran: %v", runs)
	}

	for _, c := range []struct {
		version any
		want    string
	}{{"published", "one"}, {"draft", "two"}, {published, "one"}, {nil, "two"}} {
		from := len(hook.got())
		body := map[string]any{"workflow_id": keep}
		if c.version != nil {
			body["version"] = c.version
		}
		res, run := a.run(t, body)
		if run == nil {
			t.Fatalf("a manual run of version %v: %d %s", c.version, res.Status, res.Body)
		}
		a.wait(t, run["uuid"].(string))
		if got := deliveredMarks(t, hook, from); !slices.Equal(got, []string{c.want}) {
			t.Fatalf("a manual run of version %v delivered %v, want %s", c.version, got, c.want)
		}
	}
	if res, _ := a.run(t, map[string]any{"workflow_id": added, "version": "published"}); res.Status != http.StatusNotFound {
		t.Fatalf("a manual run of the published version's workflow it lacks: %d %s", res.Status, res.Body)
	}

	v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	if got := a.fire(t, hook, sentinel, keep, gone, added); !slices.Equal(got, []string{"new", "two"}) {
		t.Fatalf("after publishing, the workflows fired %v, want [new two]", got)
	}
}

// A versioned agent's runs start the workflows of the version they serve with run_workflow:
// a chat's run (the published version) runs a workflow the draft changed as published, one the
// draft deleted as it was, and is refused one the draft added; a draft's test call, and a chat
// a canary of the draft took, run the draft's. Publishing the draft makes its workflows what
// the runs start.
func TestVersionedAgentRunsThePublishedWorkflowsByTool(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, map[string]any{"versioning": true, "auto_approve_tools": 1})
	a, v := workflowAPI{c}, versionsAPI{c}
	hook := newReceiver(t)
	keep := a.create(t, map[string]any{"name": "Keep", "trigger_type": "manual", "actions": hookActions(hook, "one")})
	gone := a.create(t, map[string]any{"name": "Gone", "trigger_type": "manual", "actions": hookActions(hook, "gone")})
	v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	a.update(t, keep, map[string]any{"actions": hookActions(hook, "two")})
	added := a.create(t, map[string]any{"name": "New", "trigger_type": "manual", "actions": hookActions(hook, "new")})
	a.remove(t, gone)

	check := func(name string, body map[string]any, want, wantRefused []string) {
		t.Helper()
		got, refused := ranByTool(t, a, fake, hook, body, keep, gone, added)
		if !slices.Equal(got, want) || !slices.Equal(refused, wantRefused) {
			t.Fatalf("the %s version's run delivered %v and was refused %v; want %v and %v", name, got, refused, want, wantRefused)
		}
	}
	check("published", map[string]any{"message": "Run them"}, []string{"gone", "one"}, []string{added})
	check("draft", map[string]any{"message": "Run them", "version": "draft"}, []string{"new", "two"}, []string{gone})

	draft := v.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)["version"]
	v.update(t, map[string]any{"canary": map[string]any{"version": draft, "share": 0.9}})
	check("canary", map[string]any{"message": "Run them", "chat_id": chatOn(t, a.chatAPI, fake, draft)}, []string{"new", "two"}, []string{gone})
	v.update(t, map[string]any{"canary": map[string]any{"version": 0}})

	v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	check("newly published", map[string]any{"message": "Run them"}, []string{"new", "two"}, []string{gone})
}

// chatOn is a chat of the agent that began on version, which its canary serves: of up to 30
// new chats (a canary's share sends each to it by the hash of its id), the first that did.
func chatOn(t *testing.T, c chatAPI, fake *providertest.Server, version any) string {
	t.Helper()
	fake.Set(providertest.Behavior{Reply: "Hi."})
	for range 30 {
		res, chat := c.chat(t, map[string]any{"message": "Hello"})
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		if chat["agent"].(map[string]any)["version"] == version {
			return chat["chat_id"].(string)
		}
	}
	t.Fatalf("none of 30 new chats began on version %v", version)
	return ""
}

// An agent without versioning runs its workflows as they are with run_workflow, but a run of
// an earlier version (a request's version) runs that version's.
func TestUnversionedAgentRunsTheVersionsWorkflowsByTool(t *testing.T) {
	t.Parallel()
	_, c, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	a, v := workflowAPI{c}, versionsAPI{c}
	hook := newReceiver(t)
	keep := a.create(t, map[string]any{"name": "Keep", "trigger_type": "manual", "actions": hookActions(hook, "one")})
	first := v.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)["version"]
	a.update(t, keep, map[string]any{"actions": hookActions(hook, "two")})
	added := a.create(t, map[string]any{"name": "New", "trigger_type": "manual", "actions": hookActions(hook, "new")})

	if got, refused := ranByTool(t, a, fake, hook, map[string]any{"message": "Run them"}, keep, added); !slices.Equal(got, []string{"new", "two"}) || len(refused) != 0 {
		t.Fatalf("the agent's run delivered %v and was refused %v; want [new two]", got, refused)
	}
	got, refused := ranByTool(t, a, fake, hook, map[string]any{"message": "Run them", "version": first}, keep, added)
	if !slices.Equal(got, []string{"one"}) || !slices.Equal(refused, []string{added}) {
		t.Fatalf("a run of version %v delivered %v and was refused %v; want [one] and the workflow added since", first, got, refused)
	}
}

// ranByTool makes an agent run of the chat body that calls run_workflow on each of ids in
// turn, waits for the workflow runs it started, and returns the marks they delivered to hook
// (sorted) and the ids the tool refused as not found.
func ranByTool(t *testing.T, a workflowAPI, fake *providertest.Server, hook *receiver, body map[string]any, ids ...string) ([]string, []string) {
	t.Helper()
	from := len(hook.got())
	var script []providertest.Turn
	for _, id := range ids {
		script = append(script, call("run_workflow", `{"workflow_id":"`+id+`"}`))
	}
	fake.Set(providertest.Behavior{Script: append(script, providertest.Turn{Reply: "Done."})})
	body["reasoning_mode"] = "agent"
	res, chat := a.chat(t, body)
	if chat == nil || chat["reply"] != "Done." {
		t.Fatalf("the run: %d %s", res.Status, res.Body)
	}
	cs := cycles(t, chat)
	if len(cs) != len(ids) {
		t.Fatalf("cycles %v, want one per workflow", cs)
	}
	var refused []string
	for i, c := range cs {
		obs, _ := c["observation"].(string)
		if c["actionSuccess"] != true {
			if !strings.HasPrefix(obs, "Error: ") || !strings.Contains(obs, "not found") {
				t.Fatalf("the call of %s: %v", ids[i], c)
			}
			refused = append(refused, ids[i])
			continue
		}
		var o struct {
			Started struct {
				RunID string `json:"run_id"`
			}
		}
		if err := json.Unmarshal([]byte(obs), &o); err != nil || o.Started.RunID == "" {
			t.Fatalf("the call of %s observed %q", ids[i], obs)
		}
		if run := a.wait(t, o.Started.RunID); run["status"] != "succeeded" {
			t.Fatalf("the run of %s: %v", ids[i], run)
		}
	}
	return deliveredMarks(t, hook, from), refused
}

// Eight workflows created at once make versions 2..9, no number missing or taken twice, each
// naming the workflow its change added; the newest holds all eight.
func TestVersionsOfConcurrentWorkflowChangesAreGapFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.versionedBot(t, map[string]any{"instruction": "Workflows."})
	const n = 8
	list := a.changedAtOnce(t, n, func(i int) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(map[string]any{
			"name": fmt.Sprintf("Flow %d", i), "trigger_type": "event", "trigger_event": "deal.created",
			"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": fmt.Sprintf("https://hooks.example.com/%d", i)}}}})})
	}, func(i int) string { return fmt.Sprintf("workflows.Flow %d", i) })
	if got := versionWorkflows(list[0].(map[string]any)); len(got) != n {
		t.Fatalf("the newest version's workflows %v", got)
	}
}

// A versioned agent's schedules are those of its published version: a schedule made in the
// draft gets no entry until it is published, one the draft changed or deleted ticks as
// published, and publishing the deletion removes its entry.
func TestVersionedAgentSchedulesThePublishedWorkflows(t *testing.T) {
	t.Parallel()
	b, a, v, hook := workflowsOf(t, map[string]any{"versioning": true})
	id := a.create(t, map[string]any{"name": "Digest", "trigger_type": "schedule", "trigger_config": map[string]any{"cron": "*/5 * * * *"},
		"actions": hookActions(hook, "one")})
	schedules := workflows.NewSchedules(b.flows, b.log)
	ctx := context.Background()
	entries := func(t *testing.T, want int) {
		t.Helper()
		if err := schedules.Reload(ctx); err != nil || schedules.Entries() != want {
			t.Fatalf("%d entries, want %d (%v)", schedules.Entries(), want, err)
		}
	}
	entries(t, 0)
	v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	entries(t, 1)

	tick := func(t *testing.T, at time.Time) []string {
		t.Helper()
		from, ran := len(hook.got()), len(a.runsOf(t, id))
		if err := schedules.FireAt(ctx, at); err != nil {
			t.Fatal(err)
		}
		runs := a.runsOf(t, id)
		if len(runs) != ran+1 {
			t.Fatalf("%d runs after the tick, want %d", len(runs), ran+1)
		}
		a.wait(t, runs[0]["uuid"].(string))
		return deliveredMarks(t, hook, from)
	}
	a.update(t, id, map[string]any{"actions": hookActions(hook, "two")})
	entries(t, 1)
	if got := tick(t, time.Date(2026, 11, 22, 9, 5, 0, 0, time.UTC)); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("the draft's change of the schedule delivered %v, want [one]", got)
	}
	a.remove(t, id)
	entries(t, 1)
	if got := tick(t, time.Date(2026, 11, 22, 9, 10, 0, 0, time.UTC)); !slices.Equal(got, []string{"one"}) {
		t.Fatalf("the schedule the draft deleted delivered %v, want [one]", got)
	}
	v.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")
	entries(t, 0)
}

// workflowsOf is an agent made as chatBot makes it from bot, with a worker that takes its
// workflows' runs: its bundle, the APIs of its workflows and its versions, and a receiver for
// their webhooks.
func workflowsOf(t *testing.T, bot map[string]any) (*bundle, workflowAPI, versionsAPI, *receiver) {
	t.Helper()
	b := setup(t)
	c := b.chatBot(t, bot)
	b.startWorker(t, workerOptions{})
	return b, workflowAPI{c}, versionsAPI{c}, newReceiver(t)
}
