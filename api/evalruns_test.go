package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/llm"
)

// startRun starts an eval run of the agent: body holds dataset_id, version, thresholds.
func (e evalsAPI) startRun(t *testing.T, body map[string]any) *apitest.Response {
	t.Helper()
	body["project_id"], body["bot_id"] = e.b.project.ID, e.bot
	return e.b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/eval/run/create", Key: e.b.key, Body: body})
}

// run starts a run and returns its id.
func (e evalsAPI) run(t *testing.T, body map[string]any) string {
	t.Helper()
	res := e.startRun(t, body)
	expect(t, res, http.StatusOK, "")
	run := res.JSON(t)["run"].(map[string]any)
	if run["status"] != "queued" {
		t.Fatalf("new run = %v, want it queued", run)
	}
	return run["uuid"].(string)
}

// finished waits for the run to be done and returns it as read, with its cases (and the cases
// changed against baseline, when given).
func (e evalsAPI) finished(t *testing.T, id string, baseline ...string) map[string]any {
	t.Helper()
	kv := []string{"run_id", id}
	if len(baseline) > 0 {
		kv = append(kv, "baseline", baseline[0])
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		rep := e.get(t, "/v1/bot/eval/run/read", http.StatusOK, kv...)
		if rep["run"].(map[string]any)["status"] == "succeeded" {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s not done in time: %v", id, rep["run"])
		}
		waitABit()
	}
}

// rate is the grader's outcome in a run read: graded, passed, errors and whether it met its
// threshold.
func rate(t *testing.T, run map[string]any, grader string) map[string]any {
	t.Helper()
	for _, g := range run["graders"].([]any) {
		if g := g.(map[string]any); g["grader"] == grader {
			return g
		}
	}
	t.Fatalf("run graders = %v, want %s among them", run["graders"], grader)
	return nil
}

// question is the end user's message a provider request asks.
func question(r providertest.Received) string {
	return r.Messages[len(r.Messages)-1].Content
}

// system is the system prompt of a provider request.
func system(r providertest.Received) string {
	if len(r.Messages) > 0 && r.Messages[0].Role == llm.RoleSystem {
		return r.Messages[0].Content
	}
	return ""
}

