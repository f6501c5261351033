package api_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/tmaxmax/go-sse"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.uber.org/goleak"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/chats"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/kit/freeform"
	"github.com/agentplane/agentplane/shared/llm"
	"github.com/agentplane/agentplane/shared/memory"
)

// agentSetup is an agent answering through a scripted fake provider, with a worker running
// its runs.
func agentSetup(t *testing.T, bot map[string]any, opts ...option) (*bundle, chatAPI, *providertest.Server) {
	t.Helper()
	fake := providertest.New(t)
	b := setup(t, append([]option{withProvider(fake.URL)}, opts...)...)
	if bot == nil {
		bot = map[string]any{}
	}
	bot["provider_key"] = "sk-run-key"
	a := b.chatBot(t, bot)
	b.startWorker(t, workerOptions{})
	return b, a, fake
}

func call(name, args string) providertest.Turn {
	return providertest.Turn{Call: &providertest.Call{Name: name, Arguments: args}}
}

// cycles decodes a reply's reasoningCycles.
func cycles(t *testing.T, chat map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, c := range chat["reasoningCycles"].([]any) {
		out = append(out, c.(map[string]any))
	}
	return out
}

// executeTool decides on the tool call an execution waits for.
// followRun opens the event stream of the execution exec, from after lastEventID when it is not
// empty; the body is closed when t ends. A run that has not ended within a minute cuts the
// stream short, so the test fails on what it read instead of hanging.
func (a chatAPI) followRun(t *testing.T, exec, lastEventID string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.b.client.URL+"/v1/bot/chat/stream?"+a.query("&execution_id="+exec), nil)
	req.Header.Set("Authorization", "Bearer "+a.b.key)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Body.Close() })
	return res
}

func (a chatAPI) executeTool(t *testing.T, body map[string]any) (*apitest.Response, map[string]any) {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/chat/execute-tool", Key: a.b.key, Body: a.body(body)})
	if res.Status != http.StatusOK {
		return res, nil
	}
	return res, res.JSON(t)["chat"].(map[string]any)
}

// A run searches memory, is refused another project's deal, lists the agent's deals and
// answers citing what it found; each tool's result goes back to the model.
func TestAgentRun(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	a.ingest(t, map[string]any{"type": "text", "title": "Acme notes", "source": "Acme's renewal is due on March 3. The contract value is 40000 dollars."})
	mine := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Acme renewal", "value": 40000}))

	otherKey, otherProject := b.newTenant(t)
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: otherKey, Body: map[string]any{"project_id": otherProject.ID, "name": "other", "model": "gpt-4o-mini"}})
	expect(t, res, http.StatusOK, "")
	otherBot := res.JSON(t)["bot"].(map[string]any)["id"].(string)
	res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/deals", Key: otherKey,
		Body: map[string]any{"project_id": otherProject.ID, "bot_id": otherBot, "title": "Secret deal", "value": 999}})
	expect(t, res, http.StatusOK, "")
	secret := res.JSON(t)["deal"].(map[string]any)["uuid"].(string)

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("search_memory", `{"query":"Acme renewal date"}`),
		call("get_deal", fmt.Sprintf(`{"deal_id":%q}`, secret)),
		call("list_deals", `{}`),
		{Reply: "Acme renews on March 3 [1]."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "When does Acme renew?", "reasoning_mode": "agent"})
	if chat == nil {
		t.Fatal("no answer")
	}
	cs := cycles(t, chat)
	if len(cs) != 3 || chat["totalCycles"] != float64(3) || chat["type"] != "agent" || chat["isComplete"] != true || chat["converged"] != true {
		t.Fatalf("reply %v", chat)
	}
	if chat["reply"] != "Acme renews on March 3 [1]." || chat["finalAnswer"] != chat["reply"] || chat["executionId"] == "" {
		t.Fatalf("answer %v", chat)
	}
	agent := chat["agent"].(map[string]any)
	if agent["credit_used"] != "4" || agent["reasoning_type"] != "agent" || chat["availableTools"] != float64(11) {
		t.Fatalf("agent message %v, tools %v", agent, chat["availableTools"])
	}
	if src := chat["sources"].([]any); len(src) != 1 || src[0].(map[string]any)["citation_number"] != float64(1) {
		t.Fatalf("sources %v", chat["sources"])
	}
	if cs[0]["action"] != "search_memory" || cs[0]["actionSuccess"] != true || !strings.Contains(cs[0]["observation"].(string), "March 3") ||
		len(cs[0]["sources"].([]any)) != 1 {
		t.Fatalf("cycle 1 %v", cs[0])
	}
	if cs[1]["action"] != "get_deal" || cs[1]["actionSuccess"] != false || strings.Contains(cs[1]["observation"].(string), "Secret") {
		t.Fatalf("another project's deal was not refused: %v", cs[1])
	}
	if cs[2]["actionSuccess"] != true || !strings.Contains(cs[2]["observation"].(string), mine.UUID) || strings.Contains(cs[2]["observation"].(string), secret) {
		t.Fatalf("cycle 3 %v", cs[2])
	}

	reqs := fake.Requests()
	if len(reqs) != 4 || !slices.Contains(reqs[0].Tools, "calendar_book") || reqs[0].Header.Get("Authorization") != "Bearer sk-run-key" {
		t.Fatalf("%d requests, tools %v", len(reqs), reqs[0].Tools)
	}
	last := reqs[3].Messages
	if n := len(last); n < 7 || last[n-1].Role != llm.RoleTool || !strings.Contains(last[n-1].Content, mine.UUID) || last[n-2].ToolCalls[0].Name != "list_deals" {
		t.Fatalf("the last request does not carry the cycles: %+v", last)
	}
	hist := a.history(t, chat["chat_id"].(string), "")
	if hist["total"] != float64(2) {
		t.Fatalf("history %v", hist)
	}
	// The worker moves the run to the finished ones just after it answered: wait for the move.
	byID := bson.D{{Key: "_id", Value: chat["executionId"]}}
	var live, finished int64
	for range 200 {
		live, _ = b.db.Collection("executions").CountDocuments(context.Background(), byID)
		finished, _ = b.db.Collection("executions_finished").CountDocuments(context.Background(), byID)
		if live == 0 && finished == 1 {
			return
		}
		waitABit()
	}
	t.Fatalf("the finished run is %d times live and %d times finished", live, finished)
}

