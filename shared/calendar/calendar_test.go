package calendar_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentplane/agentplane/shared/calendar"
	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
)

func TestDefaultsAreValid(t *testing.T) {
	if err := calendar.Defaults().Validate(); err != nil {
		t.Fatalf("Defaults().Validate() = %v, want nil", err)
	}
}

func TestApplyMergesOnlyGivenFields(t *testing.T) {
	stored := mustApply(t, calendar.Defaults(), calendar.Patch{
		Timezone:  new("Europe/Berlin"),
		IsEnabled: new(true),
	})
	got := mustApply(t, stored, calendar.Patch{
		SlotDurationMinutes: new(flex.Int(45)),
		MeetingTitle:        new("Intro call"),
		IsEnabled:           new(false),
	})
	want := stored
	want.SlotDurationMinutes = 45
	want.MeetingTitle = "Intro call"
	want.IsEnabled = false
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %+v, want %+v", got, want)
	}
}

func TestApplyOfEmptyPatchIsNoOp(t *testing.T) {
	got := mustApply(t, calendar.Defaults(), calendar.Patch{})
	if !reflect.DeepEqual(got, calendar.Defaults()) {
		t.Errorf("Apply(Patch{}) = %+v, want %+v", got, calendar.Defaults())
	}
}

func TestApplyLeavesAbsentAndNullJSONFieldsUnchanged(t *testing.T) {
	var p calendar.Patch
	if err := json.Unmarshal([]byte(`{"work_end": "18:00", "timezone": null}`), &p); err != nil {
		t.Fatal(err)
	}
	got := mustApply(t, calendar.Defaults(), p)
	want := calendar.Defaults()
	want.WorkEnd = "18:00"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %+v, want %+v", got, want)
	}
}

func TestApplySortsWorkingDays(t *testing.T) {
	got := mustApply(t, calendar.Defaults(), calendar.Patch{WorkingDays: new([]int{7, 1, 3})})
	if want := []int{1, 3, 7}; !slices.Equal(got.WorkingDays, want) {
		t.Errorf("WorkingDays = %v, want %v", got.WorkingDays, want)
	}
}

func TestApplyAcceptsBoundaryValues(t *testing.T) {
	tests := []struct {
		name  string
		patch calendar.Patch
	}{
		{"working hours spanning the whole day", calendar.Patch{WorkStart: new("00:00"), WorkEnd: new("23:59")}},
		{"a single working day", calendar.Patch{WorkingDays: new([]int{7})}},
		{"every working day", calendar.Patch{WorkingDays: new([]int{1, 2, 3, 4, 5, 6, 7})}},
		{"slot_duration_minutes 5", calendar.Patch{SlotDurationMinutes: new(flex.Int(5))}},
		{"slot_duration_minutes 480", calendar.Patch{SlotDurationMinutes: new(flex.Int(480))}},
		{"buffer_minutes 0", calendar.Patch{BufferMinutes: new(flex.Int(0))}},
		{"buffer_minutes 240", calendar.Patch{BufferMinutes: new(flex.Int(240))}},
		{"min_notice_minutes 0", calendar.Patch{MinNoticeMinutes: new(flex.Int(0))}},
		{"min_notice_minutes 43200", calendar.Patch{MinNoticeMinutes: new(flex.Int(43200))}},
		{"booking_window_days 1", calendar.Patch{BookingWindowDays: new(flex.Int(1))}},
		{"booking_window_days 365", calendar.Patch{BookingWindowDays: new(flex.Int(365))}},
		{"meeting_title of 200 two-byte characters", calendar.Patch{MeetingTitle: new(strings.Repeat("é", 200))}},
		{"meeting_location of 500 characters", calendar.Patch{MeetingLocation: new(strings.Repeat("x", 500))}},
		{"booking_instructions of 2000 characters", calendar.Patch{BookingInstructions: new(strings.Repeat("x", 2000))}},
		{"empty texts", calendar.Patch{MeetingTitle: new(""), MeetingLocation: new(""), BookingInstructions: new("")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mustApply(t, calendar.Defaults(), tt.patch)
		})
	}
}

