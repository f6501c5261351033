package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// spawn starts the service as a separate process with env and args; the test may kill it.
func spawn(t *testing.T, env map[string]string, args string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTPLANE_TEST_ARGS="+args)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// A worker killed (SIGKILL) in the middle of an ingestion loses nothing: once its lease on the
// task expires another worker takes the task over and the source ends success.
func TestWorkerKilledDuringIngestion(t *testing.T) {
	t.Parallel() // waits about a minute for asynq's lease on the killed worker's task to expire
	var first atomic.Bool
	reached := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if first.CompareAndSwap(false, true) {
			close(reached)
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><head><title>Survivor</title></head><body><p>This page was read after the crash.</p></body></html>")
	}))
	defer site.Close()

	env := serviceEnv(t)
	env["AGENTPLANE_ALLOW_PRIVATE_NETWORKS"] = "true"
	var out bytes.Buffer
	if err := run(context.Background(), []string{"accounts", "create", "--name", "acme"}, func(k string) string { return env[k] }, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`API key\s+(ap_\S+)`).FindStringSubmatch(out.String())[1]
	api := start(t, env, "api")
	c := apitest.Dial(t, "http://"+waitFor(t, api.stderr, listening, api)[1])
	do := func(method, path string, body any) map[string]any {
		t.Helper()
		res := c.Do(apitest.Request{Method: method, Path: path, Key: key, Body: body})
		if res.Status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, res.Status, res.Body)
		}
		return res.JSON(t)
	}
	project := do("POST", "/v1/projects", map[string]any{"name": "p"})["project"].(map[string]any)["id"].(string)
	bot := do("POST", "/v1/bot/create", map[string]any{"project_id": project, "name": "n", "model": "m"})["bot"].(map[string]any)["id"].(string)

	victim := spawn(t, env, "worker")
	src := do("POST", "/v1/bot/source/create", map[string]any{"project_id": project, "bot_id": bot, "title": "t", "type": "url", "source": site.URL})["source"].(map[string]any)
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker never fetched the page")
	}
	if err := victim.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()

	start(t, env, "worker")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		got := do("GET", "/v1/bot/source/read?project_id="+project+"&bot_id="+bot+"&source_id="+src["id"].(string), nil)["source"].(map[string]any)
		if got["status"] == "success" {
			return
		}
		if got["status"] == "failed" || time.Now().After(deadline) {
			t.Fatalf("source after the crash: %v", got)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