// A model that keeps calling tools is stopped at 10 calls, the last of which must answer.
func TestAgentRunCap(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	var script []providertest.Turn
	for range 12 {
		script = append(script, providertest.Turn{Call: &providertest.Call{Name: "list_deals", Arguments: `{}`}, Reply: "Here is what I found: no deals."})
	}
	fake.Set(providertest.Behavior{Script: script})
	_, chat := a.chat(t, map[string]any{"message": "List every deal", "reasoning_mode": "agent"})
	if chat == nil || len(cycles(t, chat)) != 9 || chat["agent"].(map[string]any)["credit_used"] != "10" {
		t.Fatalf("reply %v", chat)
	}
	if chat["reply"] != "Here is what I found: no deals." || strings.Contains(chat["reply"].(string), "list_deals") {
		t.Fatalf("answer %q", chat["reply"])
	}
	reqs := fake.Requests()
	if len(reqs) != 10 || reqs[9].ToolChoice != "none" || reqs[8].ToolChoice == "none" {
		t.Fatalf("%d requests, last tool_choice %q", len(reqs), reqs[len(reqs)-1].ToolChoice)
	}
}

// An agent run's answer records how long the run took, from the user's message to the stored
// answer: all its model calls (each 30 ms late here), not the last one only, and no more than
// the request that waited for it.
func TestAgentRunRecordsItsTime(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	const late = 30 * time.Millisecond
	fake.Set(providertest.Behavior{FirstByteDelay: late, Script: []providertest.Turn{
		call("list_deals", `{}`), call("list_deals", `{}`), {Reply: "There are no deals."},
	}})
	began := time.Now()
	_, chat := a.chat(t, map[string]any{"message": "List every deal", "reasoning_mode": "agent"})
	elapsed := time.Since(began)
	if chat == nil || chat["isComplete"] != true {
		t.Fatalf("reply %v", chat)
	}
	conversation := a.history(t, chat["chat_id"].(string), "")["conversation"].([]any)
	answer := conversation[len(conversation)-1].(map[string]any)
	ms, err := strconv.ParseInt(answer["estimated_time_ms"].(string), 10, 64)
	if took := time.Duration(ms) * time.Millisecond; err != nil || answer["role"] != "agent" || took < 3*late || took > elapsed {
		t.Fatalf("the answer records %v ms (%v), want from %v to %v: %v", answer["estimated_time_ms"], err, 3*late, elapsed, answer)
	}
}

// pausedOnCreateDeal starts an agent run whose model asks for create_deal (which waits for
// approval), then answers reply; it returns the paused answer.
func pausedOnCreateDeal(t *testing.T, reply string) (*bundle, chatAPI, *providertest.Server, map[string]any) {
	t.Helper()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("create_deal", `{"title":"Acme"}`),
		{Reply: reply},
	}})
	_, paused := a.chat(t, map[string]any{"message": "Create a deal for Acme", "reasoning_mode": "agent"})
	return b, a, fake, paused
}

