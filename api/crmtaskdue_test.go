package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/crm"
)

// A task's due time starts its task.due workflow once, however many schedulers look at once;
// a new due time starts it again; done and undated tasks start nothing.
func TestCRMTaskDue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	wf := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "task.due",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL + "/due",
			"body": map[string]any{"title": "{{data.title}}", "due_at": "{{data.due_at}}", "task": "{{data.uuid}}"}}}}})
	task := func(body map[string]any) map[string]any {
		t.Helper()
		res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/tasks", Key: b.key, Body: a.body(body)})
		expect(t, res, http.StatusOK, "")
		return res.JSON(t)["task"].(map[string]any)
	}
	due := time.Now().UTC().Add(time.Hour).Truncate(time.Second)
	ada := task(map[string]any{"title": "Call Ada", "due_at": due.Format(time.RFC3339)})
	task(map[string]any{"title": "Undated"})
	task(map[string]any{"title": "Done already", "due_at": due.Add(-time.Hour).Format(time.RFC3339), "status": "done"})
	ctx := context.Background()
	if n, err := b.deals.NoticeDue(ctx, due.Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("%d task.due sent before the due time: %v", n, err)
	}

	// Two schedulers (two processes) look at once.
	other := app.New(b.app.Cfg, b.log, b.app.Conns)
	t.Cleanup(other.Close)
	od, err := other.Domain()
	if err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	var wg sync.WaitGroup
	for _, s := range []*crm.Service{b.deals, od.CRM} {
		wg.Go(func() {
			n, err := s.NoticeDue(ctx, due)
			if err != nil {
				t.Error(err)
			}
			sent.Add(int64(n))
		})
	}
	wg.Wait()
	if sent.Load() != 1 {
		t.Fatalf("%d task.due sent by two schedulers, want 1", sent.Load())
	}
	runs := waitRuns(t, a, wf, 1)
	if r := a.wait(t, runs[0]["uuid"].(string)); r["status"] != "succeeded" || r["trigger"].(map[string]any)["event_type"] != "task.due" {
		t.Fatalf("run %v", r)
	}
	var got map[string]any
	if err := json.Unmarshal(hook.got()[0].body, &got); err != nil || got["title"] != "Call Ada" || got["task"] != ada["uuid"] || got["due_at"] != due.Format(time.RFC3339) {
		t.Fatalf("webhook body %s", hook.got()[0].body)
	}
	if n, err := b.deals.NoticeDue(ctx, due.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("%d task.due sent again: %v", n, err)
	}

	// Moved to a new due time, the task is due again then.
	later := due.Add(2 * time.Hour)
	res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/crm/tasks/" + ada["uuid"].(string), Key: b.key,
		Body: a.body(map[string]any{"due_at": later.Format(time.RFC3339)})})
	expect(t, res, http.StatusOK, "")
	if n, err := b.deals.NoticeDue(ctx, later); err != nil || n != 1 {
		t.Fatalf("%d task.due sent at the new due time: %v", n, err)
	}
	waitRuns(t, a, wf, 2)
}

// waitRuns waits until the workflow has n runs, and returns them.
func waitRuns(t *testing.T, a workflowAPI, workflowID string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs := a.runsOf(t, workflowID)
		if len(runs) >= n {
			if len(runs) > n {
				t.Fatalf("%d runs, want %d: %v", len(runs), n, runs)
			}
			return runs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs after 30 s, want %d", len(runs), n)
		}
		waitABit()
	}
}
