package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
)

// A worker whose look for tasks waits an hour for a wake runs each task within the test's bounds:
// two agent runs and a page's ingestion because their enqueue woke it, and the page's second
// fetch (the first was answered 503) because asynq's move of the retried task back to the queue
// woke it.
func TestTasksWakeAnIdleWorker(t *testing.T) {
	t.Parallel()
	_, a, fake := agentSetup(t, nil, withWorkerPoll(time.Hour))
	fake.Set(providertest.Behavior{Reply: "It opens at nine."})
	for _, question := range []string{"When does the shop open?", "And on Sundays?"} {
		_, chat := a.chat(t, map[string]any{"message": question, "reasoning_mode": "agent"})
		if chat == nil || chat["isComplete"] != true || chat["reply"] != "It opens at nine." {
			t.Fatalf("the agent run of %q answered %v", question, chat)
		}
	}
	page := newFlakyPage(t, 0, http.StatusServiceUnavailable)
	src := a.ingest(t, map[string]any{"type": "url", "title": "Hours", "source": page.URL + "/hours"})
	if src["status"] != "success" || page.requests.Load() != 2 {
		t.Fatalf("the page's source is %v after %d fetches, want success after 2", src["status"], page.requests.Load())
	}
}