func TestApplyRejectsInvalidSettings(t *testing.T) {
	tests := []struct {
		name  string
		patch calendar.Patch
		field string
	}{
		{"unknown timezone", calendar.Patch{Timezone: new("Mars/Olympus")}, "timezone"},
		{"timezone Local", calendar.Patch{Timezone: new("Local")}, "timezone"},
		{"empty timezone", calendar.Patch{Timezone: new("")}, "timezone"},
		{"work_start without leading zero", calendar.Patch{WorkStart: new("9:00")}, "work_start"},
		{"work_start at hour 24", calendar.Patch{WorkStart: new("24:00")}, "work_start"},
		{"work_start at minute 60", calendar.Patch{WorkStart: new("09:60")}, "work_start"},
		{"work_start without colon", calendar.Patch{WorkStart: new("0900")}, "work_start"},
		{"work_end at minute 60", calendar.Patch{WorkEnd: new("17:60")}, "work_end"},
		{"work_end equal to work_start", calendar.Patch{WorkStart: new("09:00"), WorkEnd: new("09:00")}, "work_end"},
		{"work_end before work_start", calendar.Patch{WorkStart: new("10:00"), WorkEnd: new("09:00")}, "work_end"},
		{"work_end alone before the stored work_start", calendar.Patch{WorkEnd: new("08:00")}, "work_end"},
		{"no working days", calendar.Patch{WorkingDays: new([]int{})}, "working_days"},
		{"working day 0", calendar.Patch{WorkingDays: new([]int{0})}, "working_days[0]"},
		{"working day 8", calendar.Patch{WorkingDays: new([]int{8})}, "working_days[0]"},
		{"repeated working day", calendar.Patch{WorkingDays: new([]int{1, 1})}, "working_days[1]"},
		{"slot_duration_minutes 4", calendar.Patch{SlotDurationMinutes: new(flex.Int(4))}, "slot_duration_minutes"},
		{"slot_duration_minutes 481", calendar.Patch{SlotDurationMinutes: new(flex.Int(481))}, "slot_duration_minutes"},
		{"buffer_minutes -1", calendar.Patch{BufferMinutes: new(flex.Int(-1))}, "buffer_minutes"},
		{"buffer_minutes 241", calendar.Patch{BufferMinutes: new(flex.Int(241))}, "buffer_minutes"},
		{"min_notice_minutes -1", calendar.Patch{MinNoticeMinutes: new(flex.Int(-1))}, "min_notice_minutes"},
		{"min_notice_minutes 43201", calendar.Patch{MinNoticeMinutes: new(flex.Int(43201))}, "min_notice_minutes"},
		{"booking_window_days 0", calendar.Patch{BookingWindowDays: new(flex.Int(0))}, "booking_window_days"},
		{"booking_window_days 366", calendar.Patch{BookingWindowDays: new(flex.Int(366))}, "booking_window_days"},
		{"meeting_title of 201 characters", calendar.Patch{MeetingTitle: new(strings.Repeat("x", 201))}, "meeting_title"},
		{"meeting_location of 501 characters", calendar.Patch{MeetingLocation: new(strings.Repeat("x", 501))}, "meeting_location"},
		{"booking_instructions of 2001 characters", calendar.Patch{BookingInstructions: new(strings.Repeat("x", 2001))}, "booking_instructions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := calendar.Defaults().Apply(tt.patch)
			if got := problemFields(t, err); !slices.Equal(got, []string{tt.field}) {
				t.Errorf("problems with %v, want [%s]", got, tt.field)
			}
		})
	}
}

func TestApplyReportsEveryProblemAtOnce(t *testing.T) {
	_, err := calendar.Defaults().Apply(calendar.Patch{
		Timezone:            new("Mars/Olympus"),
		WorkStart:           new("9:00"),
		WorkingDays:         new([]int{1, 9, 1}),
		SlotDurationMinutes: new(flex.Int(0)),
		MeetingTitle:        new(strings.Repeat("x", 201)),
	})
	want := []string{"timezone", "work_start", "working_days[1]", "working_days[2]", "slot_duration_minutes", "meeting_title"}
	if got := problemFields(t, err); !slices.Equal(got, want) {
		t.Errorf("problems with %v, want %v", got, want)
	}
	if got := len(apperr.As(err).Details); got != len(want) {
		t.Errorf("%d details, want %d", got, len(want))
	}
}