// A tool that changes data waits for approval: approved with edited parameters it runs once;
// rejected it does not run; a decision is taken once.
func TestAgentApproval(t *testing.T) {
	t.Parallel()
	b, a, fake, paused := pausedOnCreateDeal(t, "Done: the deal is created.")
	tool, _ := paused["tool"].(map[string]any)
	if paused["requiresApproval"] != true || paused["isComplete"] != false || paused["hasMoreSteps"] != true || tool["name"] != "create_deal" ||
		tool["parameters"].(map[string]any)["title"] != "Acme" || tool["description"] == "" {
		t.Fatalf("paused reply %v", paused)
	}
	exec := paused["executionId"].(string)
	listDeals := func() []any {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["deals"].([]any)
	}
	if n := len(listDeals()); n != 0 {
		t.Fatalf("%d deals before the approval", n)
	}

	_, done := a.executeTool(t, map[string]any{"executionId": exec, "approve": true, "parameters": map[string]any{"title": "Acme Corp", "value": 500}})
	if done == nil || done["isComplete"] != true || done["reply"] != "Done: the deal is created." {
		t.Fatalf("after approval %v", done)
	}
	cs := cycles(t, done)
	if len(cs) != 1 || cs[0]["actionSuccess"] != true || !strings.Contains(cs[0]["actionInput"].(string), "Acme Corp") {
		t.Fatalf("cycles %v", cs)
	}
	deals := listDeals()
	if len(deals) != 1 || deals[0].(map[string]any)["title"] != "Acme Corp" || deals[0].(map[string]any)["value"] != float64(500) {
		t.Fatalf("deals %v", deals)
	}
	res, _ := a.executeTool(t, map[string]any{"executionId": exec, "approve": true})
	expect(t, res, http.StatusConflict, "execution_not_awaiting_approval")

	t.Run("Rejected", func(t *testing.T) {
		fake.Set(providertest.Behavior{Script: []providertest.Turn{
			call("create_deal", `{"title":"Globex"}`),
			{Reply: "Understood, I did not create it."},
		}})
		_, paused := a.chat(t, map[string]any{"message": "Create a deal for Globex", "reasoning_mode": "agent"})
		_, done := a.executeTool(t, map[string]any{"executionId": paused["executionId"], "approve": false})
		cs := cycles(t, done)
		if len(cs) != 1 || cs[0]["actionSuccess"] != false || !strings.Contains(cs[0]["observation"].(string), "rejected") {
			t.Fatalf("cycles %v", cs)
		}
		if n := len(listDeals()); n != 1 {
			t.Fatalf("%d deals after a rejection", n)
		}
	})
	t.Run("Validation", func(t *testing.T) {
		for _, tt := range []struct {
			body   map[string]any
			status int
			code   string
		}{
			{map[string]any{"executionId": exec}, http.StatusUnprocessableEntity, "invalid_field"},
			{map[string]any{"executionId": exec, "approve": true, "parameters": "x"}, http.StatusUnprocessableEntity, "invalid_field"},
			{map[string]any{"executionId": "nope", "approve": true}, http.StatusNotFound, ""},
			{map[string]any{"approve": true}, http.StatusUnprocessableEntity, ""},
		} {
			res, _ := a.executeTool(t, tt.body)
			expect(t, res, tt.status, tt.code)
		}
	})
}

// A streamed run sends each kept entry once with its number; a client that reconnects with
// Last-Event-ID gets what it missed and the rest.
func TestAgentStreamResume(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("list_deals", `{}`),
		call("create_deal", `{"title":"Initech"}`),
		{Reply: "Created the Initech deal."},
	}})
	res := a.streamChat(t, context.Background(), map[string]any{"message": "Create a deal for Initech", "reasoning_mode": "agent", "stream": true})
	defer res.Body.Close()
	var ids, types []string
	var exec string
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, ev.Type)
		if ev.Type != "delta" {
			ids = append(ids, ev.LastEventID)
		}
		if ev.Type == "done" {
			var v struct{ Chat map[string]any }
			_ = json.Unmarshal([]byte(ev.Data), &v)
			exec = v.Chat["executionId"].(string)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(types), func(s string) bool { return s == "delta" })
	if !slices.Equal(kept, []string{"stored", "cycle", "cycle", "done"}) || !slices.Equal(ids, []string{"1", "2", "3", "4"}) {
		t.Fatalf("events %v ids %v", types, ids)
	}
	if !slices.Contains(types, "delta") {
		t.Fatalf("no delta in %v", types)
	}

	again := a.followRun(t, exec, "2")
	var replay []string
	for ev, err := range sse.Read(again.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		replay = append(replay, ev.LastEventID+":"+ev.Type)
	}
	if !slices.Equal(replay, []string{"3:cycle", "4:done"}) {
		t.Fatalf("replay %v", replay)
	}
	other, _ := b.newTenant(t)
	res2 := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/stream?" + a.query("&execution_id="+exec), Key: other})
	if res2.Status != http.StatusNotFound && res2.Status != http.StatusForbidden {
		t.Fatalf("another account read the stream: %d", res2.Status)
	}
	res3 := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/chat/stream?" + a.query("&execution_id="+exec+"&last_event_id=x"), Key: b.key})
	expect(t, res3, http.StatusUnprocessableEntity, "")
}

