package api_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// openAINodeVersion is the release of OpenAI's Node client the test installs from the npm
// registry: the newest that runs on Node 20 (7.x wants Node 22).
const openAINodeVersion = "6.30.1"

// nodeClient installs the npm package pkg at version (and the packages more names, each
// name@version) into a directory of the test's, with the scripts that drive it (the files of
// testdata/<script>). Without Node the test is skipped, except in CI, which has it.
func nodeClient(t *testing.T, pkg, version, script string, more ...string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI runs the tests of %s in Node, and node is not on the PATH", pkg)
		}
		t.Skipf("node is not installed: %s is not tried", pkg)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"install", "--prefix", dir, "--no-audit", "--no-fund", "--silent", pkg + "@" + version}, more...)
	if out, err := exec.CommandContext(ctx, "npm", args...).CombinedOutput(); err != nil {
		t.Fatalf("npm install %s@%s %s: %v\n%s", pkg, version, strings.Join(more, " "), err, out)
	}
	files, err := os.ReadDir(filepath.Join("testdata", script))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		source, err := os.ReadFile(filepath.Join("testdata", script, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), source, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runNode runs one phase of the script in dir with env, and decodes what it prints into out.
func runNode(t *testing.T, dir, phase string, env map[string]string, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "client.mjs", phase)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client.mjs %s: %v\n%s", phase, err, stderr.String())
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatalf("node client.mjs %s printed %q: %v", phase, raw, err)
	}
}

type nodeFailure struct {
	Status                     int
	Code, Type, Param, Message string
}

// OpenAI's official Node client, unchanged, talks to an agent through both APIs: models,
// completions, a chat gone on with by metadata.chat_id and streamed with usage, responses gone on
// with by previous_response_id and streamed as typed events, a tool approval round trip, and the
// errors it reads (a bad key 401, an unknown agent 404, no user's message 422, the agent's rate
// limit 429).
func TestOpenAINodeClient(t *testing.T) {
	t.Parallel()
	dir := nodeClient(t, "openai", openAINodeVersion, "openai-node")
	b, a, fake := agentSetup(t, nil)
	limited := b.chatBot(t, map[string]any{"ratelimit_requests": 1, "ratelimit_seconds": 3600})
	env := map[string]string{"BASE_URL": b.client.URL + "/v1", "KEY": b.key, "MODEL": "agent:" + a.botID, "LIMITED_MODEL": "agent:" + limited.botID}

	fake.Set(providertest.Behavior{Reply: "We open at nine."})
	var chat struct {
		Models  []string
		ChatID  string
		Created struct{ Content, Finish string }
		Stream  struct {
			Text, Finish  string
			Total, Chunks int
		}
		Responses struct {
			First, Next, Streamed, ResponsesChat string
			SameChat                             bool
			Events                               []string
		}
	}
	runNode(t, dir, "chat", env, &chat)
	if len(chat.Models) != 2 || chat.Created.Content != "We open at nine." || chat.Created.Finish != "stop" {
		t.Fatalf("models and a completion: %+v", chat)
	}
	if chat.Stream.Text != "We open at nine." || chat.Stream.Finish != "stop" || chat.Stream.Total == 0 || chat.Stream.Chunks < 3 {
		t.Fatalf("a streamed completion: %+v", chat.Stream)
	}
	if got := conversation(t, a, chat.ChatID); len(got) != 4 || got[2] != "user: Saturdays too?" {
		t.Fatalf("metadata.chat_id did not go on with the chat: %q", got)
	}
	r := chat.Responses
	if r.First != "We open at nine." || r.Next != "We open at nine." || !r.SameChat || r.Streamed != "We open at nine." ||
		!slices.Contains(r.Events, "response.created") || r.Events[len(r.Events)-1] != "response.completed" {
		t.Fatalf("responses: %+v", r)
	}
	if got := conversation(t, a, r.ResponsesChat); len(got) != 6 || got[4] != "user: Bye" {
		t.Fatalf("previous_response_id did not go on with the chat: %q", got)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Acme"}`), {Reply: "Added Acme."}}})
	var approve struct {
		Finish, Tool, Reply, DoneFinish string
		Args                            map[string]any
	}
	runNode(t, dir, "approve", env, &approve)
	if approve.Finish != "tool_calls" || approve.Tool != "create_deal" || approve.Args["title"] != "Acme" || approve.Reply != "Added Acme." || approve.DoneFinish != "stop" {
		t.Fatalf("a tool approval round trip: %+v", approve)
	}

	fake.Set(providertest.Behavior{Reply: "Hello."})
	var errs map[string]nodeFailure
	runNode(t, dir, "errors", env, &errs)
	for name, want := range map[string]nodeFailure{
		"badKey":  {Status: 401, Code: "invalid_api_key", Type: "authentication_error"},
		"unknown": {Status: 404, Code: "model_not_found", Type: "not_found_error"},
		"noUser":  {Status: 422, Code: "invalid_field", Type: "invalid_request_error", Param: "messages"},
		"limited": {Status: 429, Code: "bot_rate_limited", Type: "rate_limit_error"},
	} {
		got := errs[name]
		if got.Status != want.Status || got.Code != want.Code || got.Type != want.Type || got.Param != want.Param || got.Message == "" {
			t.Errorf("%s: got %+v, want %+v", name, got, want)
		}
	}
}
