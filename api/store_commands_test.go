package api_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// metric returns the value of one series of the server's /metrics (0 when it is not there yet).
func (b *bundle) metric(t *testing.T, series string) float64 {
	t.Helper()
	v, _ := b.series(t, series)
	return v
}

// series returns the value of one series of the server's /metrics and whether it is there.
func (b *bundle) series(t *testing.T, series string) (float64, bool) {
	t.Helper()
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/metrics"})
	expect(t, res, http.StatusOK, "")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindSubmatch(res.Body)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return v, true
}

// commandsOf returns the store commands one request of method to route made, as the server's
// /metrics count them: do must make exactly one such request, and the series must be there after.
func (b *bundle) commandsOf(t *testing.T, method, route string, do func()) int {
	t.Helper()
	labels := `{method="` + method + `",route="` + route + `"}`
	sum, count := "agentplane_http_store_commands_sum"+labels, "agentplane_http_store_commands_count"+labels
	before, requests := b.metric(t, sum), b.metric(t, count)
	do()
	after, ok := b.series(t, sum)
	if !ok {
		t.Fatalf("/metrics has no series %s", sum)
	}
	if n := b.metric(t, count); n != requests+1 {
		t.Fatalf("%s %s: /metrics counted %v requests, want 1", method, route, n-requests)
	}
	return int(after - before)
}