// A provider without tool calling gets the tools in the prompt and calls them in text.
func TestAgentTextProtocol(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{NoTools: true, Script: []providertest.Turn{
		{Reply: "Thought: I should look at the deals.\nAction: list_deals\nAction Input: {}"},
		{Reply: "Thought: none.\nFinal Answer: There are no deals yet."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "How many deals?", "reasoning_mode": "agent"})
	cs := cycles(t, chat)
	if len(cs) != 1 || cs[0]["action"] != "list_deals" || cs[0]["thought"] != "I should look at the deals." || chat["reply"] != "There are no deals yet." {
		t.Fatalf("reply %v", chat)
	}
	reqs := fake.Requests()
	if last := reqs[len(reqs)-1]; len(last.Tools) != 0 || !strings.Contains(last.Messages[0].Content, "Action Input:") {
		t.Fatalf("the text protocol was not used: %+v", last)
	}
}

// auto picks an agent run for a request that needs tools and a standard reply for a greeting.
func TestAutoReasoningMode(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Hello!"})
	_, chat := a.chat(t, map[string]any{"message": "hello there"})
	if chat["type"] != "standard" || chat["agent"].(map[string]any)["reasoning_type"] != "standard" {
		t.Fatalf("greeting answered %v", chat["type"])
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("list_deals", `{}`), {Reply: "You have no open deals."}}})
	_, chat = a.chat(t, map[string]any{"message": "Which deals are open, and then what should I do first?"})
	if chat["type"] != "agent" || chat["preference"].(map[string]any)["reasoningType"] != "agent" || chat["reply"] != "You have no open deals." {
		t.Fatalf("multi-step request answered %v", chat)
	}
}

// With the non-streamed wait over, the answer has the steps so far and the run goes on.
func TestAgentRunOutlastsTheWait(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil, withRunWait(300*time.Millisecond))
	fake.Set(providertest.Behavior{FirstByteDelay: 700 * time.Millisecond, Script: []providertest.Turn{call("list_deals", `{}`), {Reply: "No deals."}}})
	_, chat := a.chat(t, map[string]any{"message": "deals?", "reasoning_mode": "agent"})
	if chat["isComplete"] != false || chat["hasMoreSteps"] != true || chat["executionId"] == "" {
		t.Fatalf("reply %v", chat)
	}
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(a.followRun(t, chat["executionId"].(string), "").Body)
	if !strings.Contains(raw.String(), "event: done") || !strings.Contains(raw.String(), "No deals.") {
		t.Fatalf("stream %s", raw.String())
	}
}

// Edit mode rewrites the fenced block of the message, or the agent's previous reply, and
// answers with the edited text and a unified diff.
func TestEditMode(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "```go\nfunc sum(a, b int) int {\n\treturn a + b\n}\n```"})
	_, chat := a.chat(t, map[string]any{"chat_mode": "edit",
		"message": "Rename the function to sum:\n```go\nfunc add(a, b int) int {\n\treturn a + b\n}\n```"})
	want := "func sum(a, b int) int {\n\treturn a + b\n}"
	diff, _ := chat["context"].(string)
	if chat["type"] != "edit" || chat["reply"] != want || !strings.Contains(diff, "--- original") || !strings.Contains(diff, "-func add(a, b int) int {") ||
		!strings.Contains(diff, "+func sum(a, b int) int {") {
		t.Fatalf("edit reply %v", chat)
	}
	reqs := fake.Requests()
	if sent := reqs[len(reqs)-1].Messages; !strings.Contains(sent[0].Content, "You edit text") ||
		!strings.Contains(sent[1].Content, "Change requested: Rename the function to sum:") || !strings.Contains(sent[1].Content, "func add") {
		t.Fatalf("edit prompt %+v", sent)
	}

	fake.Set(providertest.Behavior{Reply: "func sum(a, b int) int {\n\treturn a * b\n}"})
	_, again := a.chat(t, map[string]any{"chat_mode": "edit", "chat_id": chat["chat_id"], "message": "Multiply instead"})
	if d := again["context"].(string); !strings.Contains(d, "-\treturn a + b") || !strings.Contains(d, "+\treturn a * b") {
		t.Fatalf("edit of the previous reply: %v", again)
	}

	before := len(fake.Requests())
	_, none := a.chat(t, map[string]any{"chat_mode": "edit", "message": "fix it"})
	if !strings.Contains(none["reply"].(string), "fenced block") || len(fake.Requests()) != before || none["agent"].(map[string]any)["credit_used"] != "0" {
		t.Fatalf("nothing to edit: %v", none)
	}
}

