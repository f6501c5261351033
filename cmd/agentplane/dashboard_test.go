package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hibiken/asynq"
)

// The queue dashboard (asynqmon) is served by the api role behind the admin token, which a
// browser sends as the Basic password; it is read-only and shows payloads without their keys.
func TestQueueDashboard(t *testing.T) {
	t.Parallel()
	env := serviceEnv(t)
	queue := env["AGENTPLANE_QUEUE"]
	payload, _ := json.Marshal(map[string]any{"execution_id": "e1", "provider_key": "sk-very-secret"})
	info, err := queueClient(t, env).Enqueue(asynq.NewTask("agent:run", payload), asynq.Queue(queue), asynq.ProcessIn(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, env, "api")
	base := "http://" + waitFor(t, p.stderr, listening, p)[1] + "/admin/queues"

	do := func(method, path, password string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if password != "" {
			req.SetBasicAuth("admin", password)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	for _, password := range []string{"", "wrong"} {
		res, body := do("GET", "/", password)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), "Basic") || strings.Contains(body, "<html") {
			t.Fatalf("password %q: %d %v %s", password, res.StatusCode, res.Header, body)
		}
	}
	if res, body := do("GET", "/", "admin-secret"); res.StatusCode != http.StatusOK || !strings.Contains(body, "<html") {
		t.Fatalf("the dashboard: %d %s", res.StatusCode, body)
	}
	res, body := do("GET", "/api/queues/"+queue+"/scheduled_tasks", "admin-secret")
	if res.StatusCode != http.StatusOK || !strings.Contains(body, info.ID) || !strings.Contains(body, "redacted") || strings.Contains(body, "sk-very-secret") {
		t.Fatalf("scheduled tasks: %d %s", res.StatusCode, body)
	}
	if res, body := do("DELETE", "/api/queues/"+queue+"/scheduled_tasks/"+info.ID, "admin-secret"); res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("a delete in the read-only dashboard: %d %s", res.StatusCode, body)
	}
	if strings.Contains(p.stderr.String(), "sk-very-secret") || strings.Contains(p.stderr.String(), "admin-secret") {
		t.Fatal("a secret appears in the logs")
	}
}
