package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
)

// echoProvider is an OpenAI-compatible provider that answers each request with the first line
// of its system prompt: an agent's answers then say what its version's instruction says.
func echoProvider(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		answer, _, _ := strings.Cut(req.Messages[0].Content, "\n")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": answer}}},
			"usage":   map[string]any{"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}})
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestEvalCommand: `agentplane eval` against a deployment (the api and worker roles) prints the
// graders' table and exits non-zero when the draft does worse than the published version, or
// than a minimum, and zero otherwise.
func TestEvalCommand(t *testing.T) {
	env := serviceEnv(t)
	env["AGENTPLANE_PROVIDER_URL"] = echoProvider(t)
	if err := run(context.Background(), []string{"migrate"}, func(k string) string { return env[k] }, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	key := createAccount(t, env)
	api := start(t, env, "api")
	base := "http://" + waitFor(t, api.stderr, listening, api)[1]
	worker := start(t, env, "worker")
	waitFor(t, worker.stderr, regexp.MustCompile(`"msg":"worker started"`), worker)

	c := apitest.Dial(t, base)
	res := c.Do(apitest.Request{Method: "POST", Path: "/v1/projects", Key: key, Body: map[string]any{"name": "ci"}})
	if res.Status != http.StatusOK {
		t.Fatalf("project: %d %s", res.Status, res.Body)
	}
	project := res.JSON(t)["project"].(map[string]any)["id"].(string)
	res = c.Do(apitest.Request{Method: "POST", Path: "/v1/bot/create", Key: key, Body: map[string]any{"project_id": project, "name": "Support",
		"model": "gpt-4o-mini", "instruction": "Be polite.", "versioning": true}})
	if res.Status != http.StatusOK {
		t.Fatalf("agent: %d %s", res.Status, res.Body)
	}
	bot := res.JSON(t)["bot"].(map[string]any)["uuid"].(string)
	res = c.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/update", Key: key, Body: map[string]any{"project_id": project, "bot_id": bot,
		"instruction": "Be rude."}})
	if res.Status != http.StatusOK {
		t.Fatalf("draft: %d %s", res.Status, res.Body)
	}
	file := filepath.Join(t.TempDir(), "cases.jsonl")
	if err := os.WriteFile(file, []byte(`{"input":"Hi?","expected_facts":["polite"]}`+"\n"+`{"input":"Bye?","expected_facts":["be"]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := map[string]string{"AGENTPLANE_URL": base, "AGENTPLANE_API_KEY": key, "AGENTPLANE_PROJECT": project}
	for _, tt := range []struct {
		name       string
		args       []string
		regression bool
		lines      []string
	}{
		{"draft worse than published", nil, true, []string{
			`contains\s+2/2 1\.00\s+1/2 0\.50\s+-\s+REGRESSION`, `case 0 "Hi\?" now fails contains`}},
		{"published against itself", []string{"--version", "published", "--against", "1"}, false, []string{
			`grader\s+version 1 \(against\)\s+version 1`, `contains\s+2/2 1\.00\s+2/2 1\.00\s+-\s+ok`}},
		{"short of a minimum", []string{"--version", "draft", "--against", "draft", "--min", "contains=0.9"}, true, []string{
			`contains\s+1/2 0\.50\s+1/2 0\.50\s+0\.90\s+REGRESSION`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errs bytes.Buffer
			args := append([]string{"eval", "--dataset", file, "--agent", bot, "--poll", "100ms"}, tt.args...)
			err := run(context.Background(), args, func(k string) string { return cli[k] }, &out, &errs)
			if errors.Is(err, errRegression) != tt.regression || (err != nil && !errors.Is(err, errRegression)) {
				t.Fatalf("eval = %v, want a regression: %v\n%s%s", err, tt.regression, out.String(), errs.String())
			}
			for _, line := range tt.lines {
				if !regexp.MustCompile(line).MatchString(out.String()) {
					t.Errorf("output lacks %s:\n%s", line, out.String())
				}
			}
		})
	}
	res = c.Do(apitest.Request{Method: "GET", Path: "/v1/bot/eval/dataset/readall?project_id=" + project + "&bot_id=" + bot, Key: key})
	if total := res.JSON(t)["total"]; total != float64(0) {
		t.Fatalf("datasets left = %v, want the command's own removed", total)
	}
}