// Plan mode proposes a numbered plan; the next message accepts it (a run carries it out step by
// step), rejects it, or changes it.
func TestPlanMode(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	fake.Set(providertest.Behavior{Reply: "Here is my plan:\n1. Check the open deals.\n2. Note what is missing.\n3. Summarize."})
	_, plan := a.chat(t, map[string]any{"chat_mode": "plan", "message": "Review my pipeline"})
	if plan["type"] != "plan" || plan["hasMoreSteps"] != true || plan["isComplete"] != false || plan["totalSteps"] != float64(3) ||
		plan["reply"] != "1. Check the open deals.\n2. Note what is missing.\n3. Summarize." || !strings.Contains(plan["stepInfo"].(string), "3 steps") {
		t.Fatalf("plan %v", plan)
	}
	chatID := plan["chat_id"]

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("list_deals", `{}`), {Reply: "No open deals."}}})
	res := a.streamChat(t, context.Background(), map[string]any{"chat_id": chatID, "message": "yes", "stream": true})
	defer res.Body.Close()
	var kept []string
	var done map[string]any
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		var data map[string]any
		_ = json.Unmarshal([]byte(ev.Data), &data)
		switch ev.Type {
		case "delta":
			continue
		case "step", "cycle":
			kept = append(kept, ev.Type+":"+data["stepInfo"].(string))
		case "done":
			done = data["chat"].(map[string]any)
		}
		if ev.Type != "step" && ev.Type != "cycle" {
			kept = append(kept, ev.Type)
		}
	}
	want := []string{"stored", "cycle:Step 1 of 3: Check the open deals.", "step:Step 1 of 3: Check the open deals.",
		"step:Step 2 of 3: Note what is missing.", "done"}
	if !slices.Equal(kept, want) {
		t.Fatalf("events %q, want %q", kept, want)
	}
	if done["reply"] != "No open deals." || done["totalSteps"] != float64(3) || done["agent"].(map[string]any)["credit_used"] != "4" ||
		!strings.Contains(done["stepInfo"].(string), "3 steps") {
		t.Fatalf("done %v", done)
	}
	reqs := fake.Requests()
	last := reqs[len(reqs)-1].Messages
	if !strings.Contains(last[0].Content, "Now carry out step 3, the last") || !strings.Contains(last[0].Content, "Result of step 2: No open deals.") {
		t.Fatalf("last step prompt %q", last[0].Content)
	}
	if q := last[len(last)-3]; q.Role != llm.RoleUser || q.Content != "Review my pipeline" {
		t.Fatalf("the run does not carry out the planned request: %+v", last)
	}

	t.Run("RejectedOrChanged", func(t *testing.T) {
		fake.Set(providertest.Behavior{Reply: "1. Look up Acme.\n2. Book a call."})
		_, plan := a.chat(t, map[string]any{"chat_mode": "plan", "message": "Get Acme on a call"})
		_, changed := a.chat(t, map[string]any{"chat_id": plan["chat_id"], "message": "Also email them first"})
		reqs := fake.Requests()
		if changed["type"] != "plan" || !strings.Contains(reqs[len(reqs)-1].Messages[len(reqs[len(reqs)-1].Messages)-1].Content, "Change to the plan: Also email them first") {
			t.Fatalf("changed plan %v", changed)
		}
		before := len(fake.Requests())
		_, dropped := a.chat(t, map[string]any{"chat_id": plan["chat_id"], "message": "no, cancel that"})
		if dropped["type"] != "plan" || !strings.Contains(dropped["reply"].(string), "dropped the plan") || len(fake.Requests()) != before {
			t.Fatalf("rejected plan %v", dropped)
		}
		_, next := a.chat(t, map[string]any{"chat_id": plan["chat_id"], "message": "yes", "reasoning_mode": "standard"})
		if next["type"] != "standard" {
			t.Fatalf("a dropped plan was carried out: %v", next)
		}
	})
}

// A run whose task was lost (an enqueue that failed while Redis was down, say) is queued again
// by the scheduler's reconciler a minute later, and completes.
func TestAgentRunRequeued(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL), withRunWait(100*time.Millisecond))
	a := b.chatBot(t, map[string]any{"provider_key": "k"})
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("list_deals", `{}`), {Reply: "No deals."}}})
	_, chat := a.chat(t, map[string]any{"message": "deals?", "reasoning_mode": "agent"})
	exec := chat["executionId"].(string)
	insp := asynq.NewInspector(redisOpt(t))
	defer insp.Close()
	if err := insp.DeleteTask(b.queue, "agent:run:"+exec); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if n, err := b.runs.Requeue(ctx, time.Now()); err != nil || n != 0 {
		t.Fatalf("requeued a fresh run: %d %v", n, err)
	}
	if n, err := b.runs.Requeue(ctx, time.Now().Add(2*time.Minute)); err != nil || n != 1 {
		t.Fatalf("requeued %d runs, want 1 (%v)", n, err)
	}
	b.startWorker(t, workerOptions{})
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(a.followRun(t, exec, "").Body)
	if !strings.Contains(raw.String(), "event: done") {
		t.Fatalf("stream %s", raw.String())
	}
	if n, err := b.runs.Requeue(ctx, time.Now().Add(2*time.Minute)); err != nil || n != 0 {
		t.Fatalf("requeued a finished run: %d %v", n, err)
	}
}

