package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// a2aPeerExpress is the release of Express the JavaScript SDK's server handlers mount on.
const a2aPeerExpress = "express@5.1.0"

// a2aPeerToken is the bearer token the remote agents take.
const a2aPeerToken = "remote-secret-7"

// startA2APeer serves the remote agents of testdata/a2a-node/server.mjs (the official A2A
// JavaScript SDK's server) until the test ends, and returns their base URL: echo (streams),
// plain (does not) and silent (never answers), each under /<name>.
func startA2APeer(t *testing.T) string {
	t.Helper()
	dir := nodeClient(t, "@a2a-js/sdk", a2aNodeVersion, "a2a-node", a2aPeerExpress)
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir, cmd.Stderr = dir, os.Stderr
	cmd.Env = append(os.Environ(), "TOKEN="+a2aPeerToken)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	var ready struct{ URL string }
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &ready) != nil || ready.URL == "" {
		t.Fatalf("the remote agents did not start: %q %v", line, err)
	}
	return ready.URL
}

// a2aTool is a create request of an a2a tool at the card url.
func a2aTool(name, url, token string) map[string]any {
	return map[string]any{"name": name, "type": "a2a", "config": map[string]any{"url": url,
		"auth": map[string]any{"type": "bearer", "token": token}}}
}