// The store commands of a request are counted by route (a count is deterministic, unlike a time):
// the hot routes make exactly the commands docs/BENCHMARKS.md lists for them with warm caches (the
// key, the project and the agent read once), so a change that adds a round trip to one of them,
// a cache that stops holding, or a count that stops counting, fails here. Each request is made three times and the fewest
// commands count: on a loaded machine an event's publish may time out, and marking it for the
// relay is one command more (the fallback, not the path measured).
func TestStoreCommandsPerRoute(t *testing.T) {
	t.Parallel()
	// Cached entries outlive the test: one that expired between two of its requests (the test
	// took 80 s on a loaded machine, the cache keeps entries 30 s) read again would count. A
	// follower of an agent run reads it at each poll tick too, its fallback for a lost notice: on
	// a loaded machine a run outlasted the tests' 200 ms poll, and that read counted.
	b := setup(t, withCacheTTL(time.Hour), withRunPoll(time.Hour))
	b.startWorker(t, workerOptions{})
	a := b.chatBot(t, nil)
	a.ingest(t, map[string]any{"title": "Hours", "type": "text", "source": "The shop opens at nine and closes at six."})
	chat := func(body map[string]any) string {
		res, c := a.chat(t, body)
		if c == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		return c["chat_id"].(string)
	}
	chatID := chat(map[string]any{"message": "When does the shop open?"})
	subdomain := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read?" + a.query(""), Key: b.key}).JSON(t)["bot"].(map[string]any)["subdomain"]
	session := b.client.Do(apitest.Request{Method: "POST", Path: "/public/v1/session", Body: map[string]any{"subdomain": subdomain}})
	expect(t, session, http.StatusOK, "")
	pageToken := session.JSON(t)["token"].(string)
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "title": "Pilot", "value": 100})
	contact := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts", Key: b.key, Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "name": "Ada"}})
	expect(t, contact, http.StatusOK, "")
	contactID := contact.JSON(t)["contact"].(map[string]any)["uuid"].(string)

	for _, c := range []struct {
		name          string
		method, route string
		do            func(i int)
		want          int
	}{
		{"an agent read", "GET", "/v1/bot/read", func(int) {
			expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read?" + a.query(""), Key: b.key}), http.StatusOK, "")
		}, 0},
		{"a standard chat into a new chat", "POST", "/v1/bot/chat", func(int) { chat(map[string]any{"message": "When does the shop close?"}) }, 2},
		{"a standard chat into an existing chat", "POST", "/v1/bot/chat", func(int) {
			chat(map[string]any{"message": "And when does it open?", "chat_id": chatID})
		}, 3},
		// The chat and the run stored, the run read once as its follow begins and once when its
		// answer's notice comes (the notices of the run watched from before the first read).
		{"an agent chat into a new chat (the run followed to its answer)", "POST", "/v1/bot/chat", func(int) {
			chat(map[string]any{"message": "When does the shop close?", "reasoning_mode": "agent"})
		}, 4},
		{"a chat's history", "GET", "/v1/bot/chat/read", func(int) { a.history(t, chatID, "") }, 1},
		{"an OpenAI chat completion (a new chat of the agent)", "POST", "/v1/chat/completions", func(int) {
			expect(t, b.client.Do(apitest.Request{Method: "POST", Path: "/v1/chat/completions", Key: b.key, Body: map[string]any{
				"model": "agent:" + a.botID, "messages": []any{map[string]any{"role": "user", "content": "When does the shop open?"}}}}), http.StatusOK, "")
		}, 2},
		{"a chat on the agent's hosted page (an end user's new chat, streamed)", "POST", "/public/v1/chat", func(int) {
			if status, body := publicChat(t, b, pageToken, `{"message":"When does the shop open?"}`); status != http.StatusOK || !strings.Contains(body, "event: done") {
				t.Fatalf("a page chat: %d %s", status, body)
			}
		}, 3},
		{"a deal update", "PUT", "/v1/bot/crm/deals/:deal_id", func(i int) {
			b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "value": 200 + i})
		}, 2},
		// The project's contact statuses, read to check the one named, are cached.
		{"a contact's status update", "PUT", "/v1/bot/crm/contacts/:contact_id", func(i int) {
			expect(t, b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/crm/contacts/" + contactID, Key: b.key,
				Body: map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "status_key": []string{"qualified", "customer", "churned"}[i]}}), http.StatusOK, "")
		}, 2},
	} {
		got := math.MaxInt
		for i := range 3 {
			got = min(got, b.commandsOf(t, c.method, c.route, func() { c.do(i) }))
		}
		t.Logf("%s: %d", c.name, got)
		if got != c.want {
			t.Errorf("%s made %d store commands, want %d", c.name, got, c.want)
		}
	}

	// A workflow run of one webhook action, started by a deal update and run at once by the worker
	// whose triggers stored it, held (counted as a `workflow:run` task): the worker's list of the
	// agent's workflows for deal.updated, cached empty by the updates above, is dropped by the
	// workflow's creation. The run's insert is the trigger's, not the run's.
	delivered := make(chan struct{}, 8)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { delivered <- struct{}{} }))
	t.Cleanup(receiver.Close)
	expect(t, b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: map[string]any{
		"project_id": b.project.ID, "bot_id": a.botID, "name": "Hook", "trigger_type": "event", "trigger_event": "deal.updated",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": receiver.URL}}}}}), http.StatusOK, "")
	const flows, flowTasks = `agentplane_task_store_commands_sum{type="workflow:run"}`, `agentplane_task_store_commands_count{type="workflow:run"}`
	fewest := math.MaxInt
	for i := range 3 {
		before, n := b.metric(t, flows), b.metric(t, flowTasks)
		b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "value": 300 + i})
		select {
		case <-delivered:
		case <-time.After(10 * time.Second):
			t.Fatal("the workflow's webhook was not delivered")
		}
		for deadline := time.Now().Add(10 * time.Second); b.metric(t, flowTasks) == n; waitABit() {
			// The worker counts the task when its handler has returned, just after the run's end.
			if time.Now().After(deadline) {
				t.Fatal("the workflow run's task was never counted")
			}
		}
		fewest = min(fewest, int(b.metric(t, flows)-before))
	}
	t.Logf("a workflow run of one webhook: %d", fewest)
	if want := 1; fewest != want {
		t.Errorf("a workflow run of one webhook made %d store commands, want %d", fewest, want)
	}

	// Agent runs of one cycle, in the worker: the first with the worker's caches cold, then two
	// with them warm (the fewer of those two counts, as above). The move of an ended run to the
	// finished ones (two commands for all the runs that ended together) follows the task, off its
	// path, and is not counted.
	const runs, runTasks, cycles = `agentplane_task_store_commands_sum{type="agent:run"}`,
		`agentplane_task_store_commands_count{type="agent:run"}`, `agentplane_run_cycles_total`
	agentRun := func() float64 {
		t.Helper()
		before, tasks, ran := b.metric(t, runs), b.metric(t, runTasks), b.metric(t, cycles)
		_, run := a.chat(t, map[string]any{"message": "Look up the hours, then sum them up.", "reasoning_mode": "agent", "chat_id": chatID})
		if run == nil || run["isComplete"] != true {
			t.Fatalf("agent run %v", run)
		}
		for deadline := time.Now().Add(10 * time.Second); b.metric(t, runTasks) == tasks; waitABit() {
			// The worker counts the task when its handler has returned, just after the answer.
			if time.Now().After(deadline) {
				t.Fatalf("the run's task was never counted")
			}
		}
		return (b.metric(t, runs) - before) / (b.metric(t, cycles) - ran)
	}
	cold := agentRun()
	warm := min(agentRun(), agentRun())
	t.Logf("an agent run of one cycle: %.1f store commands cold, %.1f warm", cold, warm)
	if want := 5.0; warm != want {
		t.Errorf("an agent run made %.1f store commands a cycle with the worker's caches warm, want %v", warm, want)
	}
}
