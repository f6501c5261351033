package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
	"github.com/agentplane/agentplane/shared/adapters/provider/providertest"
	"github.com/agentplane/agentplane/shared/outbox"
)

func TestCalendarSettings(t *testing.T) {
	t.Parallel()
	b := setup(t)
	botID := b.createBot(t, nil)["id"].(string)
	q := "?project_id=" + b.project.ID + "&bot_id=" + botID

	res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/settings" + q, Key: b.key})
	expect(t, res, http.StatusOK, "")
	if s := res.JSON(t)["settings"].(map[string]any); s["timezone"] != "UTC" || s["is_enabled"] != false {
		t.Fatalf("defaults %v", s)
	}
	res = b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/calendar/settings" + q, Key: b.key,
		Body: map[string]any{"timezone": "America/New_York", "work_start": "08:30", "working_days": []int{5, 1}, "is_enabled": true, "meeting_title": nil}})
	expect(t, res, http.StatusOK, "")
	if string(res.Body) != "{}" {
		t.Fatalf("body %s, want {}", res.Body)
	}
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/settings" + q, Key: b.key})
	s := res.JSON(t)["settings"].(map[string]any)
	if s["timezone"] != "America/New_York" || s["work_start"] != "08:30" || s["work_end"] != "17:00" || s["meeting_title"] != "Meeting" || len(s["working_days"].([]any)) != 2 {
		t.Fatalf("merged %v", s)
	}

	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"Timezone", map[string]any{"timezone": "Mars/Olympus"}, "timezone"},
		{"WorkEndBeforeStart", map[string]any{"work_end": "08:00"}, "work_end"},
		{"WorkingDay", map[string]any{"working_days": []int{8}}, "working_days[0]"},
		{"SlotTooShort", map[string]any{"slot_duration_minutes": 1}, "slot_duration_minutes"},
		{"WrongType", map[string]any{"buffer_minutes": "ten"}, "buffer_minutes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/calendar/settings" + q, Key: b.key, Body: tt.body})
			expect(t, res, http.StatusUnprocessableEntity, "invalid_field")
			expectField(t, res, tt.field)
		})
	}

	// The next Monday, a week ahead: inside the booking window and past the minimum notice.
	day := time.Now().UTC().AddDate(0, 0, 7)
	for day.Weekday() != time.Monday {
		day = day.AddDate(0, 0, 1)
	}
	date := day.Format(time.DateOnly)
	res = b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/slots" + q + "&from=" + date + "&to=" + day.AddDate(0, 0, 1).Format(time.DateOnly), Key: b.key})
	expect(t, res, http.StatusOK, "")
	var out struct {
		Timezone string
		Slots    []struct{ Start, End time.Time }
	}
	res.Decode(t, &out)
	if out.Timezone != "America/New_York" || len(out.Slots) != 17 {
		t.Fatalf("slots %s", res.Body)
	}
	if first := out.Slots[0].Start.In(mustZone(t, "America/New_York")).Format("15:04"); first != "08:30" {
		t.Fatalf("first slot at %s, want 08:30 New York time", first)
	}
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/slots" + q + "&from=yesterday", Key: b.key}), http.StatusUnprocessableEntity, "invalid_field")
	expect(t, b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/slots" + q + "&from=2026-01-01&to=2026-06-01", Key: b.key}), http.StatusUnprocessableEntity, "invalid_field")

	if types := eventTypes(streamEvents(t, "", b.project.ID, 2)); types[1] != "calendar.updated" {
		t.Fatalf("events %v", types)
	}
}

