package api_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/events"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/devenv/testenv"
	"github.com/agentplane/agentplane/shared/outbox"
	"github.com/agentplane/agentplane/shared/workflows"
)

// receiver is a webhook receiver: it answers with the statuses of answers in turn (then 200),
// failures with the Retry-After set by askRetryAfter, and keeps every delivery.
type receiver struct {
	*httptest.Server
	mu         sync.Mutex
	answers    []int
	retryAfter string
	deliveries []delivery
}

type delivery struct {
	// at is when the delivery arrived.
	at     time.Time
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{answers: answers}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.deliveries = append(r.deliveries, delivery{at: time.Now(), header: req.Header.Clone(), body: body})
		status := http.StatusOK
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		retryAfter := r.retryAfter
		r.mu.Unlock()
		if status == http.StatusFound {
			w.Header().Set("Location", "https://example.com/")
		}
		if status >= 400 && retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(r.Close)
	return r
}

// askRetryAfter makes the receiver's failures carry Retry-After: v.
func (r *receiver) askRetryAfter(v string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.retryAfter = v
}

func (r *receiver) got() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deliveries)
}

// workflowAPI is an agent with workflows, over HTTP.
type workflowAPI struct{ chatAPI }

func (a workflowAPI) create(t *testing.T, body map[string]any) string {
	t.Helper()
	if body["name"] == nil {
		body["name"] = "wf"
	}
	res := a.b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: a.b.key, Body: a.body(body)})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["workflow"].(map[string]any)["uuid"].(string)
}

func (a workflowAPI) run(t *testing.T, body map[string]any) (*apitest.Response, map[string]any) {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/run", Key: a.b.key, Body: a.body(body)})
	if res.Status != http.StatusOK {
		return res, nil
	}
	return res, res.JSON(t)["run"].(map[string]any)
}

// wait polls the run until it ends.
func (a workflowAPI) wait(t *testing.T, runID string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res := a.b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/run/read?" + a.query("&run_id="+runID), Key: a.b.key})
		expect(t, res, http.StatusOK, "")
		run := res.JSON(t)["run"].(map[string]any)
		if run["status"] == "succeeded" || run["status"] == "failed" {
			return run
		}
		if time.Now().After(deadline) {
			t.Fatalf("run still %v", run)
		}
		waitABit()
	}
}

func actionsOf(run map[string]any) []map[string]any {
	return objects(run["actions"])
}

// objects is a JSON array of objects as the objects.
func objects(list any) []map[string]any {
	var out []map[string]any
	for _, o := range list.([]any) {
		out = append(out, o.(map[string]any))
	}
	return out
}

