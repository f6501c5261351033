package api_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/crm"
	"github.com/agentplane/agentplane/shared/devenv/devstack"
	"github.com/agentplane/agentplane/shared/outbox"
)

type dealBody struct {
	UUID, Title, Currency string
	Value                 int64
	Contact               struct{ UUID, Name, Email, Company string }
	Stage                 struct {
		UUID, Name             string
		Probability, SortOrder int
	}
}

func (b *bundle) deal(t testing.TB, method, path string, body map[string]any) dealBody {
	t.Helper()
	res := b.client.Do(apitest.Request{Method: method, Path: path, Key: b.key, Body: body})
	expect(t, res, http.StatusOK, "")
	var out struct{ Deal dealBody }
	res.Decode(t, &out)
	return out.Deal
}

func TestDeals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	botID := b.createBot(t, nil)["id"].(string)
	scope := func(m map[string]any) map[string]any {
		m["project_id"], m["bot_id"] = b.project.ID, botID
		return m
	}
	q := "?project_id=" + b.project.ID + "&bot_id=" + botID

	first := b.deal(t, "POST", "/v1/bot/crm/deals", scope(map[string]any{"title": "Pilot", "value": 1200,
		"contact": map[string]any{"name": "Ada", "email": "Ada@Example.com", "company": "Engines"}}))
	if first.Stage.Name != "Lead" || first.Currency != "USD" || first.Value != 1200 || first.Contact.Email != "ada@example.com" || first.Contact.Name != "Ada" {
		t.Fatalf("created %+v", first)
	}
	second := b.deal(t, "POST", "/v1/bot/crm/deals", scope(map[string]any{"title": "Renewal", "status": "won", "currency": "eur",
		"contact": map[string]any{"email": "ada@example.com"}}))
	if second.Contact.UUID != first.Contact.UUID || second.Stage.Name != "Won" || second.Currency != "EUR" || second.Contact.Name != "Ada" {
		t.Fatalf("second deal %+v: want the same contact, stage Won", second)
	}
	third := b.deal(t, "POST", "/v1/bot/crm/deals", scope(map[string]any{"title": "Upsell", "stage": "proposal", "status": ""}))
	if third.Stage.Name != "Proposal" || third.Contact.UUID != "" {
		t.Fatalf("third deal %+v", third)
	}

	t.Run("Invalid", func(t *testing.T) {
		for _, tt := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"TitleRequired", map[string]any{}, "title"},
			{"UnknownStatus", map[string]any{"title": "x", "status": "pending"}, "status"},
			{"StatusContradictsStage", map[string]any{"title": "x", "status": "open", "stage": "Won"}, "status"},
			{"UnknownStage", map[string]any{"title": "x", "stage": "Dreaming"}, "stage"},
			{"Currency", map[string]any{"title": "x", "currency": "ABC"}, "currency"},
			{"NegativeValue", map[string]any{"title": "x", "value": -1}, "value"},
			{"ContactEmail", map[string]any{"title": "x", "contact": map[string]any{"email": "not an address"}}, "contact.email"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/crm/deals", Key: b.key, Body: scope(tt.body)})
				expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
				expectField(t, res, tt.field)
			})
		}
	})

	path := "/v1/bot/crm/deals/" + first.UUID
	moved := b.deal(t, "PUT", path, scope(map[string]any{"stage": "Qualified"}))
	renamed := b.deal(t, "PUT", path, scope(map[string]any{"title": "Pilot 2", "value": "1500"}))
	won := b.deal(t, "PUT", path, scope(map[string]any{"status": "won"}))
	reopened := b.deal(t, "PUT", path, scope(map[string]any{"status": "open"}))
	if moved.Stage.Name != "Qualified" || renamed.Title != "Pilot 2" || renamed.Value != 1500 || won.Stage.Name != "Won" || reopened.Stage.Name != "Lead" {
		t.Fatalf("updates: %s %s/%d %s %s", moved.Stage.Name, renamed.Title, renamed.Value, won.Stage.Name, reopened.Stage.Name)
	}
	lost := b.deal(t, "PUT", path, scope(map[string]any{"stage": "Lost"}))
	if lost.Stage.Name != "Lost" {
		t.Fatalf("lost %+v", lost)
	}

	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals" + q + "&status=won", Key: b.key})
	expect(t, res, http.StatusOK, "")
	if m := res.JSON(t); m["total"] != float64(1) || m["deals"].([]any)[0].(map[string]any)["uuid"] != second.UUID {
		t.Fatalf("won deals %s", res.Body)
	}
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals" + q + "&stage=nowhere", Key: b.key}), http.StatusUnprocessableEntity, "invalid_field")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: path + q, Key: b.key}), http.StatusOK, "")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/stages" + q, Key: b.key}), http.StatusOK, "")
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts" + q, Key: b.key})
	expect(t, res, http.StatusOK, "")
	if res.JSON(t)["total"] != float64(1) {
		t.Fatalf("contacts %s", res.Body)
	}
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/contacts/" + first.Contact.UUID + q, Key: b.key}), http.StatusOK, "")

	otherBot := b.createBot(t, nil)["id"].(string)
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: path + "?project_id=" + b.project.ID + "&bot_id=" + otherBot, Key: b.key}), http.StatusNotFound, "deal_not_found")

	expect(t, b.client.Do(apitest.Request{Method: "DELETE", Path: path + q, Key: b.key}), http.StatusOK, "")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: path + q, Key: b.key}), http.StatusNotFound, "deal_not_found")

	var dealEvents []outbox.Event
	for _, ev := range streamEvents(t, "", b.project.ID, 11) {
		if ev.Type[:4] == "deal" {
			dealEvents = append(dealEvents, ev)
		}
	}
	want := []string{"deal.created", "deal.created", "deal.created", "deal.stage_changed", "deal.updated", "deal.won", "deal.stage_changed", "deal.lost", "deal.deleted"}
	if types := eventTypes(dealEvents); !slices.Equal(types, want) {
		t.Fatalf("deal events %v, want %v", types, want)
	}
}

