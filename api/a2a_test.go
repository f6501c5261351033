package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// a2aNodeVersion is the release of the official A2A JavaScript SDK the test installs from the
// npm registry: an A2A 1.0 client, with a transport of 0.3 in its compatibility layer.
const a2aNodeVersion = "1.3.0"

type a2aTask struct {
	ID, ContextID, State, Status string
	Artifacts                    []string
}

type a2aFailure struct {
	Failed        bool
	Name, Message string
}

// The official A2A JavaScript SDK, unchanged, talks to an agent in A2A 1.0 (its methods
// SendMessage, ... with the A2A-Version header): the card fetched from the agent's URL with the
// account's key (it lists the endpoint for 1.0 and 0.3; the client then calls the URL the card
// gives), a message answered and one more in its context, the task read back, a finished task
// not cancelable, a stream resubscribed to, an unknown task not found, a message streamed with
// its status updates in order ending completed, and a task waiting for a tool's approval resumed
// with approve to completed. Tasks are canceled: one waiting for input at once, working ones
// when their worker learns of it (at the run's next write, or its lease's renewal), their answer
// never added to the chat. An A2A key of the agent reaches it, and nothing else (not another agent
// of the account, not the agent API) until it is deleted. Its 0.3 transport (message/send, ...) is answered at the same
// endpoint.
func TestA2ANodeClient(t *testing.T) {
	t.Parallel()
	dir := nodeClient(t, "@a2a-js/sdk", a2aNodeVersion, "a2a-node")
	// Model calls are not cut short (the held ones end when a cancel reaches the run's worker).
	b, a, fake := agentSetup(t, nil, withProviderTimeout(time.Minute))
	env := map[string]string{"AGENT_URL": b.client.URL + "/a2a/agents/" + a.botID, "KEY": b.key}
	a.ingest(t, map[string]any{"type": "text", "title": "Opening hours", "source": "The shop opens at nine and closes at six, Monday to Saturday."})

	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	var sent struct {
		Card struct {
			Name      string
			Streaming bool
			Skills    []string
			Base      []string `json:"interfaces"`
		}
		First, Next, Got a2aTask
		Cancel, Missing  a2aFailure
		Methods          []string
	}
	runNode(t, dir, "send", env, &sent)
	endpoint, _ := strings.CutPrefix(strings.Join(sent.Card.Base, ""), "JSONRPC 1.0 ")
	endpoint, _, _ = strings.Cut(endpoint, "JSONRPC")
	if sent.Card.Name == "" || !sent.Card.Streaming || len(sent.Card.Skills) != 2 || sent.Card.Skills[0] != "Chat" || sent.Card.Skills[1] != "Opening hours" ||
		!strings.HasPrefix(endpoint, b.client.URL+"/a2a/agents/") || strings.Join(sent.Card.Base, "|") != "JSONRPC 1.0 "+endpoint+"|JSONRPC 0.3 "+endpoint {
		t.Fatalf("the card: %+v", sent.Card)
	}
	if got := strings.Join(sent.Methods, " "); got != "SendMessage@1.0 SendMessage@1.0 GetTask@1.0 CancelTask@1.0 GetTask@1.0" {
		t.Fatalf("the client called %s, not the methods of A2A 1.0", got)
	}
	if f := sent.First; f.State != "TASK_STATE_COMPLETED" || f.Status != "We open at nine." || len(f.Artifacts) != 1 || f.Artifacts[0] != "We open at nine." || f.ContextID == "" {
		t.Fatalf("a message answered: %+v", f)
	}
	if n := sent.Next; n.State != "TASK_STATE_COMPLETED" || n.ContextID != sent.First.ContextID || n.ID == sent.First.ID {
		t.Fatalf("a message in the same context: %+v (first %+v)", n, sent.First)
	}
	if got := conversation(t, a, sent.First.ContextID); len(got) != 4 || got[2] != "user: And on Saturdays?" {
		t.Fatalf("the contextId did not go on with the chat: %q", got)
	}
	if g := sent.Got; g.ID != sent.First.ID || g.State != "TASK_STATE_COMPLETED" || g.Status != "We open at nine." {
		t.Fatalf("tasks/get: %+v", g)
	}
	if c := sent.Cancel; !c.Failed || c.Name != "JsonRpcTaskNotCancelableError" {
		t.Fatalf("tasks/cancel of a completed task: %+v", c)
	}
	if m := sent.Missing; !m.Failed || m.Name != "JsonRpcTaskNotFoundError" {
		t.Fatalf("tasks/get of no task: %+v", m)
	}

	var streamed struct{ Events, Resubscribed, Methods []string }
	runNode(t, dir, "stream", env, &streamed)
	if got := strings.Join(streamed.Methods, " "); got != "SendStreamingMessage@1.0 SubscribeToTask@1.0" {
		t.Fatalf("the client streamed with %s", got)
	}
	want := []string{"task:TASK_STATE_SUBMITTED", "status:TASK_STATE_WORKING:", "artifact:We open at nine.", "status:TASK_STATE_COMPLETED:We open at nine."}
	if strings.Join(streamed.Events, "|") != strings.Join(want, "|") {
		t.Fatalf("a message streamed: %q, want %q", streamed.Events, want)
	}
	if strings.Join(streamed.Resubscribed, "|") != "task:TASK_STATE_COMPLETED" {
		t.Fatalf("tasks/resubscribe to the completed task: %q", streamed.Resubscribed)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added Acme."}}})
	var approved struct {
		Paused, Resumed, Second a2aTask
		Again                   a2aFailure
		Streamed                []string
	}
	runNode(t, dir, "approve", env, &approved)
	if p := approved.Paused; p.State != "TASK_STATE_INPUT_REQUIRED" || !strings.Contains(p.Status, "waits for approval to run create_deal") ||
		!strings.Contains(p.Status, "Acme") {
		t.Fatalf("a task waiting for approval: %+v", p)
	}
	if r := approved.Resumed; r.ID != approved.Paused.ID || r.State != "TASK_STATE_COMPLETED" || r.Status != "Added Acme." {
		t.Fatalf("the task resumed with approve: %+v", r)
	}
	if g := approved.Again; !g.Failed || g.Name != "JsonRpcRequestMalformedError" {
		t.Fatalf("a decision on a task that waits for none: %+v", g)
	}
	if approved.Second.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("the second task waiting for approval: %+v", approved.Second)
	}
	st := approved.Streamed
	if len(st) < 3 || slices.Contains(st, "task:TASK_STATE_INPUT_REQUIRED") || !slices.Contains(st, "status:TASK_STATE_WORKING:") ||
		st[len(st)-2] != "artifactUpdate" || st[len(st)-1] != "status:TASK_STATE_COMPLETED:Added Acme." {
		t.Fatalf("a task resumed by a streamed approve: %q", st)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added Acme."}}})
	var canceled struct {
		Paused, Canceled, Got a2aTask
		Again, Decided        a2aFailure
	}
	runNode(t, dir, "cancel", env, &canceled)
	if canceled.Paused.State != "TASK_STATE_INPUT_REQUIRED" {
		t.Fatalf("the task to cancel: %+v", canceled.Paused)
	}
	if c, g := canceled.Canceled, canceled.Got; c.ID != canceled.Paused.ID || c.State != "TASK_STATE_CANCELED" || g.State != "TASK_STATE_CANCELED" {
		t.Fatalf("a task waiting for input canceled: %+v, then read: %+v", c, g)
	}
	if a := canceled.Again; !a.Failed || a.Name != "JsonRpcTaskNotCancelableError" || !strings.Contains(a.Message, "ended already (it is canceled)") {
		t.Fatalf("a canceled task canceled again: %+v", a)
	}
	if d := canceled.Decided; !d.Failed || !strings.Contains(d.Message, "does not wait for input") {
		t.Fatalf("an approval of a canceled task: %+v", d)
	}
	if got := conversation(t, a, canceled.Paused.ContextID); len(got) != 1 {
		t.Fatalf("the canceled run answered in its chat: %q", got)
	}

	// Working tasks canceled while their run waits for the model, which holds its answer until
	// the test releases it: one whose model then calls a tool (the run's next write is refused,
	// and the run ends canceled before its answer), and one whose model answers (the renewal of
	// the run's lease is refused, and the worker gives the model call up).
	for _, tc := range []struct {
		name    string
		turns   []providertest.Turn
		noticed func(t *testing.T, cancelled int)
	}{
		{"at its next write", []providertest.Turn{call("list_deals", `{}`), {Reply: "There are no deals."}}, func(*testing.T, int) {}},
		{"at its lease's renewal", []providertest.Turn{{Reply: "There are no deals."}}, func(t *testing.T, cancelled int) {
			waitFor(t, "the worker gives the model call up", func() (bool, any) { return fake.Cancelled() > cancelled, fake.Cancelled() })
		}},
	} {
		release, cancelled := make(chan struct{}), fake.Cancelled()
		fake.Set(providertest.Behavior{Script: tc.turns, Hold: release})
		asked := len(fake.Requests())
		var started struct{ Started a2aTask }
		runNode(t, dir, "start", env, &started)
		task := started.Started
		waitFor(t, tc.name+": the run working (its model call made)", func() (bool, any) { return len(fake.Requests()) > asked, len(fake.Requests()) })
		env["TASK_ID"] = task.ID
		var working struct{ Canceled a2aTask }
		runNode(t, dir, "cancelTask", env, &working)
		if c := working.Canceled; c.ID != task.ID || (c.State != "TASK_STATE_WORKING" && c.State != "TASK_STATE_CANCELED") {
			t.Fatalf("%s: a working task canceled: %+v", tc.name, c)
		}
		tc.noticed(t, cancelled)
		fake.Set(providertest.Behavior{Script: tc.turns})
		close(release)
		var followed struct{ Events []string }
		runNode(t, dir, "follow", env, &followed)
		if ev := followed.Events; len(ev) == 0 || !strings.HasSuffix(ev[len(ev)-1], ":TASK_STATE_CANCELED") {
			t.Fatalf("%s: the canceled task followed to its end: %q", tc.name, ev)
		}
		if got := conversation(t, a, task.ContextID); len(got) != 1 {
			t.Fatalf("%s: the canceled run answered in its chat: %q", tc.name, got)
		}
		delete(env, "TASK_ID")
	}

	// An A2A key of the agent reaches it over the SDK, and nothing else: not another agent of the
	// account (404, as another account's agent), not the agent API; deleted, it stops working.
	other := b.chatBot(t, nil)
	created := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/a2a/key/create", Key: b.key, Body: a.body(map[string]any{"name": "partner"})})
	expect(t, created, http.StatusOK, "")
	var made struct {
		Key    struct{ ID string }
		APIKey string `json:"api_key"`
	}
	created.Decode(t, &made)
	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	scoped := map[string]string{"AGENT_URL": env["AGENT_URL"], "KEY": made.APIKey}
	var reach struct {
		Reached *struct {
			Schemes  []string
			Answered a2aTask
		}
		Failed a2aFailure
	}
	runNode(t, dir, "reach", scoped, &reach)
	if r := reach.Reached; r == nil || r.Answered.State != "TASK_STATE_COMPLETED" || strings.Join(r.Schemes, ",") != "a2aKey,bearer" {
		t.Fatalf("the agent's A2A key on its agent: %+v", reach)
	}
	scoped["AGENT_URL"] = b.client.URL + "/a2a/agents/" + other.botID
	reach.Reached = nil
	runNode(t, dir, "reach", scoped, &reach)
	if f := reach.Failed; reach.Reached != nil || !f.Failed || !strings.Contains(f.Message, "404") {
		t.Fatalf("the agent's A2A key on another agent of the account: %+v", reach)
	}
	expect(t, a2aCall(t, b, other.botID, made.APIKey, nil), http.StatusNotFound, "bot_not_found")
	for _, path := range []string{"/v1/bot/read?" + a.query(""), "/v1/projects", "/v1/keys"} {
		expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: path, Key: made.APIKey}), http.StatusUnauthorized, "a2a_key_not_allowed")
	}
	listed := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/a2a/key/readall?" + a.query(""), Key: b.key})
	expect(t, listed, http.StatusOK, "")
	if body := string(listed.Body); !strings.Contains(body, made.Key.ID) || strings.Contains(body, made.APIKey) {
		t.Fatalf("the agent's A2A keys: %s", body)
	}
	expect(t, b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/a2a/key/delete?" + a.query("&key_id="+made.Key.ID), Key: b.key}), http.StatusOK, "")
	expect(t, a2aCall(t, b, a.botID, made.APIKey, nil), http.StatusUnauthorized, "invalid_api_key")

	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	var legacy struct {
		Sent, Got         a2aTask
		Streamed, Methods []string
		Missing           a2aFailure
	}
	runNode(t, dir, "legacy", env, &legacy)
	if got := strings.Join(legacy.Methods, " "); got != "message/send@0.3 tasks/get@0.3 message/stream@0.3 tasks/get@0.3" {
		t.Fatalf("the 0.3 transport called %s", got)
	}
	if s := legacy.Sent; s.State != "TASK_STATE_COMPLETED" || s.Status != "We open at nine." || legacy.Got.ID != s.ID || legacy.Got.State != s.State {
		t.Fatalf("A2A 0.3: a message answered %+v, its task read %+v", s, legacy.Got)
	}
	if got := strings.Join(legacy.Streamed, "|"); got != strings.Join(want, "|") {
		t.Fatalf("A2A 0.3: a message streamed: %q, want %q", legacy.Streamed, want)
	}
	if m := legacy.Missing; !m.Failed || m.Name != "JsonRpcTaskNotFoundError" {
		t.Fatalf("A2A 0.3: tasks/get of no task: %+v", m)
	}
}

