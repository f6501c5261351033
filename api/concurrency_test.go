package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/api"
	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/cmd/agentplane/app"
)

// replica is another API process of the bundle's deployment: the same store, Redis and NATS,
// its own caches and locks.
func (b *bundle) replica(t *testing.T) *apitest.Client {
	t.Helper()
	a := app.New(b.app.Cfg, b.log, b.app.Conns)
	t.Cleanup(a.Close)
	deps, err := a.API()
	if err != nil {
		t.Fatal(err)
	}
	return apitest.New(t, api.NewServer(deps))
}

// setPath sets the field path (dot-separated) of the nested object m to v.
func setPath(m map[string]any, path string, v any) {
	keys := strings.Split(path, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// getPath reads the field path (dot-separated) of the nested object m.
func getPath(m map[string]any, path string) any {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, _ := v.(map[string]any)
		v = o[k]
	}
	return v
}

// 32 updates of one agent sent at once, through four API processes (whose in-process turns do
// not order each other's writes), all land: each changes a field of its own, and afterwards every
// field holds what its update wrote. docs/api.md promises as much: an update crossed by another
// is applied again to what the other left, up to 50 times.
func TestThirtyTwoConcurrentUpdatesLand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	bot := b.createBot(t, nil)
	clients := []*apitest.Client{b.client, b.replica(t), b.replica(t), b.replica(t)}
	flipped := func(path string) any { return getPath(bot, path) != true }
	writes := []struct {
		path  string
		value any
	}{
		{"name", "Writer 0"}, {"instruction", "Answer as writer 1."}, {"ratelimit_message", "Writer 2 says slow down."},
		{"no_answer_reply", "Writer 3 does not know."}, {"avatar", "https://example.com/4.png"}, {"avatar_link", "https://example.com/5"},
		{"top", 6}, {"ratelimit_seconds", 7}, {"ratelimit_requests", 8}, {"max_reply_tokens", "909"},
		{"require_login", 1}, {"hide_branding", 1}, {"auto_approve_tools", 1}, {"memory", 0},
		{"branding.seo.title", "Writer 14"}, {"branding.seo.keywords", "writer, 15"}, {"branding.seo.description", "Writer 16."},
		{"branding.logo.url", "https://example.com/17.png"}, {"branding.favicon.url", "https://example.com/18.ico"},
		{"branding.tagline.content", "Writer 19"}, {"branding.description.content", "Writer 20."}, {"branding.theme", "dark"},
		{"branding.placeholder", "Ask writer 22"}, {"branding.accent_color", "#000023"}, {"branding.background_color", "#000024"},
		{"branding.message_greetings.greetings", []any{"Hello from writer 25"}},
		{"branding.conversation_starters.prompts", []any{"Writer 26?"}},
		{"branding.logo.enabled", flipped("branding.logo.enabled")}, {"branding.favicon.enabled", flipped("branding.favicon.enabled")},
		{"branding.tagline.enabled", flipped("branding.tagline.enabled")}, {"branding.description.enabled", flipped("branding.description.enabled")},
		{"branding.navigation.enabled", flipped("branding.navigation.enabled")},
	}
	if len(writes) != 32 {
		t.Fatalf("%d writers", len(writes))
	}
	for _, w := range writes {
		if fmt.Sprint(getPath(bot, w.path)) == fmt.Sprint(w.value) {
			t.Fatalf("%s is %v before its update", w.path, w.value)
		}
	}
	start := make(chan struct{})
	statuses := make([]string, len(writes))
	var wg sync.WaitGroup
	for i, w := range writes {
		body := map[string]any{"project_id": b.project.ID, "bot_id": bot["id"]}
		setPath(body, w.path, w.value)
		wg.Go(func() {
			<-start
			// Try, not Do: FailNow must not be called from this goroutine.
			res, err := clients[i%len(clients)].Try(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: body})
			switch {
			case err != nil:
				statuses[i] = err.Error()
			case res.Status != http.StatusOK:
				statuses[i] = fmt.Sprintf("%d %s", res.Status, res.Body)
			}
		})
	}
	close(start)
	wg.Wait()
	for i, st := range statuses {
		if st != "" {
			t.Errorf("the update of %s: %s", writes[i].path, st)
		}
	}
	// Read through a process that has not cached the agent: the store's, not a cache's.
	res := b.replica(t).Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?project_id=" + b.project.ID + "&bot_id=" + bot["id"].(string), Key: b.key})
	expect(t, res, http.StatusOK, "")
	got := res.JSON(t)["bot"].(map[string]any)
	for _, w := range writes {
		if v := getPath(got, w.path); fmt.Sprint(v) != fmt.Sprint(w.value) {
			t.Errorf("%s is %v, want %v: an update was lost", w.path, v, w.value)
		}
	}
}