// A manual run renders its actions from the input, delivers a signed webhook, creates a deal
// and posts a message, and records each action.
func TestWorkflowManualRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
		{"type": "webhook", "params": map[string]any{"url": hook.URL + "/in", "headers": map[string]any{"X-Team": "{{input.team}}"},
			"body": map[string]any{"deal": "{{input.title}}", "value": "{{input.value}}"}}},
		{"type": "create_deal", "params": map[string]any{"title": "{{input.title}}", "value": "{{input.value}}"}},
		{"type": "send_message", "params": map[string]any{"message": "New deal: {{input.title}}"}},
	}})
	_, run := a.run(t, map[string]any{"workflow_id": id, "input": map[string]any{"title": "Acme", "value": 1200, "team": "sales"}})
	if run["status"] != "queued" || run["trigger"].(map[string]any)["type"] != "manual" || len(run["actions"].([]any)) != 3 {
		t.Fatalf("run %v", run)
	}
	done := a.wait(t, run["uuid"].(string))
	acts := actionsOf(done)
	if done["status"] != "succeeded" || acts[0]["status"] != "succeeded" || acts[0]["response_code"] != float64(200) || acts[0]["attempts"] != float64(1) ||
		acts[1]["status"] != "succeeded" || acts[2]["status"] != "succeeded" {
		t.Fatalf("run %v", done)
	}

	got := hook.got()
	if len(got) != 1 {
		t.Fatalf("%d deliveries", len(got))
	}
	d := got[0]
	var body map[string]any
	if err := json.Unmarshal(d.body, &body); err != nil || body["deal"] != "Acme" || body["value"] != float64(1200) || d.header.Get("X-Team") != "sales" {
		t.Fatalf("delivery %s %v", d.body, d.header)
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects/" + b.project.ID + "/signing-secret", Key: b.key})
	expect(t, res, http.StatusOK, "")
	secret := res.JSON(t)["signing_secret"].(string)
	// docs/workflows.md's recipe, as a receiver would write it.
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(d.header.Get("X-Agentplane-Timestamp") + "." + string(d.body)))
	want := "v1=" + hex.EncodeToString(mac.Sum(nil))
	if !strings.HasPrefix(secret, "whsec_") || !hmac.Equal([]byte(d.header.Get("X-Agentplane-Signature")), []byte(want)) ||
		d.header.Get("X-Agentplane-Delivery") != run["uuid"].(string)+":0" || d.header.Get("Idempotency-Key") != d.header.Get("X-Agentplane-Delivery") {
		t.Fatalf("signature headers %v, want signature %s", d.header, want)
	}

	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
	deals := res.JSON(t)["deals"].([]any)
	if len(deals) != 1 || deals[0].(map[string]any)["title"] != "Acme" || deals[0].(map[string]any)["value"] != float64(1200) {
		t.Fatalf("deals %v", deals)
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/chat/readall?" + a.query(""), Key: b.key})
	chats := res.JSON(t)["chats"].([]any)
	if len(chats) != 1 {
		t.Fatalf("chats %v", chats)
	}
	hist := a.history(t, chats[0].(map[string]any)["uuid"].(string), "")
	if conv := hist["conversation"].([]any); len(conv) != 1 || conv[0].(map[string]any)["content"] != "New deal: Acme" || conv[0].(map[string]any)["role"] != "agent" {
		t.Fatalf("posted %v", hist)
	}

	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/runs?" + a.query("&workflow_id="+id+"&status=succeeded"), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if list := res.JSON(t); list["total"] != float64(1) {
		t.Fatalf("runs %v", list)
	}
	evs := streamEvents(t, "", b.project.ID, 5)
	if types := eventTypes(evs); !slices.Contains(types, "workflow.run.succeeded") || !slices.Contains(types, "deal.created") {
		t.Fatalf("events %v", types)
	}

	t.Run("Idempotent", func(t *testing.T) {
		_, first := a.run(t, map[string]any{"workflow_id": id, "idempotency_key": "k1", "input": map[string]any{"title": "Beta", "value": 1}})
		_, again := a.run(t, map[string]any{"workflow_id": id, "idempotency_key": "k1", "input": map[string]any{"title": "Beta", "value": 1}})
		if first["uuid"] != again["uuid"] {
			t.Fatalf("two runs for one key: %v %v", first["uuid"], again["uuid"])
		}
		a.wait(t, first["uuid"].(string))
		// A key is the caller's per workflow: another workflow's run under it is a run of its own.
		other := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
			{"type": "send_message", "params": map[string]any{"message": "x"}}}})
		_, own := a.run(t, map[string]any{"workflow_id": other, "idempotency_key": "k1"})
		if own["uuid"] == first["uuid"] || own["workflow_id"] != other {
			t.Fatalf("the other workflow's run under the same key: %v", own)
		}
		a.wait(t, own["uuid"].(string))
	})
	t.Run("Refused", func(t *testing.T) {
		off := a.create(t, map[string]any{"trigger_type": "manual", "is_active": false, "actions": []map[string]any{
			{"type": "send_message", "params": map[string]any{"message": "x"}}}})
		res, _ := a.run(t, map[string]any{"workflow_id": off})
		expect(t, res, http.StatusConflict, "workflow_inactive")
		res, _ = a.run(t, map[string]any{"workflow_id": "nope"})
		expect(t, res, http.StatusNotFound, "")
		res, _ = a.run(t, map[string]any{})
		expect(t, res, http.StatusUnprocessableEntity, "")
		res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/runs?" + a.query("&status=weird"), Key: b.key})
		expect(t, res, http.StatusUnprocessableEntity, "")
		other, _ := b.newTenant(t)
		res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/run/read?" + a.query("&run_id="+run["uuid"].(string)), Key: other})
		if res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
			t.Fatalf("another account read the run: %d", res.Status)
		}
		res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/projects/" + b.project.ID + "/signing-secret", Key: other})
		expect(t, res, http.StatusNotFound, "")
	})
}