// An agent run calls remote A2A agents served by the official JavaScript SDK as its tools: one
// that streams, answered through its stream once the user approves the call (a remote agent
// acts: the auto policy asks), one that does not, sent without waiting and its task read until
// it completes, and one that never answers, given up at its time limit (its task canceled) while
// the run goes on;
// each call carries the tool's sealed credentials and the hop header, and each answer comes back
// as the tool's result, cut to the tool's bound.
func TestAgentRunCallsRemoteA2AAgents(t *testing.T) {
	t.Parallel()
	peer := startA2APeer(t)
	b, c, fake := agentSetup(t, nil)
	a := toolsAPI{c}

	echo := a.create(t, a2aTool("Remote", peer+"/echo/.well-known/agent-card.json", a2aPeerToken))
	op := operations(echo)["send_message"]
	if echo["status"] != "ready" || len(operations(echo)) != 1 || op == nil || op["read_only"] != false || op["approval"] != "auto" ||
		!strings.Contains(op["description"].(string), `"Remote echo"`) || !strings.Contains(op["description"].(string), "Echo (Says back what it is told.)") ||
		echo["settings"].(map[string]any)["timeout_seconds"] != float64(60) {
		t.Fatalf("created %v", echo)
	}
	// The agent's base URL names its card at the well-known path.
	plain := a.create(t, a2aTool("Plain", peer+"/plain", a2aPeerToken))
	silent := a.create(t, a2aTool("Silent", peer+"/silent/", a2aPeerToken))
	a.do(t, http.MethodPut, "/"+plain["id"].(string)+"/configure", map[string]any{"settings": map[string]any{"approval": "never", "max_result_bytes": 1000}},
		http.StatusOK, "")
	a.do(t, http.MethodPut, "/"+silent["id"].(string)+"/configure", map[string]any{"settings": map[string]any{"approval": "never", "timeout_seconds": 1}},
		http.StatusOK, "")

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("plain__send_message", `{"message":"What time is it? `+strings.Repeat("tick ", 300)+`"}`),
		call("silent__send_message", `{"message":"Anyone there?"}`),
		call("remote__send_message", `{"message":"Hello there"}`),
		{Reply: "The remote agents answered."},
	}})
	_, paused := c.chat(t, map[string]any{"message": "Ask the remote agents", "reasoning_mode": "agent"})
	if pending, _ := paused["tool"].(map[string]any); paused["requiresApproval"] != true || pending["name"] != "send_message" || pending["server_label"] != "Remote" {
		t.Fatalf("paused %v", paused)
	}
	_, done := c.executeTool(t, map[string]any{"chat_id": paused["chat_id"], "tool_calls": []any{map[string]any{"tool_name": "send_message"}}})
	if done == nil || done["isComplete"] != true || done["reply"] != "The remote agents answered." {
		t.Fatalf("after the approval %v", done)
	}
	cs := cycles(t, done)
	if len(cs) != 3 {
		t.Fatalf("cycles %v", cs)
	}
	for i, want := range []struct {
		label   string
		success bool
		says    []string
	}{
		{"Plain", true, []string{"remote says (hop 1, A2A-Version 0.3): What time is it? tick tick", "[truncated: the tool answered 1"}},
		{"Silent", false, []string{"did not answer within 1s"}},
		{"Remote", true, []string{"[artifact answer]\nremote says (hop 1, A2A-Version 1.0): Hello there", " completed; context_id "}},
	} {
		obs, _ := cs[i]["observation"].(string)
		if len(obs) > 1200 {
			t.Errorf("cycle %d (%s) observed %d bytes, more than its tool's bound", i+1, want.label, len(obs))
		}
		if cs[i]["server_label"] != want.label || cs[i]["operation"] != "send_message" || cs[i]["actionSuccess"] != want.success {
			t.Errorf("cycle %d: %v", i+1, cs[i])
		}
		for _, s := range want.says {
			if !strings.Contains(obs, s) {
				t.Errorf("cycle %d (%s) observed %q, not %q", i+1, want.label, obs, s)
			}
		}
	}

	var calls []struct {
		Operation string `bson:"operation"`
		Outcome   string `bson:"outcome"`
	}
	cur, err := b.db.Collection("tool_calls").Find(context.Background(), bson.M{"project_id": b.project.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := cur.All(context.Background(), &calls); err != nil || len(calls) != 3 {
		t.Fatalf("%d calls recorded (%v): %v", len(calls), err, calls)
	}
	// The task the call gave up on was canceled, before the call ended: the remote agent saw it.
	var remote struct{ Canceled []string }
	req, _ := http.NewRequest(http.MethodGet, peer+"/canceled", nil)
	req.Header.Set("Authorization", "Bearer "+a2aPeerToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&remote); err != nil || len(remote.Canceled) != 1 {
		t.Fatalf("the tasks the remote agents were asked to cancel: %v (%v)", remote.Canceled, err)
	}
}

// An a2a tool whose card cannot be read is not created: at an address the deployment refuses
// (loopback, here), where nothing listens, behind a token it refuses, or not a URL.
func TestA2AToolRefused(t *testing.T) {
	t.Parallel()
	peer := startA2APeer(t)
	open := toolsAPI{setup(t).chatBot(t, map[string]any{"name": "Open agent"})}
	guarded := toolsAPI{setup(t, withPrivateRefused()).chatBot(t, map[string]any{"name": "Guarded agent"})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	_ = l.Close()
	for _, tt := range []struct {
		name   string
		a      toolsAPI
		body   map[string]any
		status int
		code   string
		says   string
	}{
		{"PrivateAddress", guarded, a2aTool("Remote", peer+"/echo", a2aPeerToken), http.StatusBadGateway, "a2a_unreachable", "blocked range (loopback)"},
		{"NothingListens", open, a2aTool("Remote", closed, a2aPeerToken), http.StatusBadGateway, "a2a_unreachable", "could not be reached"},
		{"WrongToken", open, a2aTool("Remote", peer+"/echo", "sk-wrong"), http.StatusBadGateway, "a2a_unreachable", "answered 401"},
		{"NotAURL", open, a2aTool("Remote", "ftp://example.com/card.json", a2aPeerToken), http.StatusUnprocessableEntity, "invalid_field", "http or https"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.a.do(t, http.MethodPost, "", tt.body, tt.status, tt.code)
			if msg, _ := got["message"].(string); !strings.Contains(msg+string(mustJSON(got)), tt.says) {
				t.Errorf("the refusal does not say %q: %v", tt.says, got)
			}
			if list := tt.a.do(t, http.MethodGet, "", nil, http.StatusOK, ""); list["total"] != float64(0) {
				t.Errorf("a refused tool was stored: %v", list)
			}
		})
	}
}

func mustJSON(v any) []byte {
	raw, _ := json.Marshal(v)
	return raw
}

// Agents calling each other through their own A2A doors stop at the hop limit: a message at hop
// 2 to agent A runs A, which calls B (hop 3), which calls A (hop 4), whose run calls no one
// further and answers; each run's answer comes back up the chain, and every run completes.
func TestA2AToolHopLimit(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, nil)
	other := b.chatBot(t, map[string]any{"name": "Agent B", "provider_key": "sk-run-key"})
	card := func(bot string) string { return b.client.URL + "/a2a/agents/" + bot + "/.well-known/agent-card.json" }
	for _, pair := range []struct{ from, to chatAPI }{{a, other}, {other, a}} {
		peer := toolsAPI{pair.from}.create(t, a2aTool("Peer", card(pair.to.botID), b.key))
		if peer["status"] != "ready" {
			t.Fatalf("the peer tool %v", peer)
		}
		toolsAPI{pair.from}.do(t, http.MethodPut, "/"+peer["id"].(string)+"/configure", map[string]any{"settings": map[string]any{"approval": "never"}},
			http.StatusOK, "")
	}
	fake.Set(providertest.Behavior{Script: []providertest.Turn{call("peer__send_message", `{"message":"ping"}`), {Reply: "pong"}}})

	res := a2aCall(t, b, a.botID, b.key, map[string]string{"X-A2A-Hop": "2"})
	var rpc struct {
		Result struct {
			Status struct{ State string }
		}
	}
	if json.Unmarshal(res.Body, &rpc) != nil || rpc.Result.Status.State != "completed" {
		t.Fatalf("the message at hop 2: %s", res.Body)
	}
	type run struct {
		ID      string `bson:"_id"`
		BotID   string `bson:"bot_id"`
		Status  string `bson:"status"`
		Request struct {
			Hop int `bson:"hop"`
		} `bson:"request"`
		Cycles []struct {
			Observation string `bson:"observation"`
		} `bson:"cycles"`
	}
	// A run is moved to executions_finished once over: read both, a run seen in both once.
	var runs []run
	seen := map[string]bool{}
	for _, coll := range []string{"executions", "executions_finished"} {
		cur, err := b.db.Collection(coll).Find(context.Background(), bson.M{"project_id": b.project.ID})
		if err != nil {
			t.Fatal(err)
		}
		var some []run
		if err := cur.All(context.Background(), &some); err != nil {
			t.Fatal(err)
		}
		for _, r := range some {
			if !seen[r.ID] {
				seen[r.ID] = true
				runs = append(runs, r)
			}
		}
	}
	if len(runs) != 3 {
		t.Fatalf("%d runs: %+v", len(runs), runs)
	}
	byHop := map[int]string{}
	for _, r := range runs {
		byHop[r.Request.Hop] = r.BotID
		if r.Status != "succeeded" || len(r.Cycles) != 1 {
			t.Errorf("the run at hop %d: %+v", r.Request.Hop, r)
			continue
		}
		obs := r.Cycles[0].Observation
		if r.Request.Hop == 4 && !strings.Contains(obs, "Not sent: this run answers a chain of 4 agent-to-agent calls") {
			t.Errorf("the run at the last hop called on: %q", obs)
		}
		if r.Request.Hop < 4 && !strings.Contains(obs, "pong") {
			t.Errorf("the run at hop %d observed %q", r.Request.Hop, obs)
		}
	}
	// A at hops 2 and 4, B between.
	if byHop[2] == "" || byHop[4] != byHop[2] || byHop[3] == "" || byHop[3] == byHop[2] {
		t.Fatalf("the runs by hop: %v", byHop)
	}
}