func TestSlots(t *testing.T) {
	// 2026-03-02 is a Monday; times are UTC, the default timezone.
	tests := []struct {
		name          string
		patch         calendar.Patch
		now, from, to string
		want          []string
	}{
		{
			name:  "a plain weekday",
			patch: calendar.Patch{WorkEnd: new("12:00")},
			now:   "2026-03-01 00:00", from: "2026-03-02 00:00", to: "2026-03-03 00:00",
			want: []string{"Mon 09:00", "Mon 09:30", "Mon 10:00", "Mon 10:30", "Mon 11:00", "Mon 11:30"},
		},
		{
			name:  "settings that are not enabled still have slots",
			patch: calendar.Patch{WorkEnd: new("10:00"), IsEnabled: new(false)},
			now:   "2026-03-01 00:00", from: "2026-03-02 00:00", to: "2026-03-03 00:00",
			want: []string{"Mon 09:00", "Mon 09:30"},
		},
		{
			name:  "a buffer follows every slot",
			patch: calendar.Patch{WorkEnd: new("11:00"), BufferMinutes: new(flex.Int(15))},
			now:   "2026-03-01 00:00", from: "2026-03-02 00:00", to: "2026-03-03 00:00",
			want: []string{"Mon 09:00", "Mon 09:45", "Mon 10:30"},
		},
		{
			name:  "a slot that would end after work_end is not offered",
			patch: calendar.Patch{WorkEnd: new("10:45")},
			now:   "2026-03-01 00:00", from: "2026-03-02 00:00", to: "2026-03-03 00:00",
			want: []string{"Mon 09:00", "Mon 09:30", "Mon 10:00"},
		},
		{
			name:  "the weekend is skipped",
			patch: calendar.Patch{WorkEnd: new("10:00")},
			now:   "2026-03-01 00:00", from: "2026-03-06 00:00", to: "2026-03-10 00:00",
			want: []string{"Fri 09:00", "Fri 09:30", "Mon 09:00", "Mon 09:30"},
		},
		{
			name:  "only the working days have slots",
			patch: calendar.Patch{WorkEnd: new("10:00"), WorkingDays: new([]int{2, 4})},
			now:   "2026-03-01 00:00", from: "2026-03-02 00:00", to: "2026-03-09 00:00",
			want: []string{"Tue 09:00", "Tue 09:30", "Thu 09:00", "Thu 09:30"},
		},
		{
			name:  "min notice drops slots starting sooner",
			patch: calendar.Patch{WorkEnd: new("12:00"), MinNoticeMinutes: new(flex.Int(60))},
			now:   "2026-03-02 09:10", from: "2026-03-02 00:00", to: "2026-03-03 00:00",
			want: []string{"Mon 10:30", "Mon 11:00", "Mon 11:30"},
		},
		{
			name:  "a slot starting exactly at the end of the notice is kept",
			patch: calendar.Patch{WorkEnd: new("12:00"), MinNoticeMinutes: new(flex.Int(60))},
			now:   "2026-03-02 09:30", from: "2026-03-02 00:00", to: "2026-03-03 00:00",
			want: []string{"Mon 10:30", "Mon 11:00", "Mon 11:30"},
		},
		{
			name:  "the booking window, measured from now, drops later slots",
			patch: calendar.Patch{WorkEnd: new("12:00"), MinNoticeMinutes: new(flex.Int(0)), BookingWindowDays: new(flex.Int(1))},
			now:   "2026-03-02 10:00", from: "2026-03-02 00:00", to: "2026-03-04 00:00",
			want: []string{"Mon 10:00", "Mon 10:30", "Mon 11:00", "Mon 11:30", "Tue 09:00", "Tue 09:30"},
		},
		{
			name:  "from and to are included",
			patch: calendar.Patch{WorkEnd: new("12:00")},
			now:   "2026-03-01 00:00", from: "2026-03-02 09:30", to: "2026-03-02 11:00",
			want: []string{"Mon 09:30", "Mon 10:00", "Mon 10:30"},
		},
		{
			name:  "slots straddling from or to are dropped",
			patch: calendar.Patch{WorkEnd: new("12:00")},
			now:   "2026-03-01 00:00", from: "2026-03-02 09:15", to: "2026-03-02 11:15",
			want: []string{"Mon 09:30", "Mon 10:00", "Mon 10:30"},
		},
		{
			name:  "a range without working hours has no slots",
			patch: calendar.Patch{},
			now:   "2026-03-01 00:00", from: "2026-03-07 00:00", to: "2026-03-09 00:00",
			want: []string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := mustApply(t, calendar.Defaults(), tt.patch)
			slots, err := s.Slots(utc(t, tt.now), utc(t, tt.from), utc(t, tt.to))
			if err != nil {
				t.Fatalf("Slots: %v", err)
			}
			if slots == nil {
				t.Fatal("Slots = nil, want an empty list")
			}
			if got := starts(slots, "Mon 15:04"); !slices.Equal(got, tt.want) {
				t.Errorf("slots start at %v, want %v", got, tt.want)
			}
			for _, slot := range slots {
				if got := slot.End.Sub(slot.Start); got != 30*time.Minute {
					t.Errorf("slot at %v lasts %v, want 30m", slot.Start, got)
				}
			}
		})
	}
}