// Webhooks are tried again on 5xx, never follow redirects, and a failed action stops the run
// unless it continues on error.
func TestWorkflowWebhookFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	for _, tt := range []struct {
		name       string
		answers    []int
		continues  bool
		status     string
		code       float64
		attempts   float64
		nextStatus string
	}{
		{"RetriedUntilSuccess", []int{503, 500}, false, "succeeded", 200, 3, "succeeded"},
		{"ClientErrorStops", []int{400}, false, "failed", 400, 1, "skipped"},
		{"RedirectNotFollowed", []int{302}, false, "failed", 302, 1, "skipped"},
		{"GivesUp", []int{503, 503, 503, 503}, false, "failed", 503, 4, "skipped"},
		{"ContinueOnError", []int{400}, true, "succeeded", 400, 1, "succeeded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hook := newReceiver(t, tt.answers...)
			id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
				{"type": "webhook", "params": map[string]any{"url": hook.URL}, "continue_on_error": tt.continues},
				{"type": "send_message", "params": map[string]any{"message": "after the hook"}},
			}})
			_, run := a.run(t, map[string]any{"workflow_id": id})
			done := a.wait(t, run["uuid"].(string))
			acts := actionsOf(done)
			if done["status"] != tt.status || acts[0]["response_code"] != tt.code || acts[0]["attempts"] != tt.attempts || acts[1]["status"] != tt.nextStatus {
				t.Fatalf("run %v", done)
			}
			if n := len(hook.got()); float64(n) != tt.attempts {
				t.Fatalf("%d deliveries, want %v", n, tt.attempts)
			}
			if ids := slices.Compact([]string{hook.got()[0].header.Get("X-Agentplane-Delivery"), hook.got()[len(hook.got())-1].header.Get("X-Agentplane-Delivery")}); len(ids) != 1 {
				t.Fatalf("attempts of one delivery carry different ids: %v", ids)
			}
			if tt.status == "failed" && !strings.Contains(done["error"].(string), "action 0 (webhook) failed") {
				t.Fatalf("error %q", done["error"])
			}
		})
	}
	// Each run ended with its event: two succeeded, three failed.
	var ended []string
	for deadline := time.Now().Add(10 * time.Second); len(ended) < 5 && time.Now().Before(deadline); waitABit() {
		ended = nil
		for _, ev := range streamEvents(t, "", b.project.ID, 1+5) { // the agent and the workflows, then what came
			if strings.HasPrefix(ev.Type, "workflow.run.") {
				ended = append(ended, ev.Type)
			}
		}
	}
	slices.Sort(ended)
	if want := []string{"workflow.run.failed", "workflow.run.failed", "workflow.run.failed", "workflow.run.succeeded", "workflow.run.succeeded"}; !slices.Equal(ended, want) {
		t.Fatalf("run events %v, want %v", ended, want)
	}
}

// A receiver that answers 408 or 429 gets the delivery again, after the Retry-After it asked for
// (at most 5 s), else after the backoff (250 ms at first), and the next attempt is delivered.
func TestWorkflowWebhookRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	for _, tt := range []struct {
		name       string
		status     int
		retryAfter string
		// waited is the least time between the two attempts.
		waited time.Duration
	}{
		{"TooManyRequests", http.StatusTooManyRequests, "1", time.Second},
		{"RequestTimeout", http.StatusRequestTimeout, "1", time.Second},
		{"RequestTimeoutWithoutRetryAfter", http.StatusRequestTimeout, "", 250 * time.Millisecond},
		{"RetryAfterPastTheBound", http.StatusTooManyRequests, "3600", 5 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hook := newReceiver(t, tt.status)
			hook.askRetryAfter(tt.retryAfter)
			id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
				{"type": "webhook", "params": map[string]any{"url": hook.URL}}}})
			_, run := a.run(t, map[string]any{"workflow_id": id})
			done := a.wait(t, run["uuid"].(string))
			act := actionsOf(done)[0]
			if done["status"] != "succeeded" || act["attempts"] != float64(2) || act["response_code"] != float64(200) {
				t.Fatalf("run %v", done)
			}
			got := hook.got()
			if len(got) != 2 || got[0].header.Get("X-Agentplane-Delivery") != got[1].header.Get("X-Agentplane-Delivery") {
				t.Fatalf("%d deliveries, want two attempts of one delivery", len(got))
			}
			if gap := got[1].at.Sub(got[0].at); gap < tt.waited {
				t.Fatalf("the second attempt came %s after the first, want at least %s", gap, tt.waited)
			}
		})
	}
}