// BoostGPT's clients approve by chat and tool calls rather than by execution id.
func TestAgentApprovalByChat(t *testing.T) {
	t.Parallel()
	_, a, _, paused := pausedOnCreateDeal(t, "Created.")
	chatID := paused["chat_id"]
	res, _ := a.executeTool(t, map[string]any{"chat_id": chatID, "tool_calls": []map[string]any{{"tool_name": "update_deal", "parameters": map[string]any{}}}})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
	_, done := a.executeTool(t, map[string]any{"chat_id": chatID, "tool_calls": []map[string]any{{"name": "create_deal", "arguments": `{"title":"Acme Inc"}`}}})
	if done == nil || done["isComplete"] != true || !strings.Contains(cycles(t, done)[0]["actionInput"].(string), "Acme Inc") {
		t.Fatalf("after approval %v", done)
	}
	res, _ = a.executeTool(t, map[string]any{"chat_id": chatID, "tool_calls": []map[string]any{{"tool_name": "create_deal"}}})
	expect(t, res, http.StatusNotFound, "")
}

// A step that fails for a passing reason (the provider answered 503 past its own retries) is
// tried again by the task's retry at once: the failed attempt gives its lease back, so the retry
// takes the run instead of finding it held and leaving it to the reconciler.
func TestAgentRunRetriedAfterAFailedStep(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{FailTimes: 3, Script: []providertest.Turn{{Reply: "All fine now."}}})
	_, chat := a.chat(t, map[string]any{"message": "How are things?", "reasoning_mode": "agent"})
	if chat["isComplete"] != true || !strings.Contains(chat["reply"].(string), "All fine now.") {
		t.Fatalf("reply %v", chat)
	}
}

// A worker that stops between adding a run's answer to the chat and ending the run leaves the
// answer there: the run's next attempt ends the run with it, without asking the model again or
// adding the answer twice.
func TestAgentRunEndedWithTheAnswerInTheChat(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL), withRunWait(100*time.Millisecond))
	a := b.chatBot(t, map[string]any{"provider_key": "k"})
	fake.Set(providertest.Behavior{Script: []providertest.Turn{{Reply: "An answer the model gave twice."}}})
	_, chat := a.chat(t, map[string]any{"message": "How are things?", "reasoning_mode": "agent"})
	exec, chatID := chat["executionId"].(string), chat["chat_id"].(string)

	ctx := context.Background()
	bot, err := b.agents.Get(ctx, b.project.ID, a.botID)
	if err != nil {
		t.Fatal(err)
	}
	c, err := b.chats.Get(ctx, b.project.ID, bot.ID, chatID)
	if err != nil {
		t.Fatal(err)
	}
	turn := chats.Turn{Bot: bot, Chat: c, User: c.Recent[len(c.Recent)-1]}
	m := b.chats.AgentMessage(turn, "All fine, said before the crash.", "gpt-4o-mini", time.Second, llm.Usage{}, []memory.Ref{})
	m.Reasoning = freeform.Object{"executionId": exec}
	if err := b.chats.Append(ctx, b.project.ID, bot, &c, &m); err != nil {
		t.Fatal(err)
	}

	b.startWorker(t, workerOptions{})
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(a.followRun(t, exec, "").Body)
	if !strings.Contains(raw.String(), "event: done") || !strings.Contains(raw.String(), m.UUID) {
		t.Fatalf("the run did not end with the answer in the chat: %s", raw.String())
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times, want 0", n)
	}
	hist := a.history(t, chatID, "")
	conv := hist["conversation"].([]any)
	if hist["total"] != float64(2) || len(conv) != 2 || conv[1].(map[string]any)["uuid"] != m.UUID {
		t.Fatalf("history %v", hist)
	}
}

