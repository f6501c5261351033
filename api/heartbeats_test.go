package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/cmd/agentplane/app"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/heartbeats"
)

// heartbeatAPI is an agent with heartbeats, over HTTP, and the scheduler's side of them driven
// with a simulated clock.
type heartbeatAPI struct {
	chatAPI
	beats *heartbeats.Service
}

func newHeartbeatAPI(t *testing.T, b *bundle, a chatAPI) heartbeatAPI {
	t.Helper()
	d, err := b.app.Domain()
	if err != nil {
		t.Fatal(err)
	}
	return heartbeatAPI{chatAPI: a, beats: d.Heartbeats}
}

// configure posts a heartbeat configuration and returns the answer.
func (a heartbeatAPI) configure(t *testing.T, body map[string]any) (*apitest.Response, map[string]any) {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/heartbeat/configure", Key: a.b.key, Body: a.body(body)})
	if res.Status != http.StatusOK {
		return res, nil
	}
	return res, res.JSON(t)["heartbeat"].(map[string]any)
}

func (a heartbeatAPI) create(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	res, h := a.configure(t, body)
	expect(t, res, http.StatusOK, "")
	return h
}

func (a heartbeatAPI) read(t *testing.T, id string) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/heartbeat/read?" + a.query("&heartbeat_id="+id), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)["heartbeat"].(map[string]any)
}

func (a heartbeatAPI) post(t *testing.T, action, id string) map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodPost, Path: "/v1/bot/heartbeat/" + action, Key: a.b.key,
		Body: a.body(map[string]any{"heartbeat_id": id})})
	expect(t, res, http.StatusOK, "")
	return res.JSON(t)
}

// logs returns the heartbeat's firings, newest first.
func (a heartbeatAPI) logs(t *testing.T, id string) []map[string]any {
	t.Helper()
	res := a.b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/heartbeat/logs?" + a.query("&per_page=100&heartbeat_id="+id), Key: a.b.key})
	expect(t, res, http.StatusOK, "")
	var out []map[string]any
	for _, f := range res.JSON(t)["logs"].([]any) {
		out = append(out, f.(map[string]any))
	}
	return out
}

// firing waits until the firing id has the status want and returns it.
func (a heartbeatAPI) firing(t *testing.T, heartbeatID, id, want string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var last map[string]any
		for _, f := range a.logs(t, heartbeatID) {
			if f["firing_id"] == id {
				last = f
			}
		}
		if last != nil && last["status"] == want {
			return last
		}
		if time.Now().After(deadline) {
			t.Fatalf("firing %s: %v, want %s", id, last, want)
		}
		waitABit()
	}
}

// settled waits until the heartbeat has no firing under way and returns it.
func (a heartbeatAPI) settled(t *testing.T, id string) map[string]any {
	t.Helper()
	return a.until(t, id, "no firing under way", func(h map[string]any) bool { return h["running_firing_id"] == "" })
}

// until waits until the heartbeat is as ok wants (what) and returns it.
func (a heartbeatAPI) until(t *testing.T, id, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h := a.read(t, id)
		if ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat not %s: %v", what, h)
		}
		waitABit()
	}
}

func at(t *testing.T, v any) time.Time {
	t.Helper()
	s, _ := v.(string)
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return ts
}

func heartbeatSetup(t *testing.T) (*bundle, heartbeatAPI, *providertest.Server) {
	t.Helper()
	b, a, fake := agentSetup(t, map[string]any{"heartbeat": "1"})
	return b, newHeartbeatAPI(t, b, a), fake
}

