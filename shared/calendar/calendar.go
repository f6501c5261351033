// Package calendar holds an agent's calendar booking settings: their defaults, their validation,
// the merge of a partial update, and the computation of bookable slots.
package calendar

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/agentplane/agentplane/shared/kit/apperr"
	"github.com/agentplane/agentplane/shared/kit/flex"
)

// Bounds of the numeric settings, inclusive.
const (
	MinSlotDurationMinutes = 5
	MaxSlotDurationMinutes = 480
	MinBufferMinutes       = 0
	MaxBufferMinutes       = 240
	MinMinNoticeMinutes    = 0
	MaxMinNoticeMinutes    = 43200 // 30 days
	MinBookingWindowDays   = 1
	MaxBookingWindowDays   = 365
)

// Maximum lengths of the text settings, in characters (runes).
const (
	MaxMeetingTitleLength        = 200
	MaxMeetingLocationLength     = 500
	MaxBookingInstructionsLength = 2000
)

// Settings is an agent's calendar booking settings.
type Settings struct {
	// Timezone is an IANA time zone name such as "Europe/Berlin"; working hours are read in it.
	Timezone string `json:"timezone" bson:"timezone"`
	// WorkStart is the start of working hours, "HH:MM" on a 24-hour clock.
	WorkStart string `json:"work_start" bson:"work_start"`
	// WorkEnd is the end of working hours, "HH:MM" on a 24-hour clock, after WorkStart.
	WorkEnd string `json:"work_end" bson:"work_end"`
	// WorkingDays are ISO weekdays, 1 for Monday to 7 for Sunday, without duplicates.
	WorkingDays         []int `json:"working_days" bson:"working_days"`
	SlotDurationMinutes int   `json:"slot_duration_minutes" bson:"slot_duration_minutes"`
	// BufferMinutes is the free time kept after each slot.
	BufferMinutes int `json:"buffer_minutes" bson:"buffer_minutes"`
	// MinNoticeMinutes is how long before its start a slot can still be booked.
	MinNoticeMinutes int `json:"min_notice_minutes" bson:"min_notice_minutes"`
	// BookingWindowDays is how far ahead of now slots can be booked.
	BookingWindowDays   int    `json:"booking_window_days" bson:"booking_window_days"`
	MeetingTitle        string `json:"meeting_title" bson:"meeting_title"`
	MeetingLocation     string `json:"meeting_location" bson:"meeting_location"`
	BookingInstructions string `json:"booking_instructions" bson:"booking_instructions"`
	IsEnabled           bool   `json:"is_enabled" bson:"is_enabled"`
}

// Defaults returns the settings of an agent that has never saved any: weekdays 09:00 to 17:00
// UTC, 30-minute slots, an hour's notice, 30 days ahead, disabled.
func Defaults() Settings {
	return Settings{
		Timezone:            "UTC",
		WorkStart:           "09:00",
		WorkEnd:             "17:00",
		WorkingDays:         []int{1, 2, 3, 4, 5},
		SlotDurationMinutes: 30,
		BufferMinutes:       0,
		MinNoticeMinutes:    60,
		BookingWindowDays:   30,
		MeetingTitle:        "Meeting",
	}
}

// Patch is a partial update of Settings: a nil field, absent or null in JSON, leaves the
// setting unchanged. Integer settings also take their numeric strings ("30").
type Patch struct {
	Timezone            *string   `json:"timezone"`
	WorkStart           *string   `json:"work_start"`
	WorkEnd             *string   `json:"work_end"`
	WorkingDays         *[]int    `json:"working_days"`
	SlotDurationMinutes *flex.Int `json:"slot_duration_minutes"`
	BufferMinutes       *flex.Int `json:"buffer_minutes"`
	MinNoticeMinutes    *flex.Int `json:"min_notice_minutes"`
	BookingWindowDays   *flex.Int `json:"booking_window_days"`
	MeetingTitle        *string   `json:"meeting_title"`
	MeetingLocation     *string   `json:"meeting_location"`
	BookingInstructions *string   `json:"booking_instructions"`
	IsEnabled           *bool     `json:"is_enabled"`
}

// Apply returns s with every non-nil field of p set, its working days sorted ascending.
// It validates the result as a whole, so a patch is checked against the settings it keeps;
// if the result is invalid, Apply returns the zero Settings and an Invalid *apperr.Error
// listing every problem.
func (s Settings) Apply(p Patch) (Settings, error) {
	merged := s
	set(&merged.Timezone, p.Timezone)
	set(&merged.WorkStart, p.WorkStart)
	set(&merged.WorkEnd, p.WorkEnd)
	set(&merged.WorkingDays, p.WorkingDays)
	setInt(&merged.SlotDurationMinutes, p.SlotDurationMinutes)
	setInt(&merged.BufferMinutes, p.BufferMinutes)
	setInt(&merged.MinNoticeMinutes, p.MinNoticeMinutes)
	setInt(&merged.BookingWindowDays, p.BookingWindowDays)
	set(&merged.MeetingTitle, p.MeetingTitle)
	set(&merged.MeetingLocation, p.MeetingLocation)
	set(&merged.BookingInstructions, p.BookingInstructions)
	set(&merged.IsEnabled, p.IsEnabled)
	if err := merged.Validate(); err != nil {
		return Settings{}, err
	}
	merged.WorkingDays = slices.Sorted(slices.Values(merged.WorkingDays))
	return merged, nil
}

