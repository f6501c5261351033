package api_test

import (
	"net/http"
	"regexp"
	"strconv"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// storeCommands returns the store commands the server's requests of method to route have made so
// far, as /metrics reports them.
func (b *bundle) storeCommands(t *testing.T, method, route string) int {
	t.Helper()
	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/metrics"})
	expect(t, res, http.StatusOK, "")
	line := regexp.MustCompile(`(?m)^agentplane_http_store_commands_sum\{method="` + method + `",route="` + regexp.QuoteMeta(route) + `"\} (\d+)$`)
	m := line.FindSubmatch(res.Body)
	if m == nil {
		return 0
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// commandsOf returns the store commands one request of method to route made.
func (b *bundle) commandsOf(t *testing.T, method, route string, do func()) int {
	t.Helper()
	before := b.storeCommands(t, method, route)
	do()
	return b.storeCommands(t, method, route) - before
}

// The store commands of a request are counted by route (a count is deterministic, unlike a time):
// the hot routes make at most the commands docs/BENCHMARKS.md lists for them with warm caches (the
// key, the project and the agent read once), so a change that adds a round trip to one of them,
// or a cache that stops holding, fails here.
func TestStoreCommandsPerRoute(t *testing.T) {
	t.Parallel()
	b := setup(t)
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
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "title": "Pilot", "value": 100})

	for _, c := range []struct {
		name          string
		method, route string
		do            func()
		most          int
	}{
		{"an agent read", "GET", "/v1/bot/read", func() {
			expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read?" + a.query(""), Key: b.key}), http.StatusOK, "")
		}, 0},
		{"a standard chat into a new chat", "POST", "/v1/bot/chat", func() { chat(map[string]any{"message": "When does the shop close?"}) }, 5},
		{"a standard chat into an existing chat", "POST", "/v1/bot/chat", func() {
			chat(map[string]any{"message": "And when does it open?", "chat_id": chatID})
		}, 7},
		{"a chat's history", "GET", "/v1/bot/chat/read", func() { a.history(t, chatID, "") }, 2},
		{"a deal update", "PUT", "/v1/bot/crm/deals/:deal_id", func() {
			b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, map[string]any{"project_id": b.project.ID, "bot_id": a.botID, "value": 200})
		}, 2},
	} {
		got := b.commandsOf(t, c.method, c.route, c.do)
		t.Logf("%s: %d", c.name, got)
		if got > c.most {
			t.Errorf("%s made %d store commands, want at most %d", c.name, got, c.most)
		}
	}
}