// An agent starts a workflow with the run_workflow tool (after approval, as it changes data).
func TestAgentRunsAWorkflow(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	a := workflowAPI{b.chatBot(t, map[string]any{"provider_key": "k", "auto_approve_tools": 1})}
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
		{"type": "webhook", "params": map[string]any{"url": hook.URL, "body": map[string]any{"customer": "{{input.customer}}"}}}}})
	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("run_workflow", `{"workflow_id":"`+id+`","input":{"customer":"Initech"}}`),
		{Reply: "Started the workflow."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "Notify the team about Initech", "reasoning_mode": "agent"})
	cs := cycles(t, chat)
	if len(cs) != 1 || cs[0]["actionSuccess"] != true || !strings.Contains(cs[0]["observation"].(string), "run_id") {
		t.Fatalf("cycles %v", cs)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(hook.got()) == 0 && time.Now().Before(deadline) {
		waitABit()
	}
	if got := hook.got(); len(got) != 1 || !strings.Contains(string(got[0].body), "Initech") {
		t.Fatalf("deliveries %v", got)
	}
}

// runsOf lists the runs of a workflow.
func (a workflowAPI) runsOf(t *testing.T, workflowID string) []map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/runs?" + a.query("&workflow_id="+workflowID), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return objects(res.JSON(t)["runs"])
}

// settled returns once the workflow triggers have handled every event so far. They handle the
// stream in order, so it creates a contact and waits for the run of sentinel, a workflow
// triggered by contact.created, that its event starts: what must not have happened for an
// earlier event has not happened by then, or never will.
func (a workflowAPI) settled(t *testing.T, sentinel string) {
	t.Helper()
	before := len(a.runsOf(t, sentinel))
	res := a.b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/contacts", Key: a.b.key,
		Body: a.body(map[string]any{"name": "Sentinel " + testenv.NewName()})})
	expect(t, res, http.StatusOK, "")
	deadline := time.Now().Add(30 * time.Second)
	for len(a.runsOf(t, sentinel)) == before {
		if time.Now().After(deadline) {
			t.Fatal("the triggers did not handle the sentinel's event")
		}
		waitABit()
	}
}