// setInt stores *src in *dst unless src is nil.
func setInt(dst *int, src *flex.Int) {
	if src != nil {
		*dst = int(*src)
	}
}

// set stores *src in *dst unless src is nil.
func set[T any](dst, src *T) {
	if src != nil {
		*dst = *src
	}
}

// Validate reports every problem with s as one Invalid *apperr.Error whose details name the
// fields by their JSON names, or returns nil if s is valid.
func (s Settings) Validate() error {
	_, err := s.hours()
	return err
}

// workHours is the parsed form of valid Settings that slot computation needs.
type workHours struct {
	loc        *time.Location
	start, end int // minutes after midnight, wall clock
	days       [8]bool
}

// hours validates s and returns its parsed working hours.
func (s Settings) hours() (workHours, error) {
	var p apperr.Problems
	var h workHours
	h.loc = parseTimezone(&p, s.Timezone)
	h.start, h.end = parseWorkTimes(&p, s.WorkStart, s.WorkEnd)
	h.days = parseWorkingDays(&p, s.WorkingDays)
	checkNumbers(&p, s)
	checkTexts(&p, s)
	return h, p.Err()
}

// parseTimezone loads the location named tz, reporting a problem if it cannot. It refuses
// "Local", which names whatever zone the server runs in.
func parseTimezone(p *apperr.Problems, tz string) *time.Location {
	loc, err := time.LoadLocation(tz)
	if tz == "" || tz == "Local" || err != nil {
		p.Add("timezone", "must be an IANA time zone name such as Europe/Berlin")
		return nil
	}
	return loc
}

// parseWorkTimes parses the start and end of working hours and checks that start is earlier.
func parseWorkTimes(p *apperr.Problems, start, end string) (int, int) {
	from, okFrom := parseClock(start)
	if !okFrom {
		p.Add("work_start", "must be a time of day HH:MM between 00:00 and 23:59")
	}
	to, okTo := parseClock(end)
	if !okTo {
		p.Add("work_end", "must be a time of day HH:MM between 00:00 and 23:59")
	}
	if okFrom && okTo && to <= from {
		p.Add("work_end", "must be after work_start")
	}
	return from, to
}

// parseClock returns the minutes after midnight of s, written exactly "HH:MM".
func parseClock(s string) (int, bool) {
	if len(s) != 5 || s[2] != ':' {
		return 0, false
	}
	h, okH := parseTwoDigits(s[:2])
	m, okM := parseTwoDigits(s[3:])
	if !okH || !okM || h > 23 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// parseTwoDigits parses a two-character string of decimal digits.
func parseTwoDigits(s string) (int, bool) {
	if s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

// parseWorkingDays returns the set of working ISO weekdays, indexed 1 to 7.
func parseWorkingDays(p *apperr.Problems, days []int) [8]bool {
	var seen [8]bool
	if len(days) == 0 {
		p.Add("working_days", "must list at least one day")
	}
	for i, d := range days {
		switch {
		case d < 1 || d > 7:
			p.Add(itemField("working_days", i), "must be an ISO weekday from 1 (Monday) to 7 (Sunday)")
		case seen[d]:
			p.Add(itemField("working_days", i), "repeats day %d", d)
		default:
			seen[d] = true
		}
	}
	return seen
}

// itemField names item i of the array field.
func itemField(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}

// checkNumbers reports every numeric setting outside its bounds.
func checkNumbers(p *apperr.Problems, s Settings) {
	for _, n := range []struct {
		field         string
		value, lo, hi int
	}{
		{"slot_duration_minutes", s.SlotDurationMinutes, MinSlotDurationMinutes, MaxSlotDurationMinutes},
		{"buffer_minutes", s.BufferMinutes, MinBufferMinutes, MaxBufferMinutes},
		{"min_notice_minutes", s.MinNoticeMinutes, MinMinNoticeMinutes, MaxMinNoticeMinutes},
		{"booking_window_days", s.BookingWindowDays, MinBookingWindowDays, MaxBookingWindowDays},
	} {
		if n.value < n.lo || n.value > n.hi {
			p.Add(n.field, "must be between %d and %d", n.lo, n.hi)
		}
	}
}

// checkTexts reports every text setting longer than its maximum.
func checkTexts(p *apperr.Problems, s Settings) {
	for _, t := range []struct {
		field string
		value string
		max   int
	}{
		{"meeting_title", s.MeetingTitle, MaxMeetingTitleLength},
		{"meeting_location", s.MeetingLocation, MaxMeetingLocationLength},
		{"booking_instructions", s.BookingInstructions, MaxBookingInstructionsLength},
	} {
		if utf8.RuneCountInString(t.value) > t.max {
			p.Add(t.field, "must be at most %d characters", t.max)
		}
	}
}
