package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/agents"
	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/sources"
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

// requestLimit is a bounded field of a request: body(n) is the request with the field at size
// n, answered 200 at max and 422 naming field at max+1.
type requestLimit struct {
	field        string
	max          int
	method, path string
	body         func(n int) map[string]any
}

// Every bounded field of docs/limits.md's table beyond the agent's and the workflow's
// definition, at its limit, is accepted; one over is refused naming it.
func TestResourceLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.chatBot(t, nil)
	wf := workflowAPI{a}
	workflowID := wf.create(t, map[string]any{"trigger_type": "manual", "actions": []any{map[string]any{"type": "send_message", "params": map[string]any{"message": "x"}}}})
	res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/crm/pipelines", Key: b.key, Body: a.body(map[string]any{"name": "Stages"})})
	expect(t, res, http.StatusOK, "")
	pipelineID := res.JSON(t)["pipeline"].(map[string]any)["uuid"].(string)

	chars := func(n int) string { return strings.Repeat("é", n) }
	// words is text of n characters in words, as people write (the chat's retrieval and prompt
	// take a single word of thousands of characters slowly).
	words := func(n int) string { return strings.Repeat("a", n%5) + strings.Repeat(" word", n/5) }
	// unique names a pipeline or a stage made by a case, which must not meet another's.
	made := 0
	unique := func() string { made++; return "made " + strconv.Itoa(made) }
	deal := func(extra map[string]any) map[string]any {
		d := map[string]any{"title": "Pilot"}
		maps.Copy(d, extra)
		return d
	}
	email := func(n int) string { return strings.Repeat("a", n-len("@example.com")) + "@example.com" }
	stages := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = map[string]any{"name": "Stage " + strconv.Itoa(i)}
		}
		return out
	}
	tags := func(count, length int) []string {
		out := make([]string, count)
		for i := range out {
			out[i] = fmt.Sprintf("%0*d", length, i)
		}
		return out
	}
	source := func(extra map[string]any) map[string]any {
		s := map[string]any{"title": "Hours", "type": "text", "source": "The shop opens at nine."}
		maps.Copy(s, extra)
		return s
	}
	const deals, contacts, pipelines, newSource = "/v1/bot/crm/deals", "/v1/bot/crm/contacts", "/v1/bot/crm/pipelines", "/v1/bot/source/create"
	cases := []requestLimit{
		{"title", crm.MaxTitleLength, http.MethodPost, deals, func(n int) map[string]any { return deal(map[string]any{"title": chars(n)}) }},
		{"contact.name", crm.MaxContactLength, http.MethodPost, deals, func(n int) map[string]any { return deal(map[string]any{"contact": map[string]any{"name": chars(n)}}) }},
		{"contact.email", crm.MaxContactLength, http.MethodPost, deals, func(n int) map[string]any { return deal(map[string]any{"contact": map[string]any{"email": email(n)}}) }},
		{"contact.phone", crm.MaxContactLength, http.MethodPost, deals, func(n int) map[string]any { return deal(map[string]any{"contact": map[string]any{"phone": chars(n)}}) }},
		{"contact.company", crm.MaxContactLength, http.MethodPost, deals, func(n int) map[string]any {
			return deal(map[string]any{"contact": map[string]any{"company": chars(n)}})
		}},
		{"name", crm.MaxContactLength, http.MethodPost, contacts, func(n int) map[string]any { return map[string]any{"name": chars(n)} }},
		{"fields", crm.MaxFieldsSize, http.MethodPost, contacts, func(n int) map[string]any {
			return map[string]any{"name": "Ada", "fields": map[string]any{"k": strings.Repeat("a", n-len(`{"k":""}`))}}
		}},
		{"label", crm.MaxFieldLabelLength, http.MethodPost, "/v1/bot/crm/fields", func(n int) map[string]any {
			u := unique()
			return map[string]any{"label": u + chars(n-len(u))}
		}},
		{"email", crm.MaxContactLength, http.MethodPost, contacts, func(n int) map[string]any { return map[string]any{"email": email(n)} }},
		{"phone", crm.MaxContactLength, http.MethodPost, contacts, func(n int) map[string]any { return map[string]any{"phone": chars(n)} }},
		{"company", crm.MaxContactLength, http.MethodPost, contacts, func(n int) map[string]any { return map[string]any{"company": chars(n)} }},
		{"name", crm.MaxPipelineNameLength, http.MethodPost, pipelines, func(n int) map[string]any {
			u := unique()
			return map[string]any{"name": u + chars(n-len(u))}
		}},
		{"stages[0].name", crm.MaxPipelineNameLength, http.MethodPost, pipelines, func(n int) map[string]any {
			return map[string]any{"name": unique(), "stages": []any{map[string]any{"name": chars(n)}}}
		}},
		{"stages", crm.MaxStages, http.MethodPost, pipelines, func(n int) map[string]any { return map[string]any{"name": unique(), "stages": stages(n)} }},
		{"name", crm.MaxPipelineNameLength, http.MethodPost, pipelines + "/stages", func(n int) map[string]any {
			u := unique()
			return map[string]any{"pipeline_id": pipelineID, "name": u + chars(n-len(u))}
		}},
		{"title", sources.MaxTitleLength, http.MethodPost, newSource, func(n int) map[string]any { return source(map[string]any{"title": chars(n)}) }},
		{"description", sources.MaxDescriptionLength, http.MethodPost, newSource, func(n int) map[string]any { return source(map[string]any{"description": chars(n)}) }},
		{"tags", sources.MaxTags, http.MethodPost, newSource, func(n int) map[string]any { return source(map[string]any{"tags": tags(n, 2)}) }},
		{"tags", sources.MaxTagLength, http.MethodPost, newSource, func(n int) map[string]any { return source(map[string]any{"tags": tags(1, n)}) }},
		{"source", sources.MaxURLLength, http.MethodPost, newSource, func(n int) map[string]any {
			const site = "https://example.com/?q="
			return source(map[string]any{"type": "url", "source": site + strings.Repeat("a", n-len(site))})
		}},
		{"message", chats.MaxMessageLength, http.MethodPost, "/v1/bot/chat", func(n int) map[string]any { return map[string]any{"message": words(n)} }},
		{"instruction", chats.MaxInstructionLength, http.MethodPost, "/v1/bot/chat", func(n int) map[string]any {
			return map[string]any{"message": "When do you open?", "instruction": words(n)}
		}},
		{"meeting_title", calendar.MaxMeetingTitleLength, http.MethodPut, "/v1/bot/calendar/settings", func(n int) map[string]any { return map[string]any{"meeting_title": chars(n)} }},
		{"meeting_location", calendar.MaxMeetingLocationLength, http.MethodPut, "/v1/bot/calendar/settings", func(n int) map[string]any {
			return map[string]any{"meeting_location": chars(n)}
		}},
		{"booking_instructions", calendar.MaxBookingInstructionsLength, http.MethodPut, "/v1/bot/calendar/settings", func(n int) map[string]any {
			return map[string]any{"booking_instructions": chars(n)}
		}},
		{"description", workflows.MaxDescriptionLength, http.MethodPut, "/v1/bot/workflow/update", func(n int) map[string]any {
			return map[string]any{"workflow_id": workflowID, "description": chars(n)}
		}},
		{"status", workflows.MaxStatusLength, http.MethodPut, "/v1/bot/workflow/update", func(n int) map[string]any {
			return map[string]any{"workflow_id": workflowID, "status": chars(n)}
		}},
		{"input", workflows.MaxInputBytes, http.MethodPost, "/v1/bot/workflow/run", func(n int) map[string]any {
			return map[string]any{"workflow_id": workflowID, "input": sizedObject(n)}
		}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s_%s_%d", tc.path, tc.field, tc.max), func(t *testing.T) {
			expect(t, b.client.Do(apitest.Request{Method: tc.method, Path: tc.path, Key: b.key, Body: a.body(tc.body(tc.max))}), http.StatusOK, "")
			res := b.client.Do(apitest.Request{Method: tc.method, Path: tc.path, Key: b.key, Body: a.body(tc.body(tc.max + 1))})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tc.field)
		})
	}
	// A pipeline grown stage by stage is bounded as one made whole.
	t.Run("stages_added", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: pipelines, Key: b.key, Body: a.body(map[string]any{"name": unique(), "stages": stages(crm.MaxStages - 1)})})
		expect(t, res, http.StatusOK, "")
		id := res.JSON(t)["pipeline"].(map[string]any)["uuid"].(string)
		add := func() *apitest.Response {
			return b.client.Do(apitest.Request{Method: http.MethodPost, Path: pipelines + "/stages", Key: b.key, Body: a.body(map[string]any{"pipeline_id": id, "name": unique()})})
		}
		expect(t, add(), http.StatusOK, "")
		res = add()
		expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
		expectField(t, res, "stages")
	})
}