// A deal marked won starts the workflows whose conditions hold on it, once each, and not the
// others; a workflow's own changes do not start it again.
func TestWorkflowEventTriggers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	hook := newReceiver(t)
	big := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.won",
		"conditions": []map[string]any{{"field": "data.value", "operator": "gte", "value": 1000}},
		"actions":    []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL, "body": map[string]any{"won": "{{data.title}}"}}}}})
	huge := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.won",
		"conditions": []map[string]any{{"field": "data.value", "operator": "gte", "value": 1000000}},
		"actions":    []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL}}}})
	copier := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.created",
		"actions": []map[string]any{{"type": "create_deal", "params": map[string]any{"title": "{{data.title}} (copy)"}}}})
	echo := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.updated",
		"actions": []map[string]any{{"type": "update_deal", "params": map[string]any{"deal_id": "{{data.uuid}}", "title": "{{data.title}} (seen)"}}}})
	sentinel := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "contact.created",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": newReceiver(t).URL}}}})

	deal := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Acme", "value": 5000}))
	b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, a.body(map[string]any{"status": "won"}))
	deadline := time.Now().Add(20 * time.Second)
	for len(hook.got()) == 0 && time.Now().Before(deadline) {
		waitABit()
	}
	if got := hook.got(); len(got) != 1 || !strings.Contains(string(got[0].body), `"won":"Acme`) {
		t.Fatalf("deliveries %v", got)
	}
	if runs := a.runsOf(t, huge); len(runs) != 0 {
		t.Fatalf("the workflow whose condition fails ran: %v", runs)
	}
	runs := a.runsOf(t, big)
	if len(runs) != 1 || runs[0]["trigger"].(map[string]any)["event_type"] != "deal.won" {
		t.Fatalf("runs %v", runs)
	}

	b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, a.body(map[string]any{"title": "Acme Corp"}))
	for time.Now().Before(deadline) && len(a.runsOf(t, echo)) == 0 {
		waitABit()
	}
	for _, r := range a.runsOf(t, echo) {
		a.wait(t, r["uuid"].(string))
	}
	a.settled(t, sentinel) // the event of echo's own update was handled
	if runs := a.runsOf(t, echo); len(runs) != 1 {
		t.Fatalf("the workflow that updates deals on deal.updated ran %d times", len(runs))
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals/" + deal.UUID + "?" + a.query(""), Key: b.key})
	if title := res.JSON(t)["deal"].(map[string]any)["title"]; title != "Acme Corp (seen)" {
		t.Fatalf("title %v", title)
	}

	if runs := a.runsOf(t, copier); len(runs) != 1 {
		t.Fatalf("the workflow that creates a deal on deal.created ran %d times", len(runs))
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
	if n := res.JSON(t)["total"]; n != float64(2) {
		t.Fatalf("%v deals, want the deal and one copy", n)
	}

	t.Run("DeliveredTwice", func(t *testing.T) {
		evs := streamEvents(t, "", b.project.ID, 4)
		var won outbox.Event
		for _, ev := range evs {
			if ev.Type == "deal.won" {
				won = ev
			}
		}
		for range 2 {
			if _, err := b.flows.OnEvent(context.Background(), won, nil); err != nil {
				t.Fatal(err)
			}
		}
		if runs := a.runsOf(t, big); len(runs) != 1 {
			t.Fatalf("%d runs after the event came again", len(runs))
		}
	})
	t.Run("Deactivated", func(t *testing.T) {
		res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/workflow/update", Key: b.key, Body: a.body(map[string]any{"workflow_id": big, "is_active": false})})
		expect(t, res, http.StatusOK, "")
		other := b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Globex", "value": 9000}))
		b.deal(t, "PUT", "/v1/bot/crm/deals/"+other.UUID, a.body(map[string]any{"status": "won"}))
		a.settled(t, sentinel)
		if runs := a.runsOf(t, big); len(runs) != 1 {
			t.Fatalf("an inactive workflow ran: %d runs", len(runs))
		}
	})
}

// A schedule workflow has a cron entry while it is active, and each tick starts one run however
// many schedulers fire it.
func TestWorkflowSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	id := a.create(t, map[string]any{"trigger_type": "schedule", "trigger_config": map[string]any{"cron": "*/5 * * * *", "timezone": "Europe/Berlin"},
		"actions": []map[string]any{{"type": "send_message", "params": map[string]any{"message": "Digest of {{data.tick}}"}}}})
	schedules := workflows.NewSchedules(b.flows, b.log)
	ctx := context.Background()
	if err := schedules.Reload(ctx); err != nil || schedules.Entries() != 1 {
		t.Fatalf("%d entries (%v)", schedules.Entries(), err)
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/read?" + a.query("&workflow_id="+id), Key: b.key})
	var read struct{ Workflow workflows.Workflow }
	res.Decode(t, &read)
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/read?" + a.query(""), Key: b.key})
	read.Workflow.UUID, read.Workflow.ProjectID, read.Workflow.BotID = id, b.project.ID, res.JSON(t)["bot"].(map[string]any)["id"].(string)
	sched, err := workflows.Schedule(read.Workflow)
	if err != nil {
		t.Fatal(err)
	}
	if tick := sched.Next(time.Date(2026, 11, 22, 10, 1, 0, 0, time.UTC)); tick.Minute()%5 != 0 || tick.Second() != 0 {
		t.Fatalf("next tick %v", tick)
	}
	second := workflows.NewSchedules(b.flows, b.log) // another scheduler replica
	if err := second.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Time{
		time.Date(2026, 11, 22, 9, 5, 0, 2e8, time.UTC), // the 09:05 tick, fired by both
		time.Date(2026, 11, 22, 9, 7, 0, 0, time.UTC),   // no tick in the minute before
		time.Date(2026, 11, 22, 9, 10, 30, 0, time.UTC), // the 09:10 tick
	} {
		for _, s := range []*workflows.Schedules{schedules, second} {
			if err := s.FireAt(ctx, at); err != nil {
				t.Fatal(err)
			}
		}
	}
	runs := a.runsOf(t, id)
	if len(runs) != 2 || runs[0]["trigger"].(map[string]any)["type"] != "schedule" || runs[0]["trigger"].(map[string]any)["tick"] != "2026-11-22T09:10:00Z" {
		t.Fatalf("runs %v", runs)
	}
	for _, r := range runs {
		if done := a.wait(t, r["uuid"].(string)); done["status"] != "succeeded" {
			t.Fatalf("run %v", done)
		}
	}
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/workflow/update", Key: b.key, Body: a.body(map[string]any{"workflow_id": id, "is_active": false})})
	expect(t, res, http.StatusOK, "")
	if err := schedules.Reload(ctx); err != nil || schedules.Entries() != 0 {
		t.Fatalf("%d entries after deactivation (%v)", schedules.Entries(), err)
	}
	if every, _ := workflows.Schedule(workflows.Workflow{Definition: workflows.Definition{TriggerConfig: map[string]any{"cron": "@every 90m"}}}); every.Next(time.Unix(100, 0)) != time.Unix(5400, 0) {
		t.Fatalf("@every is not aligned on the epoch: %v", every.Next(time.Unix(100, 0)))
	}
}

// With the SSRF guard on (production), a webhook to a private address is refused without a try.
func TestWorkflowWebhookGuarded(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{guarded: true})
	hook := newReceiver(t)
	id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
		{"type": "webhook", "params": map[string]any{"url": hook.URL}}}})
	_, run := a.run(t, map[string]any{"workflow_id": id})
	done := a.wait(t, run["uuid"].(string))
	act := actionsOf(done)[0]
	if done["status"] != "failed" || act["attempts"] != float64(1) || !strings.Contains(act["error"].(string), "blocked range") || len(hook.got()) != 0 {
		t.Fatalf("run %v, %d deliveries", done, len(hook.got()))
	}
}