func TestSlotsRejectsBadRanges(t *testing.T) {
	from := "2026-03-02 00:00"
	tests := []struct {
		name  string
		to    string
		field string
	}{
		{"to equal to from", "2026-03-02 00:00", "to"},
		{"to before from", "2026-03-01 23:59", "to"},
		{"to more than 62 days after from", "2026-05-03 00:01", "to"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := calendar.Defaults().Slots(utc(t, from), utc(t, from), utc(t, tt.to))
			if got := problemFields(t, err); !slices.Equal(got, []string{tt.field}) {
				t.Errorf("problems with %v, want [%s]", got, tt.field)
			}
		})
	}
	t.Run("to exactly 62 days after from", func(t *testing.T) {
		to := utc(t, from).Add(calendar.MaxSlotRangeDays * 24 * time.Hour)
		if _, err := calendar.Defaults().Slots(utc(t, from), utc(t, from), to); err != nil {
			t.Errorf("Slots: %v, want nil", err)
		}
	})
	t.Run("invalid settings", func(t *testing.T) {
		_, err := calendar.Settings{}.Slots(utc(t, from), utc(t, from), utc(t, "2026-03-03 00:00"))
		if got := apperr.As(err).Kind; got != apperr.Invalid {
			t.Errorf("error kind %v, want Invalid", got)
		}
	})
}

func TestSlotsAcrossDaylightSavingTime(t *testing.T) {
	everyDay := new([]int{1, 2, 3, 4, 5, 6, 7})

	t.Run("wall times skipped when clocks spring forward have no slot", func(t *testing.T) {
		s := mustApply(t, calendar.Defaults(), calendar.Patch{
			Timezone: new("America/New_York"), WorkStart: new("01:00"), WorkEnd: new("04:00"), WorkingDays: everyDay,
		})
		slots := localSlots(t, s, "2026-03-08 00:00", "2026-03-09 00:00")
		want := []string{"01:00 EST", "01:30 EST", "03:00 EDT", "03:30 EDT"}
		if got := starts(slots, "15:04 MST"); !slices.Equal(got, want) {
			t.Fatalf("slots start at %v, want %v", got, want)
		}
		if got := slots[1].End.Format("15:04 MST"); got != "03:00 EDT" {
			t.Errorf("01:30 slot ends at %s, want 03:00 EDT", got)
		}
	})
	t.Run("a slot that the change makes end after work_end is dropped", func(t *testing.T) {
		s := mustApply(t, calendar.Defaults(), calendar.Patch{
			Timezone: new("America/New_York"), WorkStart: new("00:30"), WorkEnd: new("02:30"),
			WorkingDays: everyDay, SlotDurationMinutes: new(flex.Int(60)),
		})
		slots := localSlots(t, s, "2026-03-08 00:00", "2026-03-09 00:00")
		if got, want := starts(slots, "15:04 MST"), []string{"00:30 EST"}; !slices.Equal(got, want) {
			t.Errorf("slots start at %v, want %v", got, want)
		}
	})
	t.Run("wall times repeated when clocks fall back have one slot each", func(t *testing.T) {
		s := mustApply(t, calendar.Defaults(), calendar.Patch{
			Timezone: new("America/New_York"), WorkStart: new("01:00"), WorkEnd: new("03:00"), WorkingDays: everyDay,
		})
		slots := localSlots(t, s, "2026-11-01 00:00", "2026-11-02 00:00")
		if got, want := starts(slots, "15:04"), []string{"01:00", "01:30", "02:00", "02:30"}; !slices.Equal(got, want) {
			t.Errorf("slots start at %v, want %v", got, want)
		}
	})
	t.Run("working hours keep their wall clock times when clocks fall back", func(t *testing.T) {
		s := mustApply(t, calendar.Defaults(), calendar.Patch{Timezone: new("America/New_York"), WorkingDays: everyDay})
		slots := localSlots(t, s, "2026-10-31 00:00", "2026-11-02 00:00")
		if len(slots) != 32 {
			t.Fatalf("%d slots, want 16 on each day", len(slots))
		}
		want := []string{"2026-10-31 09:00 -04:00", "2026-10-31 16:30 -04:00", "2026-11-01 09:00 -05:00", "2026-11-01 16:30 -05:00"}
		got := starts([]calendar.Slot{slots[0], slots[15], slots[16], slots[31]}, "2006-01-02 15:04 -07:00")
		if !slices.Equal(got, want) {
			t.Errorf("first and last slots of each day start at %v, want %v", got, want)
		}
	})
	t.Run("a 09:00 slot in Berlin is 08:00 UTC before the change and 07:00 UTC after", func(t *testing.T) {
		s := mustApply(t, calendar.Defaults(), calendar.Patch{Timezone: new("Europe/Berlin"), WorkEnd: new("09:30")})
		slots := localSlots(t, s, "2026-03-27 00:00", "2026-03-31 00:00")
		want := []string{"2026-03-27 08:00", "2026-03-30 07:00"}
		var got []string
		for _, slot := range slots {
			got = append(got, slot.Start.UTC().Format("2006-01-02 15:04"))
		}
		if !slices.Equal(got, want) {
			t.Errorf("slots start at %v UTC, want %v", got, want)
		}
	})
}