// A booking's name and notes at their limits are booked; one over, the agent's tool refuses the
// booking naming the field, and the model is told so.
func TestBookingLimits(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/calendar/settings?" + a.query(""), Key: b.key,
		Body: map[string]any{"timezone": "UTC", "is_enabled": true}})
	expect(t, res, http.StatusOK, "")
	// The next Monday, a week ahead: inside the booking window and past the minimum notice.
	day := time.Now().UTC().AddDate(0, 0, 7)
	for day.Weekday() != time.Monday {
		day = day.AddDate(0, 0, 1)
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/slots?" + a.query("&from="+day.Format(time.DateOnly)+"&to="+day.AddDate(0, 0, 1).Format(time.DateOnly)), Key: b.key})
	expect(t, res, http.StatusOK, "")
	var free struct{ Slots []struct{ Start time.Time } }
	res.Decode(t, &free)
	if len(free.Slots) == 0 {
		t.Fatalf("no free slot on %s", day)
	}
	book := func(name, notes int) providertest.Turn {
		args, _ := json.Marshal(map[string]any{"start": free.Slots[0].Start.UTC().Format(time.RFC3339), "email": "ada@example.com",
			"name": strings.Repeat("é", name), "notes": strings.Repeat("é", notes)})
		return call("calendar_book", string(args))
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		book(calendar.MaxBookingNameLength+1, 0),
		book(1, calendar.MaxBookingNotesLength+1),
		book(calendar.MaxBookingNameLength, calendar.MaxBookingNotesLength),
		{Reply: "Booked."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "Book me the first free slot on Monday", "reasoning_mode": "agent"})
	cs := cycles(t, chat)
	if len(cs) != 3 {
		t.Fatalf("reply %v", chat)
	}
	for i, want := range []struct {
		ok   bool
		says string
	}{{false, "name"}, {false, "notes"}, {true, `"booked"`}} {
		if cs[i]["actionSuccess"] != want.ok || !strings.Contains(cs[i]["observation"].(string), want.says) {
			t.Errorf("booking %d: %v", i, cs[i])
		}
	}
}