// With NATS down a change still answers 200; its event is delivered once NATS is back.
func TestEventsSurviveANATSOutage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ns, err := devstack.StartNATS(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	url := ns.URL
	port := ns.Port()
	b := setup(t, withNATS(connect(t, url)))
	botID := b.createBot(t, nil)["id"].(string)
	scope := map[string]any{"project_id": b.project.ID, "bot_id": botID}
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", map[string]any{"project_id": b.project.ID, "bot_id": botID, "title": "Before"})

	ns.Close()
	scope["status"] = "won"
	b.deal(t, "PUT", "/v1/bot/crm/deals/"+deal.UUID, scope)

	ns, err = devstack.StartNATS(dir, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	relayUntil(t, b, 1)
	relayUntil(t, b, 0)
	if types := eventTypes(streamEvents(t, url, b.project.ID, 3)); !slices.Equal(types, []string{"bot.created", "deal.created", "deal.won"}) {
		t.Fatalf("events after the outage %v", types)
	}
}

// relayUntil runs the outbox relay until it delivers want events in one pass (the connection
// may need a moment to come back).
func relayUntil(t *testing.T, b *bundle, want int) {
	t.Helper()
	var (
		n   int
		err error
	)
	for range 100 {
		if n, _, _, err = b.outbox.RelayOnce(context.Background(), false); err == nil && n == want {
			return
		}
		waitABit()
	}
	t.Fatalf("the relay delivered %d events (error %v), want %d", n, err, want)
}

// Updates of one deal, agent or workflow sent at once all land, one after the other, each with
// its event: an update names the fields it changes, so one that lost the race to another is
// applied again to what the other left, not refused and not written over it. Each round sends
// one update per field at once, every one changing a different field, and then every field
// holds its round's value: a store that wrote whole documents, last writer wins, would lose some.
func TestConcurrentUpdates(t *testing.T) {
	t.Parallel()
	b := setup(t)
	botID := b.createBot(t, nil)["id"].(string)
	body := func(m map[string]any) map[string]any {
		m["project_id"], m["bot_id"] = b.project.ID, botID
		return m
	}
	scope := "project_id=" + b.project.ID + "&bot_id=" + botID
	deal := b.deal(t, "POST", "/v1/bot/crm/deals", body(map[string]any{"title": "Race", "value": 1}))
	res := b.client.Do(apitest.Request{Method: "POST", Path: "/v1/bot/workflow/create", Key: b.key, Body: body(map[string]any{"name": "W",
		"trigger_type": "manual", "actions": []map[string]any{{"type": "send_message", "params": map[string]any{"message": "x"}}}})})
	expect(t, res, http.StatusOK, "")
	workflowID := res.JSON(t)["workflow"].(map[string]any)["uuid"].(string)
	type field struct {
		name  string
		value func(round int) any
	}
	text := func(prefix string) func(int) any { return func(r int) any { return prefix + " " + strconv.Itoa(r) } }
	const rounds = 6
	// Each change of a workflow makes a version of its agent, with its bot.updated: its creation's
	// first.
	updates, versions := 0, 1
	for _, tt := range []struct {
		event, method, path, read, object string
		extra                             map[string]any
		fields                            []field
	}{
		{"deal.updated", "PUT", "/v1/bot/crm/deals/" + deal.UUID, "/v1/bot/crm/deals/" + deal.UUID + "?" + scope, "deal", nil, []field{
			{"title", text("Race")}, {"value", func(r int) any { return 100 + r }},
			{"currency", func(r int) any { return []string{"EUR", "GBP"}[r%2] }}}},
		{"bot.updated", "PUT", "/v1/bot/update", "/v1/bot/read?" + scope, "bot", nil, []field{
			{"name", text("Bot")}, {"instruction", text("Answer briefly, take")}, {"ratelimit_message", text("Slow down")},
			{"no_answer_reply", text("No idea")}, {"top", func(r int) any { return 1 + r }}}},
		{"workflow.updated", "PUT", "/v1/bot/workflow/update", "/v1/bot/workflow/read?" + scope + "&workflow_id=" + workflowID, "workflow",
			map[string]any{"workflow_id": workflowID}, []field{{"name", text("W")}, {"description", text("take")}}},
	} {
		for r := range rounds {
			var wg sync.WaitGroup
			statuses := make([]int, len(tt.fields))
			for i, f := range tt.fields {
				update := map[string]any{f.name: f.value(r)}
				for k, v := range tt.extra {
					update[k] = v
				}
				wg.Go(func() {
					// Try, not Do: FailNow must not be called from this goroutine.
					res, err := b.client.Try(apitest.Request{Method: tt.method, Path: tt.path, Key: b.key, Body: body(update)})
					if err != nil {
						t.Errorf("%s, round %d: %v", tt.path, r, err)
						return
					}
					statuses[i] = res.Status
				})
			}
			wg.Wait()
			updates += len(tt.fields)
			if tt.event == "workflow.updated" {
				versions += len(tt.fields)
			}
			for i, st := range statuses {
				if st != http.StatusOK {
					t.Errorf("%s, round %d, %s: %d", tt.path, r, tt.fields[i].name, st)
				}
			}
			res := b.client.Do(apitest.Request{Method: "GET", Path: tt.read, Key: b.key})
			expect(t, res, http.StatusOK, "")
			got := res.JSON(t)[tt.object].(map[string]any)
			for _, f := range tt.fields {
				if fmt.Sprint(got[f.name]) != fmt.Sprint(f.value(r)) {
					t.Errorf("%s, round %d: %s is %v, want %v: an update was lost", tt.object, r, f.name, got[f.name], f.value(r))
				}
			}
		}
	}
	// bot.created, deal.created, workflow.created, then the updates and the versions.
	want := 3 + updates + versions
	types := eventTypes(streamEvents(t, "", b.project.ID, want))
	for _, typ := range []string{"deal.updated", "bot.updated", "workflow.updated"} {
		if got := slices.DeleteFunc(slices.Clone(types), func(x string) bool { return x != typ }); len(got) == 0 {
			t.Errorf("no %s events: %v", typ, types)
		}
	}
	if len(types) != want {
		t.Errorf("%d events, want %d: %v", len(types), want, types)
	}
}

// A tool's change repeated under its idempotency key (an agent run's cycle redone after a crash
// between the change and the cycle's record) makes no second deal and applies no second update.
func TestDealChangesOncePerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	botID := b.createBot(t, nil)["id"].(string)
	ctx := context.Background()
	title, won := "Once", "won"
	first, err := b.deals.CreateDealOnce(ctx, b.project.ID, botID, crm.DealInput{Title: &title}, "exec-1:1")
	if err != nil {
		t.Fatal(err)
	}
	again, err := b.deals.CreateDealOnce(ctx, b.project.ID, botID, crm.DealInput{Title: &title}, "exec-1:1")
	if err != nil || again.UUID != first.UUID {
		t.Fatalf("again: %v %v, want deal %s", again.UUID, err, first.UUID)
	}
	for range 2 {
		if _, err := b.deals.UpdateDealOnce(ctx, b.project.ID, botID, first.UUID, crm.DealInput{Status: &won}, "exec-1:2"); err != nil {
			t.Fatal(err)
		}
	}
	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/crm/deals?project_id=" + b.project.ID + "&bot_id=" + botID, Key: b.key})
	if deals := res.JSON(t)["deals"].([]any); len(deals) != 1 {
		t.Fatalf("deals %v", deals)
	}
	types := eventTypes(streamEvents(t, "", b.project.ID, 3)) // bot.created, deal.created, deal.won
	if slices.Index(types, "deal.created") < 0 || slices.Index(types, "deal.won") < 0 || len(types) != 3 {
		t.Fatalf("events %v, want one creation and one update", types)
	}
}