// TestEvalRun: a run of 50 cases against the draft is answered by workers through the fake
// provider, each case asked once although the first worker is stopped halfway and a second
// takes over, and one case is held by a worker that died (taken when its lease ends), and
// graded with the right pass rates; no chat is stored. A second run against
// the published version, read against the first, lists the cases whose grades changed.
func TestEvalRun(t *testing.T) {
	t.Parallel()
	p := providertest.New(t)
	p.Set(providertest.Behavior{Reply: "Returns take 30 days. Order A17.", FirstByteDelay: 20 * time.Millisecond})
	b := setup(t, withProvider(p.URL))
	e := evalsAPI{b: b, bot: b.createBot(t, map[string]any{"versioning": true, "instruction": "PUBLISHED instruction."})["uuid"].(string)}
	res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key,
		Body: map[string]any{"project_id": b.project.ID, "bot_id": e.bot, "instruction": "DRAFT instruction."}})
	expect(t, res, http.StatusOK, "")

	const n = 50
	var cases []any
	containsPass, regexCases, regexPass := 0, 0, 0
	for i := range n {
		c := map[string]any{"input": fmt.Sprintf("Question %d?", i), "expected_facts": []any{"30 days"}}
		if i%5 == 0 {
			c["expected_facts"] = []any{"60 days"}
		} else {
			containsPass++
		}
		if i%4 == 0 {
			regexCases++
			c["pattern"] = `B\d+`
			if i%8 == 0 {
				c["pattern"] = `A\d+`
				regexPass++
			}
		}
		cases = append(cases, c)
	}
	res = e.create(t, "Fifty", cases)
	expect(t, res, http.StatusOK, "")
	dataset := res.JSON(t)["dataset"].(map[string]any)["uuid"].(string)

	first := e.run(t, map[string]any{"dataset_id": dataset, "version": "draft", "thresholds": map[string]any{"contains": 0.9, "regex": 0.5}})
	// The last case is held by a worker that died holding it: it is taken once its lease ends.
	held, err := b.db.Collection("eval_results").UpdateOne(context.Background(), bson.M{"_id": first + "/0049"},
		bson.M{"$set": bson.M{"owner": "a worker that died", "lease_until": time.Now().Add(2 * time.Second)}})
	if err != nil || held.ModifiedCount != 1 {
		t.Fatalf("hold the last case: %v %+v", err, held)
	}
	_, stop := b.stoppableWorker(t, workerOptions{})
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Requests()) < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("the provider got %d requests, want 10 before the worker stops", len(p.Requests()))
		}
		waitABit()
	}
	stop()
	if got := len(p.Requests()); got >= n {
		t.Fatalf("the stopped worker asked all %d cases; the test needs it stopped mid-run", got)
	}
	b.startWorker(t, workerOptions{})
	rep := e.finished(t, first)

	asked := map[string]int{}
	for _, r := range p.Requests() {
		asked[question(r)]++
		if !strings.Contains(system(r), "DRAFT instruction.") {
			t.Errorf("a request's system prompt = %q, want the draft's instruction", system(r))
		}
	}
	for i := range n {
		if q := fmt.Sprintf("Question %d?", i); asked[q] != 1 {
			t.Errorf("%s asked %d times, want once", q, asked[q])
		}
	}
	if len(asked) != n {
		t.Errorf("the provider was asked %d questions, want %d: %v", len(asked), n, asked)
	}
	run := rep["run"].(map[string]any)
	contains, regex := rate(t, run, "contains"), rate(t, run, "regex")
	if contains["graded"] != float64(n) || contains["passed"] != float64(containsPass) || contains["met"] != false ||
		regex["graded"] != float64(regexCases) || regex["passed"] != float64(regexPass) || regex["met"] != true || run["passed"] != false {
		t.Fatalf("run = %v, want contains %d/%d short of 0.9 and regex %d/%d over 0.5: not passed", run, containsPass, n, regexPass, regexCases)
	}
	if run["version"] != float64(2) || run["tokens"].(float64) <= 0 {
		t.Fatalf("run = %v, want version 2 (the draft) and its tokens counted", run)
	}
	results := rep["results"].([]any)
	if len(results) != 10 || rep["total"] != float64(n) {
		t.Fatalf("results = %d of %v, want the first page's 10 of %d", len(results), rep["total"], n)
	}
	last := e.get(t, "/v1/bot/eval/run/read", http.StatusOK, "run_id", first, "page", "3", "per_page", "20")
	if got := last["results"].([]any); len(got) != n-40 || got[0].(map[string]any)["index"] != float64(40) {
		t.Fatalf("the third page of 20 = %v, want cases 40 to %d", got, n-1)
	}
	r0 := results[0].(map[string]any)
	if r0["answer"] != "Returns take 30 days. Order A17." || len(r0["grades"].([]any)) != 2 || r0["case"].(map[string]any)["input"] != "Question 0?" {
		t.Fatalf("case 0 = %v", r0)
	}
	if chats := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/chat/readall?" + e.query(), Key: b.key}).JSON(t); chats["total"] != float64(0) {
		t.Fatalf("chats = %v, want none: an eval run stores no chat", chats)
	}

	p.Set(providertest.Behavior{Reply: "Returns take 60 days. Order A17."})
	second := e.run(t, map[string]any{"dataset_id": dataset})
	rep = e.finished(t, second, first)
	if v := rep["run"].(map[string]any)["version"]; v != float64(1) {
		t.Fatalf("second run's version = %v, want 1, the published one", v)
	}
	for _, r := range p.Requests()[len(asked):] {
		if !strings.Contains(system(r), "PUBLISHED instruction.") {
			t.Fatalf("a request of the published run's system prompt = %q", system(r))
		}
	}
	changed := rep["changed"].([]any)
	if len(changed) != n {
		t.Fatalf("changed = %d cases, want all %d (contains flipped in each)", len(changed), n)
	}
	for _, c := range changed {
		c := c.(map[string]any)
		want := `[] [contains]`
		if int(c["index"].(float64))%5 == 0 {
			want = `[contains] []`
		}
		if got := fmt.Sprint(c["fixed"], " ", c["broken"]); got != want {
			t.Errorf("case %v fixed, broken = %s, want %s", c["index"], got, want)
		}
	}
	list := e.get(t, "/v1/bot/eval/run/readall", http.StatusOK)
	runs := list["runs"].([]any)
	if list["total"] != float64(2) || runs[0].(map[string]any)["uuid"] != second || runs[1].(map[string]any)["uuid"] != first {
		t.Fatalf("runs = %v, want both, newest first", list)
	}

	other := e.create(t, "Other", []any{map[string]any{"input": "Hi?", "expected_answer": "Hello"}})
	otherID := other.JSON(t)["dataset"].(map[string]any)["uuid"].(string)
	otherRun := e.run(t, map[string]any{"dataset_id": otherID})
	refused := []struct {
		name   string
		body   map[string]any
		status int
		code   string
	}{
		{"no dataset", map[string]any{}, http.StatusUnprocessableEntity, "invalid_field"},
		{"unknown dataset", map[string]any{"dataset_id": "no-such-dataset"}, http.StatusNotFound, "eval_dataset_not_found"},
		{"unknown grader", map[string]any{"dataset_id": dataset, "thresholds": map[string]any{"vibes": 1}}, http.StatusUnprocessableEntity, "invalid_field"},
		{"rate over 1", map[string]any{"dataset_id": dataset, "thresholds": map[string]any{"exact": 2}}, http.StatusUnprocessableEntity, "invalid_field"},
		{"version not there", map[string]any{"dataset_id": dataset, "version": 9}, http.StatusNotFound, "version_not_found"},
		{"version not a version", map[string]any{"dataset_id": dataset, "version": "latest"}, http.StatusUnprocessableEntity, "invalid_field"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) { expect(t, e.startRun(t, tt.body), tt.status, tt.code) })
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/eval/run/read?" + e.query("run_id", otherRun, "baseline", first), Key: b.key})
	expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
}