// collectionsHolding names the collections of db with a document whose raw BSON holds s.
func collectionsHolding(t *testing.T, db *mongo.Database, s string) []string {
	t.Helper()
	ctx := context.Background()
	names, err := db.ListCollectionNames(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var holding []string
	for _, name := range names {
		cur, err := db.Collection(name).Find(ctx, bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for cur.Next(ctx) {
			if bytes.Contains(cur.Current, []byte(s)) {
				holding = append(holding, name)
				break
			}
		}
		if err := cur.Err(); err != nil {
			t.Fatal(err)
		}
		_ = cur.Close(ctx)
	}
	return holding
}

// A request's provider_key is used for the run it starts and for the rest of it after an
// approval, and is written to no collection of the store, nor is the agent's own key, stored
// sealed; the agent's rate limit message, stored as it is, is found by the same scan.
func TestAgentRunKeepsNoProviderKey(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	const agentKey, stored = "sk-agent-key-stored-with-the-agent", "a rate limit message stored with the agent"
	a := b.chatBot(t, map[string]any{"provider_key": agentKey, "ratelimit_message": stored})
	b.startWorker(t, workerOptions{})
	requestKey := "sk-request-key-" + testenv.NewName()
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("list_deals", `{}`),
		call("create_deal", `{"title":"Umbrella"}`),
		{Reply: "Created the Umbrella deal."},
	}})
	_, paused := a.chat(t, map[string]any{"message": "Create a deal for Umbrella", "reasoning_mode": "agent", "provider_key": requestKey})
	if paused["requiresApproval"] != true {
		t.Fatalf("reply %v", paused)
	}
	_, done := a.executeTool(t, map[string]any{"executionId": paused["executionId"], "approve": true, "provider_key": requestKey})
	if done == nil || done["reply"] != "Created the Umbrella deal." {
		t.Fatalf("after approval %v", done)
	}
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d provider requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if got := r.Header.Get("Authorization"); got != "Bearer "+requestKey {
			t.Fatalf("provider request %d authorized with %q, want the request's key", i+1, got)
		}
	}
	// The worker moves the run to the finished ones just after it answered: wait for the move,
	// its last write.
	byID := bson.D{{Key: "_id", Value: done["executionId"]}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := b.db.Collection("executions_finished").CountDocuments(context.Background(), byID)
		if err != nil {
			t.Fatal(err)
		}
		if n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ended run was not moved to the finished ones")
		}
		waitABit()
	}
	if held := collectionsHolding(t, b.db, stored); !slices.Equal(held, []string{"bots"}) {
		t.Fatalf("the agent's rate limit message is found in %v, want bots: the scan does not see stored strings", held)
	}
	if held := collectionsHolding(t, b.db, agentKey); len(held) != 0 {
		t.Fatalf("the agent's provider_key is stored in the clear in %v", held)
	}
	if held := collectionsHolding(t, b.db, requestKey); len(held) != 0 {
		t.Fatalf("the request's provider_key is stored in %v", held)
	}
}

// runStream is an open event stream of an agent run, read one event at a time.
type runStream struct {
	next func() (sse.Event, error, bool)
	// cut goes away from the stream, as a client that disconnects.
	cut context.CancelFunc
}

// openRunStream opens POST /v1/bot/chat with body when it is not nil, else GET
// /v1/bot/chat/stream of the execution exec; it is closed when t ends.
func (a chatAPI) openRunStream(t *testing.T, body map[string]any, exec string) runStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var res *http.Response
	if body != nil {
		res = a.streamChat(t, ctx, body)
	} else {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, a.b.client.URL+"/v1/bot/chat/stream?"+a.query("&execution_id="+exec), nil)
		req.Header.Set("Authorization", "Bearer "+a.b.key)
		var err error
		if res, err = http.DefaultClient.Do(req); err != nil {
			t.Fatal(err)
		}
	}
	next, stop := iter.Pull2(sse.Read(res.Body, nil))
	t.Cleanup(func() {
		stop()
		_ = res.Body.Close()
	})
	return runStream{next: next, cut: cancel}
}

// until reads the stream up to and including the first event of type typ, and returns the
// types it read.
func (s runStream) until(t *testing.T, typ string) []string {
	t.Helper()
	var types []string
	for {
		ev, err, ok := s.next()
		if !ok {
			t.Fatalf("the stream ended without %s, after %v", typ, types)
		}
		if err != nil {
			t.Fatal(err)
		}
		if types = append(types, ev.Type); ev.Type == typ {
			return types
		}
	}
}

// A client that cuts the stream of an agent run mid-answer, the chat's own stream or a
// follower's, leaves no goroutine behind; the run goes on and the other stream sees it end.
func TestAgentStreamCut(t *testing.T) {
	_, a, fake := agentSetup(t, nil)
	// A first run, to its end, has the worker serving before the goroutines are counted.
	fake.Set(providertest.Behavior{Script: []providertest.Turn{{Reply: "Ready."}}})
	if _, ready := a.chat(t, map[string]any{"message": "Are you there?", "reasoning_mode": "agent"}); ready == nil || ready["isComplete"] != true {
		t.Fatalf("first run %v", ready)
	}
	// The embedded store runs in this process: the connections the driver opens meanwhile are
	// served by goroutines of its own (FerretDB's and its proxy's), which are not the stream's;
	// so are the two of the worker's subscription to task cancelations in Redis (asynq's), which
	// it may open after its start.
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreAnyFunction("github.com/FerretDB/FerretDB/internal/clientconn.acceptLoop.func1"),
		goleak.IgnoreTopFunction("github.com/FerretDB/FerretDB/internal/clientconn.(*conn).run.func2"),
		goleak.IgnoreTopFunction("github.com/FerretDB/FerretDB/internal/util/ctxutil.WithDelay.func1"),
		goleak.IgnoreAnyFunction("github.com/agentplane/agentplane/shared/devenv/devstack.(*serializer).serve"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*channel).initMsgChan.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*channel).initHealthCheck.func1"))
	// The answer comes a word at a time, so that the cut falls in the middle of it.
	fake.Set(providertest.Behavior{ChunkDelay: 50 * time.Millisecond, Script: []providertest.Turn{
		call("list_deals", `{}`),
		{Reply: "There are no deals yet, so nothing is open and nothing is due this week."},
	}})
	for _, tt := range []struct {
		name        string
		cutFollower bool
	}{
		{"ChatStreamCut", false},
		{"FollowerCut", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			chat := a.openRunStream(t, map[string]any{"message": "Which deals are open?", "reasoning_mode": "agent", "stream": true}, "")
			ev, err, _ := chat.next()
			var stored struct{ ExecutionID string }
			if err != nil || ev.Type != "stored" || json.Unmarshal([]byte(ev.Data), &stored) != nil {
				t.Fatalf("first event %+v (%v)", ev, err)
			}
			follower := a.openRunStream(t, nil, stored.ExecutionID)
			cut, kept := chat, follower
			if tt.cutFollower {
				cut, kept = follower, chat
			}
			cut.until(t, "delta")
			cut.cut()
			kept.until(t, "done")
		})
	}
	http.DefaultClient.CloseIdleConnections()
	provider.Transport().CloseIdleConnections() // the configured provider's connections
}

