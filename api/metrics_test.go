package api_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
)

// /metrics counts the requests answered, by route template (never by id), and the tasks run.
func TestMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.startWorker(t, workerOptions{})
	a := b.sources(t)
	a.ingest(t, map[string]any{"type": "text", "title": "T", "source": "Some text."})
	_, run := b.chatBot(t, nil).chat(t, map[string]any{"message": "Look up the text, then sum it up.", "reasoning_mode": "agent"})
	if run["isComplete"] != true {
		t.Fatalf("agent run %v", run)
	}
	b.client.Do(apitest.Request{Method: "GET", Path: "/healthz"})
	b.client.Do(apitest.Request{Method: "GET", Path: "/v1/nowhere", Key: b.key})
	// The worker counts a task when its handler has returned, which is just after the source
	// reads ready: read the metrics until the task is there.
	const task = `agentplane_tasks_total{outcome="ok",type="source:ingest"} 1`
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/metrics"})
		expect(t, res, http.StatusOK, "")
		body = string(res.Body)
		if strings.Contains(body, task) || time.Now().After(deadline) {
			break
		}
		waitABit()
	}
	for _, want := range []string{
		`agentplane_http_requests_total{method="GET",route="/healthz",status="200"} `,
		`agentplane_http_requests_total{method="POST",route="/v1/bot/source/create",status="200"} `,
		`agentplane_http_requests_total{method="GET",route="unmatched",status="404"} `,
		`agentplane_http_request_duration_seconds_bucket{method="GET",route="/v1/bot/source/read",le=`,
		task,
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %s in the metrics", want)
		}
	}
	if !regexp.MustCompile(`(?m)^agentplane_run_cycles_total [1-9]`).MatchString(body) {
		t.Error("the agent run's cycles are not counted")
	}
	if strings.Contains(body, a.botID) || strings.Contains(body, b.key) {
		t.Fatal("the metrics name an id or a key")
	}
}