// A heartbeat needs its agent's flag, and bad configurations are refused field by field.
func TestHeartbeatConfiguration(t *testing.T) {
	t.Parallel()
	fake := providertest.New(t)
	b := setup(t, withProvider(fake.URL))
	off := newHeartbeatAPI(t, b, b.chatBot(t, map[string]any{}))
	res, _ := off.configure(t, map[string]any{"prompt": "Summarise the day", "cron_pattern": "0 18 * * *"})
	expect(t, res, http.StatusConflict, "agent_heartbeat_off")

	a := newHeartbeatAPI(t, b, b.chatBot(t, map[string]any{"heartbeat": 1}))
	for _, tc := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"no prompt", map[string]any{"cron_pattern": "0 18 * * *"}, "prompt"},
		{"no schedule", map[string]any{"prompt": "p"}, "cron_pattern"},
		{"six fields", map[string]any{"prompt": "p", "cron_pattern": "0 0 18 * * *"}, "cron_pattern"},
		{"an interval", map[string]any{"prompt": "p", "cron_pattern": "@every 1m"}, "cron_pattern"},
		{"minute 61", map[string]any{"prompt": "p", "cron_pattern": "61 * * * *"}, "cron_pattern"},
		{"unknown zone", map[string]any{"prompt": "p", "cron_pattern": "0 18 * * *", "timezone": "Mars/Olympus"}, "timezone"},
		{"negative budget", map[string]any{"prompt": "p", "cron_pattern": "0 18 * * *", "credit_budget": -1}, "credit_budget"},
		{"no errors allowed", map[string]any{"prompt": "p", "cron_pattern": "0 18 * * *", "max_consecutive_errors": 0}, "max_consecutive_errors"},
		{"unknown chat mode", map[string]any{"prompt": "p", "cron_pattern": "0 18 * * *", "chat_mode": "shout"}, "chat_mode"},
		{"budget of the wrong type", map[string]any{"prompt": "p", "cron_pattern": "0 18 * * *", "credit_budget": []int{1}}, "credit_budget"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, _ := a.configure(t, tc.body)
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tc.field)
		})
	}

	before := time.Now()
	h := a.create(t, map[string]any{"prompt": "Summarise the day", "cron_pattern": "0 18 * * *", "timezone": "Europe/Paris",
		"credit_budget": "40", "member_id": "member-7"})
	paris, _ := time.LoadLocation("Europe/Paris")
	next := at(t, h["next_run_at"]).In(paris)
	if h["enabled"] != true || h["status"] != "active" || h["credit_budget"] != float64(40) || h["max_consecutive_errors"] != float64(5) ||
		h["chat_mode"] != "ask" || next.Hour() != 18 || next.Minute() != 0 || !next.After(before) || next.After(before.Add(24*time.Hour)) {
		t.Fatalf("heartbeat %v (next %s)", h, next)
	}
	id := h["uuid"].(string)
	// An update names only what changes; a new schedule moves the next firing.
	res, h = a.configure(t, map[string]any{"heartbeat_id": id, "cron_pattern": "30 7 * * 1"})
	expect(t, res, http.StatusOK, "")
	if next := at(t, h["next_run_at"]).In(paris); h["prompt"] != "Summarise the day" || next.Weekday() != time.Monday || next.Hour() != 7 || next.Minute() != 30 {
		t.Fatalf("updated %v", h)
	}
	if h = a.post(t, "disable", id)["heartbeat"].(map[string]any); h["enabled"] != false || h["next_run_at"] != nil {
		t.Fatalf("disabled %v", h)
	}
	if h = a.post(t, "enable", id)["heartbeat"].(map[string]any); h["enabled"] != true || h["next_run_at"] == nil {
		t.Fatalf("enabled %v", h)
	}
	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/heartbeat/readall?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	if list := res.JSON(t); list["total"] != float64(1) {
		t.Fatalf("list %v", list)
	}
	res = b.client.Do(apitest.Request{Method: http.MethodDelete, Path: "/v1/bot/heartbeat/delete?" + a.query("&heartbeat_id="+id), Key: b.key})
	expect(t, res, http.StatusOK, "")
	res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/heartbeat/read?" + a.query("&heartbeat_id="+id), Key: b.key})
	expect(t, res, http.StatusNotFound, "heartbeat_not_found")
	// Deleted, it is due no more.
	if n, err := a.beats.Plan(context.Background(), next.Add(365*24*time.Hour)); err != nil || n != 0 {
		t.Fatalf("a deleted heartbeat was planned: %d %v", n, err)
	}
}

