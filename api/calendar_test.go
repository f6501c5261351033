package api_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/agentplane/agentplane/api/apitest"
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