// A consumer that queued an event's runs but did not acknowledge it (it failed, or died) gets the
// event again, over JetStream: the second delivery starts no second run.
func TestWorkflowEventRedelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	hook := newReceiver(t)
	id := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.created",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL}}}})
	var mu sync.Mutex
	deliveries := 0
	redelivered := make(chan struct{})
	c, err := events.Consume(context.Background(), b.nats, events.ConsumeConfig{Durable: "redelivery-" + b.queue, New: true, RetryDelay: 50 * time.Millisecond},
		func(ctx context.Context, ev outbox.Event) error {
			if ev.Type != "deal.created" {
				return nil
			}
			_, err := b.flows.OnEvent(ctx, ev, nil)
			mu.Lock()
			defer mu.Unlock()
			deliveries++
			if deliveries == 1 && err == nil {
				return errors.New("the consumer fails after queueing, before its ack")
			}
			if deliveries == 2 {
				close(redelivered)
			}
			return err
		}, b.log)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Once"}))
	select {
	case <-redelivered:
	case <-time.After(20 * time.Second):
		t.Fatal("the event the consumer did not acknowledge was not delivered again")
	}
	b.startWorker(t, workerOptions{})
	runs := a.runsOf(t, id)
	if len(runs) != 1 {
		t.Fatalf("%d runs after a redelivery", len(runs))
	}
	a.wait(t, runs[0]["uuid"].(string))
	if n := len(hook.got()); n != 1 {
		t.Fatalf("%d deliveries of the webhook", n)
	}
}

// The worker whose triggers start a run runs it at once, holding it under a lease it renews
// while the run goes on: the run's task, held back until the lease would have ended, finds the
// run held and is tried again later rather than run it a second time, and is removed once the
// run has ended.
func TestWorkflowEventRunByItsTrigger(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{lease: 600 * time.Millisecond})
	arrived, release := make(chan string, 4), make(chan struct{})
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- r.Header.Get(workflows.DeliveryHeader)
		<-release
	}))
	t.Cleanup(hook.Close)
	id := a.create(t, map[string]any{"trigger_type": "event", "trigger_event": "deal.created",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL, "timeout_seconds": 30}}}})
	const failed, ok = `agentplane_tasks_total{outcome="error",type="workflow:run"}`, `agentplane_tasks_total{outcome="ok",type="workflow:run"}`
	tried, ended := b.metric(t, failed), b.metric(t, ok)
	b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Held"}))
	var first string
	select {
	case first = <-arrived:
	case <-time.After(20 * time.Second):
		close(release)
		t.Fatal("the webhook was not delivered")
	}
	// The webhook hangs until the run's task has come and found the run held twice (each after
	// a lease's length; 15 s bounds it on a busy machine).
	for deadline := time.Now().Add(15 * time.Second); b.metric(t, failed) < tried+2; waitABit() {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the run's task never found the run held")
		}
	}
	close(release)
	runs := a.runsOf(t, id)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	if run := a.wait(t, runs[0]["uuid"].(string)); run["status"] != "succeeded" {
		t.Fatalf("the run %v", run)
	}
	insp := asynqInspector(t)
	for deadline := time.Now().Add(10 * time.Second); ; waitABit() {
		info, err := insp.GetTaskInfo(b.queue, "workflow:run:"+runs[0]["uuid"].(string))
		if b.metric(t, ok) > ended && (errors.Is(err, asynq.ErrTaskNotFound) || err == nil && info.State == asynq.TaskStateCompleted) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the run's task is still there: %v %v", info, err)
		}
	}
	select {
	case again := <-arrived:
		t.Fatalf("the webhook was delivered again (%s, first %s)", again, first)
	default:
	}

	// A run that ends before its lease does removes its task, still held back, with it.
	ended = b.metric(t, ok)
	b.deal(t, "POST", "/v1/bot/crm/deals", a.body(map[string]any{"title": "Quick"}))
	<-arrived
	for deadline := time.Now().Add(10 * time.Second); b.metric(t, ok) == ended; waitABit() {
		if time.Now().After(deadline) {
			t.Fatal("the second run never ended")
		}
	}
	runs = a.runsOf(t, id)
	quick := runs[0]["uuid"].(string)
	if quick == first[:strings.IndexByte(first, ':')] {
		quick = runs[1]["uuid"].(string)
	}
	if info, err := insp.GetTaskInfo(b.queue, "workflow:run:"+quick); !errors.Is(err, asynq.ErrTaskNotFound) {
		t.Fatalf("the task of a run that ended is still there: %v %v", info, err)
	}
}

