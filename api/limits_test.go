package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/workflows"
)

// readBot returns the agent as GET /v1/bot/read answers it, raw.
func (a chatAPI) readBot(t *testing.T) []byte {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/read?" + a.query(""), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.Body
}

func (a chatAPI) update(body map[string]any) *apitest.Response {
	return a.b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: a.b.key, Body: a.body(body)})
}

// sizedObject is a free-form object whose JSON text is exactly n bytes.
func sizedObject(n int) map[string]any {
	return map[string]any{"k": strings.Repeat("a", n-len(`{"k":""}`))}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// The reported attack: branding and integrations merge field by field, so updates each under the
// body limit built an agent of megabytes. Each field now has its bound, and the merged agent one
// of its own, checked before the write: the update that would pass them is refused naming the
// field, and the agent stays as it was.
func TestAgentGrowthRefused(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)

	t.Run("ReportedAttack", func(t *testing.T) {
		before := a.readBot(t)
		blob := strings.Repeat("x", 950<<10)
		for _, tt := range []struct {
			field string
			body  map[string]any
		}{
			{"integrations", map[string]any{"integrations": []any{map[string]any{"blob": blob}}}},
			{"branding.conversation_starters.prompts[0]", map[string]any{"branding": map[string]any{"conversation_starters": map[string]any{"prompts": []string{blob}}}}},
			{"branding.message_greetings.greetings[0]", map[string]any{"branding": map[string]any{"message_greetings": map[string]any{"greetings": []string{blob}}}}},
		} {
			res := a.update(tt.body)
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		}
		if after := a.readBot(t); !bytes.Equal(after, before) {
			t.Fatalf("the agent changed:\n%s\n%s", before, after)
		}
	})

	t.Run("MergedAgentOverItsLimit", func(t *testing.T) {
		// Four updates, each field within its bound, 4-byte characters: the fourth would make
		// the agent larger than MaxBotBytes.
		emoji := "😀"
		for _, body := range []map[string]any{
			{"integrations": []any{sizedObject(agents.MaxIntegrationsBytes)}},
			{"instruction": strings.Repeat(emoji, agents.MaxInstructionLength)},
			{"branding": map[string]any{"message_greetings": map[string]any{"greetings": repeat(strings.Repeat(emoji, agents.MaxGreetingLength), agents.MaxGreetings)}}},
		} {
			expect(t, a.update(body), http.StatusOK, "")
		}
		before := a.readBot(t)
		if len(before) > agents.MaxBotBytes {
			t.Fatalf("the agent is %d bytes before the last update", len(before))
		}
		res := a.update(map[string]any{"branding": map[string]any{"conversation_starters": map[string]any{
			"prompts": repeat(strings.Repeat(emoji, agents.MaxPromptLength), agents.MaxPrompts)}}})
		expect(t, res, http.StatusRequestEntityTooLarge, "bot_too_large")
		expectField(t, res, "branding")
		if after := a.readBot(t); !bytes.Equal(after, before) {
			t.Fatal("the refused update changed the agent")
		}
	})
}

// limitCase is one bounded field: body(n) sets it to size n (characters, items or bytes).
type limitCase struct {
	field string
	max   int
	body  func(n int) map[string]any
}

func brandingText(path ...string) func(n int) map[string]any {
	return func(n int) map[string]any {
		var v any = strings.Repeat("a", n)
		for i := len(path) - 1; i >= 0; i-- {
			v = map[string]any{path[i]: v}
		}
		return map[string]any{"branding": v}
	}
}

func brandingList(object, field string, item func(n int) any, count bool) func(n int) map[string]any {
	return func(n int) map[string]any {
		list := []any{item(n)}
		if count {
			list = repeatAny(item(1), n)
		}
		return map[string]any{"branding": map[string]any{object: map[string]any{field: list}}}
	}
}

func text(n int) any { return strings.Repeat("a", n) }