// A run the provider refuses fails: the chat answers the provider's error as the API's error
// body, the event stream ends with that body as its error event, and the run's log keeps the
// error's kind, code and message (not an HTTP answer).
func TestAgentRunFailure(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Status: http.StatusUnauthorized, ErrorMessage: "Incorrect API key provided."})
	res, _ := a.chat(t, map[string]any{"message": "Hello", "reasoning_mode": "agent"})
	if res.Status < 400 {
		t.Fatalf("a refused run answered %d: %s", res.Status, res.Body)
	}
	var answer struct {
		Error struct {
			Status  int
			Code    string
			Message string
		}
	}
	res.Decode(t, &answer)
	if answer.Error.Status != res.Status || answer.Error.Code == "" {
		t.Fatalf("the failure's body %s", res.Body)
	}

	var e struct {
		ID  string `bson:"_id"`
		Log []struct{ Event, Data string }
	}
	for _, coll := range []string{"executions_finished", "executions"} {
		if err := b.db.Collection(coll).FindOne(context.Background(), bson.D{{Key: "project_id", Value: b.project.ID}}).Decode(&e); err == nil {
			break
		}
	}
	if len(e.Log) == 0 || e.Log[len(e.Log)-1].Event != "error" {
		t.Fatalf("the run's log %+v", e.Log)
	}
	var kept map[string]any
	if err := json.Unmarshal([]byte(e.Log[len(e.Log)-1].Data), &kept); err != nil {
		t.Fatal(err)
	}
	if _, ok := kept["error"]; ok || kept["code"] != answer.Error.Code || kept["kind"] == "" || kept["message"] != answer.Error.Message {
		t.Fatalf("the log keeps %v, want the kind, code and message of %s", kept, res.Body)
	}

	stream := a.followRun(t, e.ID, "")
	raw, err := io.ReadAll(stream.Body)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(map[string]any{"error": map[string]any{"status": answer.Error.Status, "code": answer.Error.Code, "message": answer.Error.Message}, "message": answer.Error.Message})
	if !strings.Contains(string(raw), "event: error\ndata: "+string(want)+"\n") {
		t.Fatalf("the stream does not end with the error body %s:\n%s", want, raw)
	}
}

// A client that follows a run waiting for its model gets the stream's headers at once and a
// heartbeat before the run's next event, so that no proxy closes the silent connection.
func TestRunStreamBeatsBeforeItsFirstEvent(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil, withHeartbeat(30*time.Millisecond))
	fake.Set(providertest.Behavior{Reply: "Here at last.", FirstByteDelay: time.Second})
	s := a.openRunStream(t, map[string]any{"message": "Take your time", "reasoning_mode": "agent", "stream": true}, "")
	ev, err, ok := s.next()
	if !ok || err != nil || ev.Type != "stored" {
		t.Fatalf("first event %+v, %v", ev, err)
	}
	var stored struct{ ExecutionID string }
	if err := json.Unmarshal([]byte(ev.Data), &stored); err != nil || stored.ExecutionID == "" {
		t.Fatalf("stored %s: %v", ev.Data, err)
	}
	res := a.followRun(t, stored.ExecutionID, ev.LastEventID)
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() && lines.Text() == "" {
	}
	if got := lines.Text(); got != ": ping" {
		t.Fatalf("the stream began with %q, not a heartbeat", got)
	}
	var rest bytes.Buffer
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	if !strings.Contains(rest.String(), "event: done") {
		t.Fatalf("the run did not end on the stream: %s", rest.String())
	}
}