// add_memory stores a memory source; send_message in reply mode asks the agent and keeps both
// sides of the exchange.
func TestWorkflowMemoryAndReply(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{
		{"type": "add_memory", "params": map[string]any{"title": "Note", "type": "text", "source": "{{input.note}}", "tags": []any{"auto"}}},
		{"type": "send_message", "params": map[string]any{"mode": "reply", "message": "What do you know about {{input.topic}}?"}},
	}})
	_, run := a.run(t, map[string]any{"workflow_id": id, "input": map[string]any{"note": "The warehouse opens at seven.", "topic": "the warehouse"}})
	done := a.wait(t, run["uuid"].(string))
	acts := actionsOf(done)
	if done["status"] != "succeeded" || !strings.Contains(acts[0]["output"].(string), "source_id") || !strings.Contains(acts[1]["output"].(string), "reply") {
		t.Fatalf("run %v", done)
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/source/readall?" + a.query(""), Key: b.key})
	srcs := res.JSON(t)["sources"].([]any)
	if len(srcs) != 1 || srcs[0].(map[string]any)["title"] != "Note" {
		t.Fatalf("sources %v", srcs)
	}
	// The source made a version of the agent, by the workflow, which the agent answers from.
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/version/read?" + a.query("&version=published"), Key: b.key})
	expect(t, res, http.StatusOK, "")
	ver := res.JSON(t)
	if got := ids(ver["sources"].(map[string]any)["ids"]); !slices.Equal(got, []string{srcs[0].(map[string]any)["id"].(string)}) ||
		!strings.HasPrefix(ver["version"].(map[string]any)["by"].(string), "workflow:") {
		t.Fatalf("the published version %v", ver)
	}
	var out struct {
		ChatID string `json:"chat_id"`
	}
	_ = json.Unmarshal([]byte(acts[1]["output"].(string)), &out)
	hist := a.history(t, out.ChatID, "")
	conv := hist["conversation"].([]any)
	if len(conv) != 2 || conv[0].(map[string]any)["content"] != "What do you know about the warehouse?" || conv[1].(map[string]any)["role"] != "agent" {
		t.Fatalf("conversation %v", conv)
	}
}

// BoostGPT's client: the run history under logs, the catalog, and the reset of an agent's memory.
func TestWorkflowLogsCatalogAndReset(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	id := a.create(t, map[string]any{"trigger_type": "manual", "actions": []map[string]any{{"type": "send_message", "params": map[string]any{"message": "hi"}}}})
	_, run := a.run(t, map[string]any{"workflow_id": id})
	a.wait(t, run["uuid"].(string))
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/logs?" + a.query("&workflow_id="+id), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if logs := res.JSON(t); logs["total"] != float64(1) || logs["logs"].([]any)[0].(map[string]any)["uuid"] != run["uuid"] {
		t.Fatalf("logs %v", logs)
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/workflow/catalog?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	cat := res.JSON(t)["catalog"].(map[string]any)
	if !slices.Contains(cat["trigger_events"].([]any), any("deal.won")) || !slices.Contains(cat["operators"].([]any), any("gte")) || len(cat["actions"].([]any)) != 6 {
		t.Fatalf("catalog %v", cat)
	}

	a.ingest(t, map[string]any{"type": "text", "title": "One", "source": "The first note."})
	a.ingest(t, map[string]any{"type": "text", "title": "Two", "source": "The second note."})
	res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/reset", Key: b.key, Body: a.body(map[string]any{})})
	expect(t, res, http.StatusOK, "")
	if bot := res.JSON(t)["bot"].(map[string]any); bot["uuid"] != a.botID {
		t.Fatalf("bot %v", bot)
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/source/readall?" + a.query(""), Key: b.key})
	if total := res.JSON(t)["total"]; total != float64(0) {
		t.Fatalf("%v sources after the reset", total)
	}
	if found := a.search(t, "note", nil); len(found) != 0 {
		t.Fatalf("retrieval still finds %v", found)
	}
	other, _ := b.newTenant(t)
	res = b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/reset", Key: other, Body: a.body(map[string]any{})})
	if res.Status != http.StatusNotFound && res.Status != http.StatusForbidden {
		t.Fatalf("another account reset the agent: %d", res.Status)
	}
}

// A workflow created without actions is a draft (the interface requires only project_id, bot_id
// and name): it is stored with no actions, and a run of it succeeds with nothing done.
func TestWorkflowDraft(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: a.body(map[string]any{"name": "Later"})})
	expect(t, res, http.StatusOK, "")
	w := res.JSON(t)["workflow"].(map[string]any)
	if acts, ok := w["actions"].([]any); !ok || len(acts) != 0 || w["trigger_type"] != "manual" {
		t.Fatalf("draft %v", w)
	}
	_, run := a.run(t, map[string]any{"workflow_id": w["uuid"]})
	done := a.wait(t, run["uuid"].(string))
	if done["status"] != "succeeded" || done["error"] != "" || len(done["actions"].([]any)) != 0 {
		t.Fatalf("run of a draft %v", done)
	}
}