// TestEvalJudgeAndPublishGate: the judge asks the agent's provider with the case's rubric and
// keeps its prompt and verdict; a verdict that fails, or that cannot be read, keeps a gated
// agent's draft from being published, and one that passes lets it be.
func TestEvalJudgeAndPublishGate(t *testing.T) {
	t.Parallel()
	p := providertest.New(t)
	b := setup(t, withProvider(p.URL))
	e := evalsAPI{b: b, bot: b.createBot(t, map[string]any{"versioning": true})["uuid"].(string)}
	const rubric = "The answer is polite and names the order."
	res := e.create(t, "Politeness", []any{map[string]any{"input": "Where is my order?", "rubric": rubric}})
	expect(t, res, http.StatusOK, "")
	dataset := res.JSON(t)["dataset"].(map[string]any)["uuid"].(string)
	update := func(body map[string]any) *apitest.Response {
		body["project_id"], body["bot_id"] = b.project.ID, e.bot
		return b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: b.key, Body: body})
	}
	publish := func() *apitest.Response {
		return b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/version/publish", Key: b.key,
			Body: map[string]any{"project_id": b.project.ID, "bot_id": e.bot}})
	}

	other := b.evalsAPI(t)
	res = other.create(t, "Not this agent's", []any{map[string]any{"input": "Hi?", "expected_answer": "Hello"}})
	foreign := res.JSON(t)["dataset"].(map[string]any)["uuid"].(string)
	for _, tt := range []struct {
		name    string
		gate    map[string]any
		problem string
	}{
		{"unknown grader", map[string]any{"dataset_id": dataset, "thresholds": map[string]any{"vibes": 1}}, "publish_gate.thresholds.vibes: is not a grader"},
		{"rate over 1", map[string]any{"dataset_id": dataset, "thresholds": map[string]any{"judge": 1.5}}, "publish_gate.thresholds.judge: must be a pass rate"},
		{"no thresholds", map[string]any{"dataset_id": dataset}, "publish_gate.thresholds: name at least one grader"},
		{"another agent's dataset", map[string]any{"dataset_id": foreign, "thresholds": map[string]any{"exact": 1}}, "publish_gate.dataset_id: is not a dataset of the agent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := update(map[string]any{"publish_gate": tt.gate})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			if got := problem(t, res); !strings.HasPrefix(got, tt.problem) {
				t.Fatalf("problem = %q, want %q", got, tt.problem)
			}
		})
	}
	res = update(map[string]any{"publish_gate": map[string]any{"dataset_id": dataset, "thresholds": map[string]any{"judge": 1}}})
	expect(t, res, http.StatusOK, "")
	if gate := res.JSON(t)["bot"].(map[string]any)["publish_gate"].(map[string]any); gate["dataset_id"] != dataset {
		t.Fatalf("publish_gate = %v", gate)
	}
	expect(t, update(map[string]any{"instruction": "Be polite."}), http.StatusOK, "")
	expect(t, publish(), http.StatusConflict, "publish_gate_no_run")

	b.startWorker(t, workerOptions{})
	t.Run("provider refuses", func(t *testing.T) {
		p.Set(providertest.Behavior{Status: http.StatusBadRequest, ErrorMessage: "The model does not exist."})
		asked := len(p.Requests())
		rep := e.finished(t, e.run(t, map[string]any{"dataset_id": dataset, "version": "draft"}))
		r := rep["results"].([]any)[0].(map[string]any)
		g := r["grades"].([]any)[0].(map[string]any)
		if !strings.Contains(r["error"].(string), "does not exist") || g["pass"] != false || g["error"] != true {
			t.Fatalf("result = %v, want the refusal as the case's error, its grade an error", r)
		}
		if n := len(p.Requests()) - asked; n != 1 {
			t.Fatalf("the provider was asked %d times, want once: a refusal is the case's answer, not tried again", n)
		}
		expect(t, publish(), http.StatusConflict, "publish_gate_failed")
	})
	const answer = "Your order A17 ships today, thank you!"
	for _, v := range []struct {
		name, verdict string
		pass, error   bool
		reason        string
		publish       int
		code          string
	}{
		{"fails", `{"pass":false,"reason":"It is curt."}`, false, false, "It is curt.", http.StatusConflict, "publish_gate_failed"},
		{"unparseable", "I think it passes.", false, true, "could not be read", http.StatusConflict, "publish_gate_failed"},
		{"passes", `{"pass":true,"reason":"Polite, and names A17."}`, true, false, "Polite, and names A17.", http.StatusOK, ""},
	} {
		t.Run(v.name, func(t *testing.T) {
			p.Set(providertest.Behavior{Reply: answer, Structured: v.verdict})
			rep := e.finished(t, e.run(t, map[string]any{"dataset_id": dataset, "version": "draft"}))
			g := rep["results"].([]any)[0].(map[string]any)["grades"].([]any)[0].(map[string]any)
			if g["grader"] != "judge" || g["pass"] != v.pass || (g["error"] == true) != v.error || !strings.Contains(g["reason"].(string), v.reason) ||
				g["verdict"] != v.verdict || !strings.Contains(g["prompt"].(string), rubric) || !strings.Contains(g["prompt"].(string), answer) {
				t.Fatalf("grade = %v, want judge pass=%v error=%v with %q, its prompt and verdict kept", g, v.pass, v.error, v.reason)
			}
			reqs := p.Requests()
			if judged := reqs[len(reqs)-1]; judged.Schema == "" || !strings.Contains(question(judged), rubric) {
				t.Fatalf("the judge's request = %+v, want the rubric asked for a structured verdict", judged)
			}
			res := publish()
			expect(t, res, v.publish, v.code)
			if v.code != "" {
				if got := problem(t, res); !strings.HasPrefix(got, "judge: passed 0 of 1") {
					t.Fatalf("problem = %q, want the judge named", got)
				}
				return
			}
			if bot := res.JSON(t)["bot"].(map[string]any); bot["published_version"] != float64(2) {
				t.Fatalf("published_version = %v, want 2", bot["published_version"])
			}
		})
	}

	// A gate removed holds nothing: the next draft publishes without a run.
	expect(t, update(map[string]any{"instruction": "Answer in one sentence."}), http.StatusOK, "")
	expect(t, publish(), http.StatusConflict, "publish_gate_no_run")
	expect(t, update(map[string]any{"publish_gate": map[string]any{"dataset_id": ""}}), http.StatusOK, "")
	expect(t, publish(), http.StatusOK, "")
}
