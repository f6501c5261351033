package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/llm"
)

// versionsAPI calls an agent's version routes.
type versionsAPI struct{ chatAPI }

func (v versionsAPI) do(t *testing.T, method, path string, body map[string]any, status int, code string) map[string]any {
	t.Helper()
	req := apitest.Request{Method: method, Path: path, Key: v.b.key}
	if method == http.MethodGet {
		base, extra, _ := strings.Cut(path, "?")
		if extra != "" {
			extra = "&" + extra
		}
		req.Path = base + "?" + v.query(extra)
	} else {
		req.Body = v.body(body)
	}
	res := v.b.client.Do(req)
	expect(t, res, status, code)
	if status != http.StatusOK {
		return nil
	}
	return res.JSON(t)
}

func (v versionsAPI) update(t *testing.T, fields map[string]any) map[string]any {
	t.Helper()
	return v.do(t, http.MethodPut, "/v1/bot/update", fields, http.StatusOK, "")["bot"].(map[string]any)
}

// changedAtOnce makes n changes of the agent at once (change(i), each answered 200), then
// checks that its versions are numbered n+1 down to 1, none missing or taken twice, and that a
// version names each change's field (named(i)); it returns the versions, newest first.
func (v versionsAPI) changedAtOnce(t *testing.T, n int, change func(i int) *apitest.Response, named func(i int) string) []any {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if res := change(i); res.Status != http.StatusOK {
				t.Errorf("change %d: %d %s", i, res.Status, res.Body)
			}
		})
	}
	wg.Wait()
	list := v.versions(t, "?per_page=50")["versions"].([]any)
	var numbers, want []int
	fields := map[string]bool{}
	for i, raw := range list {
		numbers, want = append(numbers, int(raw.(map[string]any)["version"].(float64))), append(want, n+1-i)
		for _, f := range changedFields(raw.(map[string]any)) {
			fields[f] = true
		}
	}
	if !slices.Equal(numbers, want) || len(numbers) != n+1 {
		t.Fatalf("version numbers %v, want %d down to 1", numbers, n+1)
	}
	for i := range n {
		if !fields[named(i)] {
			t.Errorf("no version names %s: %v", named(i), fields)
		}
	}
	return list
}

// versions reads the agent's versions, newest first.
func (v versionsAPI) versions(t *testing.T, query string) map[string]any {
	t.Helper()
	return v.do(t, http.MethodGet, "/v1/bot/version/readall"+query, nil, http.StatusOK, "")
}

func (v versionsAPI) version(t *testing.T, n string) map[string]any {
	t.Helper()
	return v.do(t, http.MethodGet, "/v1/bot/version/read?version="+n, nil, http.StatusOK, "")["version"].(map[string]any)
}

func (b *bundle) versionedBot(t *testing.T, bot map[string]any) versionsAPI {
	t.Helper()
	return versionsAPI{b.chatBot(t, bot)}
}

// Sixteen updates at once, each changing the instruction to a value of its own, make versions
// 2..17 with no number missing or taken twice; each version holds the instruction its update
// wrote, and its changes say what it changed from the one before.
func TestVersionsOfConcurrentUpdatesAreGapFree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.versionedBot(t, map[string]any{"instruction": "Version one."})
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key,
				Body: a.body(map[string]any{"instruction": fmt.Sprintf("Instruction %d.", i)})})
			if res.Status != http.StatusOK {
				t.Errorf("update %d: %d %s", i, res.Status, res.Body)
			}
		})
	}
	wg.Wait()
	list := a.versions(t, "?per_page=50")
	if list["total"] != float64(n+1) {
		t.Fatalf("total %v, want %d", list["total"], n+1)
	}
	var numbers []int
	seen := map[string]bool{}
	versions := list["versions"].([]any)
	for i, raw := range versions {
		v := raw.(map[string]any)
		numbers = append(numbers, int(v["version"].(float64)))
		instruction := v["config"].(map[string]any)["instruction"].(string)
		seen[instruction] = true
		if i == len(versions)-1 {
			continue
		}
		before := versions[i+1].(map[string]any)["config"].(map[string]any)["instruction"]
		want := []any{map[string]any{"field": "instruction", "old": before, "new": instruction}}
		if !reflect.DeepEqual(v["changes"], want) || v["by"] == "" {
			t.Errorf("version %v: changes %v by %v, want %v", v["version"], v["changes"], v["by"], want)
		}
	}
	want := make([]int, n+1)
	for i := range want {
		want[i] = n + 1 - i
	}
	if !slices.Equal(numbers, want) {
		t.Fatalf("version numbers %v, want %v", numbers, want)
	}
	for i := range n {
		if !seen[fmt.Sprintf("Instruction %d.", i)] {
			t.Errorf("no version holds instruction %d", i)
		}
	}
	bot := a.do(t, http.MethodGet, "/v1/bot/read", nil, http.StatusOK, "")["bot"].(map[string]any)
	if bot["version"] != float64(n+1) || bot["published_version"] != float64(n+1) {
		t.Fatalf("agent's version %v published %v", bot["version"], bot["published_version"])
	}
}