// The scheduler fires a due heartbeat once, as an agent run in the heartbeat's chat; after a
// downtime the missed slots fire once; two schedulers looking at once make one firing; the
// firing's event reaches a workflow that calls a webhook.
func TestHeartbeatFirings(t *testing.T) {
	t.Parallel()
	b, a, fake := heartbeatSetup(t)
	hook := newReceiver(t)
	wf := workflowAPI{a.chatAPI}
	wf.create(t, map[string]any{"trigger_type": "event", "trigger_event": "heartbeat.completed",
		"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL + "/beat",
			"body": map[string]any{"summary": "{{data.answer}}", "firing": "{{data.firing_id}}"}}}}})
	fake.Set(providertest.Behavior{Reply: "Three deals moved today."})
	ctx := context.Background()

	h := a.create(t, map[string]any{"prompt": "Summarise the deals of the day", "cron_pattern": "0 18 * * *", "timezone": "Europe/Paris"})
	id := h["uuid"].(string)
	slot := at(t, h["next_run_at"])
	if n, err := a.beats.Plan(ctx, slot.Add(-time.Second)); err != nil || n != 0 {
		t.Fatalf("planned before its time: %d %v", n, err)
	}
	if n, err := a.beats.Plan(ctx, slot); err != nil || n != 1 {
		t.Fatalf("planned %d at its time: %v", n, err)
	}
	first := heartbeats.FiringID(id, heartbeats.TriggerSchedule, slot)
	f := a.firing(t, id, first, "succeeded")
	if f["trigger"] != "schedule" || !at(t, f["scheduled_at"]).Equal(slot) || f["execution_id"] != first || f["answer"] != "Three deals moved today." ||
		f["credits_used"] != float64(1) || f["chat_id"] == "" {
		t.Fatalf("firing %v", f)
	}
	// The run's chat is the heartbeat's, readable with the chat endpoints.
	hist := a.history(t, f["chat_id"].(string), "")
	msgs := hist["conversation"].([]any)
	if len(msgs) != 2 || msgs[0].(map[string]any)["content"] != "Summarise the deals of the day" || msgs[1].(map[string]any)["content"] != "Three deals moved today." {
		t.Fatalf("chat %v", hist)
	}
	h = a.settled(t, id)
	next := at(t, h["next_run_at"])
	if h["runs"] != float64(1) || h["successes"] != float64(1) || h["last_status"] != "succeeded" || h["chat_id"] != f["chat_id"] ||
		!next.Equal(slot.Add(24*time.Hour)) {
		t.Fatalf("after the firing %v", h)
	}
	// The event went to the workflow, whose webhook got the answer.
	deadline := time.Now().Add(30 * time.Second)
	for len(hook.got()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the workflow's webhook was not called")
		}
		waitABit()
	}
	var got map[string]any
	if err := json.Unmarshal(hook.got()[0].body, &got); err != nil || got["summary"] != "Three deals moved today." || got["firing"] != first {
		t.Fatalf("webhook body %s", hook.got()[0].body)
	}

	// Three days without a scheduler: the missed firing runs once, then the schedule goes on
	// from the clock, in the same chat. Two schedulers (two processes) look at once.
	late := next.Add(72*time.Hour + 5*time.Minute)
	other := app.New(b.app.Cfg, b.log, b.app.Conns)
	t.Cleanup(other.Close)
	od, err := other.Domain()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, s := range []*heartbeats.Service{a.beats, od.Heartbeats} {
		wg.Go(func() {
			if _, err := s.Plan(ctx, late); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	second := heartbeats.FiringID(id, heartbeats.TriggerSchedule, next)
	a.firing(t, id, second, "succeeded")
	h = a.settled(t, id)
	if logs := a.logs(t, id); len(logs) != 2 || logs[0]["firing_id"] != second || logs[0]["chat_id"] != f["chat_id"] {
		t.Fatalf("logs %v", logs)
	}
	if h["runs"] != float64(2) || !at(t, h["next_run_at"]).Equal(next.Add(4*24*time.Hour)) {
		t.Fatalf("after the downtime %v", h)
	}
	if n, err := a.beats.Plan(ctx, late); err != nil || n != 0 {
		t.Fatalf("planned again: %d %v", n, err)
	}
	if hist := a.history(t, f["chat_id"].(string), ""); len(hist["conversation"].([]any)) != 4 {
		t.Fatalf("chat after two firings %v", hist)
	}

	res := b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/heartbeat/stats?" + a.query(""), Key: b.key})
	expect(t, res, http.StatusOK, "")
	st := res.JSON(t)["stats"].(map[string]any)
	if st["heartbeats"] != float64(1) || st["runs"] != float64(2) || st["successes"] != float64(2) || st["credits_used"] != float64(2) ||
		st["success_rate"] != float64(1) || st["last_status"] != "succeeded" {
		t.Fatalf("stats %v", st)
	}
}

// A firing that would exceed the budget is not started and pauses the heartbeat; failures in a
// row disable it; a run that needs an approval waits, and the firings meanwhile are skipped.
func TestHeartbeatBudgetErrorsAndApprovals(t *testing.T) {
	t.Parallel()
	b, a, fake := heartbeatSetup(t)
	hook := newReceiver(t)
	wf := workflowAPI{a.chatAPI}
	for _, ev := range []string{"heartbeat.paused", "heartbeat.disabled"} {
		wf.create(t, map[string]any{"trigger_type": "event", "trigger_event": ev,
			"actions": []map[string]any{{"type": "webhook", "params": map[string]any{"url": hook.URL + "/" + ev, "body": map[string]any{"reason": "{{data.reason}}"}}}}})
	}

	t.Run("budget", func(t *testing.T) {
		fake.Set(providertest.Behavior{Reply: "Done."})
		h := a.create(t, map[string]any{"prompt": "Check in", "cron_pattern": "0 9 * * *", "credit_budget": 1})
		id := h["uuid"].(string)
		first := a.post(t, "trigger", id)["firing_id"].(string)
		a.firing(t, id, first, "succeeded")
		a.settled(t, id)
		second := a.post(t, "trigger", id)["firing_id"].(string)
		f := a.firing(t, id, second, "skipped")
		if !strings.Contains(f["reason"].(string), "credit budget of 1") {
			t.Fatalf("skipped firing %v", f)
		}
		h = a.until(t, id, "paused", func(h map[string]any) bool { return h["status"] != "active" })
		if h["enabled"] != false || h["status"] != "paused" || h["status_reason"] != f["reason"] || h["credits_used_in_period"] != float64(1) ||
			h["skipped"] != float64(1) || h["runs"] != float64(1) {
			t.Fatalf("paused heartbeat %v", h)
		}
	})

	t.Run("errors", func(t *testing.T) {
		fake.Set(providertest.Behavior{Status: http.StatusBadRequest, ErrorMessage: "model overloaded with nonsense"})
		h := a.create(t, map[string]any{"prompt": "Check in", "cron_pattern": "0 9 * * *", "max_consecutive_errors": 2})
		id := h["uuid"].(string)
		for i := range 2 {
			f := a.firing(t, id, a.post(t, "trigger", id)["firing_id"].(string), "failed")
			if e, _ := f["error"].(map[string]any); e == nil || e["code"] == "" {
				t.Fatalf("failed firing %d %v", i, f)
			}
			h = a.settled(t, id)
		}
		if h["enabled"] != false || h["status"] != "disabled" || h["consecutive_errors"] != float64(2) || h["errors"] != float64(2) ||
			!strings.Contains(h["status_reason"].(string), "2 failed firings in a row") {
			t.Fatalf("disabled heartbeat %v", h)
		}
		// Enabled again, it starts over.
		if h = a.post(t, "enable", id)["heartbeat"].(map[string]any); h["status"] != "active" || h["consecutive_errors"] != float64(0) {
			t.Fatalf("enabled again %v", h)
		}
	})

	t.Run("approval", func(t *testing.T) {
		fake.Set(providertest.Behavior{Script: []providertest.Turn{call("create_deal", `{"title":"Heartbeat deal","value":10}`), {Reply: "Created the deal."}}})
		h := a.create(t, map[string]any{"prompt": "Open a deal for today's lead", "cron_pattern": "0 9 * * *"})
		id := h["uuid"].(string)
		first := a.post(t, "trigger", id)["firing_id"].(string)
		f := a.firing(t, id, first, "awaiting_approval")
		if !strings.Contains(f["reason"].(string), "create_deal") {
			t.Fatalf("waiting firing %v", f)
		}
		second := a.post(t, "trigger", id)["firing_id"].(string)
		if f := a.firing(t, id, second, "skipped"); !strings.Contains(f["reason"].(string), first) {
			t.Fatalf("firing while another waits %v", f)
		}
		res, chat := a.executeTool(t, map[string]any{"executionId": first, "approve": true})
		if chat == nil {
			t.Fatalf("approval: %d %s", res.Status, res.Body)
		}
		f = a.firing(t, id, first, "succeeded")
		if f["answer"] != "Created the deal." || f["credits_used"] != float64(2) {
			t.Fatalf("approved firing %v", f)
		}
		if h = a.settled(t, id); h["runs"] != float64(1) || h["skipped"] != float64(1) {
			t.Fatalf("after the approval %v", h)
		}
		res = b.client.Do(apitest.Request{Method: http.MethodGet, Path: "/v1/bot/crm/deals?" + a.query(""), Key: b.key})
		expect(t, res, http.StatusOK, "")
		if !strings.Contains(string(res.Body), "Heartbeat deal") {
			t.Fatalf("the approved tool did not run: %s", res.Body)
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for len(hook.got()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("webhooks of pause and disable: %d", len(hook.got()))
		}
		waitABit()
	}
}

// The credit budget is a calendar month in the heartbeat's time zone: in Tokyo, a firing at 08:00
// on the 1st of January (still the 31st of December in UTC) starts a new month, and the next one
// in that month is refused. The scheduler's clock (Plan's now) crosses the boundary. trigger fires
// a disabled heartbeat, which stays disabled.
func TestHeartbeatBudgetMonthAndTrigger(t *testing.T) {
	t.Parallel()
	_, a, fake := heartbeatSetup(t)
	fake.Set(providertest.Behavior{Reply: "Done."})
	ctx := context.Background()

	t.Run("month", func(t *testing.T) {
		tokyo, err := time.LoadLocation("Asia/Tokyo")
		if err != nil {
			t.Fatal(err)
		}
		h := a.create(t, map[string]any{"prompt": "Check in", "cron_pattern": "0 8 * * *", "timezone": "Asia/Tokyo", "credit_budget": 1})
		id := h["uuid"].(string)
		first := at(t, h["next_run_at"])
		year := first.In(tokyo).Year() + 1
		lastOfDecember, newYear, second := time.Date(year, time.December, 31, 8, 0, 0, 0, tokyo),
			time.Date(year+1, time.January, 1, 8, 0, 0, 0, tokyo), time.Date(year+1, time.January, 2, 8, 0, 0, 0, tokyo)
		if newYear.UTC().Month() != time.December {
			t.Fatalf("%s is not in December in UTC", newYear.UTC())
		}
		// fire plans the heartbeat at planned, waits for the firing of slot to be want, and
		// returns the heartbeat once it counted runs firings.
		fire := func(planned, slot time.Time, want string, runs int) map[string]any {
			t.Helper()
			if n, err := a.beats.Plan(ctx, planned); err != nil || n != 1 {
				t.Fatalf("planned %d at %s: %v", n, planned, err)
			}
			a.firing(t, id, heartbeats.FiringID(id, heartbeats.TriggerSchedule, slot), want)
			return a.until(t, id, fmt.Sprintf("counting %d firings", runs), func(h map[string]any) bool {
				return h["runs"] == float64(runs) && h["running_firing_id"] == "" && (want != "skipped" || h["status"] == "paused")
			})
		}
		// The first slot, fired late, is counted in its own month; the next one is the 31st.
		fire(lastOfDecember.Add(-time.Second), first, "succeeded", 1)
		h = fire(lastOfDecember, lastOfDecember, "succeeded", 2)
		if h["credit_period"] != fmt.Sprintf("%d-12", year) || h["credits_used_in_period"] != float64(1) {
			t.Fatalf("after the 31st of December %v", h)
		}
		h = fire(newYear, newYear, "succeeded", 3)
		if h["enabled"] != true || h["credit_period"] != fmt.Sprintf("%d-01", year+1) || h["credits_used_in_period"] != float64(1) {
			t.Fatalf("after the 1st of January %v", h)
		}
		h = fire(second, second, "skipped", 3)
		if h["enabled"] != false || !strings.Contains(h["status_reason"].(string), fmt.Sprintf("credit budget of 1 for %d-01", year+1)) {
			t.Fatalf("after the 2nd of January %v", h)
		}
	})

	t.Run("trigger", func(t *testing.T) {
		h := a.create(t, map[string]any{"prompt": "Check in", "cron_pattern": "0 9 * * *"})
		id := h["uuid"].(string)
		if h = a.post(t, "disable", id)["heartbeat"].(map[string]any); h["enabled"] != false {
			t.Fatalf("disabled %v", h)
		}
		f := a.firing(t, id, a.post(t, "trigger", id)["firing_id"].(string), "succeeded")
		if f["trigger"] != "manual" || f["answer"] != "Done." {
			t.Fatalf("the firing of a disabled heartbeat %v", f)
		}
		if h = a.until(t, id, "counted", func(h map[string]any) bool { return h["runs"] == float64(1) }); h["enabled"] != false ||
			h["next_run_at"] != nil || h["running_firing_id"] != "" {
			t.Fatalf("after the firing %v", h)
		}
	})
}

// What a worker that died leaves is settled by the scheduler's reconciler: an ended firing its
// heartbeat did not count, and a firing whose run ended while the firing still says running. Each
// is counted once, however often the reconciler looks.
func TestHeartbeatReconcilerSettlesWhatAWorkerLeft(t *testing.T) {
	t.Parallel()
	b, a, fake := heartbeatSetup(t)
	fake.Set(providertest.Behavior{Reply: "All quiet."})
	ctx := context.Background()
	h := a.create(t, map[string]any{"prompt": "Anything new?", "cron_pattern": "0 9 * * *"})
	id := h["uuid"].(string)
	first := a.post(t, "trigger", id)["firing_id"].(string)
	a.firing(t, id, first, "succeeded")
	h = a.settled(t, id)
	if h["runs"] != float64(1) {
		t.Fatalf("after the firing %v", h)
	}
	beats, firings := b.db.Collection("heartbeats"), b.db.Collection("heartbeat_firings")
	leave := func(firingStatus string) {
		t.Helper()
		if _, err := beats.UpdateOne(ctx, bson.D{{Key: "_id", Value: id}},
			bson.D{{Key: "$set", Value: bson.D{{Key: "running", Value: first}}}, {Key: "$inc", Value: bson.D{{Key: "rev", Value: 1}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := firings.UpdateOne(ctx, bson.D{{Key: "_id", Value: first}}, bson.D{{Key: "$set", Value: bson.D{
			{Key: "status", Value: firingStatus}, {Key: "updated_at", Value: time.Now().Add(-2 * time.Minute)}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, left string
		runs       float64
	}{
		// The worker ended the firing and died before counting it.
		{"ended, not counted", "succeeded", 2},
		// The worker ended the run and died before settling its firing.
		{"run ended, firing running", "running", 3},
	} {
		leave(tc.left)
		for range 2 {
			if _, err := a.beats.Reconcile(ctx, time.Now()); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		h = a.read(t, id)
		if h["running_firing_id"] != "" || h["runs"] != tc.runs || h["successes"] != tc.runs {
			t.Fatalf("%s: heartbeat %v", tc.name, h)
		}
		if f := a.firing(t, id, first, "succeeded"); f["answer"] != "All quiet." {
			t.Fatalf("%s: firing %v", tc.name, f)
		}
	}
}