// logLines keeps the JSON lines of a log.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// waitFor waits for a line that match holds for, and returns it decoded.
func (l *logLines) waitFor(t *testing.T, what string, match func(line map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		l.mu.Lock()
		text := l.buf.String()
		l.mu.Unlock()
		for _, raw := range strings.Split(text, "\n") {
			var line map[string]any
			if json.Unmarshal([]byte(raw), &line) == nil && match(line) {
				return line
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log does not tell %s", what)
		}
		waitABit()
	}
}

// A workflow's action triggers another workflow, whose action triggers a third, and so on: the
// chain runs up to 5 workflows; the sixth, which the fifth's change would trigger, is not run,
// and the worker's log says so.
func TestWorkflowChain(t *testing.T) {
	t.Parallel()
	const limit = 5 // docs/workflows.md's: no run starts from a chain of 5
	logs := &logLines{}
	b := setup(t, withLogs(logs))
	a := workflowAPI{b.chatBot(t, nil)}
	b.startWorker(t, workerOptions{})
	// Step 1 creates a deal titled "step 1"; step n changes the title from "step n-1" to "step n".
	chain := []string{a.create(t, map[string]any{"name": "step 1", "trigger_type": "manual",
		"actions": []map[string]any{{"type": "create_deal", "params": map[string]any{"title": "step 1"}}}})}
	for step := 2; step <= limit+1; step++ {
		trigger := "deal.updated"
		if step == 2 {
			trigger = "deal.created"
		}
		chain = append(chain, a.create(t, map[string]any{"name": fmt.Sprintf("step %d", step), "trigger_type": "event", "trigger_event": trigger,
			"conditions": []map[string]any{{"field": "data.title", "operator": "eq", "value": fmt.Sprintf("step %d", step-1)}},
			"actions":    []map[string]any{{"type": "update_deal", "params": map[string]any{"deal_id": "{{data.uuid}}", "title": fmt.Sprintf("step %d", step)}}}}))
	}
	_, run := a.run(t, map[string]any{"workflow_id": chain[0]})
	if run == nil {
		t.Fatal("the first workflow did not start")
	}

	stopped := logs.waitFor(t, "of a chain stopped", func(line map[string]any) bool { return line["chain"] != nil })
	if msg, _ := stopped["msg"].(string); stopped["workflow_id"] != chain[limit] || stopped["level"] != "WARN" || !strings.Contains(msg, "not run") || !strings.Contains(msg, "limit") {
		t.Fatalf("log line %v, want a warning that the sixth workflow (%s) was not run", stopped, chain[limit])
	}
	if got := fmt.Sprint(stopped["chain"]); got != fmt.Sprint(chain[:limit]) {
		t.Fatalf("the log names the chain %s, want %v", got, chain[:limit])
	}
	for step, id := range chain[:limit] {
		runs := a.runsOf(t, id)
		if len(runs) != 1 {
			t.Fatalf("step %d ran %d times", step+1, len(runs))
		}
		if done := a.wait(t, runs[0]["uuid"].(string)); done["status"] != "succeeded" {
			t.Fatalf("step %d: %v", step+1, done)
		}
	}
	if runs := a.runsOf(t, chain[limit]); len(runs) != 0 {
		t.Fatalf("the workflow past the limit ran: %v", runs)
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if deals := res.JSON(t)["deals"].([]any); len(deals) != 1 || deals[0].(map[string]any)["title"] != "step 5" {
		t.Fatalf("deals %v, want one titled step 5", deals)
	}
}
