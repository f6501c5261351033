package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// An agent grading all its live answers (rate 1) has each answer graded by its rule graders in
// a worker, and GET /v1/bot/eval/online gives each grader's pass rate by day and by version: the
// fake provider's reply states the fact and misses the pattern at version 1, the other way at
// version 2, where an agent run's answer is graded too. An agent without online grading, and one whose grading was removed, get none,
// checked once the grading agent's answers, asked after theirs, are graded. Bad settings and a
// bad days are 422.
func TestOnlineEvalsGradeLiveAnswers(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	b.startWorker(t, workerOptions{})
	criteria := map[string]any{"graders": []string{"contains", "regex"}, "expected_facts": []string{"fake provider"}, "pattern": "^Bonjour"}
	graded := b.chatBot(t, map[string]any{"instruction": "One.", "provider_key": "k", "reasoning_type": "standard",
		"online_eval": map[string]any{"rate": 1, "criteria": criteria}})
	none := b.chatBot(t, map[string]any{"provider_key": "k", "reasoning_type": "standard"})
	removed := b.chatBot(t, map[string]any{"provider_key": "k", "reasoning_type": "standard", "online_eval": map[string]any{"rate": 1, "criteria": criteria}})

	for _, tt := range []struct {
		name   string
		online map[string]any
		field  string
	}{
		{"RateAboveOne", map[string]any{"rate": 1.5, "criteria": criteria}, "online_eval.rate"},
		{"Judge", map[string]any{"rate": 0.5, "criteria": map[string]any{"graders": []string{"judge"}, "rubric": "Polite."}}, "online_eval.criteria.graders[0]"},
		{"Input", map[string]any{"rate": 0.5, "criteria": map[string]any{"input": "Hi", "expected_facts": []string{"x"}}}, "online_eval.criteria"},
		{"NoGrader", map[string]any{"rate": 0.5, "criteria": map[string]any{}}, "online_eval.criteria.graders"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: graded.body(map[string]any{"online_eval": tt.online})})
			expectField(t, res, tt.field)
		})
	}
	res := b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: removed.body(map[string]any{"online_eval": map[string]any{"rate": 0}})})
	expect(t, res, http.StatusOK, "")
	if o := res.JSON(t)["bot"].(map[string]any)["online_eval"]; o != nil {
		t.Fatalf("online_eval removed reads %v", o)
	}

	ask := func(a chatAPI) float64 {
		t.Helper()
		res, chat := a.chat(t, map[string]any{"message": "Hello"})
		if chat == nil {
			t.Fatalf("chat: %d %s", res.Status, res.Body)
		}
		return chat["agent"].(map[string]any)["version"].(float64)
	}
	ask(none)
	ask(removed)
	v1 := ask(graded)
	ask(graded)
	ask(graded)
	res = b.client.Do(apitest.Request{Method: http.MethodPut, Path: "/v1/bot/update", Key: b.key, Body: graded.body(map[string]any{"instruction": "Two."})})
	expect(t, res, http.StatusOK, "")
	fake.Set(providertest.Behavior{Reply: "Bonjour."})
	v2 := ask(graded)
	if v2 == v1 || ask(graded) != v2 {
		t.Fatalf("versions answering: %v then %v", v1, v2)
	}
	// An agent run's answer is sampled as a standard one is.
	if res, chat := graded.chat(t, map[string]any{"message": "Hello", "reasoning_mode": "agent"}); chat == nil || chat["executionId"] == nil {
		t.Fatalf("agent run: %d %s", res.Status, res.Body)
	}

	online := func(a chatAPI, days string) *apitest.Response {
		return b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/eval/online?" + a.query("&days="+days), Key: b.key})
	}
	var report map[string]any
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := online(graded, "7")
		expect(t, res, http.StatusOK, "")
		if report = res.JSON(t); answersGraded(report) == 6 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live answers not graded in time: %v", report)
		}
		waitABit()
	}
	today := time.Now().UTC().Format(time.DateOnly)
	wantDay := []any{
		map[string]any{"day": today, "grader": "contains", "graded": 6.0, "passed": 3.0, "pass_rate": 0.5},
		map[string]any{"day": today, "grader": "regex", "graded": 6.0, "passed": 3.0, "pass_rate": 0.5},
	}
	if !reflect.DeepEqual(report["by_day"], wantDay) {
		t.Fatalf("by_day = %v, want %v", report["by_day"], wantDay)
	}
	wantVersion := []any{
		map[string]any{"version": v1, "grader": "contains", "graded": 3.0, "passed": 3.0, "pass_rate": 1.0},
		map[string]any{"version": v1, "grader": "regex", "graded": 3.0, "passed": 0.0, "pass_rate": 0.0},
		map[string]any{"version": v2, "grader": "contains", "graded": 3.0, "passed": 0.0, "pass_rate": 0.0},
		map[string]any{"version": v2, "grader": "regex", "graded": 3.0, "passed": 3.0, "pass_rate": 1.0},
	}
	if !reflect.DeepEqual(report["by_version"], wantVersion) {
		t.Fatalf("by_version = %v, want %v", report["by_version"], wantVersion)
	}
	// The statistics give the same pass rates, per version.
	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/stats/online?" + graded.query("&interval=day"), Key: b.key})
	expect(t, res, http.StatusOK, "")
	st := res.JSON(t)["online"].(map[string]any)
	rates := st["stats"].(map[string]any)
	versions := rates["versions"].(map[string]any)
	pass := func(m any, grader string) map[string]any { return m.(map[string]any)[grader].(map[string]any) }
	if rates["answers"] != 6.0 || !reflect.DeepEqual(pass(rates["graders"], "contains"), map[string]any{"graded": 6.0, "passed": 3.0, "pass_rate": 0.5}) ||
		!reflect.DeepEqual(pass(versions[fmt.Sprint(v1)], "contains"), map[string]any{"graded": 3.0, "passed": 3.0, "pass_rate": 1.0}) ||
		!reflect.DeepEqual(pass(versions[fmt.Sprint(v2)], "regex"), map[string]any{"graded": 3.0, "passed": 3.0, "pass_rate": 1.0}) ||
		len(st["series"].([]any)) == 0 {
		t.Fatalf("stats/online = %v, want 6 answers, contains 3 of 6, version %v's contains 3 of 3 and version %v's regex 3 of 3, by day", st, v1, v2)
	}
	for name, a := range map[string]chatAPI{"none": none, "removed": removed} {
		res := online(a, "")
		expect(t, res, http.StatusOK, "")
		if r := res.JSON(t); len(r["by_day"].([]any)) != 0 || len(r["by_version"].([]any)) != 0 {
			t.Fatalf("the agent %s (no online grading) got graded: %v", name, r)
		}
	}
	expectField(t, online(graded, "0"), "days")
}

// answersGraded is how many answers an online report counts (each was graded by contains).
func answersGraded(report map[string]any) float64 {
	n := 0.0
	for _, r := range report["by_day"].([]any) {
		if r := r.(map[string]any); r["grader"] == "contains" {
			n += r["graded"].(float64)
		}
	}
	return n
}