// Every bounded field of an agent at its limit is accepted, one over is refused naming it.
func TestAgentLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	str := func(field string) func(n int) map[string]any {
		return func(n int) map[string]any { return map[string]any{field: strings.Repeat("é", n)} }
	}
	cases := []limitCase{
		{"name", agents.MaxNameLength, str("name")},
		{"model", agents.MaxModelLength, str("model")},
		{"instruction", agents.MaxInstructionLength, str("instruction")},
		{"ratelimit_message", agents.MaxMessageLength, str("ratelimit_message")},
		{"no_answer_reply", agents.MaxMessageLength, str("no_answer_reply")},
		{"provider_key", agents.MaxProviderKeyLength, str("provider_key")},
		{"integrations", agents.MaxIntegrations, func(n int) map[string]any { return map[string]any{"integrations": repeatAny(map[string]any{}, n)} }},
		{"integrations", agents.MaxIntegrationsBytes, func(n int) map[string]any {
			return map[string]any{"integrations": []any{sizedObject(n/2 + n%2), sizedObject(n / 2)}}
		}},
		{"branding.seo.title", agents.MaxSEOTitleLength, brandingText("seo", "title")},
		{"branding.seo.keywords", agents.MaxSEOKeywordsLength, brandingText("seo", "keywords")},
		{"branding.seo.description", agents.MaxSEODescriptionLength, brandingText("seo", "description")},
		{"branding.logo.url", agents.MaxURLLength, brandingText("logo", "url")},
		{"branding.favicon.url", agents.MaxURLLength, brandingText("favicon", "url")},
		{"branding.tagline.content", agents.MaxTaglineLength, brandingText("tagline", "content")},
		{"branding.description.content", agents.MaxDescriptionLength, brandingText("description", "content")},
		{"branding.theme", agents.MaxStyleLength, brandingText("theme")},
		{"branding.placeholder", agents.MaxPlaceholderLength, brandingText("placeholder")},
		{"branding.accent_color", agents.MaxStyleLength, brandingText("accent_color")},
		{"branding.background_color", agents.MaxStyleLength, brandingText("background_color")},
		{"branding.navigation.links", agents.MaxLinks, brandingList("navigation", "links", func(int) any { return map[string]any{"k": "v"} }, true)},
		{"branding.navigation.links", agents.MaxLinksBytes, brandingList("navigation", "links", func(n int) any { return sizedObject(n) }, false)},
		{"branding.message_greetings.greetings", agents.MaxGreetings, brandingList("message_greetings", "greetings", text, true)},
		{"branding.message_greetings.greetings[0]", agents.MaxGreetingLength, brandingList("message_greetings", "greetings", text, false)},
		{"branding.conversation_starters.prompts", agents.MaxPrompts, brandingList("conversation_starters", "prompts", text, true)},
		{"branding.conversation_starters.prompts[0]", agents.MaxPromptLength, brandingList("conversation_starters", "prompts", text, false)},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s_%d", tc.field, tc.max), func(t *testing.T) {
			expect(t, a.update(tc.body(tc.max)), http.StatusOK, "")
			before := a.readBot(t)
			res := a.update(tc.body(tc.max + 1))
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tc.field)
			if after := a.readBot(t); !bytes.Equal(after, before) {
				t.Fatal("the refused update changed the agent")
			}
		})
	}
}

// webhook is a workflow of one webhook action with params.
func webhook(params map[string]any) map[string]any {
	return map[string]any{"name": "w", "trigger_type": "manual", "actions": []any{map[string]any{"type": "webhook", "params": params}}}
}

// Every bounded field of a workflow at its limit is accepted, one over is refused naming it; a
// workflow whose fields are each within bounds but larger than MaxWorkflowBytes in all is
// refused whole.
func TestWorkflowLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	const url = "http://hooks.example.com/in"
	base := len(fmt.Sprintf(`{"body":"","url":%q}`, url))
	cases := []limitCase{
		{"name", workflows.MaxNameLength, func(n int) map[string]any {
			w := webhook(map[string]any{"url": url})
			w["name"] = strings.Repeat("é", n)
			return w
		}},
		{"actions[0].params", workflows.MaxParamsBytes, func(n int) map[string]any {
			return webhook(map[string]any{"url": url, "body": strings.Repeat("a", n-base)})
		}},
		{"actions[0].params.url", workflows.MaxURLLength, func(n int) map[string]any {
			return webhook(map[string]any{"url": url + "?" + strings.Repeat("a", n-len(url)-1)})
		}},
		{"conditions[0].value", workflows.MaxValueBytes, func(n int) map[string]any {
			w := webhook(map[string]any{"url": url})
			w["conditions"] = []any{map[string]any{"field": "input.x", "operator": "eq", "value": map[string]any{"a.b": strings.Repeat("a", n-len(`{"a.b":""}`))}}}
			return w
		}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s_%d", tc.field, tc.max), func(t *testing.T) {
			id := a.create(t, tc.body(tc.max))
			res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(tc.body(tc.max + 1))})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tc.field)
			update := tc.body(tc.max + 1)
			update["workflow_id"] = id
			res = b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/workflow/update", Key: b.key, Body: a.body(update)})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tc.field)
		})
	}

	t.Run("MergedWorkflowOverItsLimit", func(t *testing.T) {
		action := map[string]any{"type": "webhook", "params": map[string]any{"url": url, "body": strings.Repeat("a", workflows.MaxParamsBytes-base)}}
		half := workflows.MaxWorkflowBytes / workflows.MaxParamsBytes / 2
		id := a.create(t, map[string]any{"trigger_type": "manual", "actions": repeatAny(action, half)})
		read := func() []byte {
			res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/workflow/read?" + a.query("&workflow_id="+id), Key: b.key})
			expect(t, res, http.StatusOK, "")
			return res.Body
		}
		before := read()
		res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/workflow/update", Key: b.key,
			Body: a.body(map[string]any{"workflow_id": id, "actions": repeatAny(action, 2*half+1)})})
		expect(t, res, http.StatusRequestEntityTooLarge, "workflow_too_large")
		expectField(t, res, "actions")
		if after := read(); !bytes.Equal(after, before) {
			t.Fatal("the refused update changed the workflow")
		}
		var e struct{ Message string }
		if err := json.Unmarshal(res.Body, &e); err != nil || !strings.Contains(e.Message, fmt.Sprint(workflows.MaxWorkflowBytes)) {
			t.Fatalf("message %q does not name the limit", e.Message)
		}
	})
}

func repeatAny(v any, n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v
	}
	return out
}