func TestSlotsAreInSettingsLocation(t *testing.T) {
	s := mustApply(t, calendar.Defaults(), calendar.Patch{Timezone: new("Asia/Tokyo")})
	slots := mustSlots(t, s, utc(t, "2026-03-01 00:00"), utc(t, "2026-03-02 00:00"), utc(t, "2026-03-03 00:00"))
	if len(slots) == 0 {
		t.Fatal("no slots")
	}
	for _, slot := range slots {
		if slot.Start.Location().String() != "Asia/Tokyo" || slot.End.Location().String() != "Asia/Tokyo" {
			t.Errorf("slot %v–%v, want both in Asia/Tokyo", slot.Start, slot.End)
		}
	}
}

// mustApply applies p to s and fails the test on error.
func mustApply(t *testing.T, s calendar.Settings, p calendar.Patch) calendar.Settings {
	t.Helper()
	got, err := s.Apply(p)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return got
}

// mustSlots lists the slots of s and fails the test on error.
func mustSlots(t *testing.T, s calendar.Settings, now, from, to time.Time) []calendar.Slot {
	t.Helper()
	slots, err := s.Slots(now, from, to)
	if err != nil {
		t.Fatalf("Slots: %v", err)
	}
	return slots
}

// localSlots lists the slots of s from from to to, read in its time zone, as seen a day
// before from.
func localSlots(t *testing.T, s calendar.Settings, from, to string) []calendar.Slot {
	t.Helper()
	start := local(t, s, from)
	return mustSlots(t, s, start.AddDate(0, 0, -1), start, local(t, s, to))
}

// problemFields returns the fields named by err, which must be an Invalid error.
func problemFields(t *testing.T, err error) []string {
	t.Helper()
	e := apperr.As(err)
	if err == nil || e.Kind != apperr.Invalid {
		t.Fatalf("error %v, want an Invalid error", err)
	}
	var fields []string
	for _, d := range e.Details {
		fields = append(fields, d.Field)
	}
	return fields
}

// utc parses "2006-01-02 15:04" in UTC.
func utc(t *testing.T, value string) time.Time {
	t.Helper()
	return parseIn(t, value, time.UTC)
}

// local parses "2006-01-02 15:04" in the time zone of s.
func local(t *testing.T, s calendar.Settings, value string) time.Time {
	t.Helper()
	loc, err := time.LoadLocation(s.Timezone)
	if err != nil {
		t.Fatal(err)
	}
	return parseIn(t, value, loc)
}

// parseIn parses "2006-01-02 15:04" in loc.
func parseIn(t *testing.T, value string, loc *time.Location) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02 15:04", value, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// starts formats the start of every slot with layout.
func starts(slots []calendar.Slot, layout string) []string {
	got := []string{}
	for _, slot := range slots {
		got = append(got, slot.Start.Format(layout))
	}
	return got
}