// A change of what is not behaviour (the name) makes no version; a rollback makes a new version
// with exactly the old behaviour, published, and the diff of two versions names the fields that
// differ.
func TestVersionRollbackRestoresTheOldFields(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.versionedBot(t, map[string]any{"instruction": "Be brief.", "model": "gpt-4o-mini"})
	first := a.version(t, "1")["config"]
	a.update(t, map[string]any{"name": "Renamed"})
	a.update(t, map[string]any{"instruction": "Be verbose.", "model": "gpt-4o", "top": 9, "handoff_phrases": []string{"a human"}, "human_handoff": true})
	if list := a.versions(t, ""); list["total"] != float64(2) {
		t.Fatalf("renaming made a version: %v", list)
	}
	diff := a.do(t, http.MethodGet, "/v1/bot/version/diff?from=1&to=2", nil, http.StatusOK, "")["diff"].(map[string]any)
	var fields []string
	for _, c := range diff["changes"].([]any) {
		fields = append(fields, c.(map[string]any)["field"].(string))
	}
	if want := []string{"instruction", "model", "top", "human_handoff", "handoff_phrases"}; !slices.Equal(fields, want) {
		t.Fatalf("diff fields %v, want %v (%v)", fields, want, diff)
	}
	if c := diff["changes"].([]any)[0].(map[string]any); c["old"] != "Be brief." || c["new"] != "Be verbose." {
		t.Fatalf("instruction change %v", c)
	}

	bot := a.do(t, http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 1}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["version"] != float64(3) || bot["published_version"] != float64(3) || bot["instruction"] != "Be brief." ||
		bot["model"] != "gpt-4o-mini" || bot["top"] != float64(5) || bot["human_handoff"] != false || bot["name"] != "Renamed" {
		t.Fatalf("after rollback %v", bot)
	}
	third := a.version(t, "3")
	if !reflect.DeepEqual(third["config"], first) || third["rollback_of"] != float64(1) {
		t.Fatalf("version 3 %v, want the config of version 1 %v", third, first)
	}
	if d := a.do(t, http.MethodGet, "/v1/bot/version/diff?from=1&to=3", nil, http.StatusOK, "")["diff"].(map[string]any); len(d["changes"].([]any)) != 0 {
		t.Fatalf("versions 1 and 3 differ: %v", d)
	}

	for _, tt := range []struct {
		name, method, path string
		body               map[string]any
		status             int
		code               string
	}{
		{"RollbackToTheNewest", http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": 3}, http.StatusUnprocessableEntity, "invalid_field"},
		{"RollbackWithoutVersion", http.MethodPost, "/v1/bot/version/rollback", map[string]any{}, http.StatusUnprocessableEntity, "invalid_field"},
		{"RollbackToNoNumber", http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": "first"}, http.StatusUnprocessableEntity, "invalid_field"},
		{"RollbackOfAnObject", http.MethodPost, "/v1/bot/version/rollback", map[string]any{"version": map[string]any{}}, http.StatusUnprocessableEntity, "invalid_field"},
		{"ReadMissing", http.MethodGet, "/v1/bot/version/read?version=9", nil, http.StatusNotFound, "version_not_found"},
		{"ReadWithoutVersion", http.MethodGet, "/v1/bot/version/read", nil, http.StatusUnprocessableEntity, "invalid_field"},
		{"DiffWithoutTo", http.MethodGet, "/v1/bot/version/diff?from=1", nil, http.StatusUnprocessableEntity, "invalid_field"},
		{"PublishAnEarlierWithoutVersioning", http.MethodPost, "/v1/bot/version/publish", map[string]any{"version": 2}, http.StatusConflict, "versioning_off"},
	} {
		t.Run(tt.name, func(t *testing.T) { a.do(t, tt.method, tt.path, tt.body, tt.status, tt.code) })
	}
}

// systemPrompts are the system messages of the requests the fake provider received, in order.
func systemPrompts(fake *providertest.Server) []string {
	var out []string
	for _, r := range fake.Requests() {
		for _, m := range r.Messages {
			if m.Role == llm.RoleSystem {
				out = append(out, m.Content)
			}
		}
	}
	return out
}

// A versioned agent keeps answering with its published instruction while its draft changes:
// end users (here through the OpenAI door) and the account's chats get the published one, the
// account's chats that ask for version "draft" the draft; each agent message records the
// version that wrote it, in the history and in the OpenAI door's agentplane field. Publishing
// the draft makes it what everyone gets.
func TestVersionedAgentAnswersWithThePublishedVersion(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	a := b.versionedBot(t, map[string]any{"instruction": "Published instruction.", "provider_key": "k", "reasoning_type": "standard"})
	bot := a.update(t, map[string]any{"versioning": true})
	published := bot["published_version"].(float64)
	draft := published + 1
	bot = a.update(t, map[string]any{"instruction": "Draft instruction."})
	if bot["instruction"] != "Published instruction." || bot["version"] != draft || bot["published_version"] != published {
		t.Fatalf("the update of a versioned agent: %v", bot)
	}
	if d := a.version(t, "draft"); d["version"] != draft || d["config"].(map[string]any)["instruction"] != "Draft instruction." {
		t.Fatalf("draft %v", d)
	}
	asked := func(t *testing.T, body map[string]any, wantPrompt string, wantVersion float64) string {
		t.Helper()
		before := len(systemPrompts(fake))
		res, chat := a.chat(t, body)
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		prompts := systemPrompts(fake)[before:]
		if len(prompts) != 1 || !containsPrompt(prompts[0], wantPrompt) {
			t.Fatalf("the provider got %q, want %q", prompts, wantPrompt)
		}
		if v := chat["agent"].(map[string]any)["version"]; v != wantVersion {
			t.Fatalf("agent message version %v, want %v", v, wantVersion)
		}
		return chat["chat_id"].(string)
	}
	chatID := asked(t, map[string]any{"message": "Hello"}, "Published instruction.", published)
	asked(t, map[string]any{"message": "Hello again", "chat_id": chatID, "version": "draft"}, "Draft instruction.", draft)
	asked(t, map[string]any{"message": "And once more", "chat_id": chatID, "version": published}, "Published instruction.", published)

	before := len(systemPrompts(fake))
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/chat/completions", Key: b.key,
		Body: map[string]any{"model": "agent:" + a.botID, "messages": []any{map[string]any{"role": "user", "content": "Hi"}}}})
	expect(t, res, http.StatusOK, "")
	if ext := res.JSON(t)["agentplane"].(map[string]any); ext["version"] != published {
		t.Fatalf("the OpenAI door's agentplane %v", ext)
	}
	if prompts := systemPrompts(fake)[before:]; len(prompts) != 1 || !containsPrompt(prompts[0], "Published instruction.") {
		t.Fatalf("the OpenAI door's prompt %q", prompts)
	}

	var versions []any
	for _, m := range a.history(t, chatID, "")["conversation"].([]any) {
		if m := m.(map[string]any); m["role"] == "agent" {
			versions = append(versions, m["version"])
		}
	}
	if want := []any{published, draft, published}; !reflect.DeepEqual(versions, want) {
		t.Fatalf("history's versions %v, want %v", versions, want)
	}

	bot = a.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["instruction"] != "Draft instruction." || bot["published_version"] != draft {
		t.Fatalf("after publish %v", bot)
	}
	asked(t, map[string]any{"message": "Now?", "chat_id": chatID}, "Draft instruction.", draft)
	bot = a.do(t, http.MethodPost, "/v1/bot/version/publish", map[string]any{"version": fmt.Sprint(published)}, http.StatusOK, "")["bot"].(map[string]any)
	if bot["instruction"] != "Published instruction." || bot["published_version"] != published || bot["version"] != draft {
		t.Fatalf("after publishing version %v again %v", published, bot)
	}
	asked(t, map[string]any{"message": "And now?", "chat_id": chatID}, "Published instruction.", published)
}

func containsPrompt(prompt, instruction string) bool { return strings.HasPrefix(prompt, instruction) }
