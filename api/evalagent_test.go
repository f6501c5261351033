package api_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/llm"
)

// TestEvalRunAgentTools: the cases of an agent whose reasoning uses tools are answered by agent
// runs of the version: the tool calls the model makes are recorded with their arguments and
// graded by tool_call (passing and failing), the memory search runs and its passage is cited,
// and the deal the model creates is recorded, not created: the CRM stays empty, no chat is
// stored, and the model is told the call was not carried out, or, for arguments its tool's
// schema refuses, what is wrong with them.
func TestEvalRunAgentTools(t *testing.T) {
	t.Parallel()
	p := providertest.New(t)
	p.Set(providertest.Behavior{Script: []providertest.Turn{
		{Call: &providertest.Call{Name: "search_memory", Arguments: `{"query":"refunds days"}`}},
		{Call: &providertest.Call{Name: "create_deal", Arguments: `{"value":5000}`}},
		{Call: &providertest.Call{Name: "create_deal", Arguments: `{"title":"Acme renewal","value":5000,"currency":"USD"}`}},
		{Reply: "Refunds take 30 days [1]. I opened the deal."},
	}})
	b := setup(t, withProvider(p.URL))
	b.startWorker(t, workerOptions{})
	a := sourcesAPI{b: b, botID: b.createBot(t, map[string]any{"reasoning_type": "agent"})["uuid"].(string)}
	source := a.ingest(t, map[string]any{"type": "text", "title": "Refunds", "source": "Refunds take 30 days from the day the parcel arrives."})
	e := evalsAPI{b: b, bot: a.botID}

	res := e.create(t, "Tools", []any{
		map[string]any{"input": "Open a deal for Acme's renewal, 5000 USD.", "expected_tool": map[string]any{"name": "create_deal",
			"arguments": map[string]any{"title": "Acme renewal", "value": 5000}}, "expected_source": "Refunds"},
		map[string]any{"input": "Open a deal for Acme's renewal, 6000 USD.", "expected_tool": map[string]any{"name": "create_deal",
			"arguments": map[string]any{"value": 6000}}},
		map[string]any{"input": "Which deals are open?", "expected_tool": map[string]any{"name": "list_deals"}},
	})
	expect(t, res, http.StatusOK, "")
	dataset := res.JSON(t)["dataset"].(map[string]any)["uuid"].(string)
	rep := e.finished(t, e.run(t, map[string]any{"dataset_id": dataset}))

	results := rep["results"].([]any)
	wants := []struct{ pass, reason string }{
		{"true", "called create_deal with the expected arguments"},
		{"false", "called create_deal, but not with the expected arguments"},
		{"false", "did not call list_deals"},
	}
	for i, want := range wants {
		r := results[i].(map[string]any)
		var g map[string]any
		for _, x := range r["grades"].([]any) {
			if x := x.(map[string]any); x["grader"] == "tool_call" {
				g = x
			}
		}
		if g == nil || fmtBool(g["pass"]) != want.pass || !strings.Contains(g["reason"].(string), want.reason) {
			t.Errorf("case %d tool_call grade = %v, want pass=%s with %q", i, g, want.pass, want.reason)
		}
		calls := r["tool_calls"].([]any)
		if len(calls) != 3 {
			t.Fatalf("case %d tool_calls = %v, want the memory search and the deal twice", i, calls)
		}
		search, deal := calls[0].(map[string]any), calls[2].(map[string]any)
		if bad := calls[1].(map[string]any); bad["name"] != "create_deal" || bad["executed"] != nil || bad["arguments"].(map[string]any)["value"] != float64(5000) {
			t.Errorf("case %d tool_calls[1] = %v, want the refused create_deal recorded", i, bad)
		}
		if search["name"] != "search_memory" || search["executed"] != true || search["arguments"].(map[string]any)["query"] != "refunds days" ||
			deal["name"] != "create_deal" || deal["executed"] != nil || deal["arguments"].(map[string]any)["value"] != float64(5000) {
			t.Errorf("case %d tool_calls = %v, want search_memory executed and create_deal recorded with its arguments, not executed", i, calls)
		}
		if r["answer"] != "Refunds take 30 days [1]. I opened the deal." || r["tokens"].(float64) <= 0 {
			t.Errorf("case %d = %v, want the run's answer and its four calls' tokens", i, r)
		}
	}
	first := results[0].(map[string]any)
	if src := first["sources"].([]any); len(src) != 1 || src[0].(map[string]any)["id"] != source["id"] {
		t.Errorf("case 0 sources = %v, want the Refunds source cited", first["sources"])
	}
	run := rep["run"].(map[string]any)
	if tc := rate(t, run, "tool_call"); tc["graded"] != float64(3) || tc["passed"] != float64(1) {
		t.Errorf("tool_call = %v, want 1 of 3 passed", tc)
	}
	if cs := rate(t, run, "cites_source"); cs["passed"] != float64(1) {
		t.Errorf("cites_source = %v, want passed", cs)
	}

	var told, refused bool
	for _, r := range p.Requests() {
		if len(r.Tools) == 0 {
			t.Fatalf("a request offered no tools: %+v", r)
		}
		for _, m := range r.Messages {
			told = told || (m.Role == llm.RoleTool && strings.Contains(m.Content, "recorded and not carried out"))
			refused = refused || (m.Role == llm.RoleTool && strings.HasPrefix(m.Content, "Error:") && strings.Contains(m.Content, "title"))
		}
	}
	if n := len(p.Requests()); n != 12 || !told || !refused {
		t.Errorf("the provider got %d requests (want 4 per case), told of the call not carried out: %v, of the arguments refused: %v", n, told, refused)
	}
	deals := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?" + e.query(), Key: b.key})
	expect(t, deals, http.StatusOK, "")
	if list := deals.JSON(t)["deals"].([]any); len(list) != 0 {
		t.Errorf("deals = %s, want none: an eval records the deal's call and creates nothing", deals.Body)
	}
	if chats := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/chat/readall?" + e.query(), Key: b.key}).JSON(t); chats["total"] != float64(0) {
		t.Errorf("chats = %v, want none: an eval run stores no chat", chats)
	}
}