// a2aCall posts one JSON-RPC request to the agent's A2A endpoint.
func a2aCall(t *testing.T, b *bundle, bot, key string, header map[string]string) *apitest.Response {
	t.Helper()
	body := map[string]any{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": map[string]any{
		"message": map[string]any{"kind": "message", "messageId": "m1", "role": "user", "parts": []any{map[string]any{"kind": "text", "text": "Hi"}}}}}
	return b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/a2a/agents/" + bot, Key: key, Header: header, Body: body})
}

// The A2A door refuses: no key 401, another account's agent and no agent 404 (the card too),
// and a call beyond the hop limit with a JSON-RPC error that says so, while a call within it
// is answered.
func TestA2ARefusals(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	fake.Set(providertest.Behavior{Reply: "Hello."})
	otherKey, _ := b.newTenant(t)
	for _, tt := range []struct {
		name, key, bot string
		status         int
		code           string
	}{
		{"NoKey", "", a.botID, http.StatusUnauthorized, "missing_api_key"},
		{"AnotherAccount", otherKey, a.botID, http.StatusNotFound, "bot_not_found"},
		{"NoSuchAgent", b.key, "no-such-bot", http.StatusNotFound, "bot_not_found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, a2aCall(t, b, tt.bot, tt.key, nil), tt.status, tt.code)
			expect(t, b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/a2a/agents/" + tt.bot + "/.well-known/agent-card.json", Key: tt.key}),
				tt.status, tt.code)
		})
	}
	t.Run("DecisionOnATaskThatWaitsForNone", func(t *testing.T) {
		var done struct{ Result struct{ ID string } }
		if res := a2aCall(t, b, a.botID, b.key, nil); json.Unmarshal(res.Body, &done) != nil || done.Result.ID == "" {
			t.Fatalf("a message: %s", res.Body)
		}
		body := map[string]any{"jsonrpc": "2.0", "id": 2, "method": "message/send", "params": map[string]any{"message": map[string]any{
			"kind": "message", "messageId": "m2", "role": "user", "taskId": done.Result.ID, "parts": []any{map[string]any{"kind": "text", "text": "approve"}}}}}
		res := b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/a2a/agents/" + a.botID, Key: b.key, Body: body})
		if !strings.Contains(string(res.Body), `"code":-32602`) || !strings.Contains(string(res.Body), "does not wait for input") {
			t.Fatalf("a decision on a completed task: %s", res.Body)
		}
	})
	t.Run("HopLimit", func(t *testing.T) {
		for hop, refused := range map[string]bool{"4": false, "5": true, "zero": true} {
			res := a2aCall(t, b, a.botID, b.key, map[string]string{"X-A2A-Hop": hop})
			var rpc struct {
				Result *struct{ Status struct{ State string } }
				Error  *struct {
					Code    int
					Message string
				}
			}
			if res.Status != http.StatusOK || json.Unmarshal(res.Body, &rpc) != nil {
				t.Fatalf("hop %s: %d %s", hop, res.Status, res.Body)
			}
			switch {
			case refused && (rpc.Error == nil || rpc.Error.Code != -32600 || !strings.Contains(rpc.Error.Message, "X-A2A-Hop")):
				t.Errorf("hop %s was not refused as an invalid request naming the header: %s", hop, res.Body)
			case !refused && (rpc.Result == nil || rpc.Result.Status.State != "completed"):
				t.Errorf("hop %s was not answered: %s", hop, res.Body)
			}
		}
	})
}