func mustZone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// An agent run books a free slot with its calendar tools: the slot leaves the free ones, a
// booking.created event carries the booking, and another booking of the same slot is refused
// (the model is told it is taken) without a second event.
func TestAgentBooksASlot(t *testing.T) {
	t.Parallel()
	b, a, fake := agentSetup(t, map[string]any{"auto_approve_tools": 1})
	res := b.client.Do(apitest.Request{Method: "PUT", Path: "/v1/bot/calendar/settings?" + a.query(""), Key: b.key,
		Body: map[string]any{"timezone": "UTC", "is_enabled": true, "meeting_title": "Intro call"}})
	expect(t, res, http.StatusOK, "")
	// The next Monday, a week ahead: inside the booking window and past the minimum notice.
	day := time.Now().UTC().AddDate(0, 0, 7)
	for day.Weekday() != time.Monday {
		day = day.AddDate(0, 0, 1)
	}
	from, to := day.Format(time.DateOnly), day.AddDate(0, 0, 1).Format(time.DateOnly)
	freeSlots := func() []string {
		res := b.client.Do(apitest.Request{Method: "GET", Path: "/v1/bot/calendar/slots?" + a.query("&from="+from+"&to="+to), Key: b.key})
		expect(t, res, http.StatusOK, "")
		var out struct{ Slots []struct{ Start time.Time } }
		res.Decode(t, &out)
		var starts []string
		for _, s := range out.Slots {
			starts = append(starts, s.Start.UTC().Format(time.RFC3339))
		}
		return starts
	}
	slot := freeSlots()[0]
	book := func(name, email string) string {
		return fmt.Sprintf(`{"start":%q,"name":%q,"email":%q}`, slot, name, email)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("calendar_check_availability", fmt.Sprintf(`{"from":"%sT00:00:00Z","to":"%sT00:00:00Z"}`, from, to)),
		call("calendar_book", book("Ada Lovelace", "ada@example.com")),
		{Reply: "You are booked."},
	}})
	_, chat := a.chat(t, map[string]any{"message": "Book me the first free slot on Monday", "reasoning_mode": "agent"})
	cs := cycles(t, chat)
	if len(cs) != 2 || chat["reply"] != "You are booked." {
		t.Fatalf("reply %v", chat)
	}
	if cs[0]["action"] != "calendar_check_availability" || cs[0]["actionSuccess"] != true || !strings.Contains(cs[0]["observation"].(string), slot) {
		t.Fatalf("the availability check does not offer %s: %v", slot, cs[0])
	}
	if cs[1]["action"] != "calendar_book" || cs[1]["actionSuccess"] != true || !strings.Contains(cs[1]["observation"].(string), `"booked"`) {
		t.Fatalf("booking %v", cs[1])
	}
	if slices.Contains(freeSlots(), slot) {
		t.Fatalf("the booked slot %s is still free", slot)
	}

	fake.Set(providertest.Behavior{Script: []providertest.Turn{
		call("calendar_book", book("Grace Hopper", "grace@example.com")),
		{Reply: "That slot is taken, sorry."},
	}})
	_, again := a.chat(t, map[string]any{"message": "Book Grace into that same slot", "reasoning_mode": "agent"})
	cs = cycles(t, again)
	if len(cs) != 1 || cs[0]["action"] != "calendar_book" || cs[0]["actionSuccess"] != false || !strings.Contains(cs[0]["observation"].(string), "already booked") {
		t.Fatalf("a second booking of the slot was not refused: %v", cs)
	}

	// Every event of the second run comes before its answer: read the stream up to it.
	evs := eventsUntil(t, b.project.ID, func(ev outbox.Event) bool {
		return ev.Type == outbox.ChatMessageCreated && strings.Contains(string(ev.Data), "That slot is taken, sorry.")
	})
	var booked []map[string]any
	for _, ev := range evs {
		if ev.Type == outbox.BookingCreated {
			var data map[string]any
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			booked = append(booked, data)
		}
	}
	if len(booked) != 1 {
		t.Fatalf("%d booking.created events, want 1: %v", len(booked), eventTypes(evs))
	}
	if bk := booked[0]; bk["start"] != slot || bk["name"] != "Ada Lovelace" || bk["email"] != "ada@example.com" || bk["title"] != "Intro call" || bk["uuid"] == "" {
		t.Fatalf("booking.created data %v", bk)
	}
}