// fmtBool is a JSON boolean as text ("true", "false", or "<nil>" when absent).
func fmtBool(v any) string {
	switch v {
	case true:
		return "true"
	case false:
		return "false"
	}
	return "<nil>"
}

// flakyJudge is a local provider in front of the fake whose judge (the requests asking for a
// structured verdict) is down while down is set: it answers 503, 429 and a dropped connection
// in turn. It counts the judge's requests it refused.
type flakyJudge struct {
	URL     string
	down    atomic.Bool
	refused atomic.Int64
	answers atomic.Int64 // the calls that are not the judge's
}

func newFlakyJudge(t *testing.T, fake string) *flakyJudge {
	t.Helper()
	target, err := url.Parse(fake)
	if err != nil {
		t.Fatal(err)
	}
	f := &flakyJudge{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		judge := bytes.Contains(body, []byte(`"response_format"`))
		if !judge {
			f.answers.Add(1)
		}
		if !f.down.Load() || !judge {
			proxy.ServeHTTP(w, r)
			return
		}
		switch f.refused.Add(1) % 3 {
		case 0:
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		case 1:
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"slow down"}}`, http.StatusTooManyRequests)
		default:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}
	}))
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	f.down.Store(true)
	return f
}

// TestEvalJudgeOutage: a judge whose provider is down (503, 429, connection dropped) grades
// nothing: the case is given back with its answer and taken again with the task's back-off, the
// run stays running with the case not graded, and once the provider is back the run ends with the
// judge's real verdict on the answer given first, the case answered (and paid for) once and
// graded once.
func TestEvalJudgeOutage(t *testing.T) {
	t.Parallel()
	p := providertest.New(t)
	p.Set(providertest.Behavior{Reply: "Your order ships today.", Structured: `{"pass":true,"reason":"Polite."}`})
	judge := newFlakyJudge(t, p.URL)
	b := setup(t, withProvider(judge.URL))
	e := b.evalsAPI(t)
	res := e.create(t, "Judged", []any{map[string]any{"input": "Where is my order?", "rubric": "The answer is polite."}})
	expect(t, res, http.StatusOK, "")
	dataset := res.JSON(t)["dataset"].(map[string]any)["uuid"].(string)
	b.startWorker(t, workerOptions{})
	id := e.run(t, map[string]any{"dataset_id": dataset})

	// The provider's client tries each call 3 times: 6 refusals are two attempts of the task.
	waitFor(t, "the judge refused twice over", func() (bool, any) { return judge.refused.Load() >= 6, judge.refused.Load() })
	rep := e.get(t, "/v1/bot/eval/run/read", http.StatusOK, "run_id", id)
	grades, _ := rep["results"].([]any)[0].(map[string]any)["grades"].([]any)
	if rep["run"].(map[string]any)["status"] != "running" || len(grades) != 0 {
		t.Fatalf("run while the judge is down = %v, want it running with its case not graded", rep)
	}
	judge.down.Store(false)
	rep = e.finished(t, id)
	g := rep["results"].([]any)[0].(map[string]any)["grades"].([]any)
	if len(g) != 1 || g[0].(map[string]any)["pass"] != true || g[0].(map[string]any)["error"] != nil {
		t.Fatalf("grades = %v, want the judge's pass once it is back", g)
	}
	if j := rate(t, rep["run"].(map[string]any), "judge"); j["graded"] != float64(1) || j["errors"] != float64(0) {
		t.Fatalf("judge = %v, want one case graded, no error", j)
	}
	if n := judge.answers.Load(); n != 1 {
		t.Fatalf("the case was answered %d times, want once: its answer is kept while the judge is down", n)
	}
	if a := rep["results"].([]any)[0].(map[string]any)["answer"]; a != "Your order ships today." {
		t.Fatalf("answer = %v", a)
	}
}

// TestEvalRunRequeued: a run whose task is lost (Redis lost it; one case was graded and another
// claimed by a worker that died) is found by the reconciler once it is a minute old and queued
// again, once; a worker goes on with the cases not graded, each asked once, the graded one
// left as it was; a finished run is not queued again.
func TestEvalRunRequeued(t *testing.T) {
	t.Parallel()
	p := providertest.New(t)
	p.Set(providertest.Behavior{Reply: "Returns take 30 days."})
	b := setup(t, withProvider(p.URL))
	e := b.evalsAPI(t)
	res := e.create(t, "Returns", []any{
		map[string]any{"input": "Question 0?", "expected_facts": []any{"30 days"}},
		map[string]any{"input": "Question 1?", "expected_facts": []any{"30 days"}},
		map[string]any{"input": "Question 2?", "expected_facts": []any{"30 days"}},
	})
	expect(t, res, http.StatusOK, "")
	id := e.run(t, map[string]any{"dataset_id": res.JSON(t)["dataset"].(map[string]any)["uuid"]})
	ctx := context.Background()
	results := b.db.Collection("eval_results")
	for _, u := range []struct {
		id  string
		set bson.M
	}{
		{id + "/0000", bson.M{"done": true, "answer": "graded before the crash", "graded_at": time.Now(),
			"grades": bson.A{bson.M{"grader": "contains", "pass": true, "reason": "graded before the crash"}}}},
		{id + "/0001", bson.M{"owner": "a worker that died", "lease_until": time.Now().Add(-time.Second)}},
	} {
		if r, err := results.UpdateOne(ctx, bson.M{"_id": u.id}, bson.M{"$set": u.set}); err != nil || r.ModifiedCount != 1 {
			t.Fatalf("set case %s: %v %+v", u.id, err, r)
		}
	}
	if err := asynqInspector(t).DeleteTask(b.queue, "eval:run:"+id); err != nil {
		t.Fatal(err)
	}

	later := time.Now().Add(2 * time.Minute)
	for _, tt := range []struct {
		name string
		at   time.Time
		want int
	}{
		{"a fresh run is left to its task", time.Now(), 0},
		{"a minute old without a task: queued again", later, 1},
		{"its new task queued: left to it", later, 0},
		{"the next minute, its task still queued: left to it", later.Add(time.Minute), 0},
	} {
		if n, err := b.evalRuns.Requeue(ctx, tt.at); err != nil || n != tt.want {
			t.Fatalf("%s: requeued %d runs (%v), want %d", tt.name, n, err, tt.want)
		}
	}
	b.startWorker(t, workerOptions{})
	rep := e.finished(t, id)
	asked := map[string]int{}
	for _, r := range p.Requests() {
		asked[question(r)]++
	}
	if len(asked) != 2 || asked["Question 1?"] != 1 || asked["Question 2?"] != 1 {
		t.Fatalf("the provider was asked %v, want questions 1 and 2 once each", asked)
	}
	first := rep["results"].([]any)[0].(map[string]any)
	if first["answer"] != "graded before the crash" {
		t.Fatalf("case 0 = %v, want it as graded before the crash", first)
	}
	if c := rate(t, rep["run"].(map[string]any), "contains"); c["graded"] != float64(3) || c["passed"] != float64(3) {
		t.Fatalf("contains = %v, want 3 of 3", c)
	}
	if n, err := b.evalRuns.Requeue(ctx, later.Add(2*time.Minute)); err != nil || n != 0 {
		t.Fatalf("requeued %d runs (%v), want none: the run is done", n, err)
	}
}

// TestPublishGateNeedsVersioning: a gate holds publishes, which an agent without versioning
// does not make (each change is published at once): a gate on such an agent is refused, and so
// is turning versioning off while a gate is set, unless the same update removes the gate.
func TestPublishGateNeedsVersioning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	e := b.evalsAPI(t)
	res := e.create(t, "Gate", []any{map[string]any{"input": "Hi?", "expected_answer": "Hello"}})
	expect(t, res, http.StatusOK, "")
	gate := map[string]any{"dataset_id": res.JSON(t)["dataset"].(map[string]any)["uuid"], "thresholds": map[string]any{"exact": 1}}
	update := func(body map[string]any) *apitest.Response {
		body["project_id"], body["bot_id"] = b.project.ID, e.bot
		return b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key, Body: body})
	}
	for _, tt := range []struct {
		name   string
		body   map[string]any
		status int
	}{
		{"a gate without versioning", map[string]any{"publish_gate": gate}, http.StatusUnprocessableEntity},
		{"a gate with versioning", map[string]any{"publish_gate": gate, "versioning": true}, http.StatusOK},
		{"versioning off with the gate set", map[string]any{"versioning": false}, http.StatusUnprocessableEntity},
		{"versioning off and the gate removed", map[string]any{"versioning": false, "publish_gate": map[string]any{}}, http.StatusOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := update(tt.body)
			if tt.status == http.StatusOK {
				expect(t, res, http.StatusOK, "")
				return
			}
			expect(t, res, tt.status, "invalid_field")
			expectField(t, res, "publish_gate")
			if !strings.Contains(problem(t, res), "needs versioning: true") {
				t.Fatalf("problem = %q, want it to say the gate needs versioning", problem(t, res))
			}
		})
	}

	// A gate stored before the rule, on an agent without versioning, held nothing: the agent's
	// next update that names neither is not refused for it, and drops it.
	ctx := context.Background()
	if r, err := b.db.Collection("bots").UpdateOne(ctx, bson.M{"uuid": e.bot}, bson.M{"$set": bson.M{"versioning": false,
		"publish_gate": bson.M{"dataset_id": gate["dataset_id"], "thresholds": bson.M{"exact": 1}}}, "$inc": bson.M{"rev": 1}}); err != nil || r.ModifiedCount != 1 {
		t.Fatalf("store the old gate: %v %+v", err, r)
	}
	expect(t, update(map[string]any{"name": "Renamed"}), http.StatusOK, "")
	read := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read?project_id=" + b.project.ID + "&bot_id=" + e.bot, Key: b.key}).JSON(t)["bot"].(map[string]any)
	if read["name"] != "Renamed" || read["publish_gate"] != nil {
		t.Fatalf("after an update, name = %v, publish_gate = %v: want the update made and the old gate gone", read["name"], read["publish_gate"])
	}
}

// TestEvalTrialEmptyAnswer: a case answered by an agent run whose model answers nothing ends
// after that one call with the answer a run gives when it stops without one, as a run does,
// rather than asking the model again until the run's calls are spent.
func TestEvalTrialEmptyAnswer(t *testing.T) {
	t.Parallel()
	p := providertest.New(t)
	p.Set(providertest.Behavior{Empty: true})
	b := setup(t, withProvider(p.URL))
	b.startWorker(t, workerOptions{})
	e := evalsAPI{b: b, bot: b.createBot(t, nil)["uuid"].(string)}
	expect(t, b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key,
		Body: map[string]any{"project_id": b.project.ID, "bot_id": e.bot, "reasoning_type": "agent"}}), http.StatusOK, "")
	res := e.create(t, "Silent", []any{map[string]any{"input": "Anyone there?", "expected_facts": []any{"hello"}}})
	expect(t, res, http.StatusOK, "")
	before := len(p.Requests())
	rep := e.finished(t, e.run(t, map[string]any{"dataset_id": res.JSON(t)["dataset"].(map[string]any)["uuid"]}))
	if n := len(p.Requests()) - before; n != 1 {
		t.Fatalf("the case made %d model calls, want 1", n)
	}
	if a, _ := rep["results"].([]any)[0].(map[string]any)["answer"].(string); !strings.HasPrefix(a, "I stopped after 1 steps without reaching a final answer.") {
		t.Fatalf("answer = %q, want the answer of a run stopped without one", a)
	}
}
